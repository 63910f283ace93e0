"""One value's single-value serialization: :func:`serialize_value` and its per-type table."""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import struct
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from puffin.blobs.single_value.kernels import time_units
from puffin.types import IcebergType, parse_type

__all__ = ["min_twos_complement", "serialize_value", "uuid_bytes"]

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_FLOAT_NAN = struct.pack("<I", 0x7FC00000)
_DOUBLE_NAN = struct.pack("<Q", 0x7FF8000000000000)


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
    units, _ = time_units(np.array([value]), unit, None, what)
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


def min_twos_complement(v: int) -> bytes:
    """Java's ``BigInteger.toByteArray``: the shortest big-endian two's complement."""
    n = (v if v >= 0 else ~v).bit_length() // 8 + 1
    return v.to_bytes(n, "big", signed=True)


def uuid_bytes(value: Any) -> bytes:
    """A UUID's 16 bytes from a :class:`uuid.UUID`, any spelling it parses, or 16 bytes."""
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


def _float_bytes(value: Any, t: IcebergType) -> bytes:
    double = t.name == "double"
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{t.name} expects a number, got {type(value).__name__}")
    f = float(value)
    if math.isnan(f):
        return _DOUBLE_NAN if double else _FLOAT_NAN
    if double:
        return struct.pack("<d", f)
    with np.errstate(over="ignore"):
        return bytes(np.float32(f).astype("<f4").tobytes())  # rounds like Java's (float) cast


def _boolean(value: Any, t: IcebergType) -> bytes:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"boolean expects a bool, got {type(value).__name__}")
    return b"\x01" if value else b"\x00"


def _int(value: Any, t: IcebergType) -> bytes:
    return struct.pack("<i", _check_range(_as_int(value, "int"), _INT32, "int"))


def _long(value: Any, t: IcebergType) -> bytes:
    return struct.pack("<q", _check_range(_as_int(value, "long"), _INT64, "long"))


def _date(value: Any, t: IcebergType) -> bytes:
    return struct.pack("<i", _check_range(_days(value), _INT32, "date"))


def _time(value: Any, t: IcebergType) -> bytes:
    return struct.pack("<q", _check_range(_micros_of_day(value), _INT64, "time"))


def _timestamp(value: Any, t: IcebergType) -> bytes:
    units = _epoch_units(value, nanos=t.name.endswith("_ns"))
    return struct.pack("<q", _check_range(units, _INT64, t.name))


def _string(value: Any, t: IcebergType) -> bytes:
    if not isinstance(value, (str, np.str_)):
        raise TypeError(f"string expects a str, got {type(value).__name__}")
    try:
        return str(value).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"string is not valid Unicode: {exc}") from exc


def _uuid(value: Any, t: IcebergType) -> bytes:
    return uuid_bytes(value)


def _bytes(value: Any, t: IcebergType) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview, np.bytes_, np.void)):
        raise TypeError(f"{t} expects bytes, got {type(value).__name__}")
    raw = value.tobytes() if isinstance(value, np.void) else bytes(value)
    if t.name == "fixed" and len(raw) != t.length:
        raise ValueError(f"{t} expects exactly {t.length} bytes, got {len(raw)}")
    return raw


def _decimal(value: Any, t: IcebergType) -> bytes:
    assert t.precision is not None and t.scale is not None
    return min_twos_complement(_unscaled(value, t.precision, t.scale))


_SERIALIZERS: dict[str, Callable[[Any, IcebergType], bytes]] = {
    "boolean": _boolean,
    "int": _int,
    "long": _long,
    "float": _float_bytes,
    "double": _float_bytes,
    "date": _date,
    "time": _time,
    "timestamp": _timestamp,
    "timestamptz": _timestamp,
    "timestamp_ns": _timestamp,
    "timestamptz_ns": _timestamp,
    "string": _string,
    "uuid": _uuid,
    "binary": _bytes,
    "fixed": _bytes,
    "decimal": _decimal,
}


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
    return _SERIALIZERS[t.name](value, t)
