"""Columns from NumPy arrays: one whole-array converter per Iceberg type, in a table."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from puffin.blobs.single_value.column import (
    SerializedValues,
    fixed_column,
    fixed_rows_as_variable,
    pack_bytes,
    variable_or_dropped,
    with_nulls,
)
from puffin.blobs.single_value.kernels import (
    canonical_nan,
    checked_int_cast,
    decimal_rows_le16,
    int64_to_le16,
    time_units,
)
from puffin.blobs.single_value.scalar import min_twos_complement
from puffin.types import IcebergType

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

__all__ = ["from_numpy"]


def _boolean(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None
) -> SerializedValues:
    if values.dtype.kind not in "biu":
        raise TypeError(f"boolean expects a bool array, got dtype {values.dtype}")
    return fixed_column(t, (values != 0).astype(np.uint8), valid)


def _integer(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None
) -> SerializedValues:
    dtype = "<i4" if t.name == "int" else "<i8"
    return fixed_column(t, checked_int_cast(values, dtype, valid, t.name), valid)


def _floating(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None
) -> SerializedValues:
    if values.dtype.kind not in "fiu":
        raise TypeError(f"{t.name} expects numbers, got dtype {values.dtype}")
    if t.name == "float":
        with np.errstate(over="ignore"):
            f = values.astype(np.float32, copy=False)
        return fixed_column(t, canonical_nan(f, 0x7FC00000, np.uint32), valid)
    f64 = values.astype(np.float64, copy=False)
    return fixed_column(t, canonical_nan(f64, 0x7FF8000000000000, np.uint64), valid)


def _date(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None
) -> SerializedValues:
    if values.dtype.kind == "M":
        days, valid = time_units(values, "D", valid, t.name)
        return fixed_column(t, checked_int_cast(days, "<i4", valid, t.name), valid)
    return fixed_column(t, checked_int_cast(values, "<i4", valid, t.name), valid)


def _temporal(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None
) -> SerializedValues:
    """time (timedelta64 or micros) and the timestamps (datetime64 or micros/nanos)."""
    name, kind = t.name, values.dtype.kind
    unit = "ns" if name.endswith("_ns") else "us"
    if (name == "time" and kind == "m") or (name != "time" and kind == "M"):
        units, valid = time_units(values, unit, valid, name)
        return fixed_column(t, units.astype("<i8", copy=False), valid)
    return fixed_column(t, checked_int_cast(values, "<i8", valid, name), valid)


def _decimal(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None
) -> SerializedValues:
    """Integers as decimal values: unscaled in int64 when they fit, else Python integers."""
    assert t.precision is not None and t.scale is not None
    if values.dtype.kind not in "iu":
        raise TypeError(f"{t} expects integers or Decimal objects, got dtype {values.dtype}")
    factor = 10**t.scale
    ints = values if valid is None else np.where(valid, values, 0)
    magnitude = max(abs(int(ints.min())), abs(int(ints.max()))) * factor if ints.size else 0
    if magnitude >= 10**t.precision:
        raise ValueError(f"values do not fit {t}")
    if magnitude >= 2**63:  # unscaled values beyond int64: Python integers
        items = with_nulls(ints.tolist(), valid)
        return pack_bytes(
            t, [None if v is None else min_twos_complement(int(v) * factor) for v in items]
        )
    unscaled = ints.astype(np.int64) * np.int64(factor)
    data, offsets = decimal_rows_le16(int64_to_le16(unscaled))
    return variable_or_dropped(t, data, offsets, valid)


def _string(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None
) -> SerializedValues:
    raise TypeError(f"string expects str values, got dtype {values.dtype}")


def _bytes(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None
) -> SerializedValues:
    """binary, fixed and uuid from void or bytes arrays (uuid also from str arrays)."""
    name, kind = t.name, values.dtype.kind
    if kind == "V" or (kind == "S" and name != "binary"):
        width = values.dtype.itemsize
        if name != "binary" and width != t.width:
            raise ValueError(f"{t} expects {t.width}-byte items, got {width}")
        rows = np.frombuffer(np.ascontiguousarray(values).tobytes(), dtype=np.uint8)
        if name == "binary":
            return fixed_rows_as_variable(t, rows.reshape(-1, width), valid)
        return fixed_column(t, rows.reshape(-1, width), valid)
    if kind == "S":
        # Binary from NumPy bytes: items as NumPy shows them (trailing NULs dropped).
        return pack_bytes(t, with_nulls(values.tolist(), valid))
    raise TypeError(f"{t} expects bytes, got dtype {values.dtype}")


_Converter = Callable[[Any, IcebergType, Any], SerializedValues]
_CONVERTERS: dict[str, _Converter] = {
    "boolean": _boolean,
    "int": _integer,
    "long": _integer,
    "float": _floating,
    "double": _floating,
    "date": _date,
    "time": _temporal,
    "timestamp": _temporal,
    "timestamptz": _temporal,
    "timestamp_ns": _temporal,
    "timestamptz_ns": _temporal,
    "decimal": _decimal,
    "string": _string,
    "binary": _bytes,
    "fixed": _bytes,
    "uuid": _bytes,
}


def from_numpy(
    values: NDArray[Any], t: IcebergType, valid: NDArray[np.bool_] | None = None
) -> SerializedValues:
    """Serialize a 1-D NumPy array (``valid`` marks non-nulls; masked arrays mark nulls).

    A 2-D uint8 array of rows is taken as the bytes of fixed and uuid values.
    """
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        valid = ~mask if valid is None else valid & ~mask
        values = np.asarray(values.data)  # masked slots are ignored from here on
    values = np.asarray(values)
    byte_rows = values.ndim == 2 and values.dtype.kind == "u" and values.dtype.itemsize == 1
    if t.name in ("fixed", "uuid") and byte_rows:
        if values.shape[1] != t.width:
            raise ValueError(f"{t} expects rows of {t.width} bytes, got {values.shape[1]}")
        return fixed_column(t, values, valid)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {values.shape}")
    if values.dtype.kind in "OU":  # serialize_values hands these to the Python converter
        raise TypeError(f"{t}: a {values.dtype} array holds Python values, not NumPy ones")
    return _CONVERTERS[t.name](values, t, valid)
