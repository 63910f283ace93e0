"""Compaction on Spark's executors against one process and Iceberg Java (issue 47).

The table of ``bench_maintenance.py``'s ``gathered`` state: ``bench_row_deletes.py``'s 10
million rows in 20 Parquet files (id long, k int, amount double, name string), upgraded to
v3, 50 ``delete_rows`` commits of a run of ids each (5 % of the rows in all), the vectors
gathered into one Puffin file. Registered once per contender on the same data, so each
compacts the same state; all rewrite every file (``min_deleted_fraction`` 0, Java's
``delete-file-threshold`` 1 and ``min-input-files`` 1) into files of the same target size, a
quarter of the table's bytes, so that every contender has at least four files to write at
once:

* ours in one process: ``puffin.iceberg.rewrite_data_files`` in a child process;
* ours on Spark: ``puffin.spark.rewrite_data_files`` in a child process holding a warm
  ``local[1]`` or ``local[2]`` session (its JVM started and its Python workers made by a
  compaction of a small table first; the figure is the second job alone), pyspark 4.3;
* Iceberg Java 1.10.2: ``CALL system.rewrite_data_files`` in a warm Spark 3.5 ``local[2]``
  session (tests/peers' Java server, the statement alone).

Every result's rows are checked against the model (the rows less the ids the ranges cover),
and the row ids of ours against the table before. Peak memory: each child's ``VmHWM``, and
for Spark the largest Python worker's too (the JVM's is not counted).

Run (after ``make peers``, on an idle machine):
``.venv/bin/python bench/bench_spark_compact.py [--rows 10000000] [--files 20] [--runs 1]``
(``--smoke``: 20,000 rows in 4 files, 5 delete commits)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from bench_row_deletes import _load, make_base  # noqa: E402

from peers.iceberg_java import JavaPeer  # noqa: E402
from puffin.iceberg import (  # noqa: E402
    delete_rows,
    rewrite_deletion_vectors,
    scan_table,
    upgrade_to_v3,
)

JAVA_COMPACT = (
    "CALL `default`.system.rewrite_data_files(table => '{name}', options => "
    "map('delete-file-threshold', '1', 'min-input-files', '1', "
    "'target-file-size-bytes', '{target}'))"
)

_PEAK = r"""
def _peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmHWM:")).split()[1])

def _workers_peak_kib():
    import os
    mine, best = os.getpid(), 0
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
    for pid in parents:
        p, seen = pid, 0
        while p in parents and p != mine and seen < 50:
            p, seen = parents[p], seen + 1
        if p == mine and pid != mine:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"pyspark" in f.read():
                        best = max(best, _peak_kib(pid))
            except OSError:
                continue
    return best
"""

_LOCAL_CHILD = r"""
import json, sys, time
from puffin.iceberg import local_catalog, rewrite_data_files
table = local_catalog(sys.argv[1], create=False).load_table(sys.argv[2])
start = time.perf_counter()
result = rewrite_data_files(table, min_deleted_fraction=0.0, statistics="none",
                            target_file_size_bytes=int(sys.argv[3]))
seconds = time.perf_counter() - start
with open("/proc/self/status") as f:
    peak = int(next(l for l in f if l.startswith("VmHWM:")).split()[1])
print(json.dumps({"seconds": seconds, "peak_kib": peak, "files": result.rewritten_files,
                  "added": result.added_files, "rows": result.rows}))
"""

_SPARK_CHILD = _PEAK + r"""
import json, sys, time
import puffin.spark as ps
from puffin.iceberg import local_catalog
catalog = local_catalog(sys.argv[1], create=False)
spark = ps.local_session(sys.argv[4], memory="2g")
try:
    for warm in sys.argv[5:]:  # the warm-up: every worker made and used
        ps.rewrite_data_files(spark, catalog.load_table(warm), min_deleted_fraction=0.0,
                              statistics="none", target_file_size_bytes=1)
    table = catalog.load_table(sys.argv[2])
    start = time.perf_counter()
    result = ps.rewrite_data_files(spark, table, min_deleted_fraction=0.0, statistics="none",
                                   target_file_size_bytes=int(sys.argv[3]))
    seconds = time.perf_counter() - start
    workers = _workers_peak_kib()
finally:
    spark.stop()
print(json.dumps({"seconds": seconds, "peak_kib": _peak_kib("self"), "workers_kib": workers,
                  "files": result.rewritten_files, "added": result.added_files,
                  "rows": result.rows}))
"""


def _ranges(rows: int, files: int, commits: int) -> list[tuple[int, int]]:
    """``commits`` runs of ids, commit ``i`` in file ``i % files`` (0.1 % of the rows each)."""
    per_file, run = rows // files, max(1, rows // 1000)
    starts = [(i % files) * per_file + (i // files) * 2 * run for i in range(commits)]
    return [(start, start + run) for start in starts]


def _gathered(catalog: Any, base: str, name: str, ranges: list[tuple[int, int]]) -> Any:
    table = upgrade_to_v3(catalog.register_table(f"bench.{name}", base))
    for lo, hi in ranges:
        table = delete_rows(table, f"id >= {lo} and id < {hi}").table
    return rewrite_deletion_vectors(table).table


def _lineage(table: Any) -> Any:
    """(id, _row_id) of every live row, sorted by id."""
    got = scan_table(table, selected_fields=("id", "_row_id")).to_arrow()
    return got.sort_by("id")


def main(argv: list[str] | None = None) -> int:
    from _child import run_child

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--smoke", action="store_true", help="20,000 rows, one run")
    args = parser.parse_args(argv)
    commits = 5 if args.smoke else 50
    if args.smoke:
        args.rows, args.files, args.runs = 20_000, 4, 1
    print(_load(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-spark-compact-") as tmp:
        folder = Path(tmp)
        catalog, base, _ = make_base(folder, args.rows, args.files)
        ranges = _ranges(args.rows, args.files, commits)
        expected = args.rows - sum(hi - lo for lo, hi in ranges)
        _, warm_base, _ = make_base(folder / "warm", 20_000, 4)
        warm = [f"warm{run}_{i}" for run in range(args.runs) for i in range(4)] + ["warm_java"]
        for name in warm:  # compacted first by each session: its warm-up
            _gathered(catalog, warm_base, name, ranges[:1])
        before = None
        times: dict[str, list[float]] = {}
        peaks: dict[str, float] = {}
        target = 0
        for run in range(args.runs):
            contenders = ("local", "spark local[1]", "spark local[2]", "java")
            tables = {c: _gathered(catalog, base, f"r{run}_{i}", ranges)
                      for i, c in enumerate(contenders)}  # fmt: skip
            if before is None:
                before = _lineage(tables["local"])
                assert before.num_rows == expected
                snapshot = tables["local"].current_snapshot()
                data = int(snapshot.summary["total-files-size"])
                target = max(1, data // 4)
            for name in contenders[:-1]:  # Java's below, in its own session
                ident = f"bench.r{run}_{contenders.index(name)}"
                if name == "local":
                    got = run_child(_LOCAL_CHILD, folder, ident, target)
                else:
                    master = name.split()[1]
                    warm_up = [f"bench.warm{run}_{i}" for i in range(2 * (master == "local[2]"),
                                                                    2 + 2 * (master == "local[2]"))]
                    got = run_child(_SPARK_CHILD, folder, ident, target, master, *warm_up)
                    peaks[f"{name} workers"] = got["workers_kib"] / 1024
                times.setdefault(name, []).append(got["seconds"])
                peaks[name] = got["peak_kib"] / 1024
                after = _lineage(catalog.load_table(ident))
                assert after.equals(before), name  # the same rows and row ids
                print(name, f"{got['seconds']:.2f} s", got, flush=True)
            with (
                tempfile.TemporaryDirectory(prefix="bench-java-") as jtmp,
                JavaPeer(Path(jtmp)) as java,
            ):
                java.sql(JAVA_COMPACT.format(name="bench.warm_java", target=1024), warehouse=folder)
                ident = f"bench.r{run}_{contenders.index('java')}"
                start = time.perf_counter()
                java.sql(JAVA_COMPACT.format(name=ident, target=target), warehouse=folder)
                times.setdefault("java", []).append(time.perf_counter() - start)
            java_rows = scan_table(catalog.load_table(ident)).to_arrow().num_rows
            assert java_rows == expected, java_rows
    _report(args, commits, target, times, peaks)
    return 0


def _report(
    args: argparse.Namespace, commits: int, target: int, times: dict[str, list[float]],
    peaks: dict[str, float],
) -> None:  # fmt: skip
    best = {name: statistics.median(t) for name, t in times.items()}
    print(f"\n{args.rows:,} rows in {args.files} files, {commits} delete commits gathered; every "
          f"file rewritten into files of {target / 2**20:.0f} MiB; medians of {args.runs} run(s)")
    print("| compaction | seconds | / Java | / local[2] | peak RSS (MiB) |")
    print("| --- | --- | --- | --- | --- |")
    for name, seconds in best.items():
        peak = peaks.get(name)
        workers = peaks.get(f"{name} workers")
        memory = "JVM" if peak is None else f"{peak:.0f}" + (
            f" + workers {workers:.0f}" if workers is not None else "")
        print(f"| {name} | {seconds:.2f} | {seconds / best['java']:.2f}x | "
              f"{seconds / best['spark local[2]']:.2f}x | {memory} |")
    print(f"\nlocal[1] / local[2]: {best['spark local[1]'] / best['spark local[2]']:.2f}x")
    print(_load())


if __name__ == "__main__":
    sys.exit(main())
