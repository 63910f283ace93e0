"""Theta sketch build speed: puffin (vectorized) against a datasketches update loop.

    python bench/bench_theta.py [--n 10000000] [--runs 3] [--types long,int,double,date,string]
    python bench/bench_theta.py --smoke   # 200,000 values, one run: the tests' quick check

For each column type, in one run and on the same values (runs interleaved): the time to build
a sketch with
``ThetaSketch.from_values`` (all CPUs, and one thread) and with a Python loop calling
``datasketches.update_theta_sketch.update`` once per value (the values are converted to a
Python list first, outside the timing, which favours the loop).  Medians of ``--runs`` runs,
values per second, and the speed-up.  For ``long`` and ``string`` both sketches must be equal
(same hashes); for ``int``, ``double`` and ``date`` the loop hashes other bytes (8-byte longs /
doubles instead of Iceberg's 4-byte ints and floats) and is only a speed reference.

The dates span 60,000 days, so each slice has few distinct values and puffin hashes only those
(its small-range de-duplication); ``date-nodedupe`` is the same column with that switched off.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import datasketches as ds
import numpy as np
import pyarrow as pa

from puffin import ThetaSketch
from puffin.blobs.single_value import distinct as single_value


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of this process, result)."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _datasketches_loop(values: list[Any]) -> Any:
    sketch = ds.update_theta_sketch()
    update = sketch.update
    for v in values:
        update(v)
    return sketch


def _columns(
    n: int, rng: np.random.Generator
) -> dict[str, tuple[str, Any, Callable[[], list[Any]]]]:
    """type -> (iceberg type, column, Python values for the loop)."""
    longs = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
    ints = rng.integers(-(2**31), 2**31 - 1, size=n, dtype=np.int32)
    doubles = rng.standard_normal(n)
    dates = rng.integers(0, 60_000, size=n).astype("datetime64[D]")
    # short strings, mostly distinct: "user-<number>" (10 to 14 bytes)
    strings = pa.array(np.char.add("user-", rng.integers(0, 10**9, size=n).astype(str)))
    return {
        "long": ("long", longs, longs.tolist),
        "int": ("int", ints, ints.tolist),
        "double": ("double", doubles, doubles.tolist),
        "date": ("date", dates, lambda: dates.astype(np.int64).tolist()),
        "string": ("string", strings, strings.to_pylist),
    }


def _bench_one(
    name: str, iceberg_type: str, column: Any, to_python: Callable[[], list[Any]], n: int, runs: int
) -> None:
    py_values = to_python()
    contenders: dict[str, Callable[[], Any]] = {
        "puffin": partial(ThetaSketch.from_values, column, iceberg_type),
        "one": partial(ThetaSketch.from_values, column, iceberg_type, threads=1),
        "loop": partial(_datasketches_loop, py_values),
    }
    warm = column[: min(n, 100_000)]
    ThetaSketch.from_values(warm, iceberg_type)  # first-call costs (imports, allocator) untimed
    _datasketches_loop(py_values[:100_000])
    walls: dict[str, list[float]] = {k: [] for k in contenders}
    cpus: dict[str, list[float]] = {k: [] for k in contenders}
    results: dict[str, Any] = {}
    for _ in range(runs):  # interleaved, so a change of machine load hits every contender
        for key, fn in contenders.items():
            wall, cpu, results[key] = _timed(fn)
            walls[key].append(wall)
            cpus[key].append(cpu)
    assert results["one"] == results["puffin"]
    if name in ("long", "string"):
        results["loop"].trim()
        same = (
            "yes" if ThetaSketch.from_datasketches(results["loop"]) == results["puffin"] else "NO"
        )
    else:
        same = "n/a (other bytes)"
    if same == "NO":
        raise SystemExit(f"{name}: the datasketches loop's sketch differs from ours")
    w = {k: statistics.median(v) for k, v in walls.items()}
    c = {k: statistics.median(v) for k, v in cpus.items()}
    rate = n / 1e6
    print(
        f"{name:13} {rate / w['puffin']:9.1f} M/s {rate / w['one']:10.1f} M/s "
        f"{rate / w['loop']:9.1f} M/s {w['loop'] / w['puffin']:8.1f}x "
        f"{w['loop'] / w['one']:14.1f}x {c['loop'] / c['one']:12.1f}x  {same}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--types", default="long,int,double,date,date-nodedupe,string")
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:  # enough dates (2 x their 60,000-day span) for the de-duplication path
        args.n, args.runs = 200_000, 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# {args.n:,} values per column, median of {args.runs} runs, {cpus} CPUs, "
        f"load average {load:.1f} at start, numpy {np.__version__}, Python {sys.version.split()[0]}"
    )
    columns = _columns(args.n, np.random.default_rng(20240601))
    header = (
        f"{'type':13} {'puffin':>12} {'puffin 1 thr':>13} {'ds loop':>12} "
        f"{'speed-up':>9} {'speed-up 1 thr':>15} {'CPU 1 thr':>13}  same sketch"
    )
    print(header)
    print("-" * len(header))
    for name in args.types.split(","):
        if name == "date-nodedupe":
            # The same dates with the small-range de-duplication switched off: every value is
            # hashed, as for a high-cardinality column.
            saved = single_value._DISTINCT_MIN_ROWS
            single_value._DISTINCT_MIN_ROWS = 1 << 62
            try:
                _bench_one(name, *columns["date"], args.n, args.runs)
            finally:
                single_value._DISTINCT_MIN_ROWS = saved
            continue
        _bench_one(name, *columns[name], args.n, args.runs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# load average {load:.1f} at the end")
    print(
        "# M/s = million values per second (wall clock); speed-up = datasketches loop time /"
        " puffin time; CPU 1 thr = the same ratio in CPU seconds (one thread each, so it"
        " shows the work per value regardless of other load on the machine)"
    )


if __name__ == "__main__":
    main()
