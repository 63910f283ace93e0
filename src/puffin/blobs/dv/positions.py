"""Row positions from every input a deletion vector takes, as per-key 32-bit bitmaps.

Positions are checked against the range Iceberg Java accepts, :data:`MAX_POSITION`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap

from puffin.blobs.dv import roaring64 as r64
from puffin.errors import DeletionVectorError

__all__ = ["MAX_POSITION", "check_position", "to_bitmaps"]

#: Largest position Iceberg Java accepts on write: key 0x7FFFFFFE, low word 0x80000000.
MAX_POSITION = (r64.MAX_KEY << 32) | 0x80000000


def check_position(position: int) -> int:
    """``position`` as an int if Iceberg Java accepts it, else :class:`DeletionVectorError`."""
    pos = operator.index(position)
    if not 0 <= pos <= MAX_POSITION:
        raise DeletionVectorError(
            f"position {pos} is outside [0, {MAX_POSITION}], the range Iceberg Java accepts"
        )
    return pos


def to_bitmaps(positions: AbstractBitMap64 | AbstractBitMap | Iterable[int]) -> dict[int, BitMap]:
    """Fresh per-key bitmaps of ``positions``: a pyroaring bitmap, a NumPy or pyarrow integer
    array, or an iterable of ints (not a :class:`~puffin.DeletionVector`: it copies its own).
    """
    if isinstance(positions, AbstractBitMap64):
        if not positions:
            return {}
        check_position(positions.max())
        data = positions.serialize()
        return r64.parse_portable64(data, 0, len(data))[0]
    if isinstance(positions, AbstractBitMap):
        return {0: BitMap(positions)} if positions else {}
    if isinstance(positions, np.ndarray):
        return _from_numpy(positions)
    if type(positions).__module__.partition(".")[0] == "pyarrow":
        return _from_numpy(_arrow_to_numpy(positions))
    if isinstance(positions, (str, bytes, bytearray, memoryview, Mapping)):
        raise TypeError(f"positions must be integers, got {type(positions).__name__}")
    try:
        array = np.fromiter(map(operator.index, positions), dtype=np.int64)
    except OverflowError:
        raise DeletionVectorError(
            f"a position is outside [0, {MAX_POSITION}], the range Iceberg Java accepts"
        ) from None
    return _from_numpy(array)


def _arrow_to_numpy(values: Any) -> np.ndarray:
    import pyarrow as pa

    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {type(values).__name__}")
    if not pa.types.is_integer(values.type):
        raise TypeError(f"positions must be an integer array, got pyarrow type {values.type}")
    if values.null_count:
        raise ValueError(f"positions contain {values.null_count} nulls")
    result: np.ndarray = (
        values.to_numpy()
        if isinstance(values, pa.ChunkedArray)
        else values.to_numpy(zero_copy_only=False)
    )
    return result


def _from_numpy(array: np.ndarray) -> dict[int, BitMap]:
    if array.ndim != 1:
        raise ValueError(f"positions must be a 1-d array, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"positions must be integers, got dtype {array.dtype}")
    if array.size == 0:
        return {}
    if array.dtype.kind == "i":
        smallest = int(array.min())
        if smallest < 0:
            check_position(smallest)
    largest = int(array.max())
    check_position(largest)
    if largest <= 0xFFFFFFFF:  # one key: pyroaring takes the values in any order
        return {0: r64.bitmap_from_uint32(array.astype(np.uint32, copy=False))}
    if array.size > 1 and not bool(np.all(array[1:] >= array[:-1])):
        array = np.sort(array)
    bitmaps: dict[int, BitMap] = {}
    start, size = 0, array.size
    while start < size:
        key = int(array[start]) >> 32
        stop = int(np.searchsorted(array, (key + 1) << 32, side="left"))
        bitmaps[key] = r64.bitmap_from_uint32(array[start:stop].astype(np.uint32))
        start = stop
    return bitmaps
