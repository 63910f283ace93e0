"""``make demo``: the Spark pipeline end to end on a sample Iceberg table.

Run with ``python -m puffin.demo``.  It

1. creates a sample table (9 column types, a few million rows) in an embedded SQLite catalog
   under ``./demo-output/warehouse`` (re-created on every run), upgraded to Iceberg v3,
2. starts a local Spark session and computes the table's NDV statistics on it: one Iceberg
   theta sketch per column in a Puffin file, committed to the table,
3. deletes the rows matching a condition: Spark finds their positions, the driver commits
   them as deletion vectors (:func:`puffin.spark.delete_rows`, a v3 ``delete`` snapshot),
   and the row counts pyiceberg's scan (and DuckDB, if installed) return before and after
   are printed: they differ by exactly the deleted rows,
4. verifies the table and both files, checks the vectors against pyarrow and the sketches
   against the single-machine builder (byte for byte),
5. appends a day of rows to the v3 table (:func:`puffin.iceberg.append`, which pyiceberg
   0.12 cannot do on v3) with its statistics updated incrementally, and prints the row
   counts both readers return before and after,
6. prints ``puffin inspect`` of both files and a short summary.

It needs Java 17+ for Spark; without it, it says so in one line and exits with status 1.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from puffin.iceberg import DeleteResult

__all__ = ["main"]

DEFAULT_CONDITION = "category = 7 AND amount > 500"


def _say(text: str) -> None:
    print(text, flush=True)


class _Step:
    """Prints what a step does, then how long it took."""

    def __init__(self, number: int, total: int, text: str) -> None:
        self.label = f"[{number}/{total}] {text}"

    def __enter__(self) -> _Step:
        _say(f"{self.label} ...")
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            _say(f"      done in {time.perf_counter() - self.start:.1f} s")


def _local(location: str) -> str:
    from puffin.io.locations import local_path

    path = local_path(location)
    if path is None:  # pragma: no cover - the demo's warehouse is local
        raise RuntimeError(f"{location} is not a local file")
    return path


def _single_machine_check(
    table: Any, schema: Any, stats_path: str
) -> tuple[dict[str, int], list[str]]:
    """Exact distinct counts, and the columns whose Spark sketch differs from a local one.

    Reads every column with pyarrow once: ``pc.count_distinct`` gives the truth the ``ndv``
    values are compared with, and ``ThetaSketch.from_values`` the single-machine sketch the
    Spark-built one must equal byte for byte.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from puffin.blobs.theta.files import ThetaSketch, read_theta_blobs

    paths = [_local(t.file.file_path) for t in table.scan().plan_files()]
    names = [f.name for f in schema.fields]
    data = pq.read_table(paths, columns=names)
    spark_built = {b.field_id: b.sketch for b in read_theta_blobs(stats_path)}
    exact: dict[str, int] = {}
    differ: list[str] = []
    for field in schema.fields:
        column = data.column(field.name)
        if isinstance(column.type, pa.BaseExtensionType):  # uuid: its 16-byte storage
            column = pa.chunked_array([c.storage for c in column.chunks])
        local = ThetaSketch.from_values(column, str(field.field_type))
        if local.serialize() != spark_built[field.field_id].serialize():
            differ.append(field.name)
        exact[field.name] = int(pc.count_distinct(column, mode="only_valid").as_py())
    return exact, differ


def _matching_rows(path: str) -> int:
    """Rows of one data file matching DEFAULT_CONDITION, counted with pyarrow."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    data = pq.read_table(_local(path), columns=["category", "amount"])
    mask = pc.and_kleene(pc.equal(data["category"], 7), pc.greater(data["amount"], 500))
    return int(pc.sum(mask.fill_null(False).cast("int64")).as_py() or 0)


@dataclass(frozen=True)
class _Counts:
    """The table's row count as each reader returns it (``None``: reader not installed)."""

    pyiceberg: int
    duckdb: int | None

    def __str__(self) -> str:
        duck = "not installed" if self.duckdb is None else f"{self.duckdb:,}"
        return f"pyiceberg scan {self.pyiceberg:,}, DuckDB 1.4.4 {duck}"


def _duckdb_count(metadata_location: str) -> int | None:
    """``count(*)`` of DuckDB's ``iceberg_scan`` when duckdb and its wheel extensions exist."""
    import importlib.util

    spec = importlib.util.find_spec("duckdb_ext")
    if importlib.util.find_spec("duckdb") is None or spec is None:
        return None
    import duckdb

    folder = Path(next(iter(spec.submodule_search_locations or ()))) / "extensions"
    con = duckdb.connect(
        config={
            "extension_directory": str(folder),
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
    )
    try:
        con.execute("LOAD avro")
        con.execute("LOAD iceberg")
        path = _local(metadata_location).replace("'", "''")
        row = con.execute(f"SELECT count(*) FROM iceberg_scan('{path}')").fetchone()
        return None if row is None else int(row[0])
    finally:
        con.close()


def _counts(table: Any) -> _Counts:
    """What pyiceberg's scan (deletion vectors applied) and DuckDB read from the table."""
    rows = table.scan(selected_fields=("id",)).to_arrow().num_rows
    return _Counts(rows, _duckdb_count(table.metadata_location))


@dataclass(frozen=True)
class _Deleted:
    """What the delete step committed, and the row counts around it."""

    result: DeleteResult
    before: _Counts
    after: _Counts

    @property
    def agree(self) -> bool:
        """Every reader lost exactly the deleted rows."""
        n = self.result.deleted_rows
        duck = self.before.duckdb is None or self.before.duckdb - n == self.after.duckdb
        return self.before.pyiceberg - n == self.after.pyiceberg and duck


def _append(table: Any, rows: int) -> tuple[Any, int]:
    """Step 5: a day of rows appended, statistics following; (table, problems)."""
    from puffin.iceberg import append, read_table_statistics, sample_batch, verify_table
    from puffin.iceberg.statistics.files import NDV_UPPER_BOUND

    before = _counts(table)
    _say(f"      before: {before}")
    day = sample_batch(rows, start=10**9, seed=1)  # ids past the table's
    table = append(table, day)  # statistics="update": only the new rows are sketched
    snapshot = table.current_snapshot()
    _say(f"      committed snapshot {snapshot.snapshot_id}: {rows:,} rows, row ids from "
         f"{snapshot.first_row_id:,}")
    after = _counts(table)
    _say(f"      after:  {after}")
    stats = read_table_statistics(table)
    bound = any(c.blob.properties.get(NDV_UPPER_BOUND) for c in stats)
    _say(f"      statistics for snapshot {stats.snapshot_id}: step 2's sketches unioned with "
         f"the new rows'{' (an upper bound after the delete, flagged)' if bound else ''}")
    problems = 0
    duck = before.duckdb is None or after.duckdb == before.duckdb + rows
    if after.pyiceberg != before.pyiceberg + rows or not duck:
        _say(f"      PROBLEM: row counts do not grow by {rows}")
        problems += 1
    report = verify_table(table)
    if not report.ok or stats.snapshot_id != snapshot.snapshot_id:
        _say(f"      PROBLEM: {report.problems or 'statistics not on the new snapshot'}")
        problems += 1
    return table, problems


def _create_table(warehouse: Path, rows: int, files: int) -> tuple[Any, Any]:
    """The sample table, re-created and moved to format version 3; (catalog, table)."""
    from puffin.iceberg import create_sample_table, local_catalog, upgrade_to_v3

    if warehouse.exists() and (warehouse / "catalog.db").exists():
        shutil.rmtree(warehouse)  # our own folder from a previous run
    catalog = local_catalog(warehouse)
    table = create_sample_table(catalog, "demo.events", rows=rows, files=files, replace=True)
    table = upgrade_to_v3(table)
    _say("      columns: " + ", ".join(f"{f.name} {f.field_type}" for f in table.schema().fields))
    _say(f"      format version {table.metadata.format_version}")
    return catalog, table


def _delete(spark: Any, table: Any, condition: str) -> _Deleted:
    """Spark finds the rows' positions; the driver commits them as deletion vectors.

    :func:`puffin.spark.delete_rows`: the executors build the vectors, the driver merges
    them with the live ones and commits one ``delete`` snapshot (one Puffin file).
    """
    from puffin import spark as ps

    before = _counts(table)
    _say(f"      before: {before}")
    result = ps.delete_rows(spark, table, condition)
    n = len(result.vectors)
    _say(
        f"      committed {result.deleted_rows:,} rows in {n} deletion "
        f"vector{'' if n == 1 else 's'}, snapshot {result.snapshot_id}"
    )
    if result.puffin_path:
        _say(f"      -> {_local(result.puffin_path)}")
    after = _counts(result.table)
    _say(f"      after:  {after}")
    return _Deleted(result, before, after)


def _verify(
    table: Any, stats: Any, deleted: _Deleted, condition: str
) -> tuple[int, dict[str, int]]:
    """Step 4; returns the problems found and each column's exact distinct count."""
    from puffin.cli import main as puffin_cli
    from puffin.iceberg import verify_table

    problems: list[str] = []
    report = verify_table(table)
    registered = [s for s in table.metadata.statistics if s.snapshot_id == stats.snapshot_id]
    if registered != [stats]:
        problems.append("the statistics file is not registered in the table metadata")
    problems += [str(p) for p in report.problems]
    _say(
        f"      verify_table: {report.statistics_files} statistics file(s), "
        f"{report.deletion_vectors} deletion vector(s), v{table.metadata.format_version} "
        f"rules, {'ok' if report.ok else 'problems found'}"
    )
    if puffin_cli(["verify", "-q", *_files(stats, deleted)]) != 0:
        problems.append("puffin verify rejected a file")
    else:
        _say("      puffin verify: both files valid")
    if not deleted.agree:
        problems.append(f"row counts do not drop by {deleted.result.deleted_rows}")
    if condition == DEFAULT_CONDITION:
        for e in deleted.result.vectors:
            expected = _matching_rows(e.referenced_data_file)
            if expected != e.record_count:
                problems.append(
                    f"{e.referenced_data_file}: DV holds {e.record_count} rows, pyarrow "
                    f"finds {expected}"
                )
        if all("pyarrow" not in p for p in problems):
            n = len(deleted.result.vectors)
            _say(f"      pyarrow agrees on the deleted rows of all {n} data files")
    exact, differ = _single_machine_check(table, table.schema(), _local(stats.statistics_path))
    problems += [f"column {name}: the Spark sketch differs from the local one" for name in differ]
    if not differ:
        _say(
            f"      all {len(exact)} sketches equal single-machine ThetaSketch.from_values, "
            "byte for byte"
        )
    for p in problems:
        _say(f"      PROBLEM: {p}")
    return len(problems), exact


def _files(stats: Any, deleted: _Deleted) -> list[str]:
    """The statistics file and the committed deletion-vector file, as local paths."""
    dv = deleted.result.puffin_path
    return [_local(stats.statistics_path), *([_local(dv)] if dv else [])]


def _summary(table: Any, stats: Any, deleted: _Deleted, exact: dict[str, int]) -> None:
    from puffin.blobs.standard import NDV, parse_long_property

    planned = list(table.scan().plan_files())
    rows = sum(t.file.record_count for t in planned)
    _say("Summary")
    _say(
        f"  table        demo.events (format v{table.metadata.format_version}), {rows:,} rows "
        f"in {len(planned)} data files"
    )
    _say(
        f"  statistics   snapshot {stats.snapshot_id}, {stats.file_size_in_bytes:,} bytes, "
        f"footer {stats.file_footer_size_in_bytes:,} bytes, committed"
    )
    by_id = {f.field_id: f.name for f in table.schema().fields}
    _say(f"  {'column':<12} {'ndv (sketch)':>14} {'exact':>12} {'error':>8}")
    for b in stats.blob_metadata:
        name = by_id[b.fields[0]]
        ndv = parse_long_property(b.properties or {}, NDV) or 0  # we wrote it: never absent
        true = exact[name]
        error = (ndv - true) / true * 100 if true else 0.0
        _say(f"  {name:<12} {ndv:>14,} {true:>12,} {error:>7.2f}%")
    result = deleted.result
    _say(
        f"  deletes      {result.deleted_rows:,} rows in {len(result.vectors)} deletion "
        f"vectors, committed in snapshot {result.snapshot_id}"
    )
    _say(f"  rows before  {deleted.before}")
    _say(f"  rows after   {deleted.after}")
    _say(f"  appended     {_counts(table)}  (after the day's rows, step 5)")


def run(out: Path, rows: int, files: int, master: str, condition: str) -> int:
    """The demo; returns the exit status."""
    from puffin import spark as ps

    steps = 6
    try:
        java = ps.check_java() if not master.startswith("sc://") else None
    except ps.JavaNotFoundError as exc:
        print(f"puffin demo: {exc}", file=sys.stderr)
        return 1
    import puffin
    from puffin.cli import main as puffin_cli

    _say(f"puffin demo: Iceberg statistics and deletion vectors computed on Spark ({master}).")
    _say(f"Output folder: {out}  (Java {java or 'remote'}, puffin {puffin.__version__})")
    _say("(Spark's JVM prints a few start-up lines of its own on stderr.)")
    _say("")
    with _Step(1, steps, f"Creating v3 table demo.events: {rows:,} rows in {files} files"):
        catalog, table = _create_table(out / "warehouse", rows, files)
    with _Step(2, steps, f"Starting Spark {master} and computing NDV statistics"):
        spark = ps.local_session(master, app_name="puffin-demo", memory="2g")
        stats = ps.compute_table_statistics(spark, table)
        _say(f"      sketched {len(stats.blob_metadata)} columns; committed")
        _say(f"      -> {_local(stats.statistics_path)}")
    with _Step(3, steps, f"Deleting the rows where {condition} (deletion vectors)"):
        table = catalog.load_table("demo.events")
        deleted = _delete(spark, table, condition)
    with _Step(4, steps, "Verifying the table, both files, the vectors and the sketches"):
        table = catalog.load_table("demo.events")
        problems, exact = _verify(table, stats, deleted, condition)
    with _Step(5, steps, "Appending a day of rows to the v3 table, statistics following"):
        table, more = _append(table, max(1, rows // 10))
        problems += more
    _say(f"[6/{steps}] Showing both files with `puffin inspect`")
    for path in _files(stats, deleted):
        _say("")
        _say(f"$ puffin inspect {path}")
        puffin_cli(["inspect", "--color", "never", "--positions", "5", path])
    _say("")
    _summary(table, stats, deleted, exact)
    _say(f"  result       {'all checks passed' if not problems else f'{problems} problem(s)'}")
    return 0 if not problems else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point of ``python -m puffin.demo``."""
    parser = argparse.ArgumentParser(
        prog="python -m puffin.demo",
        description="Compute Iceberg statistics and deletion vectors on Spark, end to end.",
    )
    parser.add_argument("--output", default="demo-output", help="folder (default demo-output)")
    parser.add_argument("--rows", type=int, default=3_000_000, help="rows (default 3000000)")
    parser.add_argument("--files", type=int, default=6, help="data files (default 6)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument(
        "--where",
        default=DEFAULT_CONDITION,
        help=f"delete condition (default {DEFAULT_CONDITION!r})",
    )
    args = parser.parse_args(argv)
    if args.rows < 1 or args.files < 1:
        parser.error("--rows and --files must be positive")
    start = time.perf_counter()
    status = run(Path(args.output).resolve(), args.rows, args.files, args.master, args.where)
    _say(f"  total time   {time.perf_counter() - start:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
