"""Commit times as a table's history grows: manifest merging on our commits (issue 34).

An upgraded v3 table of 200,000 rows (the data of ``bench_row_deletes.py`` in 4 files) takes
``--commits`` commits, alternating our ``append`` (10 rows, ``statistics="none"``) and
``delete_rows`` of one id (one row of one file: a deletion vector, merged with the file's
live one). Reported: the median commit time of commits 1-20 against the last 20, the
manifests of the current snapshot and the files under the table at the end; the planning
time of a full scan (``plan_files`` of the current snapshot) and of a ``delete_rows`` of one
id (``plan_files`` with its condition), and a full ``scan_table``, after 10 commits against
after the last; and Iceberg Java's ``INSERT`` of
10 rows and merge-on-read ``DELETE`` of one id, in one warm session, on a copy of the young
table and of the old one (registered on the same metadata; medians of ``--runs``).

Then the table gets the maintenance a long-lived table needs (``rewrite_data_files`` and
``expire_snapshots`` of everything but the current snapshot) and 20 more commits: their
median shows what maintenance gives back.

``--no-merge`` sets ``commit.manifest-merge.enabled=false`` on the table, for the figures
without merging (the table of the issue).

Run (after ``make peers``): ``.venv/bin/python bench/bench_commits.py [--commits 1000]``
(``--smoke``: 20,000 rows, 20 commits, one Java run)
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import numpy as np  # noqa: E402
from bench_row_deletes import _batch, _load, make_base  # noqa: E402

from peers.iceberg_java import JavaPeer  # noqa: E402
from puffin.iceberg import (  # noqa: E402
    append,
    delete_rows,
    expire_snapshots,
    rewrite_data_files,
    scan_table,
    transaction,
    upgrade_to_v3,
)
from puffin.iceberg.scan.plan import plan_files  # noqa: E402
from puffin.iceberg.scan.row_filter import check_where  # noqa: E402
from puffin.io.locations import local_path  # noqa: E402

ROWS, FILES = 200_000, 4


def _timed(action: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def _planning(table: Any) -> dict[str, float]:
    """The plan of a full scan, the plan of a ``delete_rows`` of one id (its condition
    prunes by partition and metrics), and a full ``scan_table`` read."""
    snapshot = table.current_snapshot()
    plan, _ = _timed(lambda: plan_files(table, snapshot))
    condition = check_where(table, "id = 123457")
    delete_plan, _ = _timed(lambda: plan_files(table, snapshot, condition))
    scan, rows = _timed(lambda: scan_table(table).to_arrow().num_rows)
    return {"plan_files": plan, "delete plan": delete_plan, "full scan": scan,
            "rows": float(rows)}


def _java(java: JavaPeer, folder: Path, name: str, runs: int, first_id: int) -> dict[str, float]:
    qualified = f"`default`.{name}"
    java.sql(f"ALTER TABLE {qualified} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')",
             warehouse=folder)
    inserts, deletes = [], []
    for run in range(runs):
        values = ", ".join(f"({first_id + 100 * run + i}, 1, 0.5, 'java')" for i in range(10))
        seconds, _ = _timed(lambda v=values: java.sql(
            f"INSERT INTO {qualified} VALUES {v}", warehouse=folder))
        inserts.append(seconds)
        seconds, _ = _timed(lambda r=run: java.sql(
            f"DELETE FROM {qualified} WHERE id = {first_id + 100 * r}", warehouse=folder))
        deletes.append(seconds)
    return {"INSERT": statistics.median(inserts), "DELETE": statistics.median(deletes)}


class _Steps:
    """Commit ``n`` of the history: an append of 10 rows (odd ``n``), else a delete of one id."""

    def __init__(self, rng: Any) -> None:
        self.rng, self.next_id = rng, 10_000_000

    def __call__(self, table: Any, n: int) -> Any:
        if n % 2:
            batch = _batch(self.next_id, 10, self.rng)
            self.next_id += 10
            return append(table, batch, statistics="none")
        victim = int(self.rng.integers(0, ROWS))
        return delete_rows(table, f"id = {victim}").table


def _maintain(table: Any) -> Any:
    """What a long-lived table gets: small files compacted, old snapshots expired."""
    table = rewrite_data_files(table).table
    return expire_snapshots(table, older_than=datetime.timedelta(0)).table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-merge", action="store_true")
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args(argv)
    if args.smoke:  # 20 commits: the first 20 and the last 20 are then the same
        global ROWS
        ROWS, args.commits, args.runs = 20_000, 20, 1
    print(_load(), flush=True)
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="bench-commits-") as tmp:
        folder = Path(tmp)
        catalog, base, _ = make_base(folder, ROWS, FILES)
        table = upgrade_to_v3(catalog.register_table("bench.aging", base))
        if args.no_merge:
            with transaction(table) as tx:
                tx.set_properties({"commit.manifest-merge.enabled": "false"})
            table = table.refresh()
        times: list[float] = []
        young: dict[str, float] = {}
        young_metadata = ""
        step = _Steps(rng)
        for n in range(1, args.commits + 1):
            seconds, table = _timed(lambda t=table, k=n: step(t, k))
            times.append(seconds)
            if n == 10:
                young = _planning(table)
                young_metadata = table.metadata_location
        old = _planning(table)
        manifests = len(table.current_snapshot().manifests(table.io))
        root = Path(local_path(table.location()) or "")
        files = sum(1 for p in root.rglob("*") if p.is_file())
        catalog.register_table("bench.old", table.metadata_location)
        catalog.register_table("bench.young", young_metadata)
        jtmp = tempfile.TemporaryDirectory(prefix="bench-java-")
        with jtmp, JavaPeer(Path(jtmp.name)) as java:
            java.sql("SELECT count(*) FROM `default`.bench.young", warehouse=folder)  # warm up
            java_young = _java(java, folder, "bench.young", args.runs, 20_000_000)
            java_old = _java(java, folder, "bench.old", args.runs, 30_000_000)
        # Last: expiring deletes files that the Java copies of the table still reference.
        maintenance, table = _timed(lambda t=table: _maintain(t))
        maintained = []
        for n in range(args.commits + 1, args.commits + 21):
            seconds, table = _timed(lambda t=table, k=n: step(t, k))
            maintained.append(seconds)
    first, last = statistics.median(times[:20]), statistics.median(times[-20:])
    print(f"\n{args.commits} commits (append 10 rows / delete one id, alternating) on a v3 "
          f"table of {ROWS:,} rows; merging {'off' if args.no_merge else 'on (Java defaults)'}")
    print(f"median commit, commits 1-20: {first * 1000:.0f} ms; commits "
          f"{args.commits - 19}-{args.commits}: {last * 1000:.0f} ms; ratio {last / first:.2f}x")
    for kind, start in (("appends", 0), ("deletes", 1)):
        young_ms = statistics.median(times[start:20:2]) * 1000
        old_ms = statistics.median(times[len(times) - 20 + start::2]) * 1000
        print(f"  {kind}: {young_ms:.0f} ms, then {old_ms:.0f} ms")
    print(f"at the end: {manifests} manifests in the current snapshot, {files} files under "
          "the table")
    print(f"rewrite_data_files + expire_snapshots: {maintenance:.1f} s; median of the next 20 "
          f"commits: {statistics.median(maintained) * 1000:.0f} ms "
          f"({statistics.median(maintained) / first:.2f}x of commits 1-20)")
    print("| after | plan_files, full scan (s) | plan_files, delete of one id (s) | "
          "full scan_table (s) | Java INSERT 10 rows (s) | Java DELETE one id (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, ours, theirs in (("10 commits", young, java_young),
                                (f"{args.commits} commits", old, java_old)):
        print(f"| {label} | {ours['plan_files']:.3f} | {ours['delete plan']:.4f} | "
              f"{ours['full scan']:.3f} | {theirs['INSERT']:.2f} | {theirs['DELETE']:.2f} |")
    print(_load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
