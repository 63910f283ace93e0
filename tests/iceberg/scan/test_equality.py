"""Equality-delete matching in Arrow against a model in plain Python: a row is deleted when
its key values equal one delete row's, a null equal to a null, for one key column or several
of every kind the spec's equality ids allow here. Floating-point keys compare as Iceberg Java
compares them (``Float.compareTo``, which its ``StructLikeSet`` uses): a NaN equals a NaN,
``-0.0`` does not equal ``0.0``."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from puffin.iceberg.scan.key_sets import deleted_by_keys

KINDS: dict[str, tuple[pa.DataType, Any]] = {
    # The extremes: keys among them are found by binary search, small keys by the dense
    # table, where an extreme data value's offset wraps around.
    "long": (pa.int64(), st.one_of(st.integers(-3, 3), st.sampled_from([-(2**63), 2**63 - 1]))),
    "int": (pa.int32(), st.integers(-3, 3)),
    "string": (pa.string(), st.sampled_from(["", "a", "b", "ab"])),
    "binary": (pa.binary(), st.sampled_from([b"", b"\x00", b"x"])),
    "fixed": (pa.binary(2), st.sampled_from([b"\x00\x00", b"\x00\x01", b"zz"])),
    "date": (pa.date32(), st.sampled_from([datetime.date(1970, 1, d) for d in (1, 2, 3)])),
    "decimal": (pa.decimal128(5, 2), st.sampled_from([Decimal("0.00"), Decimal("1.50")])),
    "bool": (pa.bool_(), st.booleans()),
    "double": (pa.float64(), st.sampled_from([0.0, -0.0, 1.5, math.nan])),
    "float": (pa.float32(), st.sampled_from([0.0, -0.0, 2.5, math.inf, math.nan])),
    "timestamp": (
        pa.timestamp("us"),
        st.sampled_from([datetime.datetime(1970, 1, 1), datetime.datetime(2024, 3, 1)]),
    ),
}


@st.composite
def cases(draw: Any) -> tuple[pa.Table, pa.Table]:
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=3, unique=True))
    values = [st.one_of(st.none(), KINDS[k][1]) for k in kinds]

    def table(rows: int) -> pa.Table:
        drawn = [draw(st.lists(values[i], min_size=rows, max_size=rows)) for i in range(len(kinds))]
        return pa.table(
            [pa.array(col, KINDS[k][0]) for col, k in zip(drawn, kinds, strict=True)],
            names=kinds,
        )

    return table(draw(st.integers(0, 30))), table(draw(st.integers(0, 8)))


@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_rows_equal_to_a_delete_row_are_deleted_nulls_equal(case: Any) -> None:
    rows, keys = case

    def java(table: pa.Table) -> list[tuple[Any, ...]]:
        columns = ([_java_key(v) for v in table.column(n).to_pylist()] for n in rows.column_names)
        return list(zip(*columns, strict=True))

    deleted = set(java(keys))
    expected = [row in deleted for row in java(rows)]  # Python's == : None equals None
    assert deleted_by_keys(rows, keys).tolist() == expected


def _java_key(value: Any) -> Any:
    """A float as ``Float.compareTo`` tells floats apart: every NaN one value, the zeros two."""
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else (value, math.copysign(1.0, value))
    return value


def test_keys_of_a_narrower_type_are_widened_and_columns_matched_by_name() -> None:
    rows = pa.table({"id": pa.array([1, 2, None, 4], pa.int64()), "s": ["a", "b", None, "d"]})
    keys = pa.table({"s": ["b", None, "d"], "id": pa.array([2, None, 5], pa.int32())})
    assert deleted_by_keys(rows, keys).tolist() == [False, True, True, False]


def test_different_key_columns_are_refused() -> None:
    with pytest.raises(ValueError, match="key columns differ"):
        deleted_by_keys(pa.table({"a": [1]}), pa.table({"b": [1]}))
