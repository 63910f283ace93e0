"""Checked framing of Roaring's portable formats, with pyroaring as the codec.

A ``deletion-vector-v1`` body is Roaring's portable 64-bit layout: a u64 count, then per
32-bit key a u32 key and a standard portable 32-bit Roaring bitmap.  pyroaring decodes and
encodes the 32-bit bitmaps; this module only walks their headers, because the 64-bit layout
does not record where each 32-bit bitmap ends and because we refuse to hand a codec a byte
range we have not bounded.  The walk reads the cookie, the container count, the run flags,
the descriptive header (keys, cardinalities), the offset header and the run counts, and
checks every size against the bytes available.  It also checks each run container's written
cardinality against its runs: CRoaring ignores that field for runs, so two run containers
with swapped cardinalities would add up to the right total and pass.  pyroaring validates
the rest when it deserializes (sorted arrays, non-overlapping runs, bitset counts); an
array's length is its written cardinality by construction.

Everything here is private to the deletion-vector modules.  Errors give the index into
the buffer in their message ("at byte 28 of the payload"), never as an ``offset``.
"""

from __future__ import annotations

import array
import struct
from typing import NamedTuple, cast

import numpy as np
from pyroaring import BitMap

from puffin.blobs.dv.roaring_runs import RunContainers, check_run_card, check_run_cards, run_counts
from puffin.errors import DeletionVectorError

# Constants of the RoaringFormatSpec portable format.
SERIAL_COOKIE_NO_RUNCONTAINER = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4
MAX_CONTAINERS = 1 << 16
ARRAY_MAX_CARDINALITY = 4096
BITSET_BYTES = 8192

#: Largest key Iceberg Java accepts (its bitmap array length is a positive int).
MAX_KEY = 0x7FFFFFFE
#: An empty 32-bit bitmap: no-run cookie, zero containers.
EMPTY_BITMAP32 = struct.pack("<II", SERIAL_COOKIE_NO_RUNCONTAINER, 0)
#: Bytes of one key plus an empty bitmap: what each gap key costs in Java's layout.
EMPTY_ENTRY_SIZE = 4 + len(EMPTY_BITMAP32)

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_EMPTY_RECORD = np.array([SERIAL_COOKIE_NO_RUNCONTAINER, 0], dtype="<u4")


class Scan32(NamedTuple):
    """What the header walk learned about one portable 32-bit bitmap."""

    size: int
    """Serialized size in bytes."""
    cardinality: int
    """Sum of the container cardinalities written in the descriptive header."""
    tied_runs: bool
    """A run container is exactly as large as the array holding the same values.

    Iceberg Java (building arrays, then run-optimizing with a strict "smaller" test) keeps
    an array there, CRoaring keeps a run container it already had; see ``canonical_bytes``.
    """


def _error(message: str, at: int, location: str | None) -> DeletionVectorError:
    """An error at index ``at`` of the buffer (the payload): a position in the message, since
    the ``offset`` of an error is a file offset, which the caller adds."""
    return DeletionVectorError(f"{message} (at byte {at} of the payload)", location=location)


def _need(at: int, count: int, end: int, what: str, location: str | None) -> None:
    if at + count > end:
        raise _error(
            f"Roaring bitmap truncated: {what} needs {count} bytes, "
            f"only {max(end - at, 0)} remain",
            at,
            location,
        )


def _read_cookie(
    buf: bytes, start: int, end: int, location: str | None
) -> tuple[int, bytes, bool, int]:
    """(container count, run flags, whether an offset header follows, position after)."""
    _need(start, 4, end, "the cookie", location)
    cookie = _U32.unpack_from(buf, start)[0]
    pos = start + 4
    if cookie & 0xFFFF == SERIAL_COOKIE:
        n = (cookie >> 16) + 1
        flag_bytes = (n + 7) // 8
        _need(pos, flag_bytes, end, "the run-container flags", location)
        return n, buf[pos : pos + flag_bytes], n >= NO_OFFSET_THRESHOLD, pos + flag_bytes
    if cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        _need(pos, 4, end, "the container count", location)
        n = _U32.unpack_from(buf, pos)[0]
        if n > MAX_CONTAINERS:
            raise _error(
                f"Roaring bitmap claims {n} containers, more than {MAX_CONTAINERS}",
                pos,
                location,
            )
        return n, b"", True, pos + 4
    raise _error(
        f"not a portable Roaring bitmap: cookie 0x{cookie:08x} is neither "
        f"{SERIAL_COOKIE_NO_RUNCONTAINER} nor {SERIAL_COOKIE} + (containers - 1) << 16",
        start,
        location,
    )


def scan32(buf: bytes, start: int, end: int, location: str | None = None) -> Scan32:
    """Walk the headers of the portable 32-bit Roaring bitmap at ``buf[start:end]``.

    The bitmap may end before ``end``; its exact size is returned.  Raises
    :class:`DeletionVectorError` (naming the index into ``buf``) when the header is
    malformed or claims more bytes than remain.  Small bitmaps are walked container by
    container; large ones with NumPy, both accepting exactly the same inputs.
    """
    n, run_flags, has_offsets, pos = _read_cookie(buf, start, end, location)
    if n == 0:
        return Scan32(pos - start, 0, False)
    header_at = pos
    _need(pos, 4 * n, end, f"the descriptive header of {n} containers", location)
    pos += 4 * n
    offsets_at = pos if has_offsets else -1
    if has_offsets:
        _need(pos, 4 * n, end, f"the offset header of {n} containers", location)
        pos += 4 * n
    walk = _walk_small if n <= _SMALL_BITMAP or not has_offsets else _walk_large
    total, cardinality, tied = walk(
        buf, start, end, n, run_flags, header_at, offsets_at, pos, location
    )
    _need(start, total, end, f"a bitmap of {n} containers", location)
    return Scan32(total, cardinality, tied)


# Bitmaps with up to this many containers are walked in plain Python (NumPy's per-call
# overhead dominates there); larger ones with NumPy.
_SMALL_BITMAP = 16


def _key_order_error(
    i: int, key: int, previous: int, at: int, location: str | None
) -> DeletionVectorError:
    return _error(
        f"Roaring container keys not strictly ascending: key {key} follows {previous} "
        f"(container {i})",
        at,
        location,
    )


def _offset_error(
    i: int, claimed: int, actual: int, offsets_at: int, location: str | None
) -> DeletionVectorError:
    return _error(
        f"Roaring offset header says container {i} starts at {claimed}, the container sizes "
        f"put it at {actual}",
        offsets_at + 4 * i,
        location,
    )


def _walk_small(
    buf: bytes,
    start: int,
    end: int,
    n: int,
    run_flags: bytes,
    header_at: int,
    offsets_at: int,
    data_start: int,
    location: str | None,
) -> tuple[int, int, bool]:
    """Container by container: sizes from the header and run counts, offsets checked."""
    header = struct.unpack_from(f"<{2 * n}H", buf, header_at)
    keys = header[0::2]
    for i in range(1, n):
        if keys[i] <= keys[i - 1]:
            raise _key_order_error(i, keys[i], keys[i - 1], header_at + 4 * i, location)
    offsets = struct.unpack_from(f"<{n}I", buf, offsets_at) if offsets_at >= 0 else None
    at = data_start
    cardinality = 0
    tied = False
    for i in range(n):
        card = header[2 * i + 1] + 1
        cardinality += card
        if offsets is not None and offsets[i] != at - start:
            raise _offset_error(i, offsets[i], at - start, offsets_at, location)
        if run_flags and run_flags[i >> 3] >> (i & 7) & 1:
            if at + 2 > end:
                raise _error(
                    f"Roaring bitmap truncated: the run count of container {i} needs 2 bytes, "
                    f"only {max(end - at, 0)} remain",
                    at,
                    location,
                )
            runs = buf[at] | buf[at + 1] << 8
            if at + 2 + 4 * runs <= end:  # else scan32 reports the truncation
                check_run_card(buf, at, runs, card, i, header_at, location)
            tied = tied or (card <= ARRAY_MAX_CARDINALITY and card == 2 * runs + 1)
            at += 2 + 4 * runs
        else:
            at += BITSET_BYTES if card > ARRAY_MAX_CARDINALITY else 2 * card
    return at - start, cardinality, tied


def _walk_large(
    buf: bytes,
    start: int,
    end: int,
    n: int,
    run_flags: bytes,
    header_at: int,
    offsets_at: int,
    data_start: int,
    location: str | None,
) -> tuple[int, int, bool]:
    """The same walk with NumPy; needs the offset header (present from 4 containers on)."""
    assert offsets_at >= 0
    header = np.frombuffer(buf, dtype="<u2", count=2 * n, offset=header_at).reshape(n, 2)
    keys = header[:, 0]
    bad = np.flatnonzero(keys[1:] <= keys[:-1])
    if bad.size:
        i = int(bad[0]) + 1
        raise _key_order_error(i, int(keys[i]), int(keys[i - 1]), header_at + 4 * i, location)
    cards = header[:, 1].astype(np.int64) + 1
    offsets = np.frombuffer(buf, dtype="<u4", count=n, offset=offsets_at).astype(np.int64)
    sizes = np.where(cards > ARRAY_MAX_CARDINALITY, BITSET_BYTES, 2 * cards)
    runs = RunContainers.empty()
    if run_flags:
        runs = run_counts(buf, start, end, n, run_flags, offsets, offsets_at, data_start, location)
        sizes[runs.which] = 2 + 4 * runs.runs
    expected = np.empty(n, dtype=np.int64)
    expected[0] = data_start - start
    np.cumsum(sizes[:-1], out=expected[1:])
    expected[1:] += data_start - start
    bad = np.flatnonzero(offsets != expected)
    if bad.size:
        i = int(bad[0])
        raise _offset_error(i, int(offsets[i]), int(expected[i]), offsets_at, location)
    total = data_start - start + int(sizes.sum())
    run_cards = cards[runs.which]
    if runs.which.size and start + total <= end:  # else scan32 reports the truncation
        check_run_cards(buf, runs, run_cards, header_at, location)
    tied = bool(np.any((run_cards <= ARRAY_MAX_CARDINALITY) & (run_cards == 2 * runs.runs + 1)))
    return total, int(cards.sum()), tied


def deserialize32(buf: bytes, start: int, scan: Scan32, location: str | None) -> BitMap:
    """Let pyroaring decode the bitmap ``scan32`` bounded; check its cardinality."""
    # pyroaring reads any buffer; a view avoids copying large bitmaps.
    view = cast(bytes, memoryview(buf)[start : start + scan.size])
    try:
        bitmap = BitMap.deserialize(view)
    except Exception as exc:  # pyroaring raises ValueError/IndexError on bad input
        raise _error(f"invalid Roaring bitmap: {exc}", start, location) from None
    if len(bitmap) != scan.cardinality:
        raise _error(
            f"Roaring container headers give cardinality {scan.cardinality}, the containers "
            f"hold {len(bitmap)} values",
            start,
            location,
        )
    return bitmap


def _read_key(
    buf: bytes, pos: int, end: int, index: int, count: int, last_key: int, location: str | None
) -> int:
    """The key of bitmap ``index`` at ``pos``: in room, at most MAX_KEY, above the last."""
    if pos + 4 > end:
        raise _error(
            f"portable 64-bit Roaring bitmap truncated: bitmap {index} of {count} has no "
            "room for its key",
            pos,
            location,
        )
    key: int = _U32.unpack_from(buf, pos)[0]
    if key > MAX_KEY:
        why = (
            "negative as a Java int, so its positions are >= 2^63"
            if key >= 1 << 31
            else f"above Iceberg's largest key {MAX_KEY}"
        )
        raise _error(f"bitmap {index} has key {key} (0x{key:08x}), {why}", pos, location)
    if key <= last_key:
        raise _error(
            f"bitmap keys must be strictly ascending: key {key} follows {last_key} "
            f"(bitmap {index})",
            pos,
            location,
        )
    return key


def parse_portable64(
    buf: bytes, start: int, end: int, location: str | None = None
) -> tuple[dict[int, BitMap], int]:
    """Decode the portable 64-bit Roaring bitmap filling ``buf[start:end]`` exactly.

    Returns the non-empty 32-bit bitmaps by key and the number of keys Java would allocate
    (last key + 1, so trailing empty bitmaps are remembered).  Keys must be ascending,
    unique and at most :data:`MAX_KEY`; every byte must be used.
    """
    if end - start < 8:
        raise _error(
            f"portable 64-bit Roaring bitmap needs at least 8 bytes, got {max(end - start, 0)}",
            start,
            location,
        )
    count = _U64.unpack_from(buf, start)[0]
    pos = start + 8
    room = (end - pos) // EMPTY_ENTRY_SIZE
    if count > room:
        raise _error(
            f"bitmap count {count} cannot fit in the {end - pos} bytes that follow "
            f"(each bitmap takes at least {EMPTY_ENTRY_SIZE} bytes)",
            start,
            location,
        )
    bitmaps: dict[int, BitMap] = {}
    last_key = -1
    remaining = count
    while remaining:
        if buf[pos + 4 : pos + 12] == EMPTY_BITMAP32:
            pos, remaining, skipped_to = _skip_empty_entries(buf, pos, end, remaining, last_key)
            if skipped_to != last_key:
                last_key = skipped_to
                continue
        key = _read_key(buf, pos, end, count - remaining, count, last_key, location)
        pos += 4
        scan = scan32(buf, pos, end, location)
        if scan.cardinality:
            bitmaps[key] = deserialize32(buf, pos, scan, location)
        pos += scan.size
        last_key = key
        remaining -= 1
    if pos != end:
        raise _error(
            f"{end - pos} bytes left over after the {count} bitmaps of the portable 64-bit "
            "Roaring bitmap",
            pos,
            location,
        )
    return bitmaps, last_key + 1


def _skip_empty_entries(
    buf: bytes, pos: int, end: int, remaining: int, last_key: int
) -> tuple[int, int, int]:
    """Pass a run of (key, empty bitmap) entries with NumPy instead of one at a time.

    Java fills every gap between keys with an empty bitmap, so a DV with a large key holds
    many of them.  Windows grow geometrically, so a long run costs few NumPy calls and a
    single empty entry costs one small one.  Stops, without consuming it, at the first
    entry whose key is out of order or too large: the caller reports that one.
    """
    window = 8
    while remaining:
        m = min(window, remaining, (end - pos) // EMPTY_ENTRY_SIZE)
        if m == 0:
            break
        records = np.frombuffer(buf, dtype="<u4", count=3 * m, offset=pos).reshape(m, 3)
        empty = np.all(records[:, 1:] == _EMPTY_RECORD, axis=1)
        taken = m if bool(empty.all()) else int(np.argmin(empty))
        if taken == 0:
            break
        keys = records[:taken, 0].astype(np.int64)
        good = (keys <= MAX_KEY) & (keys > np.concatenate(([last_key], keys[:-1])))
        if not bool(good.all()):
            taken = int(np.argmin(good))
        if taken == 0:
            break
        pos += EMPTY_ENTRY_SIZE * taken
        remaining -= taken
        last_key = int(keys[taken - 1])
        if taken < m:
            break
        window = min(window * 4, 1 << 20)
    return pos, remaining, last_key


def empty_entries(first_key: int, stop_key: int) -> bytes:
    """Java's filler for keys ``first_key .. stop_key - 1``: each key with an empty bitmap."""
    records = np.empty((stop_key - first_key, 3), dtype="<u4")
    records[:, 0] = np.arange(first_key, stop_key, dtype=np.uint32)
    records[:, 1:] = _EMPTY_RECORD
    return records.tobytes()


def canonical_bytes(bitmap: BitMap) -> tuple[BitMap, bytes]:
    """Run-optimize ``bitmap`` as Iceberg Java would and return it with its serialization.

    Java adds positions one by one (array and bitset containers) and then run-optimizes,
    switching to a run container only when that is strictly smaller.  CRoaring's
    run_optimize agrees, except that it keeps an existing run container (made by
    ``add_range`` or a union) when run and array sizes tie.  In that one case the bitmap is
    rebuilt from its values, which takes Java's path.
    """
    bitmap.run_optimize()
    data = bitmap.serialize()
    if bitmap.get_statistics()["n_run_containers"] and scan32(data, 0, len(data)).tied_runs:
        bitmap = BitMap(bitmap.to_array())  # add_many, then run_optimize (optimize=True)
        data = bitmap.serialize()
    return bitmap, data


def bitmap_from_uint32(values: np.ndarray) -> BitMap:
    """A BitMap of a uint32 NumPy array through pyroaring's fast array.array path."""
    if values.dtype != np.uint32:
        raise TypeError(f"expected a uint32 array, got {values.dtype}")
    buffer = array.array("I")
    buffer.frombytes(np.ascontiguousarray(values).data.cast("B"))
    return BitMap(buffer, optimize=False)
