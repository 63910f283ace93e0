"""Iceberg single-value serialization (spec Appendix D), scalar and vectorized.

Oracles: pyiceberg's ``conversions.to_bytes`` (an independent implementation of Appendix D),
Java's documented constants (canonical NaN bits, ``BigInteger.toByteArray``), and the spec's
own rules.  The vectorized paths (NumPy, pyarrow, Python lists) must agree with the scalar
path value by value.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyiceberg import types as it
from pyiceberg.conversions import to_bytes

from puffin import serialize_value, serialize_values
from puffin.blobs.single_value import IcebergType, parse_type

UTC = dt.timezone.utc

# -- types -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        ("int", IcebergType("int")),
        ("  Long ", IcebergType("long")),
        ("decimal(9,2)", IcebergType("decimal", precision=9, scale=2)),
        ("decimal(38, 0)", IcebergType("decimal", precision=38, scale=0)),
        ("fixed[16]", IcebergType("fixed", length=16)),
        ("timestamptz_ns", IcebergType("timestamptz_ns")),
        (it.DecimalType(9, 2), IcebergType("decimal", precision=9, scale=2)),
        (it.FixedType(3), IcebergType("fixed", length=3)),
        (it.TimestamptzType(), IcebergType("timestamptz")),
        (it.TimestampNanoType(), IcebergType("timestamp_ns")),
        (it.UUIDType(), IcebergType("uuid")),
    ],
)
def test_parse_type(spelling: object, expected: IcebergType) -> None:
    assert parse_type(spelling) == expected
    assert parse_type(str(expected)) == expected


@pytest.mark.parametrize(
    "bad", ["struct", "list<int>", "decimal(39,2)", "decimal(5,6)", "fixed[0]", "integer", ""]
)
def test_parse_type_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_type(bad)


def test_parse_type_rejects_non_types() -> None:
    with pytest.raises(TypeError):
        parse_type(42)


# -- known answers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "type_", "hex_"),
    [
        (True, "boolean", "01"),
        (False, "boolean", "00"),
        (1, "int", "01000000"),
        (-1, "int", "ffffffff"),
        (1, "long", "0100000000000000"),
        (-2, "long", "feffffffffffffff"),
        (1.0, "float", "0000803f"),
        (1.0, "double", "000000000000f03f"),
        # Java keeps -0.0 apart from 0.0 (putFloat/putDouble write the raw bits).
        (-0.0, "float", "00000080"),
        (-0.0, "double", "0000000000000080"),
        # Every NaN becomes Java's canonical Float.NaN / Double.NaN.
        (float("nan"), "float", "0000c07f"),
        (-float("nan"), "double", "000000000000f87f"),
        (struct.unpack("<d", bytes.fromhex("0100000000f0ff7f"))[0], "double", "000000000000f87f"),
        (dt.date(1970, 1, 2), "date", "01000000"),
        (dt.date(1969, 12, 31), "date", "ffffffff"),
        (dt.time(0, 0, 1), "time", "40420f0000000000"),
        (dt.datetime(1970, 1, 1, 0, 0, 1), "timestamp", "40420f0000000000"),
        (
            dt.datetime(1970, 1, 1, 1, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
            "timestamptz",
            "40420f0000000000",
        ),
        (dt.datetime(1970, 1, 1, 0, 0, 0, 1), "timestamp_ns", "e803000000000000"),
        (np.datetime64(1, "ns"), "timestamptz_ns", "0100000000000000"),
        ("a\u00e9", "string", "61c3a9"),
        ("", "string", ""),
        (
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
            "uuid",
            "f79c3e09677c4bbda4793f349cb785e7",
        ),
        ("f79c3e09-677c-4bbd-a479-3f349cb785e7", "uuid", "f79c3e09677c4bbda4793f349cb785e7"),
        (b"\x00\x01", "fixed[2]", "0001"),
        (b"", "binary", ""),
        # Java's BigInteger.toByteArray: shortest two's complement, big-endian.
        (decimal.Decimal("0.00"), "decimal(9,2)", "00"),
        (decimal.Decimal("1.27"), "decimal(9,2)", "7f"),
        (decimal.Decimal("1.28"), "decimal(9,2)", "0080"),
        (decimal.Decimal("-1.28"), "decimal(9,2)", "80"),
        (decimal.Decimal("-1.29"), "decimal(9,2)", "ff7f"),
        (decimal.Decimal("1.5"), "decimal(9,2)", "0096"),  # rescaled to 150
        (3, "decimal(9,2)", "012c"),  # integers are values: 3 -> 300
    ],
)
def test_known_answers(value: object, type_: str, hex_: str) -> None:
    assert serialize_value(value, type_).hex() == hex_


def test_largest_decimal_matches_python_twos_complement() -> None:
    v = -(10**38 - 1)
    assert serialize_value(decimal.Decimal(v), "decimal(38,0)") == v.to_bytes(
        16, "big", signed=True
    )


@pytest.mark.parametrize(
    ("value", "type_", "error"),
    [
        (None, "int", ValueError),
        (2**31, "int", ValueError),
        (2**63, "long", ValueError),
        (True, "int", TypeError),
        ("1", "long", TypeError),
        (1, "boolean", TypeError),
        (1.5, "int", TypeError),
        (b"abc", "fixed[2]", ValueError),
        ("ab", "binary", TypeError),
        (b"ab", "string", TypeError),
        ("\ud800", "string", ValueError),
        ("not-a-uuid", "uuid", ValueError),
        (b"short", "uuid", ValueError),
        (decimal.Decimal("1.234"), "decimal(9,2)", ValueError),
        (decimal.Decimal("12345678.9"), "decimal(9,2)", ValueError),
        (decimal.Decimal("NaN"), "decimal(9,2)", ValueError),
        (1.5, "decimal(9,2)", TypeError),
        (dt.datetime(2020, 1, 1), "date", TypeError),
        (dt.date(2020, 1, 1), "timestamp", TypeError),
        (np.datetime64("NaT"), "timestamp", ValueError),
        (np.datetime64(1, "ns"), "timestamp", ValueError),  # would lose precision
    ],
)
def test_rejects(value: object, type_: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        serialize_value(value, type_)


# -- pyiceberg as an independent oracle -------------------------------------------------------

_PYICEBERG_CASES = [
    (it.BooleanType(), st.booleans()),
    (it.IntegerType(), st.integers(-(2**31), 2**31 - 1)),
    (it.LongType(), st.integers(-(2**63), 2**63 - 1)),
    (it.FloatType(), st.floats(width=32, allow_nan=False)),
    (it.DoubleType(), st.floats(allow_nan=False)),
    (it.DateType(), st.dates()),
    (it.TimeType(), st.times()),
    (it.TimestampType(), st.datetimes()),
    (it.TimestamptzType(), st.datetimes(timezones=st.just(UTC))),
    (
        it.TimestampNanoType(),
        st.datetimes(min_value=dt.datetime(1700, 1, 1), max_value=dt.datetime(2250, 1, 1)),
    ),
    (it.StringType(), st.text()),
    (it.UUIDType(), st.uuids()),
    (it.BinaryType(), st.binary(max_size=40)),
    (it.FixedType(7), st.binary(min_size=7, max_size=7)),
    (
        it.DecimalType(38, 10),
        st.decimals(
            places=10,
            allow_nan=False,
            allow_infinity=False,
            min_value=-(10**28) + 1,
            max_value=10**28 - 1,
        ),
    ),
    (it.DecimalType(5, 0), st.integers(-99999, 99999).map(decimal.Decimal)),
]


@pytest.mark.parametrize(("itype", "strategy"), _PYICEBERG_CASES, ids=lambda c: str(c))
def test_scalar_matches_pyiceberg(
    itype: it.PrimitiveType, strategy: st.SearchStrategy[object]
) -> None:
    @given(st.lists(strategy, min_size=1, max_size=20))
    def check(values: list[object]) -> None:
        for v in values:
            if isinstance(v, decimal.Decimal):
                with decimal.localcontext(prec=60):
                    v = v.quantize(decimal.Decimal(1).scaleb(-itype.scale))  # type: ignore[attr-defined]
            assert serialize_value(v, itype) == to_bytes(itype, v)

    check()


# -- vectorized == scalar ------------------------------------------------------------------------


def _scalar_list(values: list[object], type_: str) -> list[bytes | None]:
    return [None if v is None else serialize_value(v, type_) for v in values]


@given(st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=60))
def test_vector_int_sources_agree(values: list[int | None]) -> None:
    expected = _scalar_list(values, "int")
    assert serialize_values(values, "int").to_pylist() == expected
    assert serialize_values(pa.array(values, pa.int32()), "int").to_pylist() == expected
    assert serialize_values(pa.array(values, pa.int64()), "int").to_pylist() == expected
    masked = np.ma.masked_array(
        [0 if v is None else v for v in values], mask=[v is None for v in values], dtype=np.int64
    )
    assert serialize_values(masked, "int").to_pylist() == expected
    result = serialize_values(pa.array(values, pa.int32()), "int")
    assert result.width == 4 and result.null_count == values.count(None)


@given(st.lists(st.one_of(st.none(), st.floats(), st.floats(width=32)), max_size=60))
def test_vector_float_sources_agree(values: list[float | None]) -> None:
    for type_, arrow_type in (
        ("double", pa.float64()),
        ("float", pa.float32()),
        ("float", pa.float64()),
    ):
        expected = _scalar_list(values, type_)
        assert serialize_values(values, type_).to_pylist() == expected
        assert serialize_values(pa.array(values, arrow_type), type_).to_pylist() == expected
        if None not in values:
            assert (
                serialize_values(np.array(values, dtype=np.float64), type_).to_pylist() == expected
            )


@given(
    st.lists(
        st.one_of(
            st.none(),
            st.datetimes(min_value=dt.datetime(1678, 1, 1), max_value=dt.datetime(2261, 12, 31)),
        ),
        max_size=40,
    )
)
def test_vector_temporal_sources_agree(values: list[dt.datetime | None]) -> None:
    for type_, unit in (("timestamp", "us"), ("timestamptz", "us"), ("timestamp_ns", "ns")):
        expected = _scalar_list(values, type_)
        arrow = pa.array(values, pa.timestamp(unit))
        assert serialize_values(arrow, type_).to_pylist() == expected
        assert serialize_values(values, type_).to_pylist() == expected
        as_np = np.array(
            ["NaT" if v is None else np.datetime64(v, "us") for v in values], dtype="datetime64[us]"
        )
        assert serialize_values(as_np, type_).to_pylist() == expected
    dates = [None if v is None else v.date() for v in values]
    expected = _scalar_list(dates, "date")
    assert serialize_values(pa.array(dates, pa.date32()), "date").to_pylist() == expected
    assert serialize_values(pa.array(dates, pa.date64()), "date").to_pylist() == expected
    as_np = np.array(
        ["NaT" if d is None else np.datetime64(d, "D") for d in dates], dtype="datetime64[D]"
    )
    assert serialize_values(as_np, "date").to_pylist() == expected
    times = [None if v is None else v.time() for v in values]
    expected = _scalar_list(times, "time")
    assert serialize_values(pa.array(times, pa.time64("us")), "time").to_pylist() == expected
    assert serialize_values(pa.array(times, pa.time64("ns")), "time").to_pylist() == expected


@given(st.lists(st.one_of(st.none(), st.text(max_size=40)), max_size=60))
def test_vector_string_sources_agree(values: list[str | None]) -> None:
    expected = _scalar_list(values, "string")
    for source in (
        values,
        pa.array(values),
        pa.array(values, pa.large_string()),
        pa.array(values, pa.string_view()),
        pa.chunked_array([values[:3], values[3:]], pa.string()),
        np.array(values, dtype=object),
    ):
        result = serialize_values(source, "string")
        assert result.to_pylist() == expected and result.width is None
    if None not in values:
        assert serialize_values(np.array(values, dtype=str), "string").to_pylist() == [
            serialize_value(str(v), "string") for v in np.array(values, dtype=str)
        ]


@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=60))
def test_vector_binary_sources_agree(values: list[bytes | None]) -> None:
    expected = _scalar_list(values, "binary")
    for source in (
        values,
        pa.array(values, pa.binary()),
        pa.array(values, pa.large_binary()),
        pa.array(values, pa.binary_view()),
    ):
        assert serialize_values(source, "binary").to_pylist() == expected
    fixed = [None if v is None else (v + bytes(5))[:5] for v in values]
    expected = _scalar_list(fixed, "fixed[5]")
    assert serialize_values(pa.array(fixed, pa.binary(5)), "fixed[5]").to_pylist() == expected
    assert serialize_values(pa.array(fixed, pa.binary()), "fixed[5]").to_pylist() == expected
    assert serialize_values(fixed, "fixed[5]").to_pylist() == expected
    # fixed-size binary read as Iceberg binary keeps every byte
    assert serialize_values(pa.array(fixed, pa.binary(5)), "binary").to_pylist() == expected


@given(st.lists(st.one_of(st.none(), st.uuids()), max_size=40), st.booleans())
def test_vector_uuid_sources_agree(values: list[uuid.UUID | None], upper: bool) -> None:
    expected = _scalar_list(values, "uuid")
    texts = [None if u is None else (str(u).upper() if upper else str(u)) for u in values]
    assert serialize_values(values, "uuid").to_pylist() == expected
    assert serialize_values(texts, "uuid").to_pylist() == expected
    assert serialize_values(pa.array(texts), "uuid").to_pylist() == expected
    raw = [None if u is None else u.bytes for u in values]
    assert serialize_values(pa.array(raw, pa.binary(16)), "uuid").to_pylist() == expected
    if None not in values:
        rows = np.array([list(u.bytes) for u in values], dtype=np.uint8).reshape(-1, 16)
        assert serialize_values(rows, "uuid").to_pylist() == expected
        braces = ["{" + str(u) + "}" for u in values]  # not canonical: per-value fallback
        assert serialize_values(pa.array(braces), "uuid").to_pylist() == expected


@given(
    st.lists(st.one_of(st.none(), st.integers(-(10**18) + 1, 10**18 - 1)), max_size=40),
    st.integers(0, 20),
)
def test_vector_decimal_sources_agree(unscaled: list[int | None], scale: int) -> None:
    type_ = f"decimal(38,{scale})"
    values = [None if u is None else decimal.Decimal(u).scaleb(-scale) for u in unscaled]
    expected = _scalar_list(values, type_)
    assert serialize_values(values, type_).to_pylist() == expected
    arrow = pa.array(values, pa.decimal128(38, scale))
    assert serialize_values(arrow, type_).to_pylist() == expected
    assert serialize_values(arrow.cast(pa.decimal256(40, scale)), type_).to_pylist() == expected
    if scale <= 18:
        wider = pa.array(values, pa.decimal128(38, scale)).cast(
            pa.decimal128(38, min(38, scale + 2))
        )
        assert serialize_values(wider, type_).to_pylist() == expected  # rescaled exactly


@given(st.lists(st.integers(-(10**6), 10**6), max_size=40), st.integers(0, 12))
def test_vector_decimal_from_integers(values: list[int], scale: int) -> None:
    type_ = f"decimal(38,{scale})"
    expected = _scalar_list(values, type_)  # integers are numeric values
    assert serialize_values(np.array(values, dtype=np.int64), type_).to_pylist() == expected


def test_vector_rejections() -> None:
    with pytest.raises(ValueError):
        serialize_values(np.array([2**40]), "int")
    with pytest.raises(ValueError):
        serialize_values(pa.array([decimal.Decimal("1.234")]), "decimal(9,2)")
    with pytest.raises(ValueError):
        serialize_values(
            pa.array([decimal.Decimal("12345678.91")], pa.decimal128(12, 2)), "decimal(9,2)"
        )
    with pytest.raises(ValueError):
        serialize_values(np.array([1], dtype="datetime64[ns]"), "timestamp")
    with pytest.raises(ValueError):
        serialize_values(np.array([10**12]), "decimal(9,2)")
    with pytest.raises(ValueError):
        serialize_values(pa.array([b"abc"]), "fixed[2]")
    with pytest.raises(TypeError):
        serialize_values(pa.array([1.5]), "int")
    with pytest.raises(TypeError):
        serialize_values(pa.array(["x"]), "long")
    with pytest.raises(TypeError):
        serialize_values(np.array([1.5]), "decimal(9,2)")
    with pytest.raises(TypeError):
        serialize_values("abc", "string")


def test_nulls_and_nat() -> None:
    result = serialize_values(np.array(["2020-01-01", "NaT"], dtype="datetime64[D]"), "date")
    assert result.to_pylist() == [serialize_value(dt.date(2020, 1, 1), "date"), None]
    assert serialize_values(pa.nulls(3), "string").to_pylist() == [None] * 3
    assert serialize_values(pa.nulls(2), "long").to_pylist() == [None] * 2
    dictionary = pa.array(["b", None, "a", "b"]).dictionary_encode()
    assert serialize_values(dictionary, "string").to_pylist() == [b"b", None, b"a", b"b"]


def test_sliced_arrow_arrays() -> None:
    arr = pa.array([1, None, 3, 4, 5], pa.int64()).slice(1, 3)
    assert serialize_values(arr, "long").to_pylist() == [
        None,
        *(serialize_value(v, "long") for v in (3, 4)),
    ]
    strings = pa.array(["aa", None, "ccc", "d"]).slice(1)
    assert serialize_values(strings, "string").to_pylist() == [None, b"ccc", b"d"]
    bools = pa.array([True, False, None, True, False, True, True, False, True]).slice(3)
    assert serialize_values(bools, "boolean").to_pylist() == [
        b"\x01",
        b"\x00",
        b"\x01",
        b"\x01",
        b"\x00",
        b"\x01",
    ]


def test_pandas_inputs() -> None:
    pd = pytest.importorskip("pandas")
    assert serialize_values(pd.Series(["a", None, "b", float("nan")]), "string").to_pylist() == [
        b"a",
        None,
        b"b",
        None,
    ]
    ints = pd.Series([1, None, 3], dtype="Int64")
    expected = [serialize_value(1, "long"), None, serialize_value(3, "long")]
    assert serialize_values(ints, "long").to_pylist() == expected
    assert serialize_values(ints.array, "long").to_pylist() == expected
    stamps = pd.Series(pd.to_datetime(["2020-01-01", None]))
    assert serialize_values(stamps, "timestamp").to_pylist() == [
        serialize_value(dt.datetime(2020, 1, 1), "timestamp"),
        None,
    ]


def test_arrow_uuid_extension_type() -> None:
    if not hasattr(pa, "uuid"):
        pytest.skip("pyarrow without the uuid extension type")
    values = [uuid.UUID(int=i * 7919) for i in range(5)]
    arr = pa.array([u.bytes for u in values], pa.uuid())
    assert serialize_values(arr, "uuid").to_pylist() == [u.bytes for u in values]
