"""The quick bounds test ahead of pyiceberg's metrics evaluator (``scan/bounds.py``): it rules
a file out only where pyiceberg's ``_InclusiveMetricsEvaluator`` does, and on the filters it
handles (integer-like columns, comparisons and ``in``, ``and``/``or``) it rules out exactly
what pyiceberg does."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("pyiceberg")

from pyiceberg.conversions import to_bytes
from pyiceberg.expressions import (
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNull,
    Or,
)
from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluator
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import (
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
)

from puffin.iceberg.scan.bounds import bounds_test

SCHEMA = Schema(
    NestedField(1, "i", IntegerType()),
    NestedField(2, "l", LongType()),
    NestedField(3, "d", DateType()),
    NestedField(4, "ts", TimestampType()),
    NestedField(5, "s", StringType()),
    NestedField(6, "f", DoubleType()),
)
INTEGERS = {
    1: ("i", IntegerType()),
    2: ("l", LongType()),
    3: ("d", DateType()),
    4: ("ts", TimestampType()),
}
EPOCH = datetime.date(1970, 1, 1)
small = st.integers(-4, 4)


def _literal(name: str, value: int) -> Any:
    """``value`` as a literal of the column (dates as dates, timestamps as datetimes)."""
    if name == "d":
        return EPOCH + datetime.timedelta(days=value)
    if name == "ts":
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)
    return value


@st.composite
def integer_predicates(draw: st.DrawFn, many: bool = False) -> BooleanExpression:
    """A comparison or ``in`` on an integer-like column: what the quick test handles."""
    fid = draw(st.sampled_from(sorted(INTEGERS)))
    name = INTEGERS[fid][0]
    op = draw(
        st.sampled_from([EqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual, In])
    )
    if op is In:
        values = draw(st.lists(small, min_size=2, max_size=5, unique=True))
        if many:  # past pyiceberg's IN_PREDICATE_LIMIT (200): bounds not looked at
            values = list(range(-4, 300))
        return In(name, [_literal(name, v) for v in values])
    return op(name, _literal(name, draw(small)))


@st.composite
def other_predicates(draw: st.DrawFn) -> BooleanExpression:
    """Predicates the quick test leaves to pyiceberg."""
    name = draw(st.sampled_from(["i", "l", "d", "s", "f"]))
    if name == "s":
        op = draw(st.sampled_from([EqualTo, LessThan, GreaterThan]))
        return op("s", draw(st.sampled_from(["a", "m", "z"])))
    if name == "f":
        return draw(st.sampled_from([EqualTo, LessThan, GreaterThan]))("f", float(draw(small)))
    kind = draw(st.sampled_from([NotEqualTo, NotIn, IsNull, NotNull]))
    if kind in (IsNull, NotNull):
        return kind(name)
    value = _literal(name, draw(small))
    return kind(name, [value]) if kind is NotIn else kind(name, value)


def _trees(leaves: st.SearchStrategy[BooleanExpression], negate: bool) -> Any:
    def extend(children: st.SearchStrategy[BooleanExpression]) -> Any:
        pairs = st.tuples(children, children)
        made = [pairs.map(lambda p: And(*p)), pairs.map(lambda p: Or(*p))]
        if negate:
            made.append(children.map(Not))
        return st.one_of(*made)

    return st.recursive(leaves, extend, max_leaves=5)


supported = _trees(integer_predicates(), negate=False)
anything = _trees(
    st.one_of(integer_predicates(), integer_predicates(many=True), other_predicates()),
    negate=True,
)


@st.composite
def data_files(draw: st.DrawFn, plain: bool = False) -> DataFile:
    """A data file with bounds, some missing, on every column; ``plain``: a positive row
    count and no null or NaN counts (what the exact comparison holds to)."""
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for fid, (_, field_type) in INTEGERS.items():
        lo, hi = sorted(draw(st.tuples(small, small)))
        if draw(st.booleans()) or plain:
            lower[fid] = to_bytes(field_type, lo)
        if draw(st.booleans()) or plain:
            upper[fid] = to_bytes(field_type, hi)
    lower[5], upper[5] = b"b", b"n"
    lower[6], upper[6] = to_bytes(DoubleType(), -1.0), to_bytes(DoubleType(), 2.0)
    rows = 10 if plain else draw(st.sampled_from([-1, 0, 1, 10]))
    nulls = (
        {}
        if plain
        else draw(
            st.dictionaries(st.sampled_from([1, 2, 3, 4]), st.sampled_from([0, 10]), max_size=2)
        )
    )
    values = {fid: 10 for fid in range(1, 7)}
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path="s3://b/f.parquet",
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=rows,
        file_size_in_bytes=100,
        value_counts=values,
        null_value_counts=nulls,
        lower_bounds=lower,
        upper_bounds=upper,
    )


def _pyicebergs(expr: BooleanExpression, data_file: DataFile) -> bool:
    return _InclusiveMetricsEvaluator(SCHEMA, expr).eval(data_file)


@given(expr=anything, data_file=data_files())
def test_rules_out_only_what_pyiceberg_rules_out(expr: BooleanExpression, data_file: Any) -> None:
    test = bounds_test(SCHEMA, expr)
    if test is not None and not test(data_file):
        assert not _pyicebergs(expr, data_file), (expr, data_file)


@given(expr=supported, data_file=data_files(plain=True))
def test_rules_out_exactly_what_pyiceberg_does_on_what_it_handles(
    expr: BooleanExpression, data_file: Any
) -> None:
    test = bounds_test(SCHEMA, expr)
    assert test is not None
    assert test(data_file) == _pyicebergs(expr, data_file), expr


def _file(fid: int, lower: int | None, upper: int | None) -> DataFile:
    field_type = INTEGERS[fid][1]
    return DataFile.from_args(
        record_count=10,
        lower_bounds={} if lower is None else {fid: to_bytes(field_type, lower)},
        upper_bounds={} if upper is None else {fid: to_bytes(field_type, upper)},
    )


def test_every_single_comparison_against_every_bound() -> None:
    """Each comparison, on each integer-like type, of each value against each pair of bounds
    (either may be missing) within a small range: the same answer as pyiceberg's."""
    ops = [EqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual]
    known = [None, *range(-3, 4)]
    files = {
        fid: [
            _file(fid, lo, hi)
            for lo in known
            for hi in known
            if lo is None or hi is None or lo <= hi
        ]
        for fid in INTEGERS
    }
    checked = 0
    for fid, (name, _) in INTEGERS.items():
        for value in range(-4, 5):
            literal = _literal(name, value)
            exprs = [op(name, literal) for op in ops]
            exprs.append(In(name, [literal, _literal(name, value + 3)]))
            for expr in exprs:
                test = bounds_test(SCHEMA, expr)
                assert test is not None
                for data_file in files[fid]:
                    assert test(data_file) == _pyicebergs(expr, data_file), (expr, data_file)
                    checked += 1
    assert checked == 4 * 9 * 6 * 43  # 43 pairs of bounds: 1 + 7 + 7 missing one, 28 known


def test_what_it_leaves_to_pyiceberg() -> None:
    """No test for filters with no integer comparison; an ``or`` with such a part, an ``in``
    past pyiceberg's limit, a bound of the wrong width and an untrusted row count may match."""
    for expr in (
        EqualTo("s", "a"),
        NotNull("i"),
        Or(EqualTo("l", 1), EqualTo("s", "a")),
        In("l", list(range(300))),
        NotIn("l", [1]),
    ):
        assert bounds_test(SCHEMA, expr) is None, expr
    for expr in (And(EqualTo("l", 9), EqualTo("s", "a")), And(EqualTo("s", "a"), EqualTo("l", 9))):
        test = bounds_test(SCHEMA, expr)  # the integer part of an ``and`` still rules out
        assert test is not None
        assert test(_file(2, 1, 1)) is False
    files = [
        DataFile.from_args(record_count=rows, lower_bounds={2: raw}, upper_bounds={2: raw})
        for rows, raw in (
            (10, to_bytes(LongType(), 1)),
            (10, b"\x01\x00\x00\x00"),
            (-1, to_bytes(LongType(), 1)),
        )
    ]
    assert [test(f) for f in files] == [False, True, True]
    assert test(DataFile.from_args(record_count=10)) is True  # no bounds at all


def test_an_in_of_exactly_the_limit_is_still_tested() -> None:
    """pyiceberg looks at bounds up to IN_PREDICATE_LIMIT (200) literals, not past it."""
    from pyiceberg.expressions.visitors import IN_PREDICATE_LIMIT

    at_limit = In("l", list(range(100, 100 + IN_PREDICATE_LIMIT)))
    test = bounds_test(SCHEMA, at_limit)
    assert test is not None
    assert test(_file(2, 1, 1)) is False
    assert _pyicebergs(at_limit, _file(2, 1, 1)) is False


def test_names_are_case_sensitive_unless_told() -> None:
    """As pyiceberg's evaluator: ``L`` is not the column ``l`` by default."""
    with pytest.raises(ValueError, match="Could not find field with name L"):
        bounds_test(SCHEMA, EqualTo("L", 1))
    with pytest.raises(ValueError, match="Could not find field with name L"):
        bounds_test(SCHEMA, EqualTo("L", 1), case_sensitive=True)
    test = bounds_test(SCHEMA, EqualTo("L", 1), case_sensitive=False)
    assert test is not None
    assert test(_file(2, 5, 6)) is False
