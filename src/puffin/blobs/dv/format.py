"""The ``deletion-vector-v1`` payload: :class:`DeletionVector` and its framing.

A payload is ``[u32 BE length][magic D1 D3 39 64][portable 64-bit Roaring][u32 BE CRC-32]``
where ``length`` counts the magic and the bitmap and the CRC covers the same bytes.  Kept
apart from the Puffin file I/O in :mod:`puffin.blobs.dv.files`, which re-exports it.
Errors name the position **in the payload** in their message ("at byte 4 of the payload");
a caller that knows the payload's place in a file adds it with
:meth:`~puffin.errors.PuffinError.with_context`.
"""

from __future__ import annotations

import operator
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Union

import numpy as np
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap, BitMap64

from puffin.blobs.dv import roaring64 as r64
from puffin.blobs.dv.positions import check_position, to_bitmaps
from puffin.blobs.single_value.from_arrow import require_pyarrow
from puffin.errors import DeletionVectorError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["MAGIC", "DeletionVector", "PositionsLike"]

#: The four bytes after the length prefix.
MAGIC = b"\xd1\xd3\x39\x64"

# A payload must fit a Java byte array, and its length prefix a signed Java int.
_MAX_PAYLOAD_SIZE = 0x7FFFFFFF
_FRAMING_SIZE = 12  # length prefix, magic, CRC
_U32_BE = struct.Struct(">I")
_U64_LE = struct.Struct("<Q")
_U32_LE = struct.Struct("<I")


def _error(reason: str, at: int, location: str | None) -> DeletionVectorError:
    return DeletionVectorError(f"{reason} (at byte {at} of the payload)", location=location)


PositionsLike = Union[
    "DeletionVector", AbstractBitMap64, AbstractBitMap, np.ndarray, "pa.Array", Iterable[int]
]
"""What a :class:`DeletionVector` can be built from."""


class DeletionVector:
    """The deleted row positions of one data file: a set of ints in ``[0, MAX_POSITION]``.

    Build it from an iterable of ints, a ``range``, a NumPy integer array, a pyarrow integer
    array or chunked array, a ``pyroaring.BitMap64`` (or 32-bit ``BitMap``), or another
    ``DeletionVector``.  Internally it holds one ``pyroaring.BitMap`` per 32-bit key, like
    Iceberg Java's ``RoaringPositionBitmap``.

    Example::

        dv = DeletionVector(np.arange(0, 1_000_000, 2))
        dv.add_range(5_000_000, 5_001_000)
        payload = dv.serialize()            # the blob, byte-identical to Iceberg Java's
        assert DeletionVector.deserialize(payload) == dv
    """

    __slots__ = ("_bitmaps", "_key_count")

    def __init__(self, positions: PositionsLike | None = None) -> None:
        self._bitmaps: dict[int, BitMap] = {}
        # Java's bitmap-array length: keys 0 .. _key_count-1 are written, empty or not.
        self._key_count = 0
        if positions is not None:
            self.update(positions)

    # -- building ----------------------------------------------------------------------------

    def add(self, position: int) -> None:
        """Mark one row position as deleted."""
        pos = check_position(position)
        key = pos >> 32
        bitmap = self._bitmaps.get(key)
        if bitmap is None:
            bitmap = self._bitmaps[key] = BitMap()
            self._key_count = max(self._key_count, key + 1)
        bitmap.add(pos & 0xFFFFFFFF)

    def add_range(self, start: int, stop: int) -> None:
        """Mark positions ``start`` (inclusive) to ``stop`` (exclusive), as Java's setRange."""
        start = operator.index(start)
        stop = operator.index(stop)
        if start >= stop:
            return
        check_position(start)
        check_position(stop - 1)
        for key in range(start >> 32, ((stop - 1) >> 32) + 1):
            base = key << 32
            low = max(start - base, 0)
            high = min(stop - base, 1 << 32)
            bitmap = self._bitmaps.get(key)
            if bitmap is None:
                bitmap = self._bitmaps[key] = BitMap()
            bitmap.add_range(low, high)
        self._key_count = max(self._key_count, ((stop - 1) >> 32) + 1)

    def update(self, positions: PositionsLike) -> None:
        """Add every position of ``positions`` (any input the constructor takes)."""
        if isinstance(positions, range) and positions.step == 1:
            self.add_range(positions.start, positions.stop)
            return
        if isinstance(positions, DeletionVector):
            bitmaps = {key: bitmap.copy() for key, bitmap in positions._bitmaps.items() if bitmap}
        else:
            bitmaps = to_bitmaps(positions)
        for key, bitmap in bitmaps.items():
            mine = self._bitmaps.get(key)
            if mine is None:
                self._bitmaps[key] = bitmap
            else:
                mine.update(bitmap)
            self._key_count = max(self._key_count, key + 1)

    def copy(self) -> DeletionVector:
        """An independent copy."""
        return DeletionVector._from_parts(
            {key: bitmap.copy() for key, bitmap in self._bitmaps.items()}, self._key_count
        )

    @classmethod
    def _from_parts(cls, bitmaps: dict[int, BitMap], key_count: int) -> DeletionVector:
        dv = cls.__new__(cls)
        dv._bitmaps = bitmaps
        dv._key_count = key_count
        return dv

    # -- reading -----------------------------------------------------------------------------

    @property
    def cardinality(self) -> int:
        """Number of deleted positions (the manifest's ``record_count``)."""
        return sum(len(bitmap) for bitmap in self._bitmaps.values())

    def __len__(self) -> int:
        return self.cardinality

    def __bool__(self) -> bool:
        return any(self._bitmaps.values())

    def __contains__(self, position: object) -> bool:
        try:
            pos = operator.index(position)  # type: ignore[arg-type]
        except TypeError:
            return False
        if pos < 0:
            return False
        bitmap = self._bitmaps.get(pos >> 32)
        return bitmap is not None and (pos & 0xFFFFFFFF) in bitmap

    def __iter__(self) -> Iterator[int]:
        """Positions in ascending order."""
        for key in sorted(self._bitmaps):
            base = key << 32
            if base:
                for low in self._bitmaps[key]:
                    yield base | low
            else:
                yield from self._bitmaps[key]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeletionVector):
            return NotImplemented
        mine = {k: b for k, b in self._bitmaps.items() if b}
        theirs = {k: b for k, b in other._bitmaps.items() if b}
        return mine.keys() == theirs.keys() and all(mine[k] == theirs[k] for k in mine)

    __hash__ = None  # type: ignore[assignment]

    # Set operators, as on frozenset: a new DeletionVector, the operands unchanged.
    def __or__(self, other: DeletionVector) -> DeletionVector:
        return _combine(self, other, operator.or_)

    def __and__(self, other: DeletionVector) -> DeletionVector:
        return _combine(self, other, operator.and_)

    def __sub__(self, other: DeletionVector) -> DeletionVector:
        return _combine(self, other, operator.sub)

    def __xor__(self, other: DeletionVector) -> DeletionVector:
        return _combine(self, other, operator.xor)

    def __repr__(self) -> str:
        head: list[str] = []
        for pos in self:
            if len(head) == 5:
                head.append("...")
                break
            head.append(str(pos))
        return f"DeletionVector(cardinality={self.cardinality}, positions=[{', '.join(head)}])"

    def to_numpy(self) -> np.ndarray:
        """The positions as a sorted ``int64`` NumPy array (no Python loop per position)."""
        out = np.empty(self.cardinality, dtype=np.int64)
        start = 0
        for key in sorted(self._bitmaps):
            low = np.frombuffer(self._bitmaps[key].to_array(), dtype=np.uint32)
            stop = start + low.size
            if key:
                np.add(low, np.int64(key << 32), out=out[start:stop])
            else:
                out[start:stop] = low
            start = stop
        return out

    def to_arrow(self) -> pa.Array:
        """The positions as a pyarrow ``int64`` array (needs pyarrow: the ``arrow`` extra)."""
        pa = require_pyarrow()
        return pa.array(self.to_numpy(), type=pa.int64())

    def to_bitmap(self) -> BitMap64:
        """The positions as a new ``pyroaring.BitMap64``."""
        parts = [_U64_LE.pack(len(self._bitmaps))]
        for key in sorted(self._bitmaps):
            parts.append(_U32_LE.pack(key))
            parts.append(self._bitmaps[key].serialize())
        return BitMap64.deserialize(b"".join(parts))

    # -- serialization -----------------------------------------------------------------------

    def _body_parts(self) -> list[bytes]:
        """Java's portable 64-bit layout, run-optimized, every key up to the largest."""
        key_count = self._key_count
        if _FRAMING_SIZE + 8 + r64.EMPTY_ENTRY_SIZE * key_count > _MAX_PAYLOAD_SIZE:
            raise DeletionVectorError(
                f"a deletion vector with keys up to {key_count - 1} would take more than "
                f"{_MAX_PAYLOAD_SIZE} bytes (Java writes a bitmap for every key below the "
                "largest), which Java cannot read"
            )
        parts = [_U64_LE.pack(key_count)]
        next_key = 0
        for key in sorted(self._bitmaps):
            if key > next_key:
                parts.append(r64.empty_entries(next_key, key))
            bitmap, data = r64.canonical_bytes(self._bitmaps[key])
            self._bitmaps[key] = bitmap
            parts.append(_U32_LE.pack(key))
            parts.append(data)
            next_key = key + 1
        if key_count > next_key:
            parts.append(r64.empty_entries(next_key, key_count))
        return parts

    def serialize_portable(self) -> bytes:
        """The bare portable 64-bit Roaring bitmap (no length, magic or CRC), as Java writes it.

        Run-optimizes the bitmaps in place, as Java does before writing.
        """
        return b"".join(self._body_parts())

    def serialize(self) -> bytes:
        """The ``deletion-vector-v1`` blob payload, byte-identical to Iceberg Java's.

        Run-optimizes the bitmaps in place first, as Java does.  Raises
        :class:`~puffin.DeletionVectorError` if the payload would exceed 2 GiB - 1 (Java's
        limit), which happens only with keys above about 178 million.
        """
        parts = self._body_parts()
        body_size = sum(len(part) for part in parts)
        if body_size + _FRAMING_SIZE > _MAX_PAYLOAD_SIZE:
            raise DeletionVectorError(
                f"deletion vector payload of {body_size + _FRAMING_SIZE} bytes exceeds "
                f"{_MAX_PAYLOAD_SIZE} bytes, which Java cannot read"
            )
        crc = zlib.crc32(MAGIC)
        for part in parts:
            crc = zlib.crc32(part, crc)
        return b"".join([_U32_BE.pack(4 + body_size), MAGIC, *parts, _U32_BE.pack(crc)])

    @classmethod
    def deserialize(
        cls,
        data: bytes | bytearray | memoryview,
        *,
        expected_cardinality: int | None = None,
        location: str | None = None,
    ) -> DeletionVector:
        """Decode and validate a ``deletion-vector-v1`` blob payload.

        Checks, in this order: the length prefix against the data, the magic, the CRC-32,
        then the bitmap (keys ascending and unique, keys at most 0x7FFFFFFE, Roaring headers
        consistent and within the data, every byte used) and finally the cardinality against
        ``expected_cardinality`` (the manifest's ``record_count``).  Java checks the CRC
        last; checking it before parsing keeps corrupted bytes away from the Roaring codec
        and names the real fault.  ``location`` names the
        payload in error messages, which give the byte of the payload at fault; ``offset``
        (a file offset) is left to the caller.

        Raises:
            DeletionVectorError: the payload is invalid.
        """
        buf = _as_bytes(data)
        length = _unframe(buf, location)
        bitmaps, key_count = r64.parse_portable64(buf, 8, 4 + length, location)
        dv = cls._from_parts(bitmaps, key_count)
        if expected_cardinality is not None:
            expected = _check_cardinality_argument(expected_cardinality)
            actual = dv.cardinality
            if actual != expected:
                raise DeletionVectorError(
                    f"deletion vector holds {actual} positions, expected {expected}",
                    location=location,
                )
        return dv

    @classmethod
    def deserialize_portable(
        cls, data: bytes | bytearray | memoryview, *, location: str | None = None
    ) -> DeletionVector:
        """Decode a bare portable 64-bit Roaring bitmap with the same checks as a payload.

        The whole of ``data`` must be the bitmap; keys above 0x7FFFFFFE (positions of 2^63
        and above) are refused as Iceberg Java refuses them.
        """
        buf = _as_bytes(data)
        bitmaps, key_count = r64.parse_portable64(buf, 0, len(buf), location)
        return cls._from_parts(bitmaps, key_count)


def _combine(
    a: DeletionVector, b: object, op: Callable[[BitMap, BitMap], BitMap]
) -> DeletionVector:
    """``op`` key by key; NotImplemented unless ``b`` is a DeletionVector (as for sets).

    A union keeps the larger key count (Java's ``setAll`` grows the bitmap array); any
    other result counts keys up to its largest position, as if built anew.
    """
    if not isinstance(b, DeletionVector):
        unsupported: DeletionVector = NotImplemented
        return unsupported
    empty = BitMap()
    bitmaps: dict[int, BitMap] = {}
    for key in a._bitmaps.keys() | b._bitmaps.keys():
        result = op(a._bitmaps.get(key, empty), b._bitmaps.get(key, empty))
        if result:
            bitmaps[key] = result
    union = op is operator.or_
    key_count = max(a._key_count, b._key_count) if union else max(bitmaps, default=-1) + 1
    return DeletionVector._from_parts(bitmaps, key_count)


def _check_cardinality_argument(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"expected_cardinality must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"expected_cardinality must be >= 0, got {value}")
    return int(value)


def _as_bytes(data: bytes | bytearray | memoryview) -> bytes:
    if isinstance(data, bytes):
        return data
    try:
        return bytes(memoryview(data))
    except TypeError:
        raise TypeError(f"expected a bytes-like payload, got {type(data).__name__}") from None


def _unframe(buf: bytes, location: str | None) -> int:
    """Check the length prefix, magic and CRC; return the length (magic + bitmap)."""
    size = len(buf)
    if size < _FRAMING_SIZE:
        raise _error(
            f"deletion vector of {size} bytes is shorter than its length prefix, magic "
            f"and CRC ({_FRAMING_SIZE} bytes)",
            0,
            location,
        )
    length = _U32_BE.unpack_from(buf, 0)[0]
    if length != size - 8:
        raise _error(
            f"length prefix {length} does not match the payload: {size} bytes hold "
            f"{size - 8} bytes of magic and bitmap",
            0,
            location,
        )
    if buf[4:8] != MAGIC:
        raise _error(
            f"bad deletion vector magic {buf[4:8].hex()}, expected {MAGIC.hex()}", 4, location
        )
    stored = _U32_BE.unpack_from(buf, 4 + length)[0]
    computed = zlib.crc32(memoryview(buf)[4 : 4 + length])
    if stored != computed:
        raise _error(
            f"deletion vector CRC-32 mismatch: stored 0x{stored:08x}, computed "
            f"0x{computed:08x} over the {length} bytes of magic and bitmap",
            4 + length,
            location,
        )
    return int(length)
