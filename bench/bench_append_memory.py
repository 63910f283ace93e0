"""Bounded append memory (issue 28): appending millions of rows from a Parquet file or a
``RecordBatchReader`` without holding them all.

A Parquet file of ``--rows`` sample rows (``sample_batch``, 9 column types; 5,000,000 rows
by default, written once in 1 M-row row groups) is appended to fresh, empty sample tables
(``write.target-file-size-bytes`` at pyiceberg's default, 512 MiB). Every job runs in a
fresh process, which imports, loads its table and opens the file, then resets its peak RSS
(``/proc/self/clear_refs``) and takes its RSS as the baseline, runs the append under the
clock and reports its peak RSS (``VmHWM``); the difference is the append's own memory.
Medians of ``--runs`` (jobs in turns):

* ``baseline``: the same process without any append;
* ``ours v2`` and ``ours v3``: ``puffin.iceberg.append(table, reader)`` on a v2 table and
  on one upgraded to v3, ``reader`` a ``RecordBatchReader`` over
  ``pq.ParquetFile(path).iter_batches(batch_size=65536)``;
* ``pyiceberg v2``: pyiceberg 0.12's own ``table.append(reader)`` on a v2 table, the same
  reader: the speed to keep;
* ``cli v3``: ``puffin table append TABLE FILE --warehouse DIR`` on a v3 table, run as
  ``puffin.cli.main`` in the child (its reader is the CLI's own: pyarrow.dataset batches).

Goal from the issue: each append at most 256 MiB above its baseline, at pyiceberg's speed.

The reader's own share is measured apart (``read only``: the same reader drained, no
append): pyarrow 26's ``ParquetFile`` pre-buffers by default, and its read cache keeps every
row group read until the reader is done, so that reader's memory grows with the file;
``pre_buffer=False`` reads a column chunk at a time. ``128 MiB row groups`` sets the table's
``write.parquet.row-group-size-bytes``, which caps the Arrow bytes the streaming writer
buffers per row group (32 MiB by default, or ``write.parquet.row-group-limit`` rows).

Run: ``.venv/bin/python bench/bench_append_memory.py [--rows 5000000] [--runs 3]``
(``--smoke``: 20,000 rows, one run)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from puffin.iceberg import create_sample_table, local_catalog, sample_batch, upgrade_to_v3

TARGET = str(512 * 1024 * 1024)  # pyiceberg's default write.target-file-size-bytes
CHUNK = 1_000_000  # rows generated and written at a time

_CHILD = """
import json, sys, time
import pyarrow as pa
import pyarrow.parquet as pq
from puffin.cli import main
from puffin.iceberg import append, local_catalog
warehouse, name, path, op, pre_buffer = sys.argv[1:6]
table = local_catalog(warehouse).load_table(name)
source = pq.ParquetFile(path) if pre_buffer == "default" else pq.ParquetFile(path, pre_buffer=False)
reader = pa.RecordBatchReader.from_batches(
    source.schema_arrow, source.iter_batches(batch_size=65536))

def status(key):
    with open("/proc/self/status") as lines:
        return next(int(x.split()[1]) for x in lines if x.startswith(key)) / 1024

try:  # the peak from here on (Linux: writing 5 resets VmHWM to the current RSS)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    base = status("VmRSS:")
except OSError:
    base = status("VmHWM:")  # no reset: the peak so far stands for the baseline
clock = time.perf_counter()
if op == "ours":
    append(table, reader, statistics="none")
elif op == "pyiceberg":
    table.append(reader)
elif op == "read":
    for batch in reader:
        pass
elif op == "cli":
    code = main(["table", "append", name, path, "--warehouse", warehouse, "--json"])
    assert code == 0, code
seconds = time.perf_counter() - clock
peak = status("VmHWM:")
snapshot = local_catalog(warehouse).load_table(name).current_snapshot()
summary = snapshot.summary if snapshot is not None else {}
print(json.dumps({"seconds": seconds, "base_mib": base, "peak_mib": peak,
                  "rows": int(summary.get("added-records") or 0),
                  "files": int(summary.get("added-data-files") or 0)}))
"""

LARGE_GROUPS = {"write.parquet.row-group-size-bytes": str(128 * 1024 * 1024)}


@dataclass(frozen=True)
class Job:
    op: str  # what the child does: none, read, ours, pyiceberg, cli
    version: int = 3
    pre_buffer: str = "default"  # ParquetFile's (pyarrow's default: on) or "off"
    properties: dict[str, str] = field(default_factory=dict)


JOBS = {
    "baseline (no append)": Job("none"),
    "read only: ParquetFile(path)": Job("read"),
    "read only: ParquetFile(path, pre_buffer=False)": Job("read", pre_buffer="off"),
    "ours v2": Job("ours", 2),
    "ours v3": Job("ours", 3),
    "ours v3, pre_buffer=False": Job("ours", 3, "off"),
    "ours v3, pre_buffer=False, 128 MiB row groups": Job("ours", 3, "off", LARGE_GROUPS),
    "pyiceberg v2": Job("pyiceberg", 2),
    "cli v3 (`puffin table append`)": Job("cli", 3),
}


def make_file(path: Path, rows: int) -> None:
    """``rows`` sample rows in ``path``, generated and written a million at a time."""
    with pq.ParquetWriter(path, sample_batch(1).schema) as writer:
        for start in range(0, rows, CHUNK):
            writer.write_table(sample_batch(min(CHUNK, rows - start), start=start, seed=29))


def make_table(folder: Path, name: str, job: Job) -> None:
    """An empty sample table at pyiceberg's default target file size."""
    catalog = local_catalog(folder)
    properties = {"write.target-file-size-bytes": TARGET, **job.properties}
    table = create_sample_table(catalog, name, rows=0, properties=properties)
    if job.version == 3:
        upgrade_to_v3(table)


def child(folder: Path, name: str, job: Job, path: Path) -> dict[str, Any]:
    argv = [sys.executable, "-c", _CHILD, str(folder), name, str(path), job.op, job.pre_buffer]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{job} failed: {proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.runs = 20_000, 1
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    results: dict[str, list[dict[str, Any]]] = {job: [] for job in JOBS}
    with tempfile.TemporaryDirectory(prefix="bench-append-memory-") as tmp:
        folder = Path(tmp)
        path = folder / "rows.parquet"
        make_file(path, args.rows)
        print(f"{args.rows:,} rows, {path.stat().st_size / 1e6:.0f} MB of Parquet")
        for run in range(args.runs):  # in turns, so load falls on every job alike
            for number, (label, job) in enumerate(JOBS.items()):
                name = f"bench.job{number}_{run}"
                make_table(folder, name, job)
                results[label].append(child(folder, name, job, path))
    report(results, args)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


def report(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    print(f"\n{args.rows:,} rows appended, median of {args.runs} runs\n")
    theirs = statistics.median(r["seconds"] for r in results["pyiceberg v2"])
    print(
        "| job | time (s) | / pyiceberg | peak RSS above baseline (MiB), median (max) "
        "| baseline RSS (MiB) | rows | files |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, runs in results.items():
        above = [r["peak_mib"] - r["base_mib"] for r in runs]
        seconds = statistics.median(r["seconds"] for r in runs)
        timed = JOBS[label].op != "none"
        print(
            f"| {label} | {f'{seconds:.2f}' if timed else '–'} | "
            f"{f'{seconds / theirs:.2f}×' if timed else '–'} | "
            f"{statistics.median(above):.0f} ({max(above):.0f}) | "
            f"{statistics.median(r['base_mib'] for r in runs):.0f} | "
            f"{runs[0]['rows']:,} | {runs[0]['files']} |"
        )
    print("\ngoal: each append ≤ 256 MiB above its baseline, at pyiceberg's time")


if __name__ == "__main__":
    sys.exit(main())
