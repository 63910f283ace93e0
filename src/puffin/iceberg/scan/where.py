"""Row-filter strings read as pyiceberg's grammar reads them, long ``in`` lists without it.

pyiceberg parses a row filter with pyparsing, whose cost grows with the square of an ``in``
list's length (a delete by 100,000 keys spent 38 s in the parser, twice). Here each ``in``
list of more than :data:`LONG_LIST` plain literals (numbers, or quoted text without quotes
inside) is lifted out of the string before pyiceberg parses it, replaced by one placeholder
literal, and put back into the parsed tree as an ``In``/``NotIn`` of its values
(:mod:`puffin.iceberg.scan.key_list`: bound without a conversion per key). Parsing is
cached: a job parses its condition once, however many times it is checked.

Two more things pyiceberg's parser does not: a list of whole and decimal numbers is read
literal by literal as it reads each alone, an integer and a decimal (it refuses ``in (1, 2.5)``
at the first character; each value is then checked against the column's type as it would be
alone), and a list of quoted text and numbers is refused with a message saying so.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from puffin.errors import UsageError

__all__ = ["LONG_LIST", "parse_where"]

#: ``in`` lists longer than this skip pyiceberg's parser.
LONG_LIST = 64

_IN_LIST = re.compile(r"\b(not\s+)?in\s*\(([^()]*)\)", re.IGNORECASE)
_WHOLE = re.compile(r"^\s*[-+]?\d+\s*$")
_DECIMAL = re.compile(r"^\s*[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?\s*$")
_POINTED = re.compile(r"^\s*[-+]?(\d+\.\d*|\.\d+)\s*$")  # read by pyiceberg as a decimal
_QUOTED = re.compile(r"^\s*'([^']*)'\s*$")
_ALL_WHOLE = re.compile(r"\s*[-+]?\d+\s*(?:,\s*[-+]?\d+\s*)*")  # a list of whole numbers


@functools.lru_cache(maxsize=2)  # a job reuses its parse; a long list weighs megabytes
def parse_where(where: str) -> Any:
    """A row-filter string as pyiceberg parses it (unbound); a syntax error is the caller's
    mistake (:class:`UsageError`)."""
    from pyiceberg.expressions.parser import parse
    from pyparsing import ParseException

    if not where.strip():
        raise UsageError("the row filter is empty")
    lifted: dict[str, list[Any]] = {}
    _refuse_text_with_numbers(where)
    text = _lift_lists(where, lifted)
    try:
        expr = parse(text)
    except ParseException as exc:
        at = f" at column {exc.col}" if exc.col > 1 and not lifted else ""  # 1: none matched
        raise UsageError(
            f"cannot parse the row filter {_shown(where)!r}{at}: pyiceberg's syntax "
            "is comparisons (=, !=, <, <=, >, >=), in (...), is null, is nan, like, between, "
            "combined with and, or, not (no arithmetic)"
        ) from None
    except ValueError as exc:  # pydantic's ValidationError: a tree pyiceberg cannot build
        if "BooleanLiteral" not in str(exc):
            raise
        raise UsageError(
            f"cannot use the row filter {_shown(where)!r}: pyiceberg's parser cannot combine "
            "true or false with and, or, not; leave the literal out (x and true is x, x or "
            "false is x)"
        ) from None
    return _put_back(expr, lifted) if lifted else expr


def _shown(where: str) -> str:
    return where if len(where) <= 200 else f"{where[:120]}...{where[-60:]}"


def _refuse_text_with_numbers(where: str) -> None:
    """A :class:`UsageError` for an ``in (...)`` list of quoted text and numbers (a column
    takes one kind of value; pyiceberg's parser fails it at its first character)."""
    inside = _quoted_spans(where)
    for match in _IN_LIST.finditer(where):
        if inside(match.start()) or _ALL_WHOLE.fullmatch(match.group(2)):
            continue  # text in a quoted literal, or whole numbers only
        items = match.group(2).split(",")
        if any(i.strip().startswith("'") for i in items) and any(
            _DECIMAL.match(i) for i in items
        ):
            raise UsageError(
                f"the list in ({_shown(match.group(2).strip())}) of the row filter "
                f"{_shown(where)!r} mixes quoted text and numbers: a column takes one kind "
                "of value"
            )


def _lift_lists(where: str, lifted: dict[str, list[Any]]) -> str:
    """Each long list of plain literals, and each list of whole and decimal numbers,
    replaced by a placeholder text literal; its values (ints, decimals or strings, as
    pyiceberg's parser reads each literal) go into ``lifted``."""

    inside = _quoted_spans(where)

    def lift(match: re.Match[str]) -> str:
        if inside(match.start()):
            return match.group(0)
        body = match.group(2)
        values = _values(body) if body.count(",") >= LONG_LIST or _mixed(body) else None
        if values is None:
            return match.group(0)
        placeholder = f"puffin-list-{uuid.uuid4().hex}"
        lifted[placeholder] = values
        return f"{match.group(1) or ''}in ('{placeholder}', '{placeholder}')"

    return _IN_LIST.sub(lift, where)


def _quoted_spans(where: str) -> Callable[[int], bool]:
    """Whether a position of ``where`` lies inside a quoted literal."""
    spans = [m.span() for m in re.finditer(r"'[^']*'", where)]
    return lambda at: any(start < at < end for start, end in spans)


def _mixed(body: str) -> bool:
    """Whether a list holds numbers with a point and nothing but whole numbers beside them
    (pyiceberg's parser refuses the mix; such a list is read here value by value)."""
    if _ALL_WHOLE.fullmatch(body):
        return False
    items = body.split(",")
    pointed = [bool(_POINTED.match(i)) for i in items]
    return any(pointed) and all(p or _WHOLE.match(i) for i, p in zip(items, pointed, strict=True))


def _values(body: str) -> list[Any] | None:
    """The literals of a list (the text between its parentheses) as pyiceberg's parser reads
    them; None for anything else (then pyiceberg's parser reads the list, or says what is
    wrong)."""
    items = body.split(",")
    if _ALL_WHOLE.fullmatch(body):  # one pass over the text: the usual list of keys
        return [int(i) for i in items]
    if all(_WHOLE.match(i) or _POINTED.match(i) for i in items):
        return [int(i) if _WHOLE.match(i) else Decimal(i.strip()) for i in items]
    texts = [_QUOTED.match(i) for i in items]
    if all(texts):
        return [t.group(1) for t in texts if t is not None]
    return None


def _put_back(expr: Any, lifted: dict[str, list[Any]]) -> Any:
    """``expr`` with each placeholder predicate an ``In``/``NotIn`` of the lifted values
    (pyiceberg reads a list of one distinct value as ``=``/``!=``)."""
    from pyiceberg.expressions import And, EqualTo, Not, NotEqualTo, Or

    from puffin.iceberg.scan.key_list import key_list

    if isinstance(expr, And):
        return And(_put_back(expr.left, lifted), _put_back(expr.right, lifted))
    if isinstance(expr, Or):
        return Or(_put_back(expr.left, lifted), _put_back(expr.right, lifted))
    if isinstance(expr, Not):
        return Not(_put_back(expr.child, lifted))
    if isinstance(expr, (EqualTo, NotEqualTo)) and str(expr.literal.value) in lifted:
        values = lifted[str(expr.literal.value)]
        return key_list(expr.term, values, negated=isinstance(expr, NotEqualTo))
    return expr
