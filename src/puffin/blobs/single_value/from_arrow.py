"""Columns from pyarrow arrays: zero-copy buffer views, one converter per Arrow type family.

pyarrow is optional and imported only when an Arrow input arrives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from puffin.blobs.single_value.column import (
    SerializedValues,
    fixed_column,
    fixed_rows_as_variable,
    pack_bytes,
    variable_column,
    variable_or_dropped,
)
from puffin.blobs.single_value.from_numpy import from_numpy
from puffin.blobs.single_value.kernels import (
    canonical_uuid_rows,
    checked_int_cast,
    decimal_rows_le16,
    gather_rows,
)
from puffin.blobs.single_value.scalar import uuid_bytes
from puffin.errors import MissingDependencyError
from puffin.types import IcebergType

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

__all__ = ["from_arrow", "is_arrow", "optional_pyarrow", "require_pyarrow"]

_TIMESTAMPS = ("timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns")


def optional_pyarrow() -> Any:
    """The pyarrow module, or ``None`` when it is not installed."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    return pa


def require_pyarrow() -> Any:
    """The pyarrow module, imported only now; a missing pyarrow is a
    :class:`~puffin.errors.MissingDependencyError` naming the extra, not a bare import error.

    (The blobs layer sits below :mod:`puffin.support.deps`, so the message is spelled
    here the way its ``require`` spells it.)
    """
    try:
        import pyarrow as pa
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(
            "pyarrow is not installed: pip install 'iceberg-puffin[arrow]'"
        ) from exc
    return pa


def is_arrow(values: Any) -> bool:
    """Whether ``values`` is a pyarrow object (checked without importing pyarrow)."""
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


def numeric_values(arr: Any) -> NDArray[Any]:
    """The values of an integer or floating-point Arrow array as NumPy, zero-copy and
    slice aware (null slots hold whatever the buffer holds).

    Unlike ``to_numpy`` or ``to_pandas_dtype``, this does not import pandas (0.12 s of a
    short ``puffin ndv`` run).
    """
    import pyarrow as pa

    typ = arr.type
    kind = "f" if pa.types.is_floating(typ) else "i" if pa.types.is_signed_integer(typ) else "u"
    return _arrow_values(arr, f"<{kind}{typ.bit_width // 8}")


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


def _refuse(arr: Any, t: IcebergType) -> TypeError:
    return TypeError(f"cannot serialize {arr.type} as {t}")


def _boolean(arr: Any, t: IcebergType, valid: NDArray[np.bool_] | None) -> SerializedValues:
    if t.name != "boolean":
        raise _refuse(arr, t)
    bits = np.unpackbits(np.frombuffer(arr.buffers()[1], dtype=np.uint8), bitorder="little")
    return fixed_column(t, bits[arr.offset : arr.offset + len(arr)].copy(), valid)


def _number(arr: Any, t: IcebergType, valid: NDArray[np.bool_] | None) -> SerializedValues:
    """Integers and floats: their buffer goes to the NumPy converter of the target type."""
    import pyarrow as pa

    typ = arr.type
    values = numeric_values(arr)
    if pa.types.is_floating(typ) and typ.bit_width == 16:
        values = values.astype(np.float32)
    if valid is not None and t.name not in ("float", "double"):
        values = np.where(valid, values, 0)
    return from_numpy(values, t, valid)


def _date(arr: Any, t: IcebergType, valid: NDArray[np.bool_] | None) -> SerializedValues:
    import pyarrow as pa

    if t.name != "date":
        raise _refuse(arr, t)
    if pa.types.is_date32(arr.type):
        return fixed_column(t, _arrow_values(arr, "<i4"), valid)
    ms = _arrow_values(arr, "<i8")
    return fixed_column(t, checked_int_cast(ms // 86_400_000, "<i4", valid, t.name), valid)


def _temporal(arr: Any, t: IcebergType, valid: NDArray[np.bool_] | None) -> SerializedValues:
    """time32/64 as time, timestamps as any timestamp type, through NumPy's units."""
    import pyarrow as pa

    typ = arr.type
    is_time = pa.types.is_time(typ)
    if (t.name == "time") if is_time else (t.name in _TIMESTAMPS):
        raw = _arrow_values(arr, "<i4" if typ.bit_width == 32 else "<i8").astype(np.int64)
        kind = "timedelta64" if is_time else "datetime64"
        return from_numpy(raw.view(f"{kind}[{typ.unit}]"), t, valid)
    raise _refuse(arr, t)


def _decimal(arr: Any, t: IcebergType, valid: NDArray[np.bool_] | None) -> SerializedValues:
    import pyarrow as pa

    if t.name != "decimal":
        raise _refuse(arr, t)
    target = pa.decimal128(t.precision, t.scale)
    if arr.type != target:
        arr = arr.cast(target)  # safe cast: raises when a value would change
    le = _arrow_values(arr, "V16").view(np.uint8).reshape(len(arr), 16)
    data, offsets = decimal_rows_le16(le)
    return variable_or_dropped(t, data, offsets, valid)


def _string(arr: Any, t: IcebergType, valid: NDArray[np.bool_] | None) -> SerializedValues:
    """Strings as string, or as uuid from their text."""
    import pyarrow as pa

    if t.name not in ("string", "uuid"):
        raise _refuse(arr, t)
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    data, offsets = _arrow_varlen(arr)
    if t.name == "string":
        return variable_column(t, data, offsets, valid)
    rows = canonical_uuid_rows(data, offsets, valid)
    if rows is not None:
        return fixed_column(t, rows, valid)
    return pack_bytes(t, [None if s is None else uuid_bytes(s) for s in arr.to_pylist()])


def _binary(arr: Any, t: IcebergType, valid: NDArray[np.bool_] | None) -> SerializedValues:
    """Variable-length binary as binary, or as fixed/uuid when every value has the width."""
    import pyarrow as pa

    if t.name not in ("binary", "fixed", "uuid"):
        raise _refuse(arr, t)
    if pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.large_binary())
    data, offsets = _arrow_varlen(arr)
    if t.name == "binary":
        return variable_column(t, data, offsets, valid)
    lengths = np.diff(offsets)
    width = t.width
    ok = lengths == width if valid is None else (lengths == width) | ~valid
    if not ok.all():
        raise ValueError(f"{t} expects {width}-byte values")
    assert width is not None
    return fixed_column(t, gather_rows(data, offsets[:-1], width), valid)


def _fixed_size(arr: Any, t: IcebergType, valid: NDArray[np.bool_] | None) -> SerializedValues:
    width = arr.type.byte_width
    rows = _arrow_values(arr, f"V{width}").view(np.uint8).reshape(len(arr), width)
    if t.name in ("fixed", "uuid"):
        if width != t.width:
            raise ValueError(f"{t} expects {t.width}-byte values, got {arr.type}")
        return fixed_column(t, rows, valid)
    if t.name == "binary":
        return fixed_rows_as_variable(t, rows, valid)
    raise _refuse(arr, t)


_Converter = Callable[[Any, IcebergType, "NDArray[np.bool_] | None"], SerializedValues]
# (names of pyarrow.types predicates, converter): the first match converts the array.
_CONVERTERS: tuple[tuple[tuple[str, ...], _Converter], ...] = (
    (("is_boolean",), _boolean),
    (("is_integer", "is_floating"), _number),
    (("is_date",), _date),
    (("is_time", "is_timestamp"), _temporal),
    (("is_decimal",), _decimal),
    (("is_string", "is_large_string", "is_string_view"), _string),
    (("is_binary", "is_large_binary", "is_binary_view"), _binary),
    (("is_fixed_size_binary",), _fixed_size),
)


def from_arrow(arr: Any, t: IcebergType) -> SerializedValues:
    """Serialize one pyarrow Array (not chunked)."""
    import pyarrow as pa

    # BaseExtensionType also covers pyarrow's built-in extension types such as pa.uuid().
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_null(arr.type):
        return pack_bytes(t, [None] * len(arr))
    valid = _arrow_valid(arr)
    for predicates, convert in _CONVERTERS:
        if any(getattr(pa.types, p)(arr.type) for p in predicates):
            return convert(arr, t, valid)
    raise TypeError(f"cannot serialize Arrow type {arr.type} as {t}")
