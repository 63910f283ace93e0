"""A condition's literal as exactly one value of its column's type, or a refusal.

pyiceberg converts a literal to its column's type as leniently as it can: ``9.5`` on an
``int`` column becomes ``10``, ``'7'`` becomes ``7``, ``99999999999`` on an ``int`` column
becomes "matches nothing".  A delete bound that way removes rows nobody named.  Here a
literal is used only when it is exactly a value of the column's type; anything else is a
:class:`~puffin.errors.UsageError` naming the literal and the type, before anything runs.

The rules, by column type (docs/iceberg.md, "Conditions"):

- ``int``, ``long``: an integer in the type's range (``10.0`` is ``10``; ``9.5`` is refused);
- ``float``, ``double``: a number that is exactly a value of the type (a ``float`` column
  refuses ``0.1``, which it cannot hold, since engines disagree on what it matches), or a
  decimal with a point, read as its nearest double only when that double prints back as
  the same number (``0.1`` on a ``double`` column; ``0.10000000000000000001`` is refused);
  NaN is refused (``is_nan`` asks for it);
- ``decimal(p, s)``: a number with at most ``s`` decimal places and ``p`` digits in all;
- ``string``: a quoted string; ``boolean``: ``true`` or ``false``; ``binary``/``fixed``:
  bytes (a ``fixed(n)`` literal of length ``n``);
- ``date``, ``time``, ``timestamp``, ``timestamptz``, ``uuid``: a quoted string in the ISO
  form pyiceberg parses strictly (or the Python value);
- a quoted number on a numeric column, a number on a string or date column: refused, as
  ``'abc'`` is refused on a number.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from typing import Any

from puffin.errors import UsageError

__all__ = ["exact_literal"]

_INT_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_TEXT_TYPES = ("date", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns")


def exact_literal(lit: Any, field_type: Any, column: str) -> Any:
    """``lit`` (a pyiceberg ``Literal``) as a literal of exactly ``field_type``'s value.

    Raises :class:`UsageError` naming the column, its type and the literal when the literal
    is not exactly one value of the type.
    """
    from pyiceberg.expressions.literals import (
        BinaryLiteral,
        BooleanLiteral,
        FixedLiteral,
        StringLiteral,
        literal,
    )

    kind = str(field_type)
    value = lit.value
    if kind in _INT_RANGES:
        return literal(_integer(value, lit, kind, column))
    if kind in ("float", "double"):
        return literal(_floating(value, lit, kind, column))
    if kind.startswith("decimal"):
        return literal(_decimal(value, lit, field_type, column))
    if kind == "string":
        _require(isinstance(lit, StringLiteral), lit, field_type, column, "a quoted string")
        return lit
    if kind == "boolean":
        _require(isinstance(lit, BooleanLiteral), lit, field_type, column, "true or false")
        return lit
    if kind == "binary" or kind.startswith("fixed"):
        ok = isinstance(lit, (BinaryLiteral, FixedLiteral))
        if ok and kind.startswith("fixed"):
            ok = len(value) == len(field_type)
        _require(ok, lit, field_type, column, f"bytes ({kind})")
        return lit
    if kind in _TEXT_TYPES or kind == "uuid":
        numeric = isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)
        _require(not numeric, lit, field_type, column, f"a quoted {kind} in ISO form")
    return lit  # pyiceberg's own strict conversion decides the rest


def _require(ok: bool, lit: Any, field_type: Any, column: str, wanted: str) -> None:
    if not ok:
        raise UsageError(
            f"column {column!r} ({field_type}) cannot be compared with {_shown(lit)}: "
            f"it takes {wanted}"
        )


def _shown(lit: Any) -> str:
    from pyiceberg.expressions.literals import StringLiteral

    value = lit.value
    if isinstance(lit, StringLiteral):
        return f"the quoted text {value!r}"
    return str(value) if isinstance(value, (int, float, Decimal)) else repr(value)


def _number(value: Any, lit: Any, field_type: Any, column: str) -> Decimal | float:
    """A literal's number, refusing text (quoted numbers included) and booleans."""
    is_number = isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)
    _require(is_number, lit, field_type, column, "a number (unquoted)")
    if isinstance(value, float) and math.isnan(value):
        raise UsageError(
            f"column {column!r} ({field_type}) cannot be compared with NaN, which equals "
            f"nothing: write '{column} is nan' to find NaN values"
        )
    if isinstance(value, Decimal) and not value.is_finite():
        raise UsageError(
            f"column {column!r} ({field_type}) cannot be compared with {value}: write a "
            "finite number (or a float infinity on a float column)"
        )
    return value if isinstance(value, float) else Decimal(value)


def _integer(value: Any, lit: Any, kind: str, column: str) -> int:
    number = _number(value, lit, kind, column)
    if isinstance(number, float) and math.isinf(number):
        number_ok = False
    else:
        number_ok = Decimal(number) == Decimal(number).to_integral_value()
    if not number_ok:
        raise UsageError(
            f"column {column!r} is {kind}, and {_shown(lit)} is not a whole number: "
            "nothing is rounded (write the integer you mean)"
        )
    whole = int(number)
    low, high = _INT_RANGES[kind]
    if not low <= whole <= high:
        raise UsageError(
            f"{whole} is out of the range of column {column!r} ({kind}: {low} to {high})"
        )
    return whole


def _floating(value: Any, lit: Any, kind: str, column: str) -> float:
    import numpy as np

    number = _number(value, lit, kind, column)
    if isinstance(number, Decimal):
        nearest = float(number)
        exact = Decimal(nearest) == number
        # A decimal as written names the double that prints as it (0.1 on a double column).
        printed = kind == "double" and not isinstance(value, int)
        exact = exact or (printed and Decimal(repr(nearest)) == number)
    else:
        nearest, exact = number, True
    if exact and kind == "float" and not math.isinf(nearest):
        exact = float(np.float32(nearest)) == nearest
    if not exact:
        closest = float(np.float32(nearest)) if kind == "float" else nearest
        raise UsageError(
            f"column {column!r} is {kind}, and {_shown(lit)} is not exactly a value of it "
            f"(the nearest is {closest!r}); engines differ on what it would match, so "
            "compare with a range instead (e.g. >= and <)"
        )
    return nearest


def _decimal(value: Any, lit: Any, field_type: Any, column: str) -> Decimal:
    number = _number(value, lit, field_type, column)
    if isinstance(number, float) and math.isinf(number):
        raise UsageError(f"column {column!r} ({field_type}) holds no infinity")
    exact = Decimal(number)
    if exact != 0 and exact.adjusted() + 1 > field_type.precision - field_type.scale:
        raise UsageError(
            f"{_shown(lit)} has more digits than column {column!r} ({field_type}) holds"
        )
    with localcontext() as context:
        context.prec = field_type.precision + 2  # enough for every value of the column
        scaled = exact.quantize(Decimal(1).scaleb(-field_type.scale))
    if scaled != exact:
        raise UsageError(
            f"{_shown(lit)} has more decimal places than column {column!r} "
            f"({field_type}) holds; it would have to be rounded"
        )
    return scaled
