"""v3 appends and statistics that keep up (issue 22), against the full recomputation and
against pyiceberg's own append to a v2 table.

bench_iceberg.py's table (10,000,000 rows: long, int, double, string; 8 Parquet files) is
made once; its v2 metadata and a v3 upgrade with a statistics file are the bases. Each run
registers fresh tables on those bases (no data copied) and appends the same 1,000,000 rows,
in files of at most 1.8 MB (the tables' ``write.target-file-size-bytes``: about 20). Each job
runs in a fresh process, which reports its own times and peak RSS (``VmHWM``); the appended
data is generated in the child before the clock starts. Medians of ``--runs``:

* ``incremental``: ``append(table, data, statistics="none")``, then
  ``update_table_statistics(table)``: only the appended files are sketched and unioned into
  the parent's sketches;
* ``full``: the same append, then ``compute_table_statistics(table)`` of the new snapshot;
* ``default``: ``append(table, data)`` (statistics follow by default), the whole call;
* ``ours`` and ``pyiceberg``: two appends in one process, ``append(..., statistics="none")``
  on the v3 table against pyiceberg 0.12's ``table.append`` on the v2 table: the first pays
  each library's first-call costs (lazy imports), the second is a warm pipeline's;
* ``baseline``: the same process without any append (imports and the generated data), so
  the others' peak RSS can be read as the job's own;
* Iceberg Java 1.10.2 (``.venv-java``, ``make peers``), beside: ``INSERT`` of the same rows
  into a fresh v3 copy and ``compute_table_stats``, each timed in a warm Spark session.

Goals from the issue: the incremental statistics part at least 5× faster than the full one,
its process at most 256 MiB peak RSS, and our append at most 1.2× pyiceberg's.

Run: ``.venv/bin/python bench/bench_append.py [--rows 10000000] [--append 1000000] [--runs 3]``
(``--smoke``: 40,000 rows, 10,000 appended, one run)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import pyarrow.parquet as pq  # noqa: E402
from bench_iceberg import make_table  # noqa: E402

from peers.iceberg_java import JavaPeer  # noqa: E402
from puffin.iceberg import (  # noqa: E402
    compute_table_statistics,
    local_catalog,
    sample_batch,
    upgrade_to_v3,
)

TARGET = str(1_800_000)  # bytes per appended data file: 1 M rows in about 20 files

_CHILD = """
import json, sys, time
from puffin.iceberg import (append, compute_table_statistics, local_catalog, sample_batch,
                            update_table_statistics)
warehouse, name, job, rows, start = sys.argv[1:6]
table = local_catalog(warehouse).load_table(name)
columns = ["id", "category", "amount", "user_name"]
data = sample_batch(int(rows), start=int(start), seed=5).select(columns)
more = sample_batch(int(rows), start=2 * int(start), seed=6).select(columns)
times = {}
clock = time.perf_counter()
if job in ("ours", "pyiceberg"):  # two appends: the first pays first-call costs
    for key, batch in (("first", data), ("second", more)):
        clock = time.perf_counter()
        if job == "pyiceberg":
            table.append(batch)
        else:
            table = append(table, batch, statistics="none")
        times[key] = time.perf_counter() - clock
elif job == "default":
    append(table, data)
    times["total"] = time.perf_counter() - clock
elif job in ("incremental", "full"):
    table = append(table, data, statistics="none")
    times["append"] = time.perf_counter() - clock
    clock = time.perf_counter()
    if job == "incremental":
        update_table_statistics(table)
    else:
        compute_table_statistics(table)
    times["statistics"] = time.perf_counter() - clock
table = local_catalog(warehouse).load_table(name)
snapshot = table.current_snapshot()
with open("/proc/self/status") as status:
    peak = next(int(x.split()[1]) for x in status if x.startswith("VmHWM:")) / 1024
print(json.dumps({"times": times, "peak_mib": peak,
                  "files": int(snapshot.summary.get("added-data-files") or 0),
                  "stats": any(s.snapshot_id == snapshot.snapshot_id
                               for s in table.metadata.statistics)}))
"""


def _bases(folder: Path, rows: int) -> dict[str, str]:
    """The v2 table's metadata and a v3 upgrade with statistics, each a registered base."""
    catalog = local_catalog(folder)
    v2 = make_table(folder, rows, 8)
    with v2.transaction() as tx:
        tx.set_properties({"write.target-file-size-bytes": TARGET})
    v2 = catalog.load_table("bench.stats4")
    v3 = upgrade_to_v3(catalog.register_table("bench.v3base", v2.metadata_location))
    compute_table_statistics(v3)
    return {"v2": v2.metadata_location, "v3": catalog.load_table("bench.v3base").metadata_location}


def java_jobs(folder: Path, base: str, rows: int, start: int, runs: int) -> dict[str, float]:
    """Iceberg Java 1.10.2 in a warm Spark session (tests/peers/iceberg_java.py): ``INSERT``
    of the same rows (read from a Parquet file) into a fresh v3 copy, then
    ``compute_table_stats`` of the new snapshot; medians of each statement's time."""
    data = folder / "append.parquet"
    columns = ["id", "category", "amount", "user_name"]
    pq.write_table(sample_batch(rows, start=start, seed=5).select(columns), data)
    catalog = local_catalog(folder)
    inserts, stats = [], []
    with JavaPeer(folder / "java") as java:
        for run in range(runs + 1):  # the first warms the session up
            name = f"bench.java_{run}"
            catalog.register_table(name, base)
            clock = time.perf_counter()
            java.sql(f"INSERT INTO `default`.{name} SELECT * FROM parquet.`{data}`",
                     warehouse=folder)
            inserted = time.perf_counter() - clock
            clock = time.perf_counter()
            java.sql(f"CALL `default`.system.compute_table_stats(table => '{name}')",
                     warehouse=folder)
            if run:
                inserts.append(inserted)
                stats.append(time.perf_counter() - clock)
    return {"insert": statistics.median(inserts), "compute_table_stats": statistics.median(stats)}


def main() -> int:
    from _child import run_child

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--append", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.append, args.runs = 40_000, 10_000, 1
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    jobs = {"baseline": "v3", "incremental": "v3", "full": "v3", "default": "v3", "ours": "v3",
            "pyiceberg": "v2"}
    results: dict[str, list[dict[str, Any]]] = {job: [] for job in jobs}
    with tempfile.TemporaryDirectory(prefix="bench-append-") as tmp:
        folder = Path(tmp)
        bases = _bases(folder, args.rows)
        catalog = local_catalog(folder)
        for run in range(args.runs):  # in turns, so load falls on every job alike
            for job, base in jobs.items():
                name = f"bench.{job}_{run}"
                catalog.register_table(name, bases[base])
                results[job].append(run_child(_CHILD, folder, name, job, args.append, args.rows))
        java = java_jobs(folder, bases["v3"], args.append, args.rows, args.runs)
    _report(results, args)
    print(f"Iceberg Java, warm session: INSERT {java['insert']:.2f} s, compute_table_stats "
          f"{java['compute_table_stats']:.2f} s")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    if key not in runs[0]["times"]:
        return None
    return statistics.median(r["times"][key] for r in runs)


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _report(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    print(f"\n{args.rows:,}-row table, {args.append:,} rows appended, median of {args.runs}\n")
    base = max(r["peak_mib"] for r in results["baseline"])
    keys = ["append", "statistics", "total", "first", "second"]
    print("| job | " + " | ".join(f"{k} (s)" for k in keys)
          + " | peak RSS (MiB) | above baseline | files | stats |")
    print("|---|" + "---|" * (len(keys) + 4))
    for job, runs in results.items():
        peaks = [r["peak_mib"] for r in runs]
        cells = " | ".join(_cell(_median(runs, k)) for k in keys)
        print(f"| {job} | {cells} | {min(peaks):.0f}–{max(peaks):.0f} | "
              f"{max(peaks) - base:+.0f} | {runs[0]['files']} | {runs[0]['stats']} |")
    incremental = _median(results["incremental"], "statistics") or 0.0
    full = _median(results["full"], "statistics") or 0.0
    peak = max(r["peak_mib"] for r in results["incremental"])
    print(f"\nstatistics: full / incremental = {full / incremental:.1f}× (goal ≥ 5×); "
          f"incremental job peak {peak:.0f} MiB, {peak - base:+.0f} over the baseline process "
          "(goal ≤ 256)")
    for key in ("first", "second"):
        ours = _median(results["ours"], key) or 0.0
        theirs = _median(results["pyiceberg"], key) or 1.0
        print(f"append, {key} in its process: ours / pyiceberg v2 = {ours / theirs:.2f}× "
              "(goal ≤ 1.2×)")


if __name__ == "__main__":
    sys.exit(main())
