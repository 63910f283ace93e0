"""puffin.types: the Iceberg type model and the one Arrow <-> Iceberg type map."""

from __future__ import annotations

import pyarrow as pa
import pytest

from puffin.types import (
    IcebergType,
    UnsupportedArrowTypeError,
    arrow_type_for,
    iceberg_type_for_arrow,
    parse_type,
)

ROUND_TRIP = [
    ("boolean", pa.bool_()),
    ("int", pa.int32()),
    ("long", pa.int64()),
    ("float", pa.float32()),
    ("double", pa.float64()),
    ("date", pa.date32()),
    ("time", pa.time64("us")),
    ("timestamp", pa.timestamp("us")),
    ("timestamptz", pa.timestamp("us", tz="UTC")),
    ("timestamp_ns", pa.timestamp("ns")),
    ("timestamptz_ns", pa.timestamp("ns", tz="UTC")),
    ("string", pa.large_string()),
    ("binary", pa.large_binary()),
    ("decimal(9, 2)", pa.decimal128(9, 2)),
    ("fixed[5]", pa.binary(5)),
]


@pytest.mark.parametrize(("spelling", "arrow"), ROUND_TRIP)
def test_arrow_type_for_and_back(spelling: str, arrow: pa.DataType) -> None:
    assert arrow_type_for(spelling) == arrow
    assert str(iceberg_type_for_arrow(arrow)) == spelling


def test_uuid_maps_to_16_bytes_and_back_only_with_a_hint() -> None:
    assert arrow_type_for("uuid") == pa.binary(16)
    assert iceberg_type_for_arrow(pa.binary(16)) == IcebergType("fixed", length=16)
    assert iceberg_type_for_arrow(pa.binary(16), uuid_hint=True) == IcebergType("uuid")
    field = pa.field("u", pa.binary(16), metadata={b"ARROW:extension:name": b"arrow.uuid"})
    assert iceberg_type_for_arrow(field.type, field=field) == IcebergType("uuid")
    assert iceberg_type_for_arrow(pa.uuid()) == IcebergType("uuid")


def test_arrow_type_for_takes_pyiceberg_types() -> None:
    from pyiceberg import types as t

    assert arrow_type_for(t.DecimalType(20, 3)) == pa.decimal128(20, 3)
    assert arrow_type_for(t.FixedType(7)) == pa.binary(7)
    assert arrow_type_for(t.TimestamptzType()) == pa.timestamp("us", tz="UTC")
    assert arrow_type_for(t.UUIDType()) == pa.binary(16)
    with pytest.raises(TypeError, match="no Arrow type"):
        arrow_type_for(t.ListType(1, t.IntegerType()))


@pytest.mark.parametrize(
    ("arrow", "expected"),
    [
        (pa.int8(), "int"),
        (pa.uint16(), "int"),
        (pa.uint32(), "long"),
        (pa.float16(), "float"),
        (pa.timestamp("ms", tz="Europe/Paris"), "timestamptz"),
        (pa.date64(), "date"),
        (pa.time32("s"), "time"),
        (pa.string(), "string"),
        (pa.string_view(), "string"),
        (pa.binary_view(), "binary"),
        (pa.dictionary(pa.int8(), pa.string()), "string"),
        (pa.decimal256(38, 0), "decimal(38, 0)"),
    ],
)
def test_iceberg_type_for_arrow_widens(arrow: pa.DataType, expected: str) -> None:
    assert iceberg_type_for_arrow(arrow) == parse_type(expected)


@pytest.mark.parametrize(
    ("arrow", "reason"),
    [
        (pa.uint64(), "uint64"),
        (pa.time64("ns"), "nanosecond time"),
        (pa.decimal256(39, 0), "precision 39"),
        (pa.decimal128(5, -2), "negative decimal scale"),
        (pa.list_(pa.int32()), "nested"),
        (pa.null(), "no Iceberg primitive type"),
    ],
)
def test_iceberg_type_for_arrow_refuses(arrow: pa.DataType, reason: str) -> None:
    with pytest.raises(UnsupportedArrowTypeError, match=reason):
        iceberg_type_for_arrow(arrow)
    assert issubclass(UnsupportedArrowTypeError, TypeError)
