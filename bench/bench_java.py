"""puffin against Iceberg Java 1.10.2 itself, same table, same machine, one run (issue 21).

The table of bench_iceberg.py: 10 million rows of 4 columns (long, int, double, string) in
8 Parquet files, in an embedded SQLite catalog that Java opens through its ``JdbcCatalog``
(tests/peers/iceberg_java.py: Spark 3.5 ``local[2]`` in ``.venv-java``). Medians of ``--runs``:

* NDV statistics of the current snapshot: ``puffin table stats compute --no-commit`` and
  ``puffin spark stats --no-commit`` (PySpark 4, ``local[2]``) as whole processes, against
  Java's ``CALL system.compute_table_stats`` in a warm session (the statement alone) and as a
  whole process (start Spark, the statement, stop). Peak RSS: each process's own ``VmHWM``
  (for Java, the JVM's, read before it stops).
* Row deletes, ``category = 0`` (0.5 % of the rows, in every file) on a fresh v3 copy of
  the table per run: ``puffin table delete`` as a whole process (its own peak RSS) against
  Java's merge-on-read ``DELETE`` in a warm session (the JVM's peak over that session).

Run (after ``make peers``): ``.venv/bin/python bench/bench_java.py [--rows 10000000] [--runs 3]``
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
from pathlib import Path

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


_DELETE_CHILD = """
import contextlib, io, json, sys
from puffin.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"code": code, "peak_kib": peak, "out": json.loads(out.getvalue())}))
"""


def _cli_delete(folder: Path, name: str) -> tuple[float, float, int]:
    """``puffin table delete`` in a fresh process: seconds, its peak RSS (MiB), rows deleted."""
    argv = [sys.executable, "-c", _DELETE_CHILD, "table", "delete", "--warehouse",
            str(folder), "--where", "category = 0", "--json", name]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, proc.stderr
    return seconds, result["peak_kib"] / 1024, int(result["out"]["deleted_rows"])


def deletes(folder: Path, runs: int) -> dict[str, tuple[float, list[float]]]:
    """``puffin table delete`` (a whole process) against Java's DELETE in a warm session,
    each on a fresh v3 copy of the table; both must delete the same rows."""
    catalog = local_catalog(folder)
    base = catalog.load_table("bench.stats4").metadata_location
    ours: list[float] = []
    inproc: list[float] = []
    theirs: list[float] = []
    peaks: list[float] = []
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp, JavaPeer(Path(tmp)) as java:
        for run in range(runs):
            for who in ("ours", "inproc", "java"):
                name = f"bench.del_{who}_{run}"
                table = upgrade_to_v3(catalog.register_table(name, base))
                if who == "inproc":
                    start = time.perf_counter()
                    counts["delete_rows"] = delete_rows(table, "category = 0").deleted_rows
                    inproc.append(time.perf_counter() - start)
                    continue
                if who == "ours":
                    seconds, peak, counts["puffin"] = _cli_delete(folder, name)
                    ours.append(seconds)
                    peaks.append(peak)
                    continue
                qualified = "`default`." + name
                java.sql(f"ALTER TABLE {qualified} SET TBLPROPERTIES {MERGE_ON_READ}",
                         warehouse=folder)
                start = time.perf_counter()
                java.sql(f"DELETE FROM {qualified} WHERE category = 0", warehouse=folder)
                theirs.append(time.perf_counter() - start)
                summary = catalog.load_table(name).current_snapshot().summary
                counts["java"] = int(summary["added-position-deletes"])
        assert java._proc is not None
        jvm = _vm_hwm_mib(_jvm_pid(java._proc.pid))
    assert counts["puffin"] == counts["delete_rows"] == counts["java"] > 0, counts
    print(f"rows deleted by each: {counts}")
    return {
        "puffin table delete (whole process)": (statistics.median(ours), peaks),
        "delete_rows (in a warm process)": (statistics.median(inproc), []),
        "java DELETE, warm session (JVM peak over the session)": (
            statistics.median(theirs), [jvm]),
    }


def _table(title: str, rows: dict[str, tuple[float, list[float]]]) -> None:
    """A Markdown table of medians, each against the first row, with peak RSS."""
    first = next(iter(rows.values()))[0]
    print(f"\n| {title} | seconds | ratio | peak RSS (MiB) |\n|---|---|---|---|")
    for name, (seconds, peaks) in rows.items():
        rss = "–" if not peaks else f"{min(peaks):.0f}–{max(peaks):.0f}"
        print(f"| {name} | {seconds:.2f} | {seconds / first:.2f}× | {rss} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.files, args.runs = 20_000, 2, 1
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-java-") as tmp:
        folder = Path(tmp)
        make_table(folder, args.rows, args.files)
        stats: dict[str, tuple[float, list[float]]] = {
            "puffin table stats compute": cli_runs(folder, args.runs),
            "puffin spark stats": spark_whole(folder, args.runs),
            "java compute_table_stats, whole process": java_whole(folder, args.runs),
        }
        with JavaPeer(folder / "java") as java:
            java.sql(STATS, warehouse=folder)  # warm-up
            warm = []
            for _ in range(args.runs):
                start = time.perf_counter()
                java.sql(STATS, warehouse=folder)
                warm.append(time.perf_counter() - start)
        stats["java compute_table_stats, warm session"] = (statistics.median(warm), [])
        timed = deletes(folder, args.runs)
    print(f"\n{args.rows:,} rows x 4 columns, {args.files} files, median of {args.runs}")
    _table("statistics", stats)
    _table("delete category = 0", timed)
    print(json.dumps({k: v[0] for k, v in (stats | timed).items()}))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
