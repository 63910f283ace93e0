"""puffin against Iceberg Java 1.10.2 itself, same table, same machine, one run (issue 21).

The table of bench_iceberg.py: 10 million rows of 4 columns (long, int, double, string) in
8 Parquet files, in an embedded SQLite catalog that Java opens through its ``JdbcCatalog``
(tests/peers/iceberg_java.py: Spark 3.5 ``local[2]`` in ``.venv-java``). Medians of ``--runs``:

* NDV statistics of the current snapshot: ``puffin table stats compute --no-commit`` and
  ``puffin spark stats --no-commit`` (PySpark 4, ``local[2]``) as whole processes, against
  Java's ``CALL system.compute_table_stats`` in a warm session (the statement alone) and as a
  whole process (start Spark, the statement, stop). Peak RSS: each process's own ``VmHWM``
  (for Java, the JVM's, read before it stops).
* Row deletes, ``category = 0`` (1 % of the rows, in every file) on a fresh v3 copy of the
  table per run: :func:`puffin.iceberg.delete_rows` against Java's merge-on-read ``DELETE``
  in a warm session; peak RSS is not separated for these (both run in long-lived processes).

Run (after ``make peers``): ``.venv/bin/python bench/bench_java.py [--rows 10000000] [--runs 3]``
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
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from bench_iceberg import cli_runs, make_table  # noqa: E402

from peers.iceberg_java import JavaPeer  # noqa: E402
from puffin.iceberg import delete_rows, upgrade_to_v3  # noqa: E402
from puffin.iceberg.catalog.catalogs import local_catalog  # noqa: E402

STATS = "CALL `default`.system.compute_table_stats(table => 'bench.stats4')"
MERGE_ON_READ = "('write.delete.mode' = 'merge-on-read')"


def _vm_hwm_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(x.split()[1]) for x in status if x.startswith("VmHWM:")) / 1024


def _jvm_pid(parent: int) -> int:
    """The JVM that the Java peer's Python process started (its child running java)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent and b"java" in cmd:
                return int(entry.name)
    raise RuntimeError("no JVM under the Java peer")


def java_whole(folder: Path, runs: int) -> tuple[float, list[float]]:
    """Start Spark with Iceberg, compute_table_stats, stop: wall time and the JVM's peak."""
    times, peaks = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            with JavaPeer(Path(tmp)) as java:
                java.sql(STATS, warehouse=folder)
                assert java._proc is not None
                peaks.append(_vm_hwm_mib(_jvm_pid(java._proc.pid)))
            times.append(time.perf_counter() - start)
    return statistics.median(times), peaks


def spark_whole(folder: Path, runs: int) -> tuple[float, list[float]]:
    """``puffin spark stats --no-commit`` in a fresh process: wall time and the JVM's peak."""
    argv = [str(HERE.parent / ".venv" / "bin" / "puffin"), "spark", "stats", "--master",
            "local[2]", "--warehouse", str(folder), "--no-commit", "--no-progress",
            "bench.stats4"]
    times, peaks = [], []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        peak = 0.0
        while proc.poll() is None:  # the JVM is a grandchild: sample the tree's peaks
            peak = max([peak, *(_tree_peaks(proc.pid))])
            time.sleep(0.2)
        times.append(time.perf_counter() - start)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
        peaks.append(peak)
    return statistics.median(times), peaks


def _tree_peaks(root: int) -> list[float]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == root or int(entry.name) == root:
                out.append(_vm_hwm_mib(int(entry.name)))
        except (OSError, StopIteration, ValueError):
            continue
    return out


def deletes(folder: Path, java: JavaPeer, runs: int) -> dict[str, float]:
    """delete_rows against Java's DELETE, each on a fresh v3 copy of the table."""
    catalog = local_catalog(folder)
    base = catalog.load_table("bench.stats4").metadata_location
    ours, theirs = [], []
    counts: dict[str, int] = {}
    for run in range(runs):
        for who in ("ours", "java"):
            name = f"bench.del_{who}_{run}"
            table = upgrade_to_v3(catalog.register_table(name, base))
            if who == "ours":
                start = time.perf_counter()
                result = delete_rows(table, "category = 0")
                ours.append(time.perf_counter() - start)
                counts["delete_rows"] = result.deleted_rows
            else:
                qualified = "`default`." + name
                java.sql(f"ALTER TABLE {qualified} SET TBLPROPERTIES {MERGE_ON_READ}",
                         warehouse=folder)
                start = time.perf_counter()
                java.sql(f"DELETE FROM {qualified} WHERE category = 0", warehouse=folder)
                theirs.append(time.perf_counter() - start)
                summary = catalog.load_table(name).current_snapshot().summary
                counts["java DELETE"] = int(summary["added-position-deletes"])
    assert counts["delete_rows"] == counts["java DELETE"] > 0, counts
    print(f"rows deleted by each: {counts}")
    return {"delete_rows": statistics.median(ours), "java DELETE": statistics.median(theirs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-java-") as tmp:
        folder = Path(tmp)
        make_table(folder, args.rows, args.files)
        results: dict[str, Any] = {}
        results["puffin table stats compute"] = cli_runs(folder, args.runs)
        results["puffin spark stats"] = spark_whole(folder, args.runs)
        results["java compute_table_stats, whole process"] = java_whole(folder, args.runs)
        with JavaPeer(folder / "java") as java:
            java.sql(STATS, warehouse=folder)  # warm-up
            warm = []
            for _ in range(args.runs):
                start = time.perf_counter()
                java.sql(STATS, warehouse=folder)
                warm.append(time.perf_counter() - start)
            results["java compute_table_stats, warm session"] = (statistics.median(warm), [])
            timed = deletes(folder, java, args.runs)
    ours = results["puffin table stats compute"][0]
    print(f"\n{args.rows:,} rows x 4 columns, {args.files} files, median of {args.runs}\n")
    print("| job | seconds | vs puffin table stats compute | peak RSS (MiB) |")
    print("|---|---|---|---|")
    for name, (seconds, peaks) in results.items():
        rss = "–" if not peaks else f"{min(peaks):.0f}–{max(peaks):.0f}"
        print(f"| {name} | {seconds:.2f} | {seconds / ours:.2f}× | {rss} |")
    print(f"| delete_rows (category = 0) | {timed['delete_rows']:.2f} | | |")
    print(f"| Java DELETE (merge-on-read, warm) | {timed['java DELETE']:.2f} | "
          f"{timed['java DELETE'] / timed['delete_rows']:.2f}× delete_rows | |")
    print(json.dumps({k: v[0] for k, v in results.items()} | timed))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
