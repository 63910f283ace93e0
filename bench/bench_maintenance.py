"""Keeping a v3 table fast after many deletes: rewrite_deletion_vectors, rewrite_data_files and
expire_snapshots, with pyiceberg, DuckDB and Iceberg Java reading beside (issue 31).

The table of ``bench_row_deletes.py`` (10 million rows in 20 Parquet files: id long, k int,
amount double, name string), upgraded to v3, in four states, each a table of its own
registered on the same data:

* ``never``: no delete;
* ``deleted``: 50 ``delete_rows`` commits, commit ``i`` deleting a run of ids of file
  ``i % 20`` (0.1 % of the table each, 5 % in all): 20 vectors live, in 20 Puffin files;
* ``gathered``: ``deleted`` after ``rewrite_deletion_vectors`` (one Puffin file);
* ``compacted``: ``gathered`` after ``rewrite_data_files(min_deleted_fraction=0)``.

For each state, medians of ``--runs`` with the readers taking turns: pyiceberg 0.12's
``scan().to_arrow()``, our ``scan_table().to_arrow()``, DuckDB 1.4.4's ``iceberg_scan`` to
Arrow, and Iceberg Java 1.10.2 (Spark 3.5 ``local[2]``, warm session) running
``SELECT count(*), sum(k), sum(amount), max(name), max(id)`` (every column read, deletes
applied; Java hands no rows to Python). Every reader's row count is checked against the
model (the rows minus the ids the 50 ranges cover).

Then the maintenance jobs themselves: our ``rewrite_data_files`` in a child process (its
own peak RSS, ``VmHWM``) against Java's ``CALL system.rewrite_data_files`` (options
``delete-file-threshold`` 1, ``min-input-files`` 1) on another copy of ``gathered``, in the
warm session (the statement alone); and ``expire_snapshots`` on a table of ``--snapshots``
snapshots (small appends, pyiceberg's manifest merging on so that building it stays quick).

Run (after ``make peers``, on an idle machine):
``.venv/bin/python bench/bench_maintenance.py [--rows 10000000] [--files 20] [--runs 3]``
(``--smoke``: 20,000 rows in 4 files, 5 delete commits, 10 snapshots, one run)
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import pyarrow as pa  # noqa: E402
from bench_row_deletes import _load, make_base  # noqa: E402
from bench_scan import _duckdb, _interleaved  # noqa: E402

from peers.iceberg_java import JavaPeer  # noqa: E402
from puffin.iceberg import (  # noqa: E402
    delete_rows,
    expire_snapshots,
    rewrite_deletion_vectors,
    scan_table,
    upgrade_to_v3,
)

COMMITS = 50
JAVA_SCAN = "SELECT count(*), sum(k), sum(amount), max(name), max(id) FROM `default`.{name}"
JAVA_COMPACT = (
    "CALL `default`.system.rewrite_data_files(table => '{name}', options => "
    "map('delete-file-threshold', '1', 'min-input-files', '1'))"
)

_COMPACT_CHILD = r"""
import json, sys, time
from puffin.iceberg import local_catalog, rewrite_data_files
table = local_catalog(sys.argv[1], create=False).load_table(sys.argv[2])
start = time.perf_counter()
result = rewrite_data_files(table, min_deleted_fraction=0.0, statistics="none")
seconds = time.perf_counter() - start
with open("/proc/self/status") as f:
    peak = int(next(l for l in f if l.startswith("VmHWM:")).split()[1])
print(json.dumps({"seconds": seconds, "peak_kib": peak, "files": result.rewritten_files,
                  "rows": result.rows}))
"""


def _deletes(rows: int, files: int) -> list[tuple[int, int]]:
    """The 50 id ranges deleted: commit ``i`` takes 0.1 % of the table from file ``i % 20``."""
    per_file, run = rows // files, rows // 1000
    return [
        (
            (i % files) * per_file + (i // files) * run,
            (i % files) * per_file + (i // files + 1) * run,
        )
        for i in range(COMMITS)
    ]


def _readers(table: Any, name: str, java: JavaPeer, folder: Path) -> dict[str, Callable[[], int]]:
    read, _ = _duckdb(table.metadata_location)

    def java_scan() -> int:
        result = java.sql(JAVA_SCAN.format(name=name), warehouse=folder)
        return int(result.column(0)[0].as_py())

    return {
        "pyiceberg": lambda: int(table.scan().to_arrow().num_rows),
        "ours": lambda: int(scan_table(table).to_arrow().num_rows),
        "duckdb": read,
        "java": java_scan,
    }


def _expire_bench(folder: Path, snapshots: int) -> dict[str, float]:
    """expire_snapshots on a table of ``snapshots`` snapshots: seconds, files deleted."""
    from puffin.iceberg import local_catalog

    catalog = local_catalog(folder / "expire")
    catalog.create_namespace_if_not_exists("bench")
    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table(
        "bench.history",
        schema,
        properties={"commit.manifest-merge.enabled": "true", "format-version": "2"},
    )
    start = time.perf_counter()
    for i in range(snapshots):
        table.append(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}))
    built = time.perf_counter() - start
    table = catalog.load_table("bench.history")
    start = time.perf_counter()
    result = expire_snapshots(table, older_than=datetime.timedelta(0))
    seconds = time.perf_counter() - start
    assert scan_table(result.table).to_arrow().num_rows == snapshots * 10
    return {
        "snapshots": float(len(result.expired_snapshot_ids) + 1),
        "seconds": seconds,
        "files deleted": float(result.deleted_files),
        "build seconds": built,
    }


def main(argv: list[str] | None = None) -> int:
    from _child import run_child

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--snapshots", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args(argv)
    if args.smoke:
        global COMMITS
        COMMITS, args.rows, args.files, args.runs, args.snapshots = 5, 20_000, 4, 1, 10
    print(_load(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-maint-") as tmp:
        folder = Path(tmp)
        catalog, base, _ = make_base(folder, args.rows, args.files)
        ranges = _deletes(args.rows, args.files)
        expected = args.rows - sum(hi - lo for lo, hi in ranges)
        tables = {"never": upgrade_to_v3(catalog.register_table("bench.never", base))}
        deleted = upgrade_to_v3(catalog.register_table("bench.deleted", base))
        for lo, hi in ranges:
            deleted = delete_rows(deleted, f"id >= {lo} and id < {hi}").table
        tables["deleted"] = deleted
        jobs: dict[str, float] = {}
        for name in ("gathered", "java_compact", "compacted"):  # the same state, three times
            table = upgrade_to_v3(catalog.register_table(f"bench.{name}", base))
            for lo, hi in ranges:
                table = delete_rows(table, f"id >= {lo} and id < {hi}").table
            start = time.perf_counter()
            table = rewrite_deletion_vectors(table).table
            jobs.setdefault("rewrite_deletion_vectors seconds", time.perf_counter() - start)
            if name == "gathered":
                tables["gathered"] = table
        compact = run_child(_COMPACT_CHILD, folder, "bench.compacted")
        tables["compacted"] = catalog.load_table("bench.compacted")
        jobs["our compaction seconds"] = compact["seconds"]
        jobs["our compaction peak MiB"] = compact["peak_kib"] / 1024
        results: dict[str, dict[str, float]] = {}
        with (
            tempfile.TemporaryDirectory(prefix="bench-java-") as jtmp,
            JavaPeer(Path(jtmp)) as java,
        ):
            java.sql(JAVA_SCAN.format(name="bench.never"), warehouse=folder)  # warm up
            for state, table in tables.items():
                readers = _readers(table, f"bench.{state}", java, folder)
                results[state] = _interleaved(
                    readers, args.runs, expected if state != "never" else args.rows
                )
                print(state, {k: round(v, 3) for k, v in results[state].items()}, flush=True)
            start = time.perf_counter()
            java.sql(JAVA_COMPACT.format(name="bench.java_compact"), warehouse=folder)
            jobs["java compaction seconds (warm)"] = time.perf_counter() - start
        after = catalog.load_table("bench.java_compact")
        assert scan_table(after).to_arrow().num_rows == expected
        expire = _expire_bench(folder, args.snapshots)
    _report(args, results, jobs, compact, expire)
    return 0


def _report(
    args: argparse.Namespace,
    results: dict[str, dict[str, float]],
    jobs: dict[str, float],
    compact: dict[str, Any],
    expire: dict[str, float],
) -> None:
    print(
        f"\n{args.rows:,} rows in {args.files} files, {COMMITS} delete commits; "
        f"medians of {args.runs} runs (seconds; ratio to the never-deleted table)"
    )
    print("| state | pyiceberg | ours | DuckDB 1.4.4 | Java |")
    print("| --- | --- | --- | --- | --- |")
    never = results["never"]
    for state, f in results.items():
        cells = [
            f"{f[r]:.2f} ({f[r] / never[r]:.2f}x)" for r in ("pyiceberg", "ours", "duckdb", "java")
        ]
        print(f"| {state} | " + " | ".join(cells) + " |")
    ours, java = jobs["our compaction seconds"], jobs["java compaction seconds (warm)"]
    print(f"\nrewrite_deletion_vectors: {jobs['rewrite_deletion_vectors seconds']:.2f} s")
    print(
        f"compaction of {compact['files']} files ({compact['rows']:,} rows): ours {ours:.2f} s "
        f"(peak RSS {jobs['our compaction peak MiB']:.0f} MiB), Java warm {java:.2f} s, "
        f"ratio {ours / java:.2f}x"
    )
    print(
        f"expire_snapshots on {expire['snapshots']:.0f} snapshots: {expire['seconds']:.2f} s, "
        f"{expire['files deleted']:.0f} files deleted (building the history took "
        f"{expire['build seconds']:.0f} s)"
    )
    print(_load())


if __name__ == "__main__":
    sys.exit(main())
