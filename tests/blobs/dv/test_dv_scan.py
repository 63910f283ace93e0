"""The two walks of a 32-bit Roaring header (plain Python and NumPy) accept the same inputs.

``scan32`` walks bitmaps of up to 16 containers in Python and larger ones with NumPy.  Here
both walks see the same valid and mutated bitmaps (by forcing the threshold) and must agree
on every size, cardinality and tie flag, and on what they reject.  No pyroaring call is
involved, so this runs in process.  Budget: about 3 s.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from pyroaring import BitMap

from puffin import DeletionVectorError
from puffin.blobs.dv import roaring64 as r64


@functools.cache
def seeds() -> list[bytes]:
    rng = np.random.default_rng(11)
    out = []
    for containers in (4, 17, 40, 300):
        values = []
        for c in range(containers):
            base = int(rng.integers(0, 1 << 16)) << 16
            kind = c % 4
            if kind == 0:
                values.append(base + rng.integers(0, 1 << 16, int(rng.integers(1, 200))))
            elif kind == 1:
                values.append(base + np.flatnonzero(rng.random(1 << 16) < 0.5))
            elif kind == 2:
                start = int(rng.integers(0, 60000))
                values.append(base + np.arange(start, start + int(rng.integers(1, 5000))))
            else:  # a tie: run of 3 plus a single value
                values.append(base + np.array([0, 1, 2, 10]))
        low = np.concatenate(values).astype(np.uint32)
        out.append(r64.bitmap_from_uint32(low).serialize())  # arrays and bitsets
        optimized = r64.bitmap_from_uint32(low)
        optimized.run_optimize()
        out.append(optimized.serialize())  # with run containers
    return out


def scan_with(threshold: int, data: bytes) -> object:
    saved = r64._SMALL_BITMAP
    r64._SMALL_BITMAP = threshold
    try:
        return r64.scan32(data, 0, len(data))
    except DeletionVectorError:
        return "rejected"
    finally:
        r64._SMALL_BITMAP = saved


@pytest.mark.parametrize("seed_index", range(8))
def test_python_and_numpy_walks_agree(seed_index: int) -> None:
    data = seeds()[seed_index]
    small, large = scan_with(1 << 20, data), scan_with(0, data)
    assert small == large and isinstance(small, r64.Scan32) and small.size == len(data)
    assert small.cardinality == len(BitMap.deserialize(data))
    rng = random.Random(seed_index)
    outcomes = set()
    for _ in range(400):
        corrupt = bytearray(data)
        n = len(corrupt)
        for _ in range(rng.randint(1, 3)):
            # Mostly the headers (cookie, flags, keys, cardinalities, offsets).
            at = rng.randrange(min(n, 8 + 12 * 300)) if rng.random() < 0.8 else rng.randrange(n)
            corrupt[at] ^= 1 << rng.randrange(8)
        if rng.random() < 0.2:
            del corrupt[rng.randrange(n) :]
        small, large = scan_with(1 << 20, bytes(corrupt)), scan_with(0, bytes(corrupt))
        assert small == large
        outcomes.add(small == "rejected")
    assert outcomes == {True, False}
