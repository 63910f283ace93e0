"""A quick test of a data file's integer column bounds against a row filter, ahead of
pyiceberg's metrics evaluator.

pyiceberg's ``_InclusiveMetricsEvaluator`` visits the bound filter for every live data file
of every plan: a visitor object, a dispatch per predicate and a decode per bound, about 8 µs
a file. A delete of one id in a table of 500 files paid that for all of them, every commit
(issue 34). :func:`bounds_test` compiles the filter once into closures that read the raw
bound bytes of integer-like columns (int, long, date, time, timestamps), where the bounds are
exact values. A closure answers "cannot match" only where pyiceberg's evaluator does (a
bound strictly past the literal), and "may match" for everything else; pyiceberg's evaluator
then decides those. So the plan stays pyiceberg's: the files ruled out early are only not
visited twice. ``tests/iceberg/scan/test_bounds.py`` holds the two to that.

An ``in`` list is tested by a binary search of its sorted values against the bounds. pyiceberg
stops looking at bounds past 200 values (``IN_PREDICATE_LIMIT``); planning keeps that limit so
that its plan is pyiceberg's, while matching rows (``delete_rows``, ``overwrite``) passes
``in_limit=None``: a delete by 100,000 keys then opens only the files whose bounds hold one.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema

__all__ = ["IN_LIMIT", "bound_test", "bound_width", "bounds_test", "decode_bound"]

#: lower bounds, upper bounds -> False if no row can match.
_Test = Callable[[Mapping[int, bytes], Mapping[int, bytes]], bool]
_EMPTY: Mapping[int, bytes] = {}
#: pyiceberg's ``IN_PREDICATE_LIMIT``: longer ``in`` lists are not tested against bounds.
IN_LIMIT = 200


def bounds_test(
    schema: Schema,
    row_filter: BooleanExpression,
    case_sensitive: bool = True,
    *,
    in_limit: int | None = IN_LIMIT,
) -> Callable[[DataFile], bool] | None:
    """A test that is False for a data file only if pyiceberg's inclusive metrics evaluator
    rules it out too (``in_limit=None``: also an ``in`` list longer than pyiceberg looks
    at, whose values all lie outside the bounds); None when no part of ``row_filter`` can be
    tested this way."""
    from pyiceberg.expressions.visitors import bind

    return bound_test(bind(schema, row_filter, case_sensitive), in_limit=in_limit)


def bound_test(
    bound: BooleanExpression, *, in_limit: int | None = IN_LIMIT
) -> Callable[[DataFile], bool] | None:
    """:func:`bounds_test` of a filter already bound to the table's schema."""
    from pyiceberg.expressions.visitors import rewrite_not

    test = _compile(rewrite_not(bound), in_limit)
    if test is None:
        return None

    def may_match(data_file: DataFile) -> bool:
        if data_file.record_count < 0:  # pyiceberg: a count it cannot trust, might match
            return True
        return test(data_file.lower_bounds or _EMPTY, data_file.upper_bounds or _EMPTY)

    return may_match


def _compile(expr: BooleanExpression, in_limit: int | None) -> _Test | None:
    """``expr`` (bound, negations pushed down) as a test; None where it is always "may"."""
    from pyiceberg.expressions import And, BoundPredicate, Or

    if isinstance(expr, And):
        left, right = _compile(expr.left, in_limit), _compile(expr.right, in_limit)
        if left is None or right is None:
            return left or right
        return _both(left, right)
    if isinstance(expr, Or):
        left, right = _compile(expr.left, in_limit), _compile(expr.right, in_limit)
        if left is None or right is None:
            return None
        return _either(left, right)
    if isinstance(expr, BoundPredicate):
        return _predicate(expr, in_limit)
    return None


def _both(left: _Test, right: _Test) -> _Test:
    return lambda lo, hi: left(lo, hi) and right(lo, hi)


def _either(left: _Test, right: _Test) -> _Test:
    return lambda lo, hi: left(lo, hi) or right(lo, hi)


def bound_width(field_type: Any) -> int | None:
    """Bytes of the bound of an integer-like type (Iceberg's single-value serialization)."""
    from pyiceberg import types as t

    if isinstance(field_type, (t.IntegerType, t.DateType)):
        return 4
    eight = (
        t.LongType,
        t.TimeType,
        t.TimestampType,
        t.TimestamptzType,
        t.TimestampNanoType,
        t.TimestamptzNanoType,
    )
    return 8 if isinstance(field_type, eight) else None


def decode_bound(raw: bytes | None, width: int) -> int | None:
    """An integer-like column's bound (``width`` bytes, little-endian, signed); None when
    absent, or not what pyiceberg would decode (then pyiceberg decides)."""
    if raw is None or len(raw) != width:
        return None
    return int.from_bytes(raw, "little", signed=True)


def _predicate(expr: Any, in_limit: int | None) -> _Test | None:
    from pyiceberg.expressions import (
        BoundEqualTo,
        BoundGreaterThan,
        BoundGreaterThanOrEqual,
        BoundIn,
        BoundLessThan,
        BoundLessThanOrEqual,
    )
    field = expr.term.ref().field
    width = bound_width(field.field_type)
    if width is None:
        return None
    fid = field.field_id

    def bound(bounds: Mapping[int, bytes]) -> int | None:
        return decode_bound(bounds.get(fid), width)

    if isinstance(expr, BoundIn):
        if in_limit is not None and len(expr.literals) > in_limit:  # pyiceberg does not look
            return None  # (before sorting: a planner's test of 100,000 keys sorted them for this)
        values = sorted_values(expr.literals)
        return lambda lo, hi: _any_between(values, bound(lo), bound(hi))
    if not isinstance(
        expr,
        (
            BoundEqualTo,
            BoundLessThan,
            BoundLessThanOrEqual,
            BoundGreaterThan,
            BoundGreaterThanOrEqual,
        ),
    ):
        return None
    v = expr.literal.value
    if isinstance(expr, BoundEqualTo):
        return lambda lo, hi: _any_between((v,), bound(lo), bound(hi))
    if isinstance(expr, BoundLessThan):
        return lambda lo, _: (b := bound(lo)) is None or b < v
    if isinstance(expr, BoundLessThanOrEqual):
        return lambda lo, _: (b := bound(lo)) is None or b <= v
    if isinstance(expr, BoundGreaterThan):
        return lambda _, hi: (b := bound(hi)) is None or b > v
    return lambda _, hi: (b := bound(hi)) is None or b >= v


_SORTED: ContextVar[dict[int, tuple[object, list[Any]]] | None] = ContextVar(
    "puffin_sorted_literals", default=None
)


@contextmanager
def sorting_once() -> Iterator[None]:
    """Within it, each set of literals is sorted once (a job sorts its key list for its
    files' bounds and again for its rows: 0.03 s each for 100,000 keys); nothing is kept
    after it."""
    token = _SORTED.set({})
    try:
        yield
    finally:
        _SORTED.reset(token)


def sorted_values(literals: Iterable[Any]) -> list[Any]:
    """The values of a set of literals, sorted (once per set inside :func:`sorting_once`)."""
    known = _SORTED.get()
    hit = None if known is None else known.get(id(literals))
    if hit is not None and hit[0] is literals:
        return hit[1]
    values = sorted(lit.value for lit in literals)
    if known is not None:
        known[id(literals)] = (literals, values)
    return values


def _any_between(values: Sequence[int], lower: int | None, upper: int | None) -> bool:
    """Whether a value of the sorted ``values`` lies within the bounds that are known: a
    binary search."""
    i = 0 if lower is None else bisect_left(values, lower)
    return i < len(values) and (upper is None or values[i] <= upper)
