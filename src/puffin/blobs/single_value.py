"""Iceberg's single-value serialization (table spec, Appendix D), one value or whole columns.

Theta sketches in Iceberg statistics hash each value's single-value bytes, so a sketch is only
comparable with Java's when these bytes are exactly Java's ``Conversions.toByteBuffer``:

=====================  ==================================================================
type                   bytes
=====================  ==================================================================
boolean                ``00`` or ``01``
int, date              4-byte little-endian int (date: days since 1970-01-01)
long, time, timestamp  8-byte little-endian long (microseconds; ``_ns`` types: nanoseconds)
float, double          4/8-byte little-endian IEEE 754; every NaN is written as Java's
                       canonical NaN (``7fc00000`` / ``7ff8000000000000``), -0.0 stays -0.0
string                 UTF-8 without length
uuid                   16 bytes, big-endian (most significant byte first)
fixed(L), binary       the bytes themselves
decimal(P, S)          unscaled value at scale S, minimal two's-complement big-endian
=====================  ==================================================================

:func:`serialize_value` handles one Python value.  :func:`serialize_values` handles a whole
column (NumPy array, pyarrow array or chunked array, or a Python sequence) without a Python call
per value where the input allows it, and returns a :class:`SerializedValues`: the bytes of all
values in one uint8 buffer plus offsets (or a fixed width), and a validity mask for nulls.
Types are given as the spec's JSON spelling (``"int"``, ``"decimal(9,2)"``, ``"fixed[16]"``),
as an :class:`IcebergType`, or as a pyiceberg type object (imported lazily, never required).

NumPy and pyarrow are imported only when this module is used; pyarrow is optional.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

__all__ = [
    "IcebergType",
    "SerializedValues",
    "parse_type",
    "serialize_value",
    "serialize_values",
]

_PRIMITIVES = frozenset(
    {
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "binary",
    }
)
_FIXED_WIDTH = {
    "boolean": 1,
    "int": 4,
    "date": 4,
    "float": 4,
    "long": 8,
    "double": 8,
    "time": 8,
    "timestamp": 8,
    "timestamptz": 8,
    "timestamp_ns": 8,
    "timestamptz_ns": 8,
    "uuid": 16,
}
_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
_FIXED_RE = re.compile(r"^fixed\[\s*(\d+)\s*\]$")
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_FLOAT_NAN = struct.pack("<I", 0x7FC00000)
_DOUBLE_NAN = struct.pack("<Q", 0x7FF8000000000000)
_NAT = np.iinfo(np.int64).min  # NumPy's NaT as an int64


@dataclass(frozen=True)
class IcebergType:
    """An Iceberg primitive type: ``name`` plus decimal precision/scale or fixed length."""

    name: str
    precision: int | None = None
    scale: int | None = None
    length: int | None = None

    def __str__(self) -> str:
        if self.name == "decimal":
            return f"decimal({self.precision}, {self.scale})"
        if self.name == "fixed":
            return f"fixed[{self.length}]"
        return self.name

    @property
    def width(self) -> int | None:
        """Byte width of every serialized value, or ``None`` when it varies."""
        if self.name == "fixed":
            return self.length
        return _FIXED_WIDTH.get(self.name)


def parse_type(iceberg_type: str | IcebergType | Any) -> IcebergType:
    """Read a type from its JSON spelling, an :class:`IcebergType`, or a pyiceberg type."""
    if isinstance(iceberg_type, IcebergType):
        return iceberg_type
    if isinstance(iceberg_type, str):
        text = iceberg_type
    elif type(iceberg_type).__module__.startswith("pyiceberg"):
        # pyiceberg primitive types print as their JSON spelling ("decimal(9, 2)").
        text = str(iceberg_type)
    else:
        raise TypeError(f"not an Iceberg type: {iceberg_type!r}")
    text = text.strip().lower()
    if text in _PRIMITIVES:
        return IcebergType(text)
    m = _DECIMAL_RE.match(text)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2))
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise ValueError(f"invalid decimal type {iceberg_type!r}: P must be 1-38, S 0-P")
        return IcebergType("decimal", precision=precision, scale=scale)
    m = _FIXED_RE.match(text)
    if m:
        length = int(m.group(1))
        if length < 1:
            raise ValueError(f"invalid fixed type {iceberg_type!r}: length must be positive")
        return IcebergType("fixed", length=length)
    raise ValueError(f"unsupported Iceberg type for single-value serialization: {iceberg_type!r}")


# ---------------------------------------------------------------------------------------------
# One value
# ---------------------------------------------------------------------------------------------


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} expects an integer, not a boolean")
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise TypeError(f"{what} expects an integer, got {type(value).__name__}")


def _check_range(v: int, bounds: tuple[int, int], what: str) -> int:
    if not bounds[0] <= v <= bounds[1]:
        raise ValueError(f"{v} is out of range for {what}")
    return v


def _datetime64_to_int(value: np.datetime64 | np.timedelta64, unit: str, what: str) -> int:
    if np.isnat(value):
        raise ValueError(f"NaT is a null, it has no {what} serialization")
    units, _ = _time_units(np.array([value]), unit, None, what)
    return int(units[0])


def _days(value: Any) -> int:
    if isinstance(value, _dt.datetime):
        raise TypeError("date expects a datetime.date, not a datetime.datetime")
    if isinstance(value, _dt.date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, np.datetime64):
        return _datetime64_to_int(value, "D", "date")
    return _as_int(value, "date")


def _micros_of_day(value: Any) -> int:
    if isinstance(value, _dt.time):
        seconds = (value.hour * 60 + value.minute) * 60 + value.second
        return seconds * 1_000_000 + value.microsecond
    if isinstance(value, np.timedelta64):
        return _datetime64_to_int(value, "us", "time")
    return _as_int(value, "time")


def _epoch_units(value: Any, nanos: bool) -> int:
    what = "timestamp_ns" if nanos else "timestamp"
    if isinstance(value, _dt.datetime):
        delta = value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return micros * 1000 if nanos else micros
    if isinstance(value, _dt.date):
        raise TypeError(f"{what} expects a datetime.datetime, not a datetime.date")
    if isinstance(value, np.datetime64):
        return _datetime64_to_int(value, "ns" if nanos else "us", what)
    return _as_int(value, what)


def _unscaled(value: Any, precision: int, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale``, checked against ``precision``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("decimal expects a Decimal or an integer, not a boolean")
    if isinstance(value, (int, np.integer)):
        unscaled = int(value) * 10**scale
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} has no decimal serialization")
        sign, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)
        shift = exponent + scale
        coefficient = int("".join(map(str, digits)) or "0")
        if shift >= 0:
            unscaled = coefficient * 10**shift
        else:
            unscaled, rest = divmod(coefficient, 10**-shift)
            if rest:
                raise ValueError(f"{value} has more than {scale} fractional digits")
        if sign:
            unscaled = -unscaled
    else:
        raise TypeError(f"decimal expects a Decimal or an integer, got {type(value).__name__}")
    if abs(unscaled) >= 10**precision:
        raise ValueError(f"{value} does not fit decimal({precision}, {scale})")
    return int(unscaled)


def _min_twos_complement(v: int) -> bytes:
    """Java's ``BigInteger.toByteArray``: the shortest big-endian two's complement."""
    n = (v if v >= 0 else ~v).bit_length() // 8 + 1
    return v.to_bytes(n, "big", signed=True)


def _uuid_bytes(value: Any) -> bytes:
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        try:
            return uuid.UUID(value).bytes
        except ValueError as exc:
            raise ValueError(f"not a UUID: {value!r}") from exc
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) != 16:
            raise ValueError(f"a uuid is 16 bytes, got {len(raw)}")
        return raw
    raise TypeError(f"uuid expects uuid.UUID, str or 16 bytes, got {type(value).__name__}")


def _float_bytes(value: Any, double: bool) -> bytes:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        what = "double" if double else "float"
        raise TypeError(f"{what} expects a number, got {type(value).__name__}")
    f = float(value)
    if math.isnan(f):
        return _DOUBLE_NAN if double else _FLOAT_NAN
    if double:
        return struct.pack("<d", f)
    with np.errstate(over="ignore"):
        return bytes(np.float32(f).astype("<f4").tobytes())  # rounds like Java's (float) cast


def serialize_value(value: Any, iceberg_type: str | IcebergType | Any) -> bytes:
    """The single-value serialization of one non-null ``value`` of ``iceberg_type``.

    Accepted Python values: ``bool``; ``int`` for the integer, date (days), time (micros),
    timestamp (micros or nanos) and decimal (the numeric value) types; ``float``;
    ``datetime.date``/``time``/``datetime`` (naive values are taken as UTC wall-clock time);
    NumPy scalars of the matching kinds; ``str``; ``bytes``; ``uuid.UUID`` (or its string or
    16 bytes) and ``decimal.Decimal``.  Raises ``TypeError``/``ValueError`` for values the type
    cannot hold, including ``None`` (nulls are never serialized).
    """
    t = parse_type(iceberg_type)
    if value is None:
        raise ValueError("null values have no single-value serialization")
    name = t.name
    if name == "boolean":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"boolean expects a bool, got {type(value).__name__}")
        return b"\x01" if value else b"\x00"
    if name == "int":
        return struct.pack("<i", _check_range(_as_int(value, "int"), _INT32, "int"))
    if name == "long":
        return struct.pack("<q", _check_range(_as_int(value, "long"), _INT64, "long"))
    if name == "float":
        return _float_bytes(value, double=False)
    if name == "double":
        return _float_bytes(value, double=True)
    if name == "date":
        return struct.pack("<i", _check_range(_days(value), _INT32, "date"))
    if name == "time":
        return struct.pack("<q", _check_range(_micros_of_day(value), _INT64, "time"))
    if name in ("timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"):
        units = _epoch_units(value, nanos=name.endswith("_ns"))
        return struct.pack("<q", _check_range(units, _INT64, name))
    if name == "string":
        if not isinstance(value, (str, np.str_)):
            raise TypeError(f"string expects a str, got {type(value).__name__}")
        try:
            return str(value).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"string is not valid Unicode: {exc}") from exc
    if name == "uuid":
        return _uuid_bytes(value)
    if name in ("binary", "fixed"):
        if not isinstance(value, (bytes, bytearray, memoryview, np.bytes_, np.void)):
            raise TypeError(f"{t} expects bytes, got {type(value).__name__}")
        raw = value.tobytes() if isinstance(value, np.void) else bytes(value)
        if name == "fixed" and len(raw) != t.length:
            raise ValueError(f"{t} expects exactly {t.length} bytes, got {len(raw)}")
        return raw
    assert name == "decimal" and t.precision is not None and t.scale is not None
    return _min_twos_complement(_unscaled(value, t.precision, t.scale))


# ---------------------------------------------------------------------------------------------
# Whole columns
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SerializedValues:
    """The serialized bytes of a column, in the layout the Theta hashing reads directly.

    - fixed-width types (boolean 1, int/date/float 4, long/double/time/timestamps 8, uuid 16,
      fixed[L] L bytes): ``data`` is a C-contiguous uint8 array of shape ``(n, width)`` and
      ``offsets`` is ``None``; row *i* is value *i*'s bytes.
    - variable-length types (string, binary, decimal): ``data`` is a 1-D uint8 array and
      ``offsets`` an int32 or int64 array of ``n + 1`` positions into it; value *i* is
      ``data[offsets[i]:offsets[i + 1]]``.
    - ``valid`` is a bool array (``False`` = null) or ``None`` when there are no nulls.  A
      null's row holds zeros (fixed) or no bytes (variable), and is never hashed.
    """

    iceberg_type: IcebergType
    data: NDArray[np.uint8]
    offsets: NDArray[Any] | None
    valid: NDArray[np.bool_] | None

    def __len__(self) -> int:
        if self.offsets is not None:
            return int(self.offsets.shape[0]) - 1
        return int(self.data.shape[0])

    @property
    def width(self) -> int | None:
        """Byte width of every value, ``None`` for variable-length types."""
        return None if self.offsets is not None else int(self.data.shape[1])

    @property
    def null_count(self) -> int:
        return 0 if self.valid is None else int(len(self) - np.count_nonzero(self.valid))

    def __getitem__(self, i: int) -> bytes | None:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        i %= n
        if self.valid is not None and not self.valid[i]:
            return None
        if self.offsets is None:
            return bytes(self.data[i].tobytes())
        return self.data[int(self.offsets[i]) : int(self.offsets[i + 1])].tobytes()

    def __iter__(self) -> Iterator[bytes | None]:
        return (self[i] for i in range(len(self)))

    def slice(self, start: int, stop: int) -> SerializedValues:
        """Rows ``[start, stop)`` without copying (``0 <= start <= stop <= len``)."""
        valid = None if self.valid is None else self.valid[start:stop]
        if self.offsets is None:
            return SerializedValues(self.iceberg_type, self.data[start:stop], None, valid)
        offsets = self.offsets[start : stop + 1]
        return SerializedValues(self.iceberg_type, self.data, offsets, valid)

    def to_pylist(self) -> list[bytes | None]:
        """Every value's bytes, ``None`` for nulls (a Python object per value: for tests)."""
        return list(self)


def _fixed(t: IcebergType, rows: NDArray[Any], valid: NDArray[np.bool_] | None) -> SerializedValues:
    """Wrap little-endian values (1-D of itemsize == width, or 2-D uint8) as fixed rows."""
    width = t.width
    assert width is not None
    data = np.ascontiguousarray(rows)
    if data.ndim == 1:
        data = data.view(np.uint8).reshape(-1, width)
    if valid is not None and valid.all():
        valid = None
    elif valid is not None and data.size:
        data = np.where(valid[:, None], data, np.uint8(0))
    return SerializedValues(t, data.astype(np.uint8, copy=False), None, valid)


def _variable(
    t: IcebergType,
    data: NDArray[np.uint8],
    offsets: NDArray[Any],
    valid: NDArray[np.bool_] | None,
) -> SerializedValues:
    if valid is not None and valid.all():
        valid = None
    return SerializedValues(t, data, offsets, valid)


def _checked_int_cast(
    values: NDArray[Any], dtype: str, valid: NDArray[np.bool_] | None, what: str
) -> NDArray[Any]:
    """Cast integers to ``dtype``, refusing (non-null) values that do not fit."""
    values = np.asarray(values)
    if values.dtype.kind == "b":
        raise TypeError(f"{what} expects integers, not booleans")
    if values.dtype.kind not in "iu":
        raise TypeError(f"{what} expects integers, got dtype {values.dtype}")
    target = np.dtype(dtype)
    if np.can_cast(values.dtype, target, casting="safe"):
        return values.astype(target, copy=False)
    info = np.iinfo(target)
    check = values if valid is None else values[valid]
    if check.size and (check.min() < info.min or check.max() > info.max):
        raise ValueError(f"values out of range for {what}")
    return values.astype(target)


def _time_units(
    values: NDArray[Any], unit: str, valid: NDArray[np.bool_] | None, what: str
) -> tuple[NDArray[np.int64], NDArray[np.bool_] | None]:
    """datetime64/timedelta64 values as int64 counts of ``unit``; NaT becomes null."""
    if values.size and int(values.view(np.int64).min()) == _NAT:  # NaT is the smallest int64
        nat = np.isnat(values)
        valid = ~nat if valid is None else valid & ~nat
    src = values.dtype
    kind = "datetime64" if src.kind == "M" else "timedelta64"
    target = np.dtype(f"{kind}[{unit}]")
    src_unit, _ = np.datetime_data(src)
    if src_unit == unit:
        return values.view(np.int64), valid
    raw = values.view(np.int64)
    if valid is not None:
        raw = np.where(valid, raw, 0)
    safe = raw.view(src)
    if unit == "D":
        # The day an instant falls on (UTC), as NumPy floors datetimes to days.
        return safe.astype(target).view(np.int64), valid
    converted = safe.astype(target)
    back = converted.astype(src)  # a lost fraction or a wrapped value does not come back
    if np.any(back != safe):
        raise ValueError(
            f"{what} holds {unit} units: converting {src_unit} values would lose precision"
        )
    return converted.view(np.int64), valid


def _canonical_nan(
    values: NDArray[Any], nan_bits: int, itype: type[np.unsignedinteger[Any]]
) -> NDArray[Any]:
    """Little-endian IEEE values with every NaN replaced by Java's canonical NaN."""
    bits = values.view(itype)
    if values.size and np.isnan(values.max()):  # max is NaN iff a NaN is present: one pass
        bits = np.where(np.isnan(values), itype(nan_bits), bits)
    return bits.astype(np.dtype(itype).newbyteorder("<"), copy=False)


def _decimal_rows_le16(le: NDArray[np.uint8]) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """Minimal big-endian two's complement of 128-bit little-endian rows ``(n, 16)``."""
    n = le.shape[0]
    be = le[:, ::-1]
    sign = be[:, 0] >> 7
    sign_byte = (sign * np.uint8(0xFF)).astype(np.uint8)
    # A leading byte is redundant when it only repeats the sign and the next byte keeps it.
    redundant = (be[:, :15] == sign_byte[:, None]) & ((be[:, 1:] >> 7) == sign[:, None])
    lead = np.argmin(redundant, axis=1)
    lead[redundant.all(axis=1)] = 15
    keep = np.arange(16)[None, :] >= lead[:, None]
    data = np.ascontiguousarray(be)[keep]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(16 - lead, out=offsets[1:])
    return data, offsets


def _int64_to_le16(v: NDArray[np.int64]) -> NDArray[np.uint8]:
    lanes = np.empty((v.shape[0], 2), dtype="<u8")
    lanes[:, 0] = v.view(np.uint64)
    lanes[:, 1] = (v >> 63).view(np.uint64)
    return lanes.view(np.uint8).reshape(-1, 16)


def _pack_bytes(t: IcebergType, items: Sequence[bytes | None]) -> SerializedValues:
    """Pack already-serialized values (``None`` = null) into the column layout."""
    n = len(items)
    valid = np.fromiter((b is not None for b in items), dtype=np.bool_, count=n)
    width = t.width
    if width is not None:
        blank = bytes(width)
        data = np.frombuffer(b"".join(blank if b is None else b for b in items), dtype=np.uint8)
        return _fixed(t, data.reshape(n, width).copy(), valid)
    lengths = np.fromiter((0 if b is None else len(b) for b in items), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(b for b in items if b is not None), dtype=np.uint8)
    return _variable(t, data, offsets, valid)


_UUID_HEX = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _UUID_HEX[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _UUID_HEX[_c] = 10 + _i
_UUID_DIGITS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def _uuid_from_text(
    t: IcebergType,
    data: NDArray[np.uint8],
    offsets: NDArray[Any],
    valid: NDArray[np.bool_] | None,
    texts: Callable[[], list[Any]],
) -> SerializedValues:
    """UUIDs from strings: canonical 36-character forms are decoded with table lookups,
    anything else (braces, ``urn:uuid:``, no dashes) falls back to :class:`uuid.UUID`."""
    n = offsets.shape[0] - 1
    lengths = np.diff(offsets.astype(np.int64))
    is_null = np.zeros(n, np.bool_) if valid is None else ~valid
    if n and np.all((lengths == 36) | is_null):
        chars = _gather_rows(data, offsets[:-1], 36)
        nib = _UUID_HEX[chars[:, _UUID_DIGITS]]
        bad = (nib == 255).any(axis=1) | (chars[:, [8, 13, 18, 23]] != ord("-")).any(axis=1)
        if not (bad & ~is_null).any():
            return _fixed(t, (nib[:, 0::2] << 4) | nib[:, 1::2], valid)
    return _pack_bytes(t, [None if s is None else _uuid_bytes(s) for s in texts()])


def _from_numpy(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None = None
) -> SerializedValues:
    """Serialize a 1-D NumPy array (``valid`` marks non-nulls)."""
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        valid = ~mask if valid is None else valid & ~mask
        values = np.asarray(values.data)  # masked slots are ignored from here on
    values = np.asarray(values)
    name = t.name
    kind = values.dtype.kind
    byte_rows = values.ndim == 2 and kind == "u" and values.dtype.itemsize == 1
    if name in ("fixed", "uuid") and byte_rows:
        if values.shape[1] != t.width:
            raise ValueError(f"{t} expects rows of {t.width} bytes, got {values.shape[1]}")
        return _fixed(t, values, valid)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {values.shape}")
    if kind == "O":
        return _from_python(_with_nulls(values.tolist(), valid), t)
    if name == "boolean":
        if kind not in "biu":
            raise TypeError(f"boolean expects a bool array, got dtype {values.dtype}")
        return _fixed(t, (values != 0).astype(np.uint8), valid)
    if name in ("int", "long"):
        dtype = "<i4" if name == "int" else "<i8"
        return _fixed(t, _checked_int_cast(values, dtype, valid, name), valid)
    if name in ("float", "double"):
        if kind not in "fiu":
            raise TypeError(f"{name} expects numbers, got dtype {values.dtype}")
        if name == "float":
            with np.errstate(over="ignore"):
                f = values.astype(np.float32, copy=False)
            return _fixed(t, _canonical_nan(f, 0x7FC00000, np.uint32), valid)
        f64 = values.astype(np.float64, copy=False)
        return _fixed(t, _canonical_nan(f64, 0x7FF8000000000000, np.uint64), valid)
    if name == "date":
        if kind == "M":
            days, valid = _time_units(values, "D", valid, name)
            return _fixed(t, _checked_int_cast(days, "<i4", valid, name), valid)
        return _fixed(t, _checked_int_cast(values, "<i4", valid, name), valid)
    if name in ("time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"):
        unit = "ns" if name.endswith("_ns") else "us"
        if (name == "time" and kind == "m") or (name != "time" and kind == "M"):
            units, valid = _time_units(values, unit, valid, name)
            return _fixed(t, units.astype("<i8", copy=False), valid)
        return _fixed(t, _checked_int_cast(values, "<i8", valid, name), valid)
    if name == "decimal":
        assert t.precision is not None and t.scale is not None
        if kind not in "iu":
            raise TypeError(f"{t} expects integers or Decimal objects, got dtype {values.dtype}")
        factor = 10**t.scale
        ints = values if valid is None else np.where(valid, values, 0)
        magnitude = max(abs(int(ints.min())), abs(int(ints.max()))) * factor if ints.size else 0
        if magnitude >= 10**t.precision:
            raise ValueError(f"values do not fit {t}")
        if magnitude >= 2**63:  # unscaled values beyond int64: Python integers
            items = _with_nulls(ints.tolist(), valid)
            return _pack_bytes(
                t, [None if v is None else _min_twos_complement(int(v) * factor) for v in items]
            )
        unscaled = ints.astype(np.int64) * np.int64(factor)
        data, offsets = _decimal_rows_le16(_int64_to_le16(unscaled))
        if valid is not None:
            return _drop_null_bytes(t, data, offsets, valid)
        return _variable(t, data, offsets, valid)
    if name == "string":
        if kind == "U":
            return _from_python(_with_nulls(values.tolist(), valid), t)
        raise TypeError(f"string expects str values, got dtype {values.dtype}")
    if name in ("binary", "fixed", "uuid"):
        if kind == "V" or (kind == "S" and name != "binary"):
            width = values.dtype.itemsize
            if name != "binary" and width != t.width:
                raise ValueError(f"{t} expects {t.width}-byte items, got {width}")
            rows = np.frombuffer(np.ascontiguousarray(values).tobytes(), dtype=np.uint8)
            if name == "binary":
                rows2 = rows.reshape(-1, width)
                return _from_fixed_rows_as_variable(t, rows2, valid)
            return _fixed(t, rows.reshape(-1, width), valid)
        if kind == "S":
            # Binary from NumPy bytes: items as NumPy shows them (trailing NULs dropped).
            return _pack_bytes(t, _with_nulls(values.tolist(), valid))
        if kind == "U" and name == "uuid":
            return _from_python(_with_nulls(values.tolist(), valid), t)
        raise TypeError(f"{t} expects bytes, got dtype {values.dtype}")
    raise TypeError(f"cannot serialize dtype {values.dtype} as {t}")  # pragma: no cover


def _with_nulls(items: list[Any], valid: NDArray[np.bool_] | None) -> list[Any]:
    if valid is None:
        return items
    return [v if ok else None for v, ok in zip(items, valid.tolist(), strict=True)]


def _from_fixed_rows_as_variable(
    t: IcebergType, rows: NDArray[np.uint8], valid: NDArray[np.bool_] | None
) -> SerializedValues:
    n, width = rows.shape
    offsets = np.arange(n + 1, dtype=np.int64) * width
    data = np.ascontiguousarray(rows).reshape(-1)
    if valid is not None:
        return _drop_null_bytes(t, data, offsets, valid)
    return _variable(t, data, offsets, valid)


def _drop_null_bytes(
    t: IcebergType, data: NDArray[np.uint8], offsets: NDArray[Any], valid: NDArray[np.bool_]
) -> SerializedValues:
    """Remove the bytes of null slots so that nulls have zero length."""
    if valid.all():
        return _variable(t, data, offsets, None)
    lengths = np.diff(offsets).astype(np.int64)
    lengths[~valid] = 0
    keep = np.repeat(valid, np.diff(offsets).astype(np.int64))
    start = int(offsets[0])
    new_data = data[start : start + keep.shape[0]][keep]
    new_offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    return _variable(t, new_data, new_offsets, valid)


def _from_python(values: Iterable[Any], t: IcebergType) -> SerializedValues:
    """Serialize a Python iterable; uses pyarrow's C converters when they apply."""
    items = values if isinstance(values, list) else list(values)
    name = t.name
    if not items:
        return _pack_bytes(t, [])
    if name in (
        "int",
        "long",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "float",
        "double",
        "boolean",
    ):
        fast = _python_numbers(items, t)
        if fast is not None:
            return fast
    texts = name == "uuid" and all(isinstance(v, str) or v is None for v in items)
    if name in ("string", "binary") or texts:
        pa = _pyarrow()
        if pa is not None:
            typ = pa.large_string() if name in ("string", "uuid") else pa.large_binary()
            try:
                arr = pa.array(items, type=typ, from_pandas=True)  # NaN = null (pandas)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
                arr = None
            if arr is not None:
                return _from_arrow(arr, t)
    return _pack_bytes(t, [None if v is None else serialize_value(v, t) for v in items])


def _python_numbers(items: list[Any], t: IcebergType) -> SerializedValues | None:
    """A NumPy fast path for lists of plain ints / floats / bools (``None`` allowed)."""
    name = t.name
    if name == "boolean":
        ok_types: tuple[type, ...] = (bool,)
    elif name in ("float", "double"):
        ok_types = (float, int)
    else:
        ok_types = (int,)
    valid_list = []
    filled = []
    for v in items:
        if v is None:
            valid_list.append(False)
            filled.append(0)
        elif type(v) in ok_types:
            valid_list.append(True)
            filled.append(v)
        else:
            return None
    valid = np.array(valid_list, dtype=np.bool_)
    if name in ("float", "double"):
        arr = np.array(filled, dtype=np.float64)
    elif name == "boolean":
        arr = np.array(filled, dtype=np.bool_)
    else:
        try:
            arr = np.array(filled, dtype=np.int64)
        except OverflowError as exc:
            raise ValueError(f"values out of range for {t}") from exc
    return _from_numpy(arr, t, None if valid.all() else valid)


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    return pa


def _is_arrow(values: Any) -> bool:
    return type(values).__module__.startswith("pyarrow")


def _arrow_valid(arr: Any) -> NDArray[np.bool_] | None:
    if arr.null_count == 0:
        return None
    bitmap = arr.buffers()[0]
    n = len(arr)
    if bitmap is None:  # e.g. the null type: every slot is null
        return np.zeros(n, dtype=np.bool_)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + n].astype(np.bool_)


def _arrow_values(arr: Any, dtype: str) -> NDArray[Any]:
    """The value buffer of a fixed-width primitive array as NumPy (zero-copy, slice aware)."""
    buf = arr.buffers()[1]
    return np.frombuffer(buf, dtype=dtype)[arr.offset : arr.offset + len(arr)]


def _from_arrow(arr: Any, t: IcebergType) -> SerializedValues:
    """Serialize one pyarrow Array (not chunked)."""
    import pyarrow as pa

    typ = arr.type
    # BaseExtensionType also covers pyarrow's built-in extension types such as pa.uuid().
    if isinstance(typ, pa.BaseExtensionType):
        arr = arr.storage
        typ = arr.type
    if pa.types.is_dictionary(typ):
        arr = arr.dictionary_decode()
        typ = arr.type
    if pa.types.is_null(typ):
        return _pack_bytes(t, [None] * len(arr))
    valid = _arrow_valid(arr)
    name = t.name
    n = len(arr)
    if pa.types.is_boolean(typ):
        if name != "boolean":
            raise TypeError(f"cannot serialize {typ} as {t}")
        bits = np.unpackbits(np.frombuffer(arr.buffers()[1], dtype=np.uint8), bitorder="little")
        return _fixed(t, bits[arr.offset : arr.offset + n].copy(), valid)
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        np_dtype = typ.to_pandas_dtype()
        values = _arrow_values(arr, np.dtype(np_dtype).newbyteorder("<").str)
        if pa.types.is_floating(typ) and typ.bit_width == 16:
            values = values.astype(np.float32)
        if valid is not None and name not in ("float", "double"):
            values = np.where(valid, values, 0)
        return _from_numpy(values, t, valid)
    if pa.types.is_date(typ):
        if name != "date":
            raise TypeError(f"cannot serialize {typ} as {t}")
        if pa.types.is_date32(typ):
            return _fixed(t, _arrow_values(arr, "<i4"), valid)
        ms = _arrow_values(arr, "<i8")
        return _fixed(t, _checked_int_cast(ms // 86_400_000, "<i4", valid, name), valid)
    if pa.types.is_time(typ) or pa.types.is_timestamp(typ):
        is_time = pa.types.is_time(typ)
        if is_time != (name == "time") or name not in (
            "time",
            "timestamp",
            "timestamptz",
            "timestamp_ns",
            "timestamptz_ns",
        ):
            raise TypeError(f"cannot serialize {typ} as {t}")
        raw = _arrow_values(arr, "<i4" if typ.bit_width == 32 else "<i8").astype(np.int64)
        kind = "timedelta64" if is_time else "datetime64"
        return _from_numpy(raw.view(f"{kind}[{typ.unit}]"), t, valid)
    if pa.types.is_decimal(typ):
        if name != "decimal":
            raise TypeError(f"cannot serialize {typ} as {t}")
        target = pa.decimal128(t.precision, t.scale)
        if typ != target:
            arr = arr.cast(target)  # safe cast: raises when a value would change
        le = _arrow_values(arr, "V16").view(np.uint8).reshape(n, 16)
        data, offsets = _decimal_rows_le16(le)
        if valid is not None:
            return _drop_null_bytes(t, data, offsets, valid)
        return _variable(t, data, offsets, None)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        if name not in ("string", "uuid"):
            raise TypeError(f"cannot serialize {typ} as {t}")
        if pa.types.is_string_view(typ):
            arr = arr.cast(pa.large_string())
        data, offsets = _arrow_varlen(arr)
        if name == "uuid":
            return _uuid_from_text(t, data, offsets, valid, arr.to_pylist)
        return _variable(t, data, offsets, valid)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_binary_view(typ):
        if name not in ("binary", "fixed", "uuid"):
            raise TypeError(f"cannot serialize {typ} as {t}")
        if pa.types.is_binary_view(typ):
            arr = arr.cast(pa.large_binary())
        data, offsets = _arrow_varlen(arr)
        if name == "binary":
            return _variable(t, data, offsets, valid)
        lengths = np.diff(offsets)
        width = t.width
        ok = lengths == width if valid is None else (lengths == width) | ~valid
        if not ok.all():
            raise ValueError(f"{t} expects {width}-byte values")
        assert width is not None
        return _fixed(t, _gather_rows(data, offsets[:-1], width), valid)
    if pa.types.is_fixed_size_binary(typ):
        width = typ.byte_width
        rows = _arrow_values(arr, f"V{width}").view(np.uint8).reshape(n, width)
        if name in ("fixed", "uuid"):
            if width != t.width:
                raise ValueError(f"{t} expects {t.width}-byte values, got {typ}")
            return _fixed(t, rows, valid)
        if name == "binary":
            return _from_fixed_rows_as_variable(t, rows, valid)
        raise TypeError(f"cannot serialize {typ} as {t}")
    raise TypeError(f"cannot serialize Arrow type {typ} as {t}")


def _gather_rows(data: NDArray[np.uint8], starts: NDArray[Any], width: int) -> NDArray[np.uint8]:
    idx = starts.astype(np.int64)[:, None] + np.arange(width)[None, :]
    if data.shape[0] == 0:
        return np.zeros((starts.shape[0], width), np.uint8)
    rows: NDArray[np.uint8] = data[np.minimum(idx, data.shape[0] - 1)]
    return rows


def _arrow_varlen(arr: Any) -> tuple[NDArray[np.uint8], NDArray[Any]]:
    """(data, offsets) of a (large) string/binary array, zero-copy and slice aware."""
    import pyarrow as pa

    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    _, off_buf, data_buf = arr.buffers()
    n = len(arr)
    all_offsets = np.frombuffer(off_buf, dtype="<i8" if large else "<i4")
    offsets = all_offsets[arr.offset : arr.offset + n + 1]
    if data_buf is None:
        data = np.zeros(0, dtype=np.uint8)
    else:
        data = np.frombuffer(data_buf, dtype=np.uint8)
    if n == 0:
        offsets = np.zeros(1, dtype=offsets.dtype)
    return data, offsets


def _pieces(values: Any) -> Iterator[tuple[str, Any]]:
    """Split an input into ("arrow", Array), ("numpy", ndarray) or ("python", iterable)."""
    if _is_arrow(values):
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            for chunk in values.chunks:
                yield "arrow", chunk
            return
        if isinstance(values, pa.Array):
            yield "arrow", values
            return
        raise TypeError(f"cannot serialize {type(values).__name__}; pass an Array or ChunkedArray")
    if isinstance(values, np.ndarray):
        yield "numpy", values
        return
    if hasattr(values, "__arrow_array__"):  # pandas extension arrays and Series of them
        pa = _pyarrow()
        if pa is not None:
            yield "arrow", pa.array(values)
            return
    if hasattr(values, "__arrow_c_array__") or hasattr(values, "__arrow_c_stream__"):
        pa = _pyarrow()
        if pa is not None:
            if hasattr(values, "__arrow_c_stream__"):
                yield from _pieces(pa.chunked_array(values))
            else:
                yield "arrow", pa.array(values)
            return
    if hasattr(values, "__array__") and not isinstance(values, (list, tuple, str, bytes)):
        yield "numpy", np.asarray(values)
        return
    if isinstance(values, (str, bytes, bytearray)):
        raise TypeError("pass a sequence of values, not a single str/bytes")
    yield "python", values


def _serialize_piece(kind: str, piece: Any, t: IcebergType) -> SerializedValues:
    if kind == "arrow":
        return _from_arrow(piece, t)
    if kind == "numpy":
        return _from_numpy(piece, t)
    return _from_python(piece, t)


_DISTINCT_MIN_ROWS = 4096
_DISTINCT_STEP = 1 << 18


def small_range_distinct(values: NDArray[Any], *, nat: bool = False) -> NDArray[Any] | None:
    """The distinct values (ascending) of a 1-D integer array spanning at most half its length.

    Returns ``None`` when the range is wider, so nothing would be gained, and, with ``nat``,
    when the smallest int64 (NumPy's NaT) is present.  Values are marked in a presence
    table over the range, in cache-sized steps: under 3 ns a value, half the cost of hashing it.
    """
    n = values.shape[0]
    if n < _DISTINCT_MIN_ROWS:
        return None
    head = values[:1024]  # a wide spread shows at once: skip the full passes
    if int(head.max()) - int(head.min()) > n // 2:
        return None
    lo = int(values.min())
    if nat and lo == _NAT:
        return None
    hi = int(values.max())
    if hi - lo > n // 2:
        return None
    present = np.zeros(hi - lo + 1, dtype=np.bool_)
    offsets = np.empty(min(n, _DISTINCT_STEP), dtype=np.intp)
    for start in range(0, n, _DISTINCT_STEP):
        part = values[start : start + _DISTINCT_STEP]
        step = offsets[: part.shape[0]]
        np.subtract(part, lo, out=step, dtype=np.intp)
        present[step] = True
    distinct: NDArray[Any] = (np.flatnonzero(present) + lo).astype(values.dtype)
    return distinct


def distinct_if_small_range(values: NDArray[Any]) -> NDArray[Any] | None:
    """The distinct values of a 1-D integer/datetime array spanning at most half its length.

    Returns ``None`` (nothing gained) for other arrays, for wider ranges and when NaT is
    present.
    """
    kind = values.dtype.kind
    if values.ndim != 1 or kind not in "iuMm" or isinstance(values, np.ma.MaskedArray):
        return None
    if kind == "u" and values.dtype.itemsize == 8:
        return None
    raw = values.view(np.int64) if kind in "Mm" else values
    distinct = small_range_distinct(raw, nat=kind in "Mm")
    return None if distinct is None else distinct.view(values.dtype)


def _iter_serialized(values: Any, t: IcebergType) -> Iterator[SerializedValues]:
    """Serialize ``values`` piece by piece (one piece per Arrow chunk)."""
    for kind, piece in _pieces(values):
        yield _serialize_piece(kind, piece, t)


def serialize_tasks(
    values: Any, iceberg_type: str | IcebergType | Any, rows: int, *, distinct: bool = False
) -> list[Callable[[], SerializedValues]]:
    """Jobs that each serialize at most ``rows`` values of ``values``, in order.

    NumPy and Arrow inputs are sliced without copying and serialized when a job runs, so a
    thread pool can convert and hash slices in parallel while they are still in cache; other
    inputs are serialized here and their result is sliced.  With ``distinct=True`` (for
    sketches, which only see the set of values) a NumPy integer or datetime array whose values
    span a small range is first reduced to its distinct values.
    """
    t = parse_type(iceberg_type)
    tasks: list[Callable[[], SerializedValues]] = []
    for kind, piece in _pieces(values):
        if distinct and kind == "numpy" and t.name != "boolean":
            # A low-cardinality column (dates above all) then serializes and hashes only
            # its distinct values.  Clustered columns, whose range is only small slice by
            # slice, are reduced after serializing (``_theta_build.dedupe_small_range``).
            reduced = distinct_if_small_range(piece)
            piece = piece if reduced is None else reduced
        lazy = kind == "arrow" or (kind == "numpy" and piece.dtype.kind != "O" and piece.ndim)
        if lazy:
            for s in range(0, len(piece), rows):
                part = piece.slice(s, rows) if kind == "arrow" else piece[s : s + rows]
                tasks.append(partial(_serialize_piece, kind, part, t))
        else:
            done = _serialize_piece(kind, piece, t)
            n = len(done)
            tasks.extend(partial(done.slice, s, min(n, s + rows)) for s in range(0, n, rows))
    return tasks


def _concat(t: IcebergType, parts: list[SerializedValues]) -> SerializedValues:
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _pack_bytes(t, [])
    has_nulls = any(p.valid is not None for p in parts)
    valid = (
        np.concatenate([np.ones(len(p), np.bool_) if p.valid is None else p.valid for p in parts])
        if has_nulls
        else None
    )
    if t.width is not None:
        return SerializedValues(t, np.concatenate([p.data for p in parts]), None, valid)
    datas, offsets, base = [], [np.zeros(1, np.int64)], 0
    for p in parts:
        assert p.offsets is not None
        start, stop = int(p.offsets[0]), int(p.offsets[-1])
        datas.append(p.data[start:stop])
        offsets.append(p.offsets[1:].astype(np.int64) - start + base)
        base += stop - start
    data = np.concatenate(datas) if datas else np.zeros(0, np.uint8)
    return SerializedValues(t, data, np.concatenate(offsets), valid)


def serialize_values(values: Any, iceberg_type: str | IcebergType | Any) -> SerializedValues:
    """Serialize a whole column of ``iceberg_type`` values; see :class:`SerializedValues`.

    ``values`` may be a 1-D NumPy array (masked arrays mark nulls; NaT is null), a pyarrow
    Array or ChunkedArray (nulls from its validity), any object exposing the Arrow C data
    interface, or a Python iterable (``None`` = null).  NumPy integers mean days for ``date``,
    microseconds for ``time``/``timestamp*``, nanoseconds for ``*_ns`` and the numeric value
    for ``decimal``; datetime64/timedelta64 arrays are converted to the type's unit and refused
    when that would lose precision.  Fixed-width results are zero-copy views where possible.
    """
    t = parse_type(iceberg_type)
    return _concat(t, list(_iter_serialized(values, t)))
