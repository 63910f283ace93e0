"""The column container :class:`SerializedValues` and the ways to build and join one."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from puffin.types import IcebergType

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

__all__ = [
    "SerializedValues",
    "concat",
    "drop_null_bytes",
    "fixed_column",
    "fixed_rows_as_variable",
    "pack_bytes",
    "variable_column",
    "variable_or_dropped",
    "with_nulls",
]


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


def fixed_column(
    t: IcebergType, rows: NDArray[Any], valid: NDArray[np.bool_] | None
) -> SerializedValues:
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


def variable_column(
    t: IcebergType,
    data: NDArray[np.uint8],
    offsets: NDArray[Any],
    valid: NDArray[np.bool_] | None,
) -> SerializedValues:
    """Wrap variable-length values; an all-true ``valid`` becomes ``None``."""
    if valid is not None and valid.all():
        valid = None
    return SerializedValues(t, data, offsets, valid)


def drop_null_bytes(
    t: IcebergType, data: NDArray[np.uint8], offsets: NDArray[Any], valid: NDArray[np.bool_]
) -> SerializedValues:
    """Remove the bytes of null slots so that nulls have zero length."""
    if valid.all():
        return variable_column(t, data, offsets, None)
    lengths = np.diff(offsets).astype(np.int64)
    lengths[~valid] = 0
    keep = np.repeat(valid, np.diff(offsets).astype(np.int64))
    start = int(offsets[0])
    new_data = data[start : start + keep.shape[0]][keep]
    new_offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    return variable_column(t, new_data, new_offsets, valid)


def variable_or_dropped(
    t: IcebergType,
    data: NDArray[np.uint8],
    offsets: NDArray[Any],
    valid: NDArray[np.bool_] | None,
) -> SerializedValues:
    """Variable-length values whose null slots may still hold bytes (dropped here)."""
    if valid is not None:
        return drop_null_bytes(t, data, offsets, valid)
    return variable_column(t, data, offsets, valid)


def fixed_rows_as_variable(
    t: IcebergType, rows: NDArray[np.uint8], valid: NDArray[np.bool_] | None
) -> SerializedValues:
    """Equal-length byte rows ``(n, width)`` as a variable-length (binary) column."""
    n, width = rows.shape
    offsets = np.arange(n + 1, dtype=np.int64) * width
    data = np.ascontiguousarray(rows).reshape(-1)
    return variable_or_dropped(t, data, offsets, valid)


def pack_bytes(t: IcebergType, items: Sequence[bytes | None]) -> SerializedValues:
    """Pack already-serialized values (``None`` = null) into the column layout."""
    n = len(items)
    valid = np.fromiter((b is not None for b in items), dtype=np.bool_, count=n)
    width = t.width
    if width is not None:
        blank = bytes(width)
        data = np.frombuffer(b"".join(blank if b is None else b for b in items), dtype=np.uint8)
        return fixed_column(t, data.reshape(n, width).copy(), valid)
    lengths = np.fromiter((0 if b is None else len(b) for b in items), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(b for b in items if b is not None), dtype=np.uint8)
    return variable_column(t, data, offsets, valid)


def with_nulls(items: list[Any], valid: NDArray[np.bool_] | None) -> list[Any]:
    """``items`` with ``None`` where ``valid`` is false."""
    if valid is None:
        return items
    return [v if ok else None for v, ok in zip(items, valid.tolist(), strict=True)]


def concat(t: IcebergType, parts: list[SerializedValues]) -> SerializedValues:
    """One column of all ``parts`` in order (the only part itself, without copying)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return pack_bytes(t, [])
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
