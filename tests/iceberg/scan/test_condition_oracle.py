"""Conditions select exactly the rows an independent evaluator selects, or are refused.

Hypothesis draws a condition over every column of the sample table, with literals of every
kind (whole, fractional, out of range, huge, quoted numbers, text, ±0, infinities, the
column's own values); the rows :func:`bind_where` and :func:`matching_by_file` select are
compared with pyarrow's compute functions applied to the generated data and the literal as
written (never converted by our code; a decimal on a double column is read as a double,
as Spark and DuckDB read it).  A refused condition (``UsageError``) is always
acceptable; a different set of rows never is.  Where pyarrow cannot compare the column with
the literal at all, the condition must be refused.
"""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from puffin.errors import UsageError
from puffin.iceberg import create_sample_table, local_catalog
from puffin.iceberg.catalog.sample import sample_batch
from puffin.iceberg.scan.matching import matching_by_file
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.scan.row_filter import bind_where
from puffin.io.locations import local_path

ROWS, FILES, SEED = 400, 2, 11
OPS = {"=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater",
       ">=": "greater_equal"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, pa.Table]:
    wh = tmp_path_factory.mktemp("oracle")
    table = create_sample_table(local_catalog(wh), "db.t", rows=ROWS, files=FILES, seed=SEED)
    per_file = ROWS // FILES
    model = pa.concat_tables(
        [sample_batch(per_file, start=i * per_file, seed=SEED) for i in range(FILES)]
    )
    return table, model


def _samples(model: pa.Table, name: str) -> list[Any]:
    values = [v for v in model.column(name).to_pylist()[:40] if v is not None]
    if name == "session_id":
        return [str(uuid.UUID(bytes=v)) for v in values]
    if name in ("day", "event_time"):
        return [v.isoformat() for v in values]
    return values


def _literals(model: pa.Table, name: str) -> st.SearchStrategy[Any]:
    own = _samples(model, name)
    numbers = [v for v in own if isinstance(v, (int, float, Decimal))]
    nearby = st.sampled_from(numbers or [0]).flatmap(
        lambda v: st.sampled_from([Decimal(str(v)) + Decimal("0.5"), Decimal(str(v)),
                                   Decimal(str(v)) * 10, Decimal(repr(v)) if isinstance(v, float)
                                   else Decimal(v) + Decimal("0.001")])
    )
    return st.one_of(
        st.sampled_from(own),
        nearby,
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([0, 1, 199, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, 10**30]),
        st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-2000,
                    max_value=2000),
        st.sampled_from([Decimal("1e30"), Decimal("9.5"), Decimal("10.0"), Decimal("0.1"),
                         Decimal("0.10000000000000000001"), Decimal("-0.0")]),
        st.sampled_from([0.0, -0.0, float("inf"), float("-inf"), 0.1, 0.5, 1e300]),
        st.sampled_from(["7", "abc", "2020-01-05", "2024-03-01T10:00:00", "user-7",
                         "00000000-0000-0000-0000-000000000000"]),
        st.sampled_from([str(v) for v in own[:5]]),
    )


@st.composite
def conditions(draw: st.DrawFn, model: pa.Table) -> tuple[str, str, Any]:
    name = draw(st.sampled_from(model.column_names))
    op = draw(st.sampled_from([*OPS, "in", "not in"]))
    if op in ("in", "not in"):
        return name, op, draw(st.lists(_literals(model, name), min_size=1, max_size=3))
    return name, op, draw(_literals(model, name))


def _expression(name: str, op: str, value: Any) -> Any:
    """The condition as pyiceberg's own expression of the literal as written."""
    from pyiceberg.expressions import (
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        LessThan,
        LessThanOrEqual,
        NotEqualTo,
        NotIn,
    )

    kinds = {"=": EqualTo, "!=": NotEqualTo, "<": LessThan, "<=": LessThanOrEqual,
             ">": GreaterThan, ">=": GreaterThanOrEqual, "in": In, "not in": NotIn}
    return kinds[op](name, value)


def _text(name: str, op: str, value: Any) -> str | None:
    """The condition as row-filter text, when the grammar can write the literal."""
    def lit(v: Any) -> str | None:
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, Decimal) and v.is_finite() and "E" not in str(v):
            return str(v)
        return None

    values = value if isinstance(value, list) else [value]
    parts = [lit(v) for v in values]
    if any(p is None for p in parts):
        return None
    if op in ("in", "not in"):
        return f"{name} {op} ({', '.join(p for p in parts if p)})"
    return f"{name} {op} {parts[0]}"


def _scalar(column: pa.ChunkedArray, value: Any) -> pa.Scalar:
    """The literal as pyarrow reads it; text on a temporal or uuid column parsed by the
    standard library (an independent parse), everything else as written."""
    kind = column.type
    if isinstance(value, str) and pa.types.is_date(kind):
        return pa.scalar(datetime.date.fromisoformat(value))
    if isinstance(value, str) and pa.types.is_timestamp(kind):
        parsed = datetime.datetime.fromisoformat(value)
        if parsed.tzinfo is not None:
            raise ValueError("a zone on a timestamp without zone")
        return pa.scalar(parsed, type=kind)
    if isinstance(value, str) and pa.types.is_fixed_size_binary(kind):
        return pa.scalar(uuid.UUID(value).bytes, type=kind)
    if isinstance(value, Decimal) and pa.types.is_floating(kind):
        # SQL engines (Spark, DuckDB) compare a double with a decimal as doubles; pyarrow
        # would cast the column to the literal's decimal scale instead.
        return pa.scalar(float(value))
    if isinstance(value, int) and pa.types.is_floating(kind) and abs(value) < 2**1000:
        if float(value) == value:  # lossless: the same number (pyarrow refuses > 2**53)
            return pa.scalar(float(value))
    return pa.scalar(value)


def _oracle(model: pa.Table, name: str, op: str, value: Any) -> set[int]:
    column = model.column(name)
    if op in ("in", "not in"):  # each literal compared as written; SQL: null in nothing
        masks = [pc.fill_null(pc.equal(column, _scalar(column, v)), False) for v in value]
        found = masks[0]
        for mask in masks[1:]:
            found = pc.or_(found, mask)
        chosen = pc.invert(found) if op == "not in" else found
        chosen = pc.and_(chosen, pc.is_valid(column))
    else:
        chosen = getattr(pc, OPS[op])(column, _scalar(column, value))
    return set(model.filter(chosen).column("id").to_pylist())


def _selected(table: Any, where: Any) -> set[int]:
    bound = bind_where(table, where)
    ids: set[int] = set()
    planned = plan_files(table, table.current_snapshot())
    for path, positions in matching_by_file(table, planned, bound).items():
        file_ids = pq.read_table(local_path(path), columns=["id"]).column("id")
        ids.update(file_ids.take(pa.array(positions)).to_pylist())
    return ids


@settings(max_examples=300)
@given(data=st.data())
def test_selected_rows_equal_pyarrow_on_the_literal_as_written(
    setup: tuple[Any, pa.Table], data: st.DataObject
) -> None:
    table, model = setup
    name, op, value = data.draw(conditions(model))
    try:
        expected: set[int] | None = _oracle(model, name, op, value)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        expected = None  # pyarrow cannot compare them: the condition must be refused
    forms: list[Any] = []
    try:
        forms.append(_expression(name, op, value))
    except (ValueError, TypeError):
        pass  # pyiceberg itself refuses to build it (NaN, mixed kinds)
    text = _text(name, op, value)
    if text is not None:
        forms.append(text)
    for where in forms:
        try:
            got = _selected(table, where)
        except UsageError:
            continue  # refused: always safe
        assert expected is not None, f"{where!r} was accepted; pyarrow cannot evaluate it"
        assert got == expected, f"{where!r}: {len(got)} rows selected, the oracle {len(expected)}"


@pytest.mark.parametrize(
    "where",
    ["category = 9.5", "id = 10.7", "category = '7'", "category = 99999999999", "id = '3'",
     "amount = '1.5'", "price = 1000000000000", "category in (7, 9.5)", "day = 5",
     "amount = 0.10000000000000000001", "user_name = 7",
     # A whole number in a list with a decimal is still a whole number: 10**30 is no double
     # (alone it was refused; written as 10**30.0 beside 0.000 it had been read as 1e30).
     "amount in (1000000000000000000000000000000, 0.000)",
     "amount not in (0.5, 1000000000000000000000000000000)", "category in (7, 2.0, 9.5)"],
)
def test_the_reported_mistakes_are_refused(setup: tuple[Any, pa.Table], where: str) -> None:
    with pytest.raises(UsageError):
        bind_where(setup[0], where)


def test_a_list_of_whole_and_decimal_numbers_reads_each_as_written(
    setup: tuple[Any, pa.Table],
) -> None:
    table, model = setup
    got = _selected(table, "category in (7, 2.0, 9.000)")
    assert got == _oracle(model, "category", "in", [7, 2, 9])
    assert _selected(table, "amount in (0.5, 2)") == _oracle(model, "amount", "in", [0.5, 2.0])


def test_exact_values_in_other_spellings_are_accepted(setup: tuple[Any, pa.Table]) -> None:
    table, model = setup
    assert _selected(table, "category = 10.0") == _oracle(model, "category", "=", 10)
    assert _selected(table, "price = 1.5") == _oracle(model, "price", "=", Decimal("1.50"))

