"""Deletes on a v2 table that stays v2 (issue 46): merge-on-read against copy-on-write.

The 10-million-row table of bench_row_deletes.py (20 Parquet files of 500,000 rows: ``id``
long, ``k`` int uniform in 0..99, ``amount`` double, ``name`` string), committed once to a v2
table in an embedded SQLite catalog. Each run registers fresh tables on that metadata (no
data copied) and deletes ``k = 0`` (about 1 % of the rows, in every file) four ways:

* ours, merge-on-read: ``puffin.iceberg.delete_rows`` with ``write.delete.mode`` =
  ``merge-on-read`` (one Parquet position-delete file per data file);
* ours, copy-on-write (the v2 default): ``delete_rows`` writing the 20 files again;
* pyiceberg 0.12's ``table.delete`` (copy-on-write; it has no merge-on-read);
* Iceberg Java 1.10.2's merge-on-read ``DELETE`` in a warm Spark 3.5 session
  (``tests/peers/iceberg_java.py``), after one warm-up delete.

All four must delete the same rows. Reported: medians of wall time and bytes written.

Then the scans: one merge-on-read table after 50 deletes (each ``k = i and amount < 20``,
about 0.02 % of the rows, in every file: 1,000 position-delete files), read whole by every
reader that runs here (``scan_table``, pyiceberg, iceberg-rust, DuckDB 1.4.4 and 1.5.5,
Sail through a client process per read, Java), before and after
``rewrite_position_delete_files``; each must return the rows the model says (the rows
appended less the rows each delete's condition matched, counted with pyarrow from the data
files).

Run (after ``make peers``): ``.venv/bin/python bench/bench_v2_deletes.py [--rows 10000000]
[--files 20] [--runs 3] [--deletes 50]`` (``--smoke``: 20,000 rows in 2 files, one run, 5
deletes)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from bench_row_deletes import make_base  # noqa: E402

from peers import (  # noqa: E402
    SailServer,
    read_duckdb,
    read_duckdb15,
    read_iceberg_rust,
    read_pyiceberg,
    read_sail,
)
from peers.iceberg_java import JavaPeer  # noqa: E402
from puffin.iceberg import (  # noqa: E402
    delete_rows,
    local_catalog,
    rewrite_position_delete_files,
    scan_table,
)

WHERE = "k = 0"
MOR = {"write.delete.mode": "merge-on-read"}


def _files(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_size for p in folder.rglob("*") if p.is_file() and "java" not in p.parts}


def _timed(folder: Path, action: Callable[[], int]) -> tuple[float, int, int]:
    """(seconds, bytes of new files, rows ``action`` says it deleted)."""
    before = _files(folder)
    start = time.perf_counter()
    deleted = action()
    seconds = time.perf_counter() - start
    written = sum(size for p, size in _files(folder).items() if p not in before)
    return seconds, written, deleted


def _fresh(catalog: Any, name: str, base: str, properties: dict[str, str] | None = None) -> Any:
    table = catalog.register_table(name, base)
    if properties:
        with table.transaction() as tx:
            tx.set_properties(properties)
        table = catalog.load_table(name)
    return table


def _deletes(
    folder: Path, catalog: Any, base: str, java: JavaPeer, runs: int, rows: int
) -> dict[str, list[tuple[float, int, int]]]:
    out: dict[str, list[tuple[float, int, int]]] = {}

    def java_delete(name: str) -> int:
        java.sql(f"ALTER TABLE `default`.{name} SET TBLPROPERTIES "
                 "('write.delete.mode' = 'merge-on-read')", warehouse=folder)  # fmt: skip
        java.sql(f"DELETE FROM `default`.{name} WHERE {WHERE}", warehouse=folder)
        summary = catalog.load_table(name).current_snapshot().summary
        return int(summary["added-position-deletes"])

    def pyiceberg_delete(name: str) -> int:
        table = _fresh(catalog, name, base)
        table.delete(WHERE)
        return rows - catalog.load_table(name).scan(selected_fields=("id",)).count()

    java_delete(_register(catalog, "bench.java_warmup", base))
    for run in range(runs):
        mor = _fresh(catalog, f"bench.mor_{run}", base, MOR)
        cow = _fresh(catalog, f"bench.cow_{run}", base)
        jobs: dict[str, Callable[[], int]] = {
            "ours, merge-on-read": partial(_ours, mor),
            "ours, copy-on-write": partial(_ours, cow),
            "pyiceberg table.delete (copy-on-write)": partial(pyiceberg_delete, f"bench.py_{run}"),
            "Java merge-on-read DELETE, warm": partial(
                java_delete, _register(catalog, f"bench.java_{run}", base)),
        }  # fmt: skip
        for label, job in jobs.items():
            out.setdefault(label, []).append(_timed(folder, job))
        print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1][0]:.2f} s" for k, v in out.items()),
              flush=True)  # fmt: skip
    return out


def _ours(table: Any) -> int:
    return delete_rows(table, WHERE).deleted_rows


def _register(catalog: Any, name: str, base: str) -> str:
    catalog.register_table(name, base)
    return name


READERS: dict[str, Callable[[str], Any]] = {
    "scan_table": lambda m: scan_table(_static(m)).to_arrow(),
    "pyiceberg": read_pyiceberg,
    "iceberg-rust": read_iceberg_rust,
    "DuckDB 1.4.4": read_duckdb,
    "DuckDB 1.5.5": read_duckdb15,
}


def _static(metadata: str) -> Any:
    from peers import static_table

    return static_table(metadata)


def _scans(
    catalog: Any, base: str, java: JavaPeer, sail: SailServer, deletes: int, rows: int
) -> tuple[list[str], int]:
    """Lines of the scans table: each reader before and after the rewrite."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = _fresh(catalog, "bench.scans", base, MOR)
    start = time.perf_counter()
    for i in range(1, deletes + 1):
        table = delete_rows(table, f"k = {i} and amount < 20").table
    spent = time.perf_counter() - start
    gone = 0
    for task in table.scan().plan_files():  # the model: the conditions, on the data files
        data = pq.read_table(str(task.file.file_path).removeprefix("file://"))
        k, amount = data["k"], data["amount"]
        hit = pc.and_(pc.and_(pc.greater_equal(k, 1), pc.less_equal(k, deletes)),
                      pc.less(amount, 20))  # fmt: skip
        gone += int(pc.sum(hit).as_py() or 0)
    lines = [f"{deletes} merge-on-read deletes took {spent:.2f} s ({spent / deletes:.3f} s each)"]
    states = {"after the deletes": table}
    rewrite_start = time.perf_counter()
    rewritten = rewrite_position_delete_files(table)
    rewrite_seconds = time.perf_counter() - rewrite_start
    states["after rewrite_position_delete_files"] = rewritten.table
    lines.append(f"rewrite_position_delete_files: {rewritten.files_before} -> "
                 f"{rewritten.files_after} files in {rewrite_seconds:.2f} s")  # fmt: skip
    readers = {
        **READERS,
        "Sail 0.7 (a client process per read)": lambda m: read_sail(sail, m),
        "Java, warm": java.read,
    }
    lines.append("| reader | " + " | ".join(states) + " |")
    lines.append("|---|" + "---|" * len(states))
    for name, read in readers.items():
        cells = []
        for state in states.values():
            start = time.perf_counter()
            got = read(state.metadata_location).num_rows
            cells.append(f"{time.perf_counter() - start:.2f} s")
            assert got == rows - gone, (name, got, rows - gone)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines, gone


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--deletes", type=int, default=50)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.files, args.runs, args.deletes = 20_000, 2, 1, 5
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-v2-deletes-") as tmp:
        folder = Path(tmp)
        catalog, base, expected = make_base(folder, args.rows, args.files)
        catalog = local_catalog(folder)
        with JavaPeer(folder / "java") as java, SailServer(folder / "sail") as sail:
            results = _deletes(folder, catalog, base, java, args.runs, args.rows)
            scans, gone = _scans(catalog, base, java, sail, args.deletes, args.rows)
    for label, runs in results.items():
        assert all(r[2] == expected for r in runs), (label, [r[2] for r in runs], expected)
    print(f"\n{args.rows:,} rows in {args.files} files (v2); delete {WHERE!r}: {expected:,} rows "
          f"({expected / args.rows:.2%}); medians of {args.runs} runs")  # fmt: skip
    ours = statistics.median(r[0] for r in results["ours, merge-on-read"])
    print("| delete | seconds | bytes written | seconds / ours merge-on-read |")
    print("|---|---|---|---|")
    for label, runs in results.items():
        seconds = statistics.median(r[0] for r in runs)
        written = statistics.median(r[1] for r in runs)
        print(f"| {label} | {seconds:.3f} | {written:,.0f} | {seconds / ours:.1f}× |")
    print(f"\nscans of {args.rows:,} rows after {args.deletes} deletes ({gone:,} rows deleted):")
    print("\n".join(scans))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
