"""The bytes of a compact Theta sketch: serial versions 1-4, as datasketches-java reads them.

Kept apart from :class:`~puffin.blobs.theta.files.ThetaSketch` so the format can be read and
checked on its own.  Errors name the position **in the sketch** in their message ("at byte
24 of the sketch"); the caller that knows where the sketch sits in a file adds that with
:meth:`~puffin.errors.PuffinError.with_context`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from puffin.blobs.theta.build import MAX_THETA
from puffin.blobs.theta.murmur3 import DEFAULT_SEED
from puffin.errors import ThetaSketchError

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

    U64 = NDArray[np.uint64]

__all__ = ["SEED_HASH", "deserialize", "serialize"]

#: 16-bit hash of the default seed 9001, stored in every non-empty serialized sketch.
SEED_HASH = 0x93CC

_FAMILY_COMPACT = 3
_FLAG_BIG_ENDIAN = 0x01
_FLAG_READ_ONLY = 0x02
_FLAG_EMPTY = 0x04
_FLAG_COMPACT = 0x08
_FLAG_ORDERED = 0x10
_FLAG_SINGLE_ITEM = 0x20
_P_ONE = struct.pack("<f", 1.0)


def _error(reason: str, at: int) -> ThetaSketchError:
    return ThetaSketchError(f"{reason} (at byte {at} of the sketch)")


# -- writing ------------------------------------------------------------------------------


def serialize(hashes: U64, theta: int, *, compressed: bool = False) -> bytes:
    """Version 3 exactly as datasketches-java writes it; version 4 when ``compressed`` applies.

    ``hashes`` are sorted, distinct and in (0, theta).  Version 4 needs two or more entries,
    or one in estimation mode.
    """
    n = hashes.shape[0]
    estimating = theta < MAX_THETA
    if compressed and n > 0 and (n > 1 or estimating):
        return _serialize_v4(hashes, theta)
    if n == 0 and not estimating:
        # Java writes the empty sketch with seed hash 0; readers skip the check for it.
        return bytes([1, 3, _FAMILY_COMPACT, 0, 0, 0x1E, 0, 0])
    flags = _FLAG_READ_ONLY | _FLAG_COMPACT | _FLAG_ORDERED
    if n == 1 and not estimating:
        flags |= _FLAG_SINGLE_ITEM
        head = struct.pack("<BBBBBBH", 1, 3, _FAMILY_COMPACT, 0, 0, flags, SEED_HASH)
        return head + hashes.astype("<u8").tobytes()
    pre_longs = 3 if estimating else 2
    head = struct.pack("<BBBBBBHI", pre_longs, 3, _FAMILY_COMPACT, 0, 0, flags, SEED_HASH, n)
    head += _P_ONE
    if estimating:
        head += struct.pack("<Q", theta)
    return head + hashes.astype("<u8").tobytes()


def _serialize_v4(hashes: U64, theta: int) -> bytes:
    """Serial version 4: hashes as bit-packed deltas, big-endian bit order, as Java packs."""
    n = hashes.shape[0]
    estimating = theta < MAX_THETA
    deltas = np.diff(hashes, prepend=np.uint64(0))
    entry_bits = int(np.bitwise_or.reduce(deltas)).bit_length()
    count_bytes = (n.bit_length() + 7) // 8
    flags = _FLAG_READ_ONLY | _FLAG_COMPACT | _FLAG_ORDERED
    out = bytearray(
        struct.pack(
            "<BBBBBBH", 2 if estimating else 1, 4, 3, entry_bits, count_bytes, flags, SEED_HASH
        )
    )
    if estimating:
        out += struct.pack("<Q", theta)
    out += n.to_bytes(count_bytes, "little")
    shifts = np.arange(entry_bits - 1, -1, -1, dtype=np.uint64)
    bits = ((deltas[:, None] >> shifts[None, :]) & np.uint64(1)).astype(np.uint8)
    out += np.packbits(bits.reshape(-1)).tobytes()
    return bytes(out)


# -- reading ------------------------------------------------------------------------------


def _need(mem: memoryview, size: int, what: str, at: int) -> None:
    if len(mem) < size:
        raise _error(f"truncated sketch: {what} needs {size} bytes, only {len(mem)} present", at)


def _check_seed_hash(mem: memoryview) -> None:
    seed_hash = int.from_bytes(mem[6:8], "little")
    if seed_hash != SEED_HASH:
        raise _error(
            f"seed hash 0x{seed_hash:04X} is not the default seed's 0x{SEED_HASH:04X} "
            f"(the sketch was built with another seed than {DEFAULT_SEED})",
            6,
        )


def _check_theta(theta: int, at: int) -> int:
    if not 0 < theta <= MAX_THETA:
        raise _error(f"theta {theta} is outside (0, 2^63 - 1]", at)
    return theta


def _check_hashes(hashes: U64, theta: int, ordered: bool, at: int) -> U64:
    """Validate retained hashes: all in (0, theta), distinct; sort unordered ones."""
    if hashes.shape[0] == 0:
        return hashes
    bad = (hashes == 0) | (hashes >= np.uint64(theta))
    if bad.any():
        i = int(np.argmax(bad))
        raise _error(f"hash {int(hashes[i])} at entry {i} is not in (0, theta={theta})", at + 8 * i)
    if not ordered:
        hashes.sort()  # in place: the array is already a copy of the payload
    steps = hashes[1:] <= hashes[:-1]
    if steps.any():
        i = int(np.argmax(steps)) + 1
        problem = "repeats" if hashes[i] == hashes[i - 1] else "is out of order"
        if ordered:
            raise _error(f"hash at entry {i} {problem}", at + 8 * i)
        raise _error(f"unordered sketch: a hash {problem}", at)
    return hashes


def _read_hashes(mem: memoryview, start: int, count: int, max_entries: int) -> U64:
    _need(mem, start + 8 * count, f"{count} hashes", start)
    _check_count(count, max_entries, 8)
    return np.frombuffer(mem, dtype="<u8", count=count, offset=start).astype(np.uint64)


def _no_trailing(mem: memoryview, end: int) -> None:
    if len(mem) != end:
        raise _error(f"{len(mem) - end} unexpected bytes after the sketch", end)


def _check_count(count: int, max_entries: int, at: int) -> None:
    """Refuse a declared entry count over the cap before anything is sized from it."""
    if count > max_entries:
        raise _error(
            f"sketch declares {count} entries, more than {max_entries} "
            "(Limits.max_theta_entries)",
            at,
        )


def _check_compact_family(family: int) -> None:
    if family != _FAMILY_COMPACT:
        raise _error(f"family {family} is not a compact sketch (3)", 2)


def deserialize(mem: memoryview, max_entries: int) -> tuple[U64, int]:
    """The retained hashes (sorted, distinct, in (0, theta)) and theta of a sketch's bytes.

    The seed hash must be the default seed's (0x93CC) except in empty sketches (Java
    writes 0 there) and version 1 (which has none).  A sketch declaring more than
    ``max_entries`` entries is refused before any array is sized from its count: a
    compressed (version 4) sketch of 1 KB can declare tens of millions.  Raises
    :class:`~puffin.errors.ThetaSketchError` naming the byte of the sketch at fault.
    """
    _need(mem, 8, "the preamble", 0)
    ser_ver = mem[1]
    read = _READERS.get(ser_ver)
    if read is None:
        raise _error(f"unknown serial version {ser_ver}", 1)
    return read(mem, mem[0] & 0x3F, mem[2], max_entries)


def _deserialize_v3(
    mem: memoryview, pre_longs: int, family: int, max_entries: int
) -> tuple[U64, int]:
    _check_compact_family(family)
    flags = mem[5]
    if flags & _FLAG_BIG_ENDIAN:
        raise _error("big-endian sketches are not supported", 5)
    if not flags & _FLAG_COMPACT or not flags & _FLAG_READ_ONLY:
        raise _error(f"flags 0x{flags:02X} lack compact/read-only", 5)
    if not 1 <= pre_longs <= 3:
        raise _error(f"preamble longs {pre_longs} is not 1, 2 or 3", 0)
    if flags & _FLAG_EMPTY:
        if pre_longs >= 2:
            _need(mem, 16, "the preamble", 8)
            count = int.from_bytes(mem[8:12], "little")
            if count:
                raise _error(f"empty sketch claims {count} entries", 8)
        _no_trailing(mem, 8 * pre_longs)
        return np.empty(0, dtype=np.uint64), MAX_THETA
    _check_seed_hash(mem)
    if pre_longs == 1:  # single item (Java sets flag 0x20, C++ does not)
        hashes = _read_hashes(mem, 8, 1, max_entries)
        _no_trailing(mem, 16)
        return _check_hashes(hashes, MAX_THETA, True, 8), MAX_THETA
    _need(mem, 8 * pre_longs, "the preamble", 8)
    count = int.from_bytes(mem[8:12], "little")
    theta = MAX_THETA
    if pre_longs == 3:
        theta = _check_theta(int.from_bytes(mem[16:24], "little"), 16)
    start = 8 * pre_longs
    hashes = _read_hashes(mem, start, count, max_entries)
    _no_trailing(mem, start + 8 * count)
    return _check_hashes(hashes, theta, bool(flags & _FLAG_ORDERED), start), theta


def _v4_header(mem: memoryview, pre_longs: int, family: int) -> tuple[int, int, int, int]:
    """(entry bits, entry count, theta, position of the packed entries) of a version 4."""
    _check_compact_family(family)
    if pre_longs not in (1, 2):
        raise _error(f"preamble longs {pre_longs} is not 1 or 2", 0)
    entry_bits = mem[3]
    if not 1 <= entry_bits <= 63:
        raise _error(f"entry bits {entry_bits} is not in 1..63", 3)
    count_bytes = mem[4]
    if not 1 <= count_bytes <= 4:
        raise _error(f"entry-count width {count_bytes} is not in 1..4", 4)
    _check_seed_hash(mem)
    pos = 8
    theta = MAX_THETA
    if pre_longs == 2:
        _need(mem, 16, "theta", 8)
        theta = _check_theta(int.from_bytes(mem[8:16], "little"), 8)
        pos = 16
    _need(mem, pos + count_bytes, "the entry count", pos)
    count = int.from_bytes(mem[pos : pos + count_bytes], "little")
    return entry_bits, count, theta, pos + count_bytes


def _deserialize_v4(
    mem: memoryview, pre_longs: int, family: int, max_entries: int
) -> tuple[U64, int]:
    entry_bits, count, theta, pos = _v4_header(mem, pre_longs, family)
    packed_size = (count * entry_bits + 7) // 8  # each entry takes exactly entry_bits bits
    _need(mem, pos + packed_size, f"{count} packed entries", pos)
    _check_count(count, max_entries, pos - mem[4])
    _no_trailing(mem, pos + packed_size)
    hashes = np.empty(count, dtype=np.uint64)
    carry = 0
    for first in range(0, count, _V4_CHUNK):
        stop = min(first + _V4_CHUNK, count)
        deltas = _unpack_deltas(mem, pos + first * entry_bits // 8, stop - first, entry_bits)
        if not deltas.all():
            i = first + int(np.argmin(deltas))
            raise _error(f"entry {i} repeats its predecessor (zero delta)", pos)
        # Deltas are positive and below 2^63, as is the carry: a running sum that wraps
        # shows as a decrease.
        chunk = np.cumsum(deltas, dtype=np.uint64, out=hashes[first:stop])
        chunk += np.uint64(carry)
        if bool((chunk[1:] <= chunk[:-1]).any()) or int(chunk[0]) <= carry:
            raise _error(f"entries reach past theta={theta}", pos)
        carry = int(chunk[-1])
        if carry >= theta:
            raise _error(f"entries reach past theta={theta}", pos)
    return hashes, theta


#: Entries unpacked at a time (a multiple of 8, so each chunk starts on a byte): the bit
#: matrix of a chunk takes at most 63 x 64 Ki = 4 MiB, whatever the sketch declares.
_V4_CHUNK = 1 << 16


def _unpack_deltas(mem: memoryview, at: int, n: int, entry_bits: int) -> U64:
    """``n`` big-endian bit-packed deltas of ``entry_bits`` bits from byte ``at``."""
    size = (n * entry_bits + 7) // 8
    packed = np.frombuffer(mem, dtype=np.uint8, count=size, offset=at)
    bits = np.unpackbits(packed)[: n * entry_bits].reshape(n, entry_bits)
    deltas = np.zeros(n, dtype=np.uint64)
    for j in range(entry_bits):
        deltas <<= np.uint64(1)
        deltas |= bits[:, j]
    return deltas


def _deserialize_v2(
    mem: memoryview, pre_longs: int, family: int, max_entries: int
) -> tuple[U64, int]:
    if not 1 <= family <= 4:
        raise _error(f"family {family} is not 1..4 for serial version 2", 2)
    if pre_longs == 1:
        _no_trailing(mem, 8)
        return np.empty(0, dtype=np.uint64), MAX_THETA
    if pre_longs not in (2, 3):
        raise _error(f"preamble longs {pre_longs} is not 1, 2 or 3", 0)
    _need(mem, 8 * pre_longs, "the preamble", 8)
    count = int.from_bytes(mem[8:12], "little")
    theta = MAX_THETA
    if pre_longs == 3:
        theta = _check_theta(int.from_bytes(mem[16:24], "little"), 16)
    if count == 0 and theta == MAX_THETA:
        _no_trailing(mem, 8 * pre_longs)
        return np.empty(0, dtype=np.uint64), MAX_THETA
    _check_seed_hash(mem)
    start = 8 * pre_longs
    hashes = _read_hashes(mem, start, count, max_entries)
    _no_trailing(mem, start + 8 * count)
    return _check_hashes(hashes, theta, True, start), theta


def _deserialize_v1(
    mem: memoryview, pre_longs: int, family: int, max_entries: int
) -> tuple[U64, int]:
    if pre_longs != 3:
        raise _error(f"serial version 1 has 3 preamble longs, not {pre_longs}", 0)
    if not 1 <= family <= 3:
        raise _error(f"family {family} is not 1..3 for serial version 1", 2)
    _need(mem, 24, "the preamble", 8)
    count = int.from_bytes(mem[8:12], "little")
    theta = _check_theta(int.from_bytes(mem[16:24], "little"), 16)
    if count == 0 and theta == MAX_THETA:
        _no_trailing(mem, 24)
        return np.empty(0, dtype=np.uint64), MAX_THETA
    hashes = _read_hashes(mem, 24, count, max_entries)
    _no_trailing(mem, 24 + 8 * count)
    return _check_hashes(hashes, theta, True, 24), theta


_READERS: dict[int, Callable[[memoryview, int, int, int], tuple[U64, int]]] = {
    1: _deserialize_v1,
    2: _deserialize_v2,
    3: _deserialize_v3,
    4: _deserialize_v4,
}
