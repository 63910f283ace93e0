"""Deletion vectors: decode and encode 10 million positions against pyroaring and pyiceberg.

Run: ``.venv/bin/python bench/bench_deletion_vector.py [--positions N] [--runs R]``
(``--smoke``: 100,000 positions, one run)

Compared in one run, medians of several runs:

* decode a ``deletion-vector-v1`` payload to a sorted int64 NumPy array: ours
  (``DeletionVector.deserialize(payload).to_numpy()``, all checks included) against the
  floor, pyroaring's own ``BitMap64.deserialize`` of the same Roaring body plus
  ``to_array()`` into NumPy (no framing, CRC or validation);
* decode a whole Puffin file: ours (``read_deletion_vectors`` + ``to_numpy``) against
  pyiceberg 0.12 (``deletion_vectors_from_puffin_file`` + ``to_vector``);
* encode a sorted int64 NumPy array to a payload: ours (``DeletionVector(array)
  .serialize()``, Java-identical bytes) against the floor, ``BitMap64`` built from the
  array plus ``serialize()`` (no run optimization, no gap bitmaps, no framing);
* peak RSS of our decode, in a fresh subprocess, against the size of the output array.

The data: positions over 4 keys (32-bit halves), half in runs and half uniformly random.
"""

from __future__ import annotations

import argparse
import array
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from pyroaring import BitMap64

import puffin
from puffin import DeletionVector


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique without its hash path, which is slow on large int arrays in NumPy 2.4."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))[: values.size]]


def make_positions(total: int, keys: int = 4, seed: int = 42) -> np.ndarray:
    """Exactly ``total`` sorted positions: per key, half in runs of 1250, half random."""
    rng = np.random.default_rng(seed)
    parts = []
    for key in range(keys):
        per_key = total // keys + (1 if key < total % keys else 0)
        run_length = 1250
        run_count = per_key // 2 // run_length
        starts = np.sort(rng.choice(1 << 20, run_count, replace=False)).astype(np.int64) * 2048
        values = (starts[:, None] + np.arange(run_length)[None, :]).ravel()
        while values.size < per_key:  # top up with random values until the count is exact
            extra = rng.integers(0, 1 << 32, per_key - values.size)
            values = sorted_unique(np.concatenate([values, extra]))
        parts.append((key << 32) + values)
    return np.concatenate(parts).astype(np.int64)


def median_time(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(runs):
        result = None
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def floor_decode(body: bytes) -> np.ndarray:
    return np.frombuffer(BitMap64.deserialize(body).to_array(), dtype=np.uint64).view(np.int64)


def floor_encode(positions: np.ndarray) -> bytes:
    values = array.array("Q")
    values.frombytes(positions.view(np.uint64).data.cast("B"))
    return BitMap64(values, optimize=False).serialize()


def floor_encode_optimized(positions: np.ndarray) -> bytes:
    values = array.array("Q")
    values.frombytes(positions.view(np.uint64).data.cast("B"))
    return BitMap64(values).serialize()  # optimize=True: run_optimize + shrink_to_fit


def pyiceberg_decode(file_bytes: bytes) -> Any:
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    dvs = deletion_vectors_from_puffin_file(PuffinFile(file_bytes))
    return dvs[0].to_vector()


_RSS_CHILD = """
import sys
from puffin import DeletionVector

def vm(field):  # kB figures of /proc/self/status: VmRSS now, VmHWM the peak
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)

payload = open(sys.argv[1], "rb").read()
DeletionVector.deserialize(DeletionVector([1, 2, 3]).serialize()).to_numpy()  # load modules
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak (VmHWM) to the current RSS
before = vm("VmRSS")
out = DeletionVector.deserialize(payload).to_numpy()
print(before, vm("VmHWM"), out.nbytes)
"""


def measure_rss(payload: bytes) -> dict[str, int]:
    """Peak RSS of one decode in a fresh process (Linux: /proc VmHWM, reset after setup).

    ``ru_maxrss`` would not do: Linux carries the parent's peak across fork and exec.
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "payload.bin")
        with open(path, "wb") as f:
            f.write(payload)
        out = subprocess.run(
            [sys.executable, "-c", _RSS_CHILD, path], check=True, capture_output=True, text=True
        ).stdout.split()
    before, peak, nbytes = map(int, out)
    return {"rss_before": before, "peak": peak, "output": nbytes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--pyiceberg-runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        args.positions, args.runs, args.pyiceberg_runs = 100_000, 1, 1

    positions = make_positions(args.positions)
    payload = DeletionVector(positions).serialize()
    body = payload[8:-4]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "dv.puffin")
        puffin.write_deletion_vectors(path, {"data/file.parquet": positions})
        with open(path, "rb") as f:
            file_bytes = f.read()
    print(
        f"{positions.size:,} positions over keys {sorted(set((positions >> 32).tolist()))}, "
        f"payload {len(payload):,} bytes; medians of {args.runs} runs "
        f"(pyiceberg: {args.pyiceberg_runs})"
    )

    # Correctness first: every contender must produce the same positions / bytes.
    assert np.array_equal(DeletionVector.deserialize(payload).to_numpy(), positions)
    assert np.array_equal(floor_decode(body), positions)
    assert BitMap64.deserialize(floor_encode(positions)) == BitMap64.deserialize(body)

    results: dict[str, float] = {}
    results["decode_ours"], _ = median_time(
        lambda: DeletionVector.deserialize(payload).to_numpy(), args.runs
    )
    results["decode_floor"], _ = median_time(lambda: floor_decode(body), args.runs)
    results["file_decode_ours"], _ = median_time(
        lambda: puffin.read_deletion_vectors(file_bytes)["data/file.parquet"].to_numpy(),
        args.runs,
    )
    results["file_decode_pyiceberg"], vector = median_time(
        lambda: pyiceberg_decode(file_bytes), args.pyiceberg_runs
    )
    assert np.array_equal(vector.to_numpy(), positions)
    del vector
    results["encode_ours"], _ = median_time(
        lambda: DeletionVector(positions).serialize(), args.runs
    )
    results["encode_floor"], _ = median_time(lambda: floor_encode(positions), args.runs)
    results["encode_floor_optimized"], _ = median_time(
        lambda: floor_encode_optimized(positions), args.runs
    )

    rss = measure_rss(payload)

    def row(name: str, seconds: float, ref: str | None = None) -> None:
        ratio = f"{seconds / results[ref]:6.2f}x" if ref else ""
        print(f"  {name:<58} {seconds * 1000:9.1f} ms  {ratio}")

    print("decode payload -> int64 NumPy array")
    row("ours: DeletionVector.deserialize(...).to_numpy()", results["decode_ours"], "decode_floor")
    row("floor: BitMap64.deserialize(body).to_array() -> NumPy", results["decode_floor"])
    print("decode Puffin file -> positions")
    row("ours: read_deletion_vectors(...) + to_numpy()", results["file_decode_ours"])
    row(
        "pyiceberg 0.12: deletion_vectors_from_puffin_file + to_vector",
        results["file_decode_pyiceberg"],
    )
    print(
        f"  pyiceberg / ours: {results['file_decode_pyiceberg'] / results['file_decode_ours']:.1f}x"
    )
    print("encode int64 NumPy array -> payload")
    row("ours: DeletionVector(array).serialize()", results["encode_ours"], "encode_floor")
    row("floor: BitMap64(array).serialize()", results["encode_floor"])
    row(
        "floor + run_optimize: BitMap64(array, optimize=True).serialize()",
        results["encode_floor_optimized"],
    )
    growth = rss["peak"] - rss["rss_before"]
    print(
        f"peak RSS of decode (fresh process): {rss['peak'] / 2**20:.1f} MiB, "
        f"{growth / 2**20:.1f} MiB above the {rss['rss_before'] / 2**20:.1f} MiB before it; "
        f"output array {rss['output'] / 2**20:.1f} MiB; growth / output = "
        f"{growth / rss['output']:.2f}"
    )
    if args.json:
        print(json.dumps({**results, **rss}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
