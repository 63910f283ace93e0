"""Compaction on Spark's executors against one process and Iceberg Java (issue 47).

The table of ``bench_maintenance.py``'s ``gathered`` state: ``bench_row_deletes.py``'s 10
million rows in 20 Parquet files (id long, k int, amount double, name string), upgraded to
v3, 50 ``delete_rows`` commits of a run of ids each (5 % of the rows in all), the vectors
gathered into one Puffin file. Registered once per contender on the same data, so each
compacts the same state; all rewrite every file (``min_deleted_fraction`` 0, Java's
``delete-file-threshold`` 1 and ``min-input-files`` 1) into files of the same target size, a
quarter of the table's bytes, so that every contender has at least four files to write at
once. Each contender runs ``--runs`` compactions, one after the other in one warm session of its
own, each of its own copy of the state; the figures are their medians:

* ours in one process: ``puffin.iceberg.rewrite_data_files`` in a child process;
* ours on Spark: ``puffin.spark.rewrite_data_files`` in a child process holding a
  ``local[1]`` or ``local[2]`` session, pyspark 4.3, warmed by two compactions of a small
  table (its JVM started, its Python workers made);
* Iceberg Java 1.10.2: ``CALL system.rewrite_data_files`` in a Spark 3.5 ``local[2]``
  session warmed the same way (tests/peers' Java server, the statements alone).

The machine's own scaling is measured beside them: Parquet (the bulk of a compaction's work)
written by one process and by two at once.

Every result's rows are checked against the model (the rows less the ids the ranges cover),
and the row ids of ours against the table before. Peak memory: each child's ``VmHWM``, and
for Spark the largest Python worker's too (the JVM's is not counted).

Run (after ``make peers``, on an idle machine):
``.venv/bin/python bench/bench_spark_compact.py [--rows 10000000] [--files 20] [--runs 3]``
(``--smoke``: 20,000 rows in 4 files, 5 delete commits, one warm-up a session)
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

from _child import run_child  # noqa: E402
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
catalog = local_catalog(sys.argv[1], create=False)
seconds = []
for ident in sys.argv[3:]:  # one process: each compaction after the one before
    table = catalog.load_table(ident)
    start = time.perf_counter()
    rewrite_data_files(table, min_deleted_fraction=0.0, statistics="none",
                       target_file_size_bytes=int(sys.argv[2]))
    seconds.append(time.perf_counter() - start)
with open("/proc/self/status") as f:
    peak = int(next(l for l in f if l.startswith("VmHWM:")).split()[1])
print(json.dumps({"seconds": seconds, "peak_kib": peak}))
"""

_SPARK_CHILD = _PEAK + r"""
import json, sys, time
import puffin.spark as ps
from puffin.iceberg import local_catalog
catalog = local_catalog(sys.argv[1], create=False)
spark = ps.local_session(sys.argv[3], memory="2g")
seconds = []
try:
    for warm in sys.argv[4].split(","):  # the warm-up: every worker made and used
        ps.rewrite_data_files(spark, catalog.load_table(warm), min_deleted_fraction=0.0,
                              statistics="none", target_file_size_bytes=1)
    for ident in sys.argv[5:]:  # one warm session: each job after the one before
        table = catalog.load_table(ident)
        start = time.perf_counter()
        ps.rewrite_data_files(spark, table, min_deleted_fraction=0.0, statistics="none",
                              target_file_size_bytes=int(sys.argv[2]))
        seconds.append(time.perf_counter() - start)
    workers = _workers_peak_kib()
finally:
    spark.stop()
print(json.dumps({"seconds": seconds, "peak_kib": _peak_kib("self"), "workers_kib": workers}))
"""

#: The machine's own ceiling: a table written to Parquet six times by one process, then three
#: times each by two processes at once (the work a compaction's tasks are mostly made of).
_CEILING_CHILD = r"""
import io, json, time
from multiprocessing import Process
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
n = 2_000_000
rng = np.random.default_rng(1)
t = pa.table({"id": np.arange(n), "k": rng.integers(0, 1000, n, dtype=np.int32),
              "amount": rng.random(n), "name": pa.array([f"name-{i % 50000}" for i in range(n)])})
def work(times):
    for _ in range(times):
        pq.write_table(t, io.BytesIO(), compression="zstd")
work(1)
start = time.perf_counter(); work(6); serial = time.perf_counter() - start
start = time.perf_counter()
both = [Process(target=work, args=(3,)) for _ in range(2)]
[p.start() for p in both]; [p.join() for p in both]
print(json.dumps({"ratio": serial / (time.perf_counter() - start)}))
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


CONTENDERS = ("local", "spark local[1]", "spark local[2]", "java")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3, help="jobs measured in each session")
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
        warm_ups = 1 if args.smoke else 2  # jobs each session runs before it is measured
        warm = {c: [f"warm{i}_{n}" for n in range(warm_ups)] for i, c in enumerate(CONTENDERS)}
        for name in (n for names in warm.values() for n in names):  # each session's warm-up
            _gathered(catalog, warm_base, name, ranges[:1])
        tables = {c: [f"r{i}_{run}" for run in range(args.runs)] for i, c in enumerate(CONTENDERS)}
        for name in (n for names in tables.values() for n in names):
            _gathered(catalog, base, name, ranges)
        before = _lineage(catalog.load_table(f"bench.{tables['local'][0]}"))
        assert before.num_rows == expected
        snapshot = catalog.load_table(f"bench.{tables['local'][0]}").current_snapshot()
        target = max(1, int(snapshot.summary["total-files-size"]) // 4)
        times, peaks = _measure(folder, target, warm, tables)
        for name, idents in tables.items():
            for ident in idents:
                table = catalog.load_table(f"bench.{ident}")
                if name == "java":  # its rows counted against the model
                    assert scan_table(table).to_arrow().num_rows == expected, ident
                else:  # the same rows and row ids
                    assert _lineage(table).equals(before), (name, ident)
        ceilings = 1 if args.smoke else 3
        ceiling = statistics.median(run_child(_CEILING_CHILD)["ratio"] for _ in range(ceilings))
    _report(args, commits, target, times, peaks, ceiling)
    return 0


def _measure(
    folder: Path, target: int, warm: dict[str, list[str]], tables: dict[str, list[str]]
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each contender's jobs in one warm session of its own: seconds, and peak MiB."""
    times: dict[str, list[float]] = {}
    peaks: dict[str, float] = {}
    for name in CONTENDERS[:-1]:  # Java's below, in its own session
        idents = [f"bench.{t}" for t in tables[name]]
        if name == "local":
            got = run_child(_LOCAL_CHILD, folder, target, *idents)
        else:
            warm_up = ",".join(f"bench.{t}" for t in warm[name])
            got = run_child(_SPARK_CHILD, folder, target, name.split()[1], warm_up, *idents)
            peaks[f"{name} workers"] = got["workers_kib"] / 1024
        times[name] = got["seconds"]
        peaks[name] = got["peak_kib"] / 1024
        print(name, " ".join(f"{t:.2f}" for t in got["seconds"]), "s", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-java-") as jtmp, JavaPeer(Path(jtmp)) as java:
        for ident in warm["java"]:
            java.sql(JAVA_COMPACT.format(name=f"bench.{ident}", target=1024), warehouse=folder)
        for ident in tables["java"]:
            start = time.perf_counter()
            java.sql(JAVA_COMPACT.format(name=f"bench.{ident}", target=target), warehouse=folder)
            times.setdefault("java", []).append(time.perf_counter() - start)
    print("java", " ".join(f"{t:.2f}" for t in times["java"]), "s", flush=True)
    return times, peaks


def _report(
    args: argparse.Namespace, commits: int, target: int, times: dict[str, list[float]],
    peaks: dict[str, float], ceiling: float,
) -> None:  # fmt: skip
    best = {name: statistics.median(t) for name, t in times.items()}
    print(f"\n{args.rows:,} rows in {args.files} files, {commits} delete commits gathered; every "
          f"file rewritten into files of {target / 2**20:.0f} MiB; medians of {args.runs} jobs "
          "in one warm session each")
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
    print(f"the machine's own: Parquet written by two processes at once, against one: "
          f"{ceiling:.2f}x (median of 3)")
    print(_load())


if __name__ == "__main__":
    sys.exit(main())
