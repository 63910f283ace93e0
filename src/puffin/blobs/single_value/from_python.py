"""Columns from Python sequences: NumPy or pyarrow C converters when they apply, else per value."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from puffin.blobs.single_value.column import SerializedValues, pack_bytes
from puffin.blobs.single_value.from_arrow import from_arrow, optional_pyarrow
from puffin.blobs.single_value.from_numpy import from_numpy
from puffin.blobs.single_value.scalar import serialize_value
from puffin.types import IcebergType

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

__all__ = ["from_python"]

# Types a list of plain numbers converts to in one NumPy call: the Python types accepted
# (exactly: a bool is not an int here) and the array dtype.
_BOOL: tuple[tuple[type, ...], type] = ((bool,), np.bool_)
_FLOAT: tuple[tuple[type, ...], type] = ((float, int), np.float64)
_INT: tuple[tuple[type, ...], type] = ((int,), np.int64)
_NUMBERS: dict[str, tuple[tuple[type, ...], type]] = {
    "boolean": _BOOL,
    "float": _FLOAT,
    "double": _FLOAT,
    "int": _INT,
    "long": _INT,
    "date": _INT,
    "time": _INT,
    "timestamp": _INT,
    "timestamptz": _INT,
    "timestamp_ns": _INT,
    "timestamptz_ns": _INT,
}


def _python_numbers(items: list[Any], t: IcebergType) -> SerializedValues | None:
    """A NumPy fast path for lists of plain ints / floats / bools (``None`` allowed)."""
    ok_types, dtype = _NUMBERS[t.name]
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
    arr: NDArray[Any]
    if dtype is not np.int64:
        arr = np.array(filled, dtype=dtype)
    else:
        try:
            arr = np.array(filled, dtype=dtype)
        except OverflowError as exc:
            raise ValueError(f"values out of range for {t}") from exc
    return from_numpy(arr, t, None if valid.all() else valid)


def _python_texts(items: list[Any], t: IcebergType) -> SerializedValues | None:
    """strings, bytes and UUID strings through pyarrow's C converter, when it takes them."""
    pa = optional_pyarrow()
    if pa is None:
        return None
    typ = pa.large_string() if t.name in ("string", "uuid") else pa.large_binary()
    try:
        arr = pa.array(items, type=typ, from_pandas=True)  # NaN = null (pandas)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return None
    return from_arrow(arr, t)


def from_python(values: Iterable[Any], t: IcebergType) -> SerializedValues:
    """Serialize a Python iterable (``None`` = null)."""
    items = values if isinstance(values, list) else list(values)
    name = t.name
    if not items:
        return pack_bytes(t, [])
    if name in _NUMBERS:
        fast = _python_numbers(items, t)
        if fast is not None:
            return fast
    texts = name == "uuid" and all(isinstance(v, str) or v is None for v in items)
    if name in ("string", "binary") or texts:
        fast = _python_texts(items, t)
        if fast is not None:
            return fast
    return pack_bytes(t, [None if v is None else serialize_value(v, t) for v in items])
