"""MurmurHash3_x64_128 vectorized over NumPy arrays, reduced to the Theta sketch hash.

DataSketches hashes every update with MurmurHash3_x64_128 (seed 9001) and keeps the first 64-bit
half shifted right by one. Hashing tens of millions of values one Python call at a time is far too
slow, so these functions run the same arithmetic over whole uint64 arrays: each value's bytes are
loaded as little-endian 64-bit lanes (``k1`` and ``k2`` of a 16-byte block), mixed with in-place
NumPy ufuncs, and finalized.  Two entry points cover the key shapes:

- :func:`theta_hash_lanes` for keys of 1 to 16 bytes given as one or two zero-extended lanes
  (Iceberg int/date/float = 4 bytes, long/double/time/timestamp = 8, uuid = 16);
- :func:`theta_hash_var` for variable-length keys in one byte buffer (strings, binary,
  decimals), vectorized by processing block *j* of every key at once.

Both return ``h1 >> 1`` as uint64, the value a Theta sketch compares with theta.  Callers hash
in chunks (up to a few hundred thousand keys) and pass reusable scratch space, so the
temporaries stay in cache and nothing is allocated per chunk.

A sketch past its first few thousand values keeps only hashes below a small theta, so both also
take ``below``: return only the hashes under it.  That saves work in the finalizer, the only
step where a bound helps.  Its last operations, ``g = e * F2; f = g ^ (g >> 33)`` on both
halves and ``h1 = fA + fB``, are costly on whole arrays.  Two facts replace them with a cheap
necessary condition:

- multiplication distributes over addition modulo 2^64, so ``gA + gB = (eA + eB) * F2``;
- ``f ^= f >> 33`` only changes the low 31 bits, so ``h1`` lies within 2^32 of ``gA + gB``.

Only the few keys inside that window get the exact finalizer.
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


def _const(value: int) -> U64:
    """A uint64 constant as a 0-d array: NumPy takes these faster than scalars, and every
    ufunc call below holds the GIL for its argument handling, which threads contend for."""
    return np.array(value, dtype=np.uint64)


_C1 = _const(0x87C37B91114253D5)
_C2 = _const(0x4CF5AD432745937F)
_F1 = _const(0xFF51AFD7ED558CCD)
_F2 = _const(0xC4CEB9FE1A85EC53)
_N1 = _const(0x52DCE729)
_N2 = _const(0x38495AB5)
_FIVE = _const(5)
_ONE = _const(1)
_S33 = _const(33)
#: Shift amounts (r, 64 - r) for each rotation MurmurHash3 uses.
_ROT = {r: (_const(r), _const(64 - r)) for r in (27, 31, 33)}
#: |fmix's last xor-shift| < 2^31 per half, so it moves h1 = fA + fB by less than this.
_WINDOW = 1 << 32
_WINDOW_C = _const(_WINDOW)

# Positional ``out`` (NumPy parses it faster than the keyword).
_mul, _add, _xor, _or = np.multiply, np.add, np.bitwise_xor, np.bitwise_or
_shl, _shr = np.left_shift, np.right_shift

# _BYTE_MASKS[r] keeps the low r bytes of a little-endian lane (r = 0..8).
_BYTE_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)


def _rotl(x: U64, r: int, tmp: U64) -> None:
    """x = rotl64(x, r) in place."""
    left, right = _ROT[r]
    _shr(x, right, tmp)
    _shl(x, left, x)
    _or(x, tmp, x)


def _mix_k1(k: U64, tmp: U64) -> None:
    """k = rotl(k * c1, 31) * c2, the lane-1 mix (a zero lane stays zero)."""
    _mul(k, _C1, k)
    _rotl(k, 31, tmp)
    _mul(k, _C2, k)


def _mix_k2(k: U64, tmp: U64) -> None:
    """k = rotl(k * c2, 33) * c1, the lane-2 mix (a zero lane stays zero)."""
    _mul(k, _C2, k)
    _rotl(k, 33, tmp)
    _mul(k, _C1, k)


def _xorshift33(v: U64, tmp: U64) -> None:
    """v ^= v >> 33 in place."""
    _shr(v, _S33, tmp)
    _xor(v, tmp, v)


def _finalize(both: U64, tmp2: U64, below: int | None, shift: bool) -> U64:
    """Finish ``both = [h1 | h2]`` (after ``h1 += h2; h2 += h1``): fmix64 on both halves, then
    ``h1 + h2`` (``>> 1`` when ``shift``).  With ``below``, only the hashes under it (theta
    hashes, or raw ``h1`` values when not ``shift``) are returned, in key order.
    """
    n = both.shape[0] // 2
    h1, h2 = both[:n], both[n:]
    # fmix64 up to its last multiply: e = (v ^ v >> 33) * F1, then e ^= e >> 33.
    _xorshift33(both, tmp2)
    _mul(both, _F1, both)
    _xorshift33(both, tmp2)
    bound = None if below is None else (below << 1 if shift else below)
    if bound is None or bound >= (1 << 64) - 2 * _WINDOW:
        _mul(both, _F2, both)
        _xorshift33(both, tmp2)
        _add(h1, h2, h1)
        if shift:
            _shr(h1, _ONE, h1)
        return h1 if below is None else h1[h1 < np.uint64(below)]
    # Keys whose h1 can be below ``bound``: (eA + eB) * F2 + 2^32 < bound + 2^33 (mod 2^64).
    s = tmp2[:n]
    _add(h1, h2, s)
    _mul(s, _F2, s)
    _add(s, _WINDOW_C, s)
    mask = tmp2[n:].view(np.bool_)[:n]
    np.less(s, np.uint64(bound + 2 * _WINDOW), mask)
    keys = np.flatnonzero(mask)
    k = keys.shape[0]
    g = np.concatenate([h1[keys], h2[keys]])
    _mul(g, _F2, g)
    _xorshift33(g, np.empty_like(g))
    h: U64 = g[:k]
    _add(h, g[k:], h)
    h = h[h < np.uint64(bound)]
    if shift:
        _shr(h, _ONE, h)
    return h


def _body_block(h1: U64, h2: U64, k1: U64, k2: U64, tmp: U64) -> None:
    """Mix one full 16-byte block (lanes k1, k2; both overwritten) into h1, h2."""
    _mix_k1(k1, tmp)
    _xor(h1, k1, h1)
    _rotl(h1, 27, tmp)
    _add(h1, h2, h1)
    _mul(h1, _FIVE, h1)
    _add(h1, _N1, h1)
    _mix_k2(k2, tmp)
    _xor(h2, k2, h2)
    _rotl(h2, 31, tmp)
    _add(h2, h1, h2)
    _mul(h2, _FIVE, h2)
    _add(h2, _N2, h2)


def _mix_length(h1: U64, h2: U64, length: U64 | np.uint64) -> None:
    """The finalization before fmix64: h1 ^= len; h2 ^= len; h1 += h2; h2 += h1."""
    _xor(h1, length, h1)
    _xor(h2, length, h2)
    _add(h1, h2, h1)
    _add(h2, h1, h2)


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


def _check_below(below: int | None) -> None:
    if below is not None and not 0 <= below < 1 << 64:
        raise ValueError(f"below must be an unsigned 64-bit bound, not {below}")


def theta_hash_lanes(
    lo: U64,
    hi: U64 | None,
    length: int,
    seed: int = DEFAULT_SEED,
    *,
    scratch: U64 | None = None,
    shift: bool = True,
    below: int | None = None,
) -> U64:
    """Theta hashes of keys of ``length`` bytes (1..16), all of the same length.

    ``lo`` holds bytes 0-7 of every key as a little-endian lane (any unsigned dtype: narrower
    lanes are zero-extended), ``hi`` bytes 8-15 (``None`` when ``length <= 8``); bytes
    past ``length`` must be zero.  ``lo`` and ``hi`` are not modified.  ``scratch`` (see
    :func:`make_scratch`) avoids allocating per call; the result then lives in it and is
    overwritten by the next call with the same scratch.  ``shift=False`` returns the raw
    first half ``h1`` (the theta hash is ``h1 >> 1``).  ``below`` keeps only the results
    under it, in key order (a fresh array).
    """
    if not 1 <= length <= 16:
        raise ValueError(f"lane hashing takes keys of 1 to 16 bytes, not {length}")
    _check_below(below)
    n = lo.shape[0]
    both, h1, h2, tmp2, k1, k2 = _split(scratch, n)
    tmp = tmp2[:n]
    s = _const(seed)
    if length == 16:
        assert hi is not None
        h2.fill(seed)
        h1.fill(seed)
        np.copyto(k1, lo)
        np.copyto(k2, hi)
        _body_block(h1, h2, k1, k2, tmp)
        _mix_length(h1, h2, _const(16))
        return _finalize(both, tmp2, below, shift)
    # Tail-only key: h1 = seed ^ mix1(k1), h2 = seed ^ mix2(k2).
    if lo.dtype.itemsize < 8:  # widen first: a cast and a uint64 multiply beat a mixed one
        np.copyto(h1, lo, casting="unsafe")
        _mul(h1, _C1, h1)
    else:
        _mul(lo, _C1, h1)  # the first step of mix1
    _rotl(h1, 31, tmp)
    _mul(h1, _C2, h1)
    if length > 8:
        assert hi is not None
        _xor(h1, s, h1)
        np.copyto(h2, hi)
        _mix_k2(h2, tmp)
        _xor(h2, s, h2)
        _mix_length(h1, h2, _const(length))
        return _finalize(both, tmp2, below, shift)
    # h2 stays the seed, so ``h1 ^= seed; h1 ^= len; h2 ^= len; h1 += h2; h2 += h1``
    # folds into one constant c = seed ^ len: h1 = (h1 ^ c) + c, h2 = h1 + c.
    c = _const(seed ^ length)
    _xor(h1, c, h1)
    _add(h1, c, h1)
    _add(h1, c, h2)
    return _finalize(both, tmp2, below, shift)


def _gather_view(buf: U8) -> U64:
    """An overlapping little-endian uint64 view: element p is the 8 bytes starting at byte p."""
    view: U64 = np.ndarray(
        shape=(buf.shape[0] - 7,), dtype="<u8", buffer=buf.data, offset=0, strides=(1,)
    )
    return view


def _longest_first(
    starts: I64, lengths: I64, max_blocks: int
) -> tuple[I64 | None, I64, I64, I64, I64]:
    """Keys reordered longest first, so the keys that still have block j form a prefix.

    Returns (order or ``None`` when no key has a block, starts, lengths, block counts,
    ``have``), where ``have[j]`` is the number of keys with more than j blocks.
    """
    if not max_blocks:
        empty = np.empty(0, dtype=np.int64)
        return None, starts, lengths, empty, empty
    nblocks = lengths >> 4
    order = np.argsort(-nblocks, kind="stable")
    nblocks_o = nblocks[order]
    counts = np.bincount(nblocks_o, minlength=max_blocks + 1)
    have = starts.shape[0] - np.cumsum(counts)
    return order, starts[order], lengths[order], nblocks_o, have


def _mix_tails(
    words: U64, tpos: I64, tail: I64, max_tail: int, h1: U64, h2: U64, tmp: U64
) -> None:
    """Mix every key's last 1-15 bytes (masked 8-byte loads) into ``h1`` and ``h2``."""
    k1 = words[tpos]
    k1 &= _BYTE_MASKS[np.minimum(tail, 8)]
    _mix_k1(k1, tmp)
    _xor(h1, k1, h1)
    if max_tail > 8:
        k2 = words[tpos + 8]
        k2 &= _BYTE_MASKS[np.maximum(tail - 8, 0)]
        _mix_k2(k2, tmp)
        _xor(h2, k2, h2)


def theta_hash_var(
    buf: U8,
    starts: I64,
    lengths: I64,
    seed: int = DEFAULT_SEED,
    *,
    keep_order: bool = True,
    scratch: U64 | None = None,
    shift: bool = True,
    below: int | None = None,
) -> U64:
    """Theta hashes of byte strings ``buf[starts[i] : starts[i] + lengths[i]]``.

    ``buf`` must be a C-contiguous uint8 array with at least 16 readable bytes after the end
    of every key (loads read whole 8-byte lanes and mask the excess), and every length must
    be positive.
    Keys are processed block by block: block *j* of all keys that have one is mixed in a single
    vectorized step, then all tails, then the finalizer, so the Python overhead is per block
    index, not per key.  With ``keep_order=False`` the hashes come back in an unspecified
    order (a sketch does not care), which saves a scatter; ``shift`` and ``below`` are as in
    :func:`theta_hash_lanes` (``below`` implies an unspecified order).
    """
    _check_below(below)
    n = starts.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    words = _gather_view(buf)
    max_length = int(lengths.max())
    max_blocks = max_length >> 4
    order, starts_o, lengths_o, nblocks_o, have = _longest_first(starts, lengths, max_blocks)
    both, h1, h2, tmp2, _, _ = _split(scratch, n)
    tmp = tmp2[:n]
    both.fill(np.uint64(seed))
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
    _mix_tails(words, tpos, tail, max_tail, h1, h2, tmp)
    _mix_length(h1, h2, lengths_o.view(np.uint64))
    result = _finalize(both, tmp2, below, shift)
    if order is not None and keep_order and below is None:
        unordered = np.empty_like(result)
        unordered[order] = result
        return unordered
    return result
