"""Iceberg table statistics benchmark (issue 6).

A 10-million-row table of 4 columns (long, int, double, string) in an embedded SQLite
catalog, 8 Parquet data files.  Side by side in one run, medians of several runs:

* ``compute_table_statistics(table, commit=False)``: the whole job (plan the snapshot, read
  the 4 columns by field id, sketch them, write the Puffin file);
* the pyarrow-only exact answer: read the same 4 columns of the same files with
  ``pyarrow.parquet`` and ``pyarrow.compute.count_distinct`` each column, and the
  ``count_distinct`` part alone (data already in memory);
* ``puffin table stats compute --no-commit`` in a fresh process (start-up, imports and
  loading the table count): its wall time and peak RSS (the child's own ``VmHWM``: this
  process, which wrote the table, is large, and a child's ``ru_maxrss`` can start from it).

Run: ``.venv/bin/python bench/bench_iceberg.py [--rows 10000000] [--files 8] [--runs 3]``
(``--smoke``: 20,000 rows in 2 files, one run)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType

from puffin.iceberg import compute_table_statistics, local_catalog, sample_batch
from puffin.io.locations import local_path

COLUMNS = {"id": "long", "category": "int", "amount": "double", "user_name": "string"}


def make_table(folder: Path, rows: int, files: int) -> Any:
    catalog = local_catalog(folder)
    catalog.create_namespace_if_not_exists("bench")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "category", IntegerType(), required=False),
        NestedField(3, "amount", DoubleType(), required=False),
        NestedField(4, "user_name", StringType(), required=False),
    )
    table = catalog.create_table(
        "bench.stats4", schema=schema, properties={"write.target-file-size-bytes": str(1 << 40)}
    )
    per_file = rows // files
    with table.transaction() as tx:
        for i in range(files):
            count = per_file if i < files - 1 else rows - per_file * (files - 1)
            batch = sample_batch(count, start=i * per_file, seed=1).select(list(COLUMNS))
            tx.append(batch)
    return catalog.load_table("bench.stats4")


def interleaved(fns: dict[str, Callable[[], Any]], runs: int) -> dict[str, tuple[float, Any]]:
    """Median time and last result of each function, run in turns (A, B, C, A, B, C, ...).

    Turns spread the load of other processes on a shared machine over every contender.
    """
    times: dict[str, list[float]] = {name: [] for name in fns}
    results: dict[str, Any] = {}
    for _ in range(runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(times[name]), results[name]) for name in fns}


_CLI_CHILD = """
import contextlib, io, json, sys
from puffin.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"code": code, "peak_kib": peak}))
"""


def cli_runs(folder: Path, runs: int) -> tuple[float, list[float]]:
    """Median wall seconds and each run's peak RSS (MiB) of the statistics CLI, fresh each."""
    argv = [sys.executable, "-c", _CLI_CHILD, "table", "stats", "compute"]
    argv += ["--warehouse", str(folder), "bench.stats4", "--no-commit", "--no-progress"]
    times, peaks = [], []
    for _ in range(runs + 1):  # the first is a warm-up (page cache)
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert result["code"] == 0, proc.stderr
        peaks.append(result["peak_kib"] / 1024)
    return statistics.median(times[1:]), peaks[1:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.files, args.runs = 20_000, 2, 1

    with tempfile.TemporaryDirectory(prefix="puffin-bench-iceberg-") as tmp:
        start = time.perf_counter()
        table = make_table(Path(tmp), args.rows, args.files)
        print(
            f"table: {args.rows:,} rows x {len(COLUMNS)} columns in {args.files} files "
            f"(built in {time.perf_counter() - start:.1f} s)"
        )
        paths = [local_path(t.file.file_path) for t in table.scan().plan_files()]

        def ours() -> dict[str, int]:
            stats = compute_table_statistics(table, commit=False, progress=False)
            names = {f.field_id: f.name for f in table.schema().fields}
            return {
                names[b.fields[0]]: int((b.properties or {})["ndv"]) for b in stats.blob_metadata
            }

        def read() -> pa.Table:
            return pa.concat_tables(pq.read_table(p, columns=list(COLUMNS)) for p in paths)

        def exact(data: pa.Table) -> dict[str, int]:
            return {name: pc.count_distinct(data.column(name)).as_py() for name in COLUMNS}

        data = read()
        ours()  # warm up imports and caches once for both sides
        exact(data)
        timings = interleaved(
            {
                "ours": ours,
                "read_exact": lambda: exact(read()),
                "exact": lambda: exact(data),
            },
            args.runs,
        )
        t_ours, ndv = timings["ours"]
        t_read_exact, counts = timings["read_exact"]
        t_exact, _ = timings["exact"]
        load = os.getloadavg()[0]
        t_cli, peaks = cli_runs(Path(tmp), args.runs)

    rows = args.rows
    print(f"\nmedian of {args.runs} interleaved runs, {rows:,} rows, columns {', '.join(COLUMNS)}")
    print(f"{'':44}{'seconds':>9}{'Mrows/s':>9}{'vs ours':>9}")
    lines = [
        ("puffin compute_table_statistics (whole job)", t_ours),
        ("pyarrow read + pc.count_distinct (exact)", t_read_exact),
        ("pc.count_distinct only (data in memory)", t_exact),
    ]
    for label, t in lines:
        print(f"{label:44}{t:9.2f}{rows / t / 1e6:9.1f}{t / t_ours:9.2f}x")
    print(f"\n{'column':12}{'type':8}{'ndv (sketch)':>14}{'exact':>12}{'error':>9}")
    for name, kind in COLUMNS.items():
        err = (ndv[name] - counts[name]) / counts[name] * 100
        print(f"{name:12}{kind:8}{ndv[name]:>14,}{counts[name]:>12,}{err:>8.2f}%")
    print(
        f"\npuffin table stats compute --no-commit, fresh process, {args.runs} runs "
        f"(load average {load:.1f} before, {os.getloadavg()[0]:.1f} after): median "
        f"{t_cli:.2f} s; peak RSS median {statistics.median(peaks):.0f} MiB, "
        f"{min(peaks):.0f}-{max(peaks):.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
