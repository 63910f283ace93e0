"""MurmurHash3_x64_128 vectorized over NumPy arrays, reduced to the Theta sketch hash.

DataSketches hashes every update with MurmurHash3_x64_128 (seed 9001) and keeps the first 64-bit
half shifted right by one. Hashing tens of millions of values one Python call at a time is far too
slow, so these functions run the same arithmetic over whole uint64 arrays: each value's bytes are
loaded as little-endian 64-bit lanes (``k1`` and ``k2`` of a 16-byte block), mixed with in-place
NumPy ufuncs, and finalized.  Three entry points cover the key shapes:

- :func:`theta_hash_lanes` for keys of 1 to 16 bytes given as one or two zero-extended lanes
  (Iceberg int/date/float = 4 bytes, long/double/time/timestamp = 8, uuid = 16);
- :func:`theta_hash_var` for variable-length keys in one byte buffer (strings, binary,
  decimals), vectorized by processing block *j* of every key at once.

Every function returns ``h1 >> 1`` as uint64, the value a Theta sketch compares with theta.
Callers keep chunks small (tens of thousands of values) so the temporaries stay in cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

    U64 = NDArray[np.uint64]
    U8 = NDArray[np.uint8]
    I64 = NDArray[np.int64]

__all__ = ["DEFAULT_SEED", "make_scratch", "theta_hash_lanes", "theta_hash_var"]

#: DataSketches' default update seed, the one Iceberg uses.
DEFAULT_SEED = 9001

_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)
_F1 = np.uint64(0xFF51AFD7ED558CCD)
_F2 = np.uint64(0xC4CEB9FE1A85EC53)
_N1 = np.uint64(0x52DCE729)
_N2 = np.uint64(0x38495AB5)
_FIVE = np.uint64(5)
_ONE = np.uint64(1)
_S27, _S37 = np.uint64(27), np.uint64(37)
_S31, _S33 = np.uint64(31), np.uint64(33)

# _BYTE_MASKS[r] keeps the low r bytes of a little-endian lane (r = 0..8).
_BYTE_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)


def _rotl(x: U64, r: int, tmp: U64) -> None:
    """x = rotl64(x, r) in place."""
    np.right_shift(x, np.uint64(64 - r), out=tmp)
    np.left_shift(x, np.uint64(r), out=x)
    np.bitwise_or(x, tmp, out=x)


def _mix_k1(k: U64, tmp: U64) -> None:
    """k = rotl(k * c1, 31) * c2, the lane-1 mix (a zero lane stays zero)."""
    np.multiply(k, _C1, out=k)
    _rotl(k, 31, tmp)
    np.multiply(k, _C2, out=k)


def _mix_k2(k: U64, tmp: U64) -> None:
    """k = rotl(k * c2, 33) * c1, the lane-2 mix (a zero lane stays zero)."""
    np.multiply(k, _C2, out=k)
    _rotl(k, 33, tmp)
    np.multiply(k, _C1, out=k)


def _fmix(v: U64, tmp: U64) -> None:
    """MurmurHash3's 64-bit finalizer, in place."""
    np.right_shift(v, _S33, out=tmp)
    np.bitwise_xor(v, tmp, out=v)
    np.multiply(v, _F1, out=v)
    np.right_shift(v, _S33, out=tmp)
    np.bitwise_xor(v, tmp, out=v)
    np.multiply(v, _F2, out=v)
    np.right_shift(v, _S33, out=tmp)
    np.bitwise_xor(v, tmp, out=v)


def _finish(both: U64, length: U64 | np.uint64, tmp2: U64, shift: bool) -> U64:
    """Finalize ``both = [h1 | h2]`` for keys of ``length`` bytes; return h1 (>> 1 when
    ``shift``), in place.  h1 and h2 sit next to each other so one finalizer pass covers both.
    """
    n = both.shape[0] // 2
    h1, h2 = both[:n], both[n:]
    np.bitwise_xor(h1, length, out=h1)
    np.bitwise_xor(h2, length, out=h2)
    np.add(h1, h2, out=h1)
    np.add(h2, h1, out=h2)
    _fmix(both, tmp2)
    np.add(h1, h2, out=h1)
    if shift:
        np.right_shift(h1, _ONE, out=h1)
    return h1


def _body_block(h1: U64, h2: U64, k1: U64, k2: U64, tmp: U64) -> None:
    """Mix one full 16-byte block (lanes k1, k2; both overwritten) into h1, h2."""
    _mix_k1(k1, tmp)
    np.bitwise_xor(h1, k1, out=h1)
    _rotl(h1, 27, tmp)
    np.add(h1, h2, out=h1)
    np.multiply(h1, _FIVE, out=h1)
    np.add(h1, _N1, out=h1)
    _mix_k2(k2, tmp)
    np.bitwise_xor(h2, k2, out=h2)
    _rotl(h2, 31, tmp)
    np.add(h2, h1, out=h2)
    np.multiply(h2, _FIVE, out=h2)
    np.add(h2, _N2, out=h2)


_SCRATCH_ROWS = 6


def make_scratch(n: int) -> U64:
    """Work space for hashing up to ``n`` keys per call (reuse it across chunks)."""
    return np.empty(_SCRATCH_ROWS * n, dtype=np.uint64)


def _split(scratch: U64 | None, n: int) -> tuple[U64, U64, U64, U64, U64, U64]:
    """Work arrays carved out of ``scratch``: ``both = [h1 | h2]``, h1, h2, a 2n temporary
    and the lanes k1, k2 (``scratch`` is allocated when missing or too small)."""
    if scratch is None or scratch.shape[0] < _SCRATCH_ROWS * n:
        scratch = make_scratch(n)
    both = scratch[: 2 * n]
    tmp2 = scratch[2 * n : 4 * n]
    return both, both[:n], both[n:], tmp2, scratch[4 * n : 5 * n], scratch[5 * n : 6 * n]


def theta_hash_lanes(
    lo: U64,
    hi: U64 | None,
    length: int,
    seed: int = DEFAULT_SEED,
    *,
    scratch: U64 | None = None,
    shift: bool = True,
) -> U64:
    """Theta hashes of keys of ``length`` bytes (1..16), all of the same length.

    ``lo`` holds bytes 0-7 of every key as a little-endian lane (any unsigned dtype: narrower
    lanes are widened on the fly), ``hi`` bytes 8-15 (``None`` when ``length <= 8``); bytes
    past ``length`` must be zero.  ``lo`` and ``hi`` are not modified.  ``scratch`` (see
    :func:`make_scratch`) avoids allocating per call; the result then lives in it and is
    overwritten by the next call with the same scratch.  ``shift=False`` returns the raw
    first half ``h1`` (the theta hash is ``h1 >> 1``; ``h1 >> 1 < t`` iff ``h1 < 2 t``).
    """
    if not 1 <= length <= 16:
        raise ValueError(f"lane hashing takes keys of 1 to 16 bytes, not {length}")
    n = lo.shape[0]
    both, h1, h2, tmp2, k1, k2 = _split(scratch, n)
    tmp = tmp2[:n]
    s = np.uint64(seed)
    if length == 16:
        assert hi is not None
        h2.fill(s)
        h1.fill(s)
        np.copyto(k1, lo)
        np.copyto(k2, hi)
        _body_block(h1, h2, k1, k2, tmp)
        return _finish(both, np.uint64(16), tmp2, shift)
    # Tail-only key: h1 = seed ^ mix1(k1), h2 = seed ^ mix2(k2).
    np.multiply(lo, _C1, out=h1)  # the first step of mix1, widening lo on the fly
    _rotl(h1, 31, tmp)
    np.multiply(h1, _C2, out=h1)
    if length > 8:
        assert hi is not None
        np.bitwise_xor(h1, s, out=h1)
        np.copyto(h2, hi)
        _mix_k2(h2, tmp)
        np.bitwise_xor(h2, s, out=h2)
        return _finish(both, np.uint64(length), tmp2, shift)
    # h2 stays the seed, so ``h1 ^= seed; h1 ^= len; h2 ^= len; h1 += h2; h2 += h1``
    # folds into one constant c = seed ^ len: h1 = (h1 ^ c) + c, h2 = h1 + c.
    c = np.uint64(seed ^ length)
    np.bitwise_xor(h1, c, out=h1)
    np.add(h1, c, out=h1)
    np.add(h1, c, out=h2)
    _fmix(both, tmp2)
    np.add(h1, h2, out=h1)
    if shift:
        np.right_shift(h1, _ONE, out=h1)
    return h1


def _gather_view(buf: U8) -> U64:
    """An overlapping little-endian uint64 view: element p is the 8 bytes starting at byte p."""
    view: U64 = np.ndarray(
        shape=(buf.shape[0] - 7,), dtype="<u8", buffer=buf.data, offset=0, strides=(1,)
    )
    return view


def theta_hash_var(
    buf: U8,
    starts: I64,
    lengths: I64,
    seed: int = DEFAULT_SEED,
    *,
    keep_order: bool = True,
    scratch: U64 | None = None,
    shift: bool = True,
) -> U64:
    """Theta hashes of byte strings ``buf[starts[i] : starts[i] + lengths[i]]``.

    ``buf`` must be a C-contiguous uint8 array with at least 16 readable bytes after the end
    of every key (loads read whole 8-byte lanes and mask the excess), and every length must
    be positive.
    Keys are processed block by block: block *j* of all keys that have one is mixed in a single
    vectorized step, then all tails, then the finalizer, so the Python overhead is per block
    index, not per key.  With ``keep_order=False`` the hashes come back in an unspecified
    order (a sketch does not care), which saves a scatter; ``shift`` is as in
    :func:`theta_hash_lanes`.
    """
    n = starts.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    words = _gather_view(buf)
    s = np.uint64(seed)
    max_length = int(lengths.max())
    max_blocks = max_length >> 4
    if max_blocks:
        nblocks = lengths >> 4
        # Longest keys first, so the keys that still have block j form a prefix.
        order = np.argsort(-nblocks, kind="stable")
        starts_o = starts[order]
        lengths_o = lengths[order]
        nblocks_o = nblocks[order]
        counts = np.bincount(nblocks_o, minlength=max_blocks + 1)
        have = n - np.cumsum(counts)  # have[j] = number of keys with more than j blocks
    else:
        order = None
        starts_o, lengths_o = starts, lengths
    both, h1, h2, tmp2, _, _ = _split(scratch, n)
    tmp = tmp2[:n]
    both.fill(s)
    # Fancy indexing of the overlapping view is NumPy's fastest unaligned 8-byte gather.
    for j in range(max_blocks):
        m = int(have[j])
        pos = starts_o[:m] + 16 * j
        k1 = words[pos]
        pos += 8
        k2 = words[pos]
        _body_block(h1[:m], h2[:m], k1, k2, tmp[:m])
    if max_blocks:
        tail = lengths_o & 15
        tpos = starts_o + (nblocks_o << 4)
        max_tail = int(tail.max())
    else:
        tail, tpos, max_tail = lengths_o, starts_o, max_length
    k1 = words[tpos]
    k1 &= _BYTE_MASKS[np.minimum(tail, 8)]
    _mix_k1(k1, tmp)
    np.bitwise_xor(h1, k1, out=h1)
    if max_tail > 8:
        k2 = words[tpos + 8]
        k2 &= _BYTE_MASKS[np.maximum(tail - 8, 0)]
        _mix_k2(k2, tmp)
        np.bitwise_xor(h2, k2, out=h2)
    result = _finish(both, lengths_o.view(np.uint64), tmp2, shift)
    if order is not None and keep_order:
        unordered = np.empty_like(result)
        unordered[order] = result
        return unordered
    return result
