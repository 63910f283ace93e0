"""``deletion-vector-v1`` blobs: Iceberg v3's deleted-row positions for one data file.

A payload is ``[u32 BE length][magic D1 D3 39 64][portable 64-bit Roaring][u32 BE CRC-32]``
where ``length`` counts the magic and the bitmap and the CRC covers the same bytes.  The
bitmap is a u64 LE count, then for each 32-bit key (the high half of the positions, in
ascending order) a u32 LE key and a portable 32-bit Roaring bitmap of the low halves.

Reading checks everything a broken or hostile payload could get wrong: length prefix, magic,
CRC, key order, Java's key limit, the Roaring headers against the bytes present, the body
parsing exactly to its end and the cardinality against the manifest or footer.  Writing
matches Iceberg Java byte for byte: bitmaps are run-optimized and every key from 0 to the
largest gets a bitmap, empty ones included.  pyroaring is the Roaring codec; NumPy does
the array conversions.

Example::

    import numpy as np, puffin

    entries = puffin.write_deletion_vectors(
        "deletes.puffin", {"s3://bucket/data/file-a.parquet": np.array([3, 7, 42])}
    )
    e = entries[0]  # what the v3 manifest needs: offset, size, record count, file size
    dv = puffin.read_deletion_vector(
        "deletes.puffin", e.content_offset, e.content_size_in_bytes, record_count=e.record_count
    )
    dv.to_numpy()  # array([ 3,  7, 42])
"""

from __future__ import annotations

import operator
import os
import re
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Union

import numpy as np
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap, BitMap64

from puffin._source import Source, open_source
from puffin.blobs import _roaring64 as r64
from puffin.errors import DeletionVectorError
from puffin.limits import Limits
from puffin.metadata import BlobMetadata
from puffin.reader import open as _open_puffin
from puffin.writer import create as _create_puffin

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "DELETION_VECTOR_V1",
    "MAGIC",
    "MAX_POSITION",
    "ROW_POSITION_FIELD_ID",
    "DeletionVector",
    "DeletionVectorEntry",
    "read_deletion_vector",
    "read_deletion_vectors",
    "write_deletion_vectors",
]

#: The Puffin blob type.
DELETION_VECTOR_V1 = "deletion-vector-v1"
#: The four bytes after the length prefix.
MAGIC = b"\xd1\xd3\x39\x64"
#: Largest position Iceberg Java accepts on write: key 0x7FFFFFFE, low word 0x80000000.
MAX_POSITION = (r64.MAX_KEY << 32) | 0x80000000
#: Field id Java writes in the blob's ``fields``: the ``_pos`` metadata column.
ROW_POSITION_FIELD_ID = 2147483645
PROPERTY_REFERENCED_DATA_FILE = "referenced-data-file"
PROPERTY_CARDINALITY = "cardinality"

# A payload must fit a Java byte array, and its length prefix a signed Java int.
_MAX_PAYLOAD_SIZE = 0x7FFFFFFF
_FRAMING_SIZE = 12  # length prefix, magic, CRC
_U32_BE = struct.Struct(">I")
_U64_LE = struct.Struct("<Q")
_U32_LE = struct.Struct("<I")
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_INT64_MAX = (1 << 63) - 1

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
        pos = _check_position(position)
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
        _check_position(start)
        _check_position(stop - 1)
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
        for key, bitmap in _to_bitmaps(positions).items():
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
        """The positions as a pyarrow ``int64`` array (needs pyarrow)."""
        import pyarrow as pa

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
        payload in error messages; error offsets count from the payload's first byte.

        Raises:
            DeletionVectorError: the payload is invalid.
        """
        buf = _as_bytes(data)
        size = len(buf)
        if size < _FRAMING_SIZE:
            raise DeletionVectorError(
                f"deletion vector of {size} bytes is shorter than its length prefix, magic "
                f"and CRC ({_FRAMING_SIZE} bytes)",
                offset=0,
                location=location,
            )
        length = _U32_BE.unpack_from(buf, 0)[0]
        if length != size - 8:
            raise DeletionVectorError(
                f"length prefix {length} does not match the payload: {size} bytes hold "
                f"{size - 8} bytes of magic and bitmap",
                offset=0,
                location=location,
            )
        if buf[4:8] != MAGIC:
            raise DeletionVectorError(
                f"bad deletion vector magic {buf[4:8].hex()}, expected {MAGIC.hex()}",
                offset=4,
                location=location,
            )
        stored = _U32_BE.unpack_from(buf, 4 + length)[0]
        computed = zlib.crc32(memoryview(buf)[4 : 4 + length])
        if stored != computed:
            raise DeletionVectorError(
                f"deletion vector CRC-32 mismatch: stored 0x{stored:08x}, computed "
                f"0x{computed:08x} over the {length} bytes of magic and bitmap",
                offset=4 + length,
                location=location,
            )
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


# -- conversions ---------------------------------------------------------------------------


def _check_position(position: int) -> int:
    pos = operator.index(position)
    if not 0 <= pos <= MAX_POSITION:
        raise DeletionVectorError(
            f"position {pos} is outside [0, {MAX_POSITION}], the range Iceberg Java accepts"
        )
    return pos


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
        raise TypeError(
            f"expected a bytes-like payload, got {type(data).__name__}"
        ) from None


def _to_bitmaps(positions: PositionsLike) -> dict[int, BitMap]:
    """Fresh per-key bitmaps of ``positions``, validated against Java's range."""
    if isinstance(positions, DeletionVector):
        return {key: bitmap.copy() for key, bitmap in positions._bitmaps.items() if bitmap}
    if isinstance(positions, AbstractBitMap64):
        if not positions:
            return {}
        _check_position(positions.max())
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
            _check_position(smallest)
    largest = int(array.max())
    _check_position(largest)
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


# -- Puffin files ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DeletionVectorEntry:
    """What an Iceberg v3 manifest's delete-file entry needs for one written DV.

    ``content_offset`` and ``content_size_in_bytes`` locate the blob in the Puffin file,
    ``record_count`` is its cardinality; ``path`` (``None`` for a file object without a
    name) and ``file_size_in_bytes`` describe the Puffin file itself.
    """

    referenced_data_file: str
    content_offset: int
    content_size_in_bytes: int
    record_count: int
    path: str | None
    file_size_in_bytes: int


def _default_created_by() -> str:
    from puffin import __version__

    return f"iceberg-puffin {__version__}"


def write_deletion_vectors(
    target: str | os.PathLike[str] | IO[bytes],
    vectors: Mapping[str, PositionsLike],
    *,
    created_by: str | None = None,
) -> list[DeletionVectorEntry]:
    """Write one Puffin file holding a ``deletion-vector-v1`` blob per data file.

    Each blob is written as Iceberg Java writes it: fields ``[2147483645]``, snapshot-id
    and sequence-number -1, no compression, properties ``referenced-data-file`` then
    ``cardinality``.  A path target is written atomically.

    Args:
        target: a path or a writable binary file object.
        vectors: data file location -> positions (a :class:`DeletionVector` or anything
            its constructor takes), written in the mapping's order.  A
            ``DeletionVector`` given here is run-optimized in place.
        created_by: the file's ``created-by`` property; defaults to this library's name
            and version.

    Returns:
        One :class:`DeletionVectorEntry` per blob, in the mapping's order.
    """
    if not isinstance(vectors, Mapping):
        raise TypeError(f"vectors must be a mapping, got {type(vectors).__name__}")
    prepared: list[tuple[str, DeletionVector]] = []
    for referenced_data_file, positions in vectors.items():
        if not isinstance(referenced_data_file, str) or not referenced_data_file:
            raise ValueError(
                f"referenced data file must be a non-empty str, got {referenced_data_file!r}"
            )
        dv = positions if isinstance(positions, DeletionVector) else DeletionVector(positions)
        prepared.append((referenced_data_file, dv))
    written: list[tuple[str, int, BlobMetadata]] = []
    with _create_puffin(
        target, created_by=created_by if created_by is not None else _default_created_by()
    ) as writer:
        for referenced_data_file, dv in prepared:
            payload = dv.serialize()
            cardinality = dv.cardinality
            meta = writer.add_blob(
                payload,
                type=DELETION_VECTOR_V1,
                fields=[ROW_POSITION_FIELD_ID],
                snapshot_id=-1,
                sequence_number=-1,
                properties={
                    PROPERTY_REFERENCED_DATA_FILE: referenced_data_file,
                    PROPERTY_CARDINALITY: str(cardinality),
                },
            )
            written.append((referenced_data_file, cardinality, meta))
    path = writer.path
    if path is None:
        name = getattr(target, "name", None)
        path = name if isinstance(name, str) else None
    assert writer.file_size is not None
    return [
        DeletionVectorEntry(
            referenced_data_file=referenced_data_file,
            content_offset=meta.offset,
            content_size_in_bytes=meta.length,
            record_count=cardinality,
            path=path,
            file_size_in_bytes=writer.file_size,
        )
        for referenced_data_file, cardinality, meta in written
    ]


def _shift(exc: DeletionVectorError, base: int, blob_index: int | None) -> DeletionVectorError:
    """The same error with its payload offset turned into a file offset."""
    return DeletionVectorError(
        exc.reason,
        offset=None if exc.offset is None else base + exc.offset,
        blob_index=blob_index,
        location=exc.location,
    )


def read_deletion_vector(
    source: Source,
    offset: int,
    length: int,
    *,
    record_count: int | None = None,
    referenced_data_file: str | None = None,
) -> DeletionVector:
    """Read one DV by its manifest range (``content_offset``, ``content_size_in_bytes``).

    Like Iceberg Java's reader this does not parse the footer, so it also reads DV blobs at
    known ranges of files that are not Puffin containers.  ``record_count`` (the manifest's)
    is checked against the decoded cardinality; ``referenced_data_file`` only names the DV
    in error messages.  Error offsets are file offsets.

    Raises:
        DeletionVectorError: the payload is invalid or its cardinality differs.
        InvalidFileError: the range lies outside the file.
    """
    for name, value in (("offset", offset), ("length", length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    src = open_source(source)
    try:
        data = src.read_at(offset, length)
        where = [src.name or "<bytes>", f"deletion vector at [{offset}, {offset + length})"]
    finally:
        src.close()
    if referenced_data_file is not None:
        where.append(f"for {referenced_data_file!r}")
    try:
        return DeletionVector.deserialize(
            data, expected_cardinality=record_count, location=" ".join(where)
        )
    except DeletionVectorError as exc:
        raise _shift(exc, offset, None) from None


def _footer_error(message: str, index: int, field: str, location: str) -> DeletionVectorError:
    return DeletionVectorError(message, blob_index=index, field=field, location=location)


def check_blob_metadata(meta: BlobMetadata, index: int, location: str) -> tuple[str, int]:
    """The spec's footer rules for a DV blob; returns (referenced data file, cardinality).

    Raises :class:`DeletionVectorError` naming the blob ``index``, the field and ``location``.
    """
    if meta.snapshot_id != -1:
        raise _footer_error(
            f"deletion-vector-v1 blobs must have snapshot-id -1, got {meta.snapshot_id}",
            index,
            "snapshot-id",
            location,
        )
    if meta.sequence_number != -1:
        raise _footer_error(
            f"deletion-vector-v1 blobs must have sequence-number -1, got {meta.sequence_number}",
            index,
            "sequence-number",
            location,
        )
    if meta.compression_codec is not None:
        raise _footer_error(
            "deletion-vector-v1 blobs must not be compressed, got compression-codec "
            f"{meta.compression_codec!r}",
            index,
            "compression-codec",
            location,
        )
    referenced = meta.properties.get(PROPERTY_REFERENCED_DATA_FILE)
    if not referenced:
        raise _footer_error(
            "deletion-vector-v1 blob has no referenced-data-file property"
            if referenced is None
            else "deletion-vector-v1 blob has an empty referenced-data-file property",
            index,
            PROPERTY_REFERENCED_DATA_FILE,
            location,
        )
    text = meta.properties.get(PROPERTY_CARDINALITY)
    if text is None:
        raise _footer_error(
            "deletion-vector-v1 blob has no cardinality property",
            index,
            PROPERTY_CARDINALITY,
            location,
        )
    # Length first: int() of a very long digit string is slow and then raises ValueError.
    if len(text) > 19 or not _DIGITS.fullmatch(text) or int(text) > _INT64_MAX:
        raise _footer_error(
            f"cardinality property must be a non-negative integer, got {text!r}",
            index,
            PROPERTY_CARDINALITY,
            location,
        )
    return referenced, int(text)


def read_deletion_vectors(
    source: Source,
    *,
    file_size: int | None = None,
    footer_size: int | None = None,
    limits: Limits | None = None,
) -> dict[str, DeletionVector]:
    """Read every ``deletion-vector-v1`` blob of a Puffin file through its footer.

    Each DV blob must follow the spec's footer rules (snapshot-id and sequence-number -1,
    no compression codec, ``referenced-data-file`` present, ``cardinality`` present, a
    non-negative integer equal to the decoded count); its payload gets every check of
    :meth:`DeletionVector.deserialize`.  Blobs of other types are skipped.

    Returns:
        ``{referenced data file: DeletionVector}`` in footer order.  Two DV blobs for the
        same data file are an error, since a reader could not tell which one applies.
    """
    out: dict[str, DeletionVector] = {}
    with _open_puffin(
        source, file_size=file_size, footer_size=footer_size, limits=limits
    ) as reader:
        name = reader.name or "<bytes>"
        for index, meta in enumerate(reader.blobs):
            if meta.type != DELETION_VECTOR_V1:
                continue
            dv = decode_blob(reader.read_raw(meta), meta, index, name)
            referenced = meta.properties[PROPERTY_REFERENCED_DATA_FILE]  # checked above
            if referenced in out:
                raise _footer_error(
                    f"two deletion vectors for the same data file {referenced!r}",
                    index,
                    PROPERTY_REFERENCED_DATA_FILE,
                    name,
                )
            out[referenced] = dv
    return out


def decode_blob(data: bytes, meta: BlobMetadata, index: int, location: str) -> DeletionVector:
    """One DV blob of a Puffin file, with every check :func:`read_deletion_vectors` makes.

    The footer rules come first (:func:`check_blob_metadata`), then the payload with its
    cardinality; error offsets are file offsets.  For tools that report each bad blob
    instead of stopping at the first.
    """
    referenced, cardinality = check_blob_metadata(meta, index, location)
    try:
        return DeletionVector.deserialize(
            data,
            expected_cardinality=cardinality,
            location=f"{location} deletion vector for {referenced!r}",
        )
    except DeletionVectorError as exc:
        raise _shift(exc, meta.offset, index) from None
