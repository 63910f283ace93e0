"""Property tests for deletion vectors: round trips, reference bytes, bit flips.

Position sets cross key boundaries and mix dense ranges, sparse values, runs, bitset-dense
windows, run/array size ties and values next to k * 2^32, up to 10^6 positions.  The
reference payload is built independently: one pyroaring ``BitMap`` per key from the values
(pyroaring's add-then-run-optimize, which is what Iceberg Java does), an empty bitmap for
every key without values, the length prefix, magic and ``zlib.crc32``.  Sets are also empty,
single positions, full 2^16 chunks, keys up to 5,000 (thousands of empty bitmaps before them)
and many keys of a few positions each; the largest key is refused for its size.  Budget:
about 20 s with the CI profile (new examples each run, see conftest.py).
"""

from __future__ import annotations

import array
import struct
import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64

from puffin import DeletionVector, DeletionVectorError

MAGIC = bytes.fromhex("d1d33964")
KEYS = [0, 1, 2, 3, 6, 41]
KINDS = ["dense", "sparse", "runs", "boundary", "bitset", "ties", "big", "single", "full"]
#: The largest key the format allows (Java refuses 0x7FFFFFFF and above).
LARGEST_KEY = 0x7FFFFFFE


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique without its hash path, which is slow on large int arrays in NumPy 2.4."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))[: values.size]]


def spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)])


@st.composite
def position_sets(draw: st.DrawFn) -> np.ndarray:
    """Sorted unique int64 positions: empty, or over one to three keys (any up to 5,000,
    each empty key below the largest costing Java's layout an empty bitmap), or a few
    positions in each of many keys."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.integers(0, 9)) == 0:  # many keys, few positions each
        keys = draw(st.lists(st.integers(0, 5000), min_size=20, max_size=200, unique=True))
        low = rng.integers(0, 1 << 32, (len(keys), 3))
        parts = [(k << 32) + low[i, : 1 + i % 3] for i, k in enumerate(keys)]
        return sorted_unique(np.concatenate(parts).astype(np.int64))
    key = st.sampled_from(KEYS) | st.integers(0, 5000)
    keys = draw(st.lists(key, min_size=0, max_size=3, unique=True))
    if not keys:
        return np.empty(0, dtype=np.int64)
    parts = []
    for key in keys:
        base = key << 32
        kind = draw(st.sampled_from(KINDS))
        size = draw(st.integers(1, 20_000))
        if kind == "dense":
            start = int(rng.integers(0, (1 << 32) - size))
            values = np.arange(start, start + size)
        elif kind == "sparse":
            values = rng.integers(0, 1 << 32, size)
        elif kind == "runs":
            starts = rng.integers(0, (1 << 32) - 5000, max(size // 100, 1))
            lengths = rng.integers(1, 2000, starts.size)
            values = spans(starts, lengths)
        elif kind == "boundary":  # both sides of base and of base + 2^32 (the next key)
            width = draw(st.integers(1, 70_000))
            values = np.concatenate([np.arange(width), (1 << 32) - 1 - np.arange(width),
                                     (1 << 32) + np.arange(min(width, 10))])
        elif kind == "bitset":  # dense windows: bitset containers, sometimes runs
            window = int(rng.integers(0, 1 << 16)) << 16
            density = draw(st.floats(0.05, 0.999))
            values = window + np.flatnonzero(rng.random(1 << 16) < density)
        elif kind == "ties":  # short runs: run and array sizes often tie
            lengths = rng.integers(1, 4, max(size // 4, 1))
            gaps = rng.integers(2, 6, lengths.size)
            starts = np.cumsum(lengths + gaps) - lengths
            values = spans(starts, lengths)
            values = values[values < (1 << 32)]
        elif kind == "single":
            values = np.array([draw(st.sampled_from([0, 1, (1 << 32) - 1])) if draw(
                st.booleans()) else int(rng.integers(0, 1 << 32))])
        elif kind == "full":  # every value of one or two 2^16 chunks: full containers
            chunk = int(rng.integers(0, (1 << 16) - 1))
            values = np.arange(chunk << 16, (chunk + draw(st.integers(1, 2))) << 16)
        else:  # "big": up to 10^6 positions, runs plus scatter
            count = draw(st.integers(100_000, 1_000_000))
            values = np.concatenate(
                [np.arange(count // 2), rng.integers(0, 1 << 32, count - count // 2)]
            )
        parts.append(base + np.asarray(values, dtype=np.int64))
    return sorted_unique(np.concatenate(parts))


def reference_payload(positions: np.ndarray) -> bytes:
    """Java's layout built from pyroaring per key, independently of the library."""
    keys = positions >> 32
    key_count = int(keys[-1]) + 1 if positions.size else 0
    body = [struct.pack("<Q", key_count)]
    for key in range(key_count):
        low = array.array("I", (positions[keys == key] & 0xFFFFFFFF).astype(np.uint32).tobytes())
        bitmap = BitMap(low)  # add_many, then run_optimize (optimize=True)
        body.append(struct.pack("<I", key) + bitmap.serialize())
    data = MAGIC + b"".join(body)
    return struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))


@settings(max_examples=60)
@given(position_sets())
def test_round_trip_and_reference_bytes(positions: np.ndarray) -> None:
    dv = DeletionVector(positions)
    payload = dv.serialize()
    assert payload == reference_payload(positions)
    back = DeletionVector.deserialize(payload, expected_cardinality=positions.size)
    assert np.array_equal(back.to_numpy(), positions)
    assert back.serialize() == payload
    # pyroaring's own 64-bit reader agrees on the body.
    oracle = BitMap64.deserialize(payload[8:-4])
    assert len(oracle) == positions.size
    assert np.array_equal(np.frombuffer(oracle.to_array(), dtype=np.uint64), positions)


@settings(max_examples=40)
@given(position_sets())
def test_bytes_do_not_depend_on_how_the_set_was_built(positions: np.ndarray) -> None:
    # From runs through add_range (pyroaring then holds run containers), in two updates, and
    # from a BitMap64: always Java's bytes.
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    by_ranges = DeletionVector()
    for run in np.split(positions, breaks) if positions.size else []:
        by_ranges.add_range(int(run[0]), int(run[-1]) + 1)
    half = positions.size // 2
    by_updates = DeletionVector(positions[half:][::-1])
    by_updates.update(positions[:half].tolist() if half < 5000 else positions[:half])
    from_bitmap = DeletionVector(BitMap64(array.array("Q", positions.astype(np.uint64).tobytes())))
    expected = reference_payload(positions)
    assert by_ranges.serialize() == expected
    assert by_updates.serialize() == expected
    assert from_bitmap.serialize() == expected


@settings(max_examples=40)
@given(position_sets(), st.lists(st.integers(0, 2**40), min_size=16, max_size=16))
def test_single_bit_flips_are_detected(positions: np.ndarray, picks: list[int]) -> None:
    payload = DeletionVector(positions).serialize()
    bits = len(payload) * 8
    # The framing's bits every time, plus a spread of bits in the body.
    chosen = set(range(64)) | set(range(bits - 32, bits)) | {p % bits for p in picks}
    for bit in chosen:
        corrupt = bytearray(payload)
        corrupt[bit // 8] ^= 1 << (bit % 8)
        try:
            DeletionVector.deserialize(bytes(corrupt))
        except DeletionVectorError:
            continue
        raise AssertionError(f"flipping bit {bit} of {bits} went unnoticed")


def test_the_largest_key_is_refused_for_its_size_not_misread() -> None:
    """A position in the largest key the format allows would need 2^31 empty bitmaps before
    it in Java's layout: more than Java can read, so refused with the reason."""
    dv = DeletionVector(np.array([LARGEST_KEY << 32], dtype=np.int64))
    assert dv.to_numpy().tolist() == [LARGEST_KEY << 32]
    try:
        dv.serialize()
    except DeletionVectorError as exc:
        assert "2147483646" in str(exc) and "Java cannot read" in str(exc)
    else:
        raise AssertionError("serialized a vector Java cannot read")


def test_empty_vector_bytes() -> None:
    payload = DeletionVector().serialize()
    assert payload == reference_payload(np.empty(0, dtype=np.int64))
    assert DeletionVector.deserialize(payload, expected_cardinality=0).to_numpy().size == 0
