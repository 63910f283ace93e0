"""``make demo``: the Spark pipeline end to end on a sample Iceberg table.

Run with ``python -m puffin.demo``.  It

1. creates a sample table (9 column types, a few million rows) in an embedded SQLite catalog
   under ``./demo-output/warehouse`` (re-created on every run),
2. starts a local Spark session and computes the table's NDV statistics on it: one Iceberg
   theta sketch per column in a Puffin file, committed to the table,
3. writes deletion vectors for the rows matching a condition (one Puffin file),
4. verifies the table and both files, checks the vectors against pyarrow and the sketches
   against the single-machine builder (byte for byte),
5. prints ``puffin inspect`` of both files and a short summary.

It needs Java 17+ for Spark; without it, it says so in one line and exits with status 1.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
    from puffin.iceberg._scan import local_path

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

    from puffin.blobs.theta import ThetaSketch, read_theta_blobs

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


def run(out: Path, rows: int, files: int, master: str, condition: str) -> int:
    """The demo; returns the exit status."""
    from puffin import spark as ps

    steps = 5
    try:
        java = ps.check_java() if not master.startswith("sc://") else None
    except ps.JavaNotFoundError as exc:
        print(f"puffin demo: {exc}", file=sys.stderr)
        return 1

    import puffin
    from puffin.cli import main as puffin_cli
    from puffin.iceberg import create_sample_table, local_catalog, verify_table

    warehouse = out / "warehouse"
    _say(f"puffin demo: Iceberg statistics and deletion vectors computed on Spark ({master}).")
    _say(f"Output folder: {out}  (Java {java or 'remote'}, puffin {puffin.__version__})")
    _say("(Spark's JVM prints a few start-up lines of its own on stderr.)")
    _say("")

    with _Step(1, steps, f"Creating table demo.events: {rows:,} rows in {files} Parquet files"):
        if warehouse.exists() and (warehouse / "catalog.db").exists():
            shutil.rmtree(warehouse)  # our own folder from a previous run
        catalog = local_catalog(warehouse)
        table = create_sample_table(catalog, "demo.events", rows=rows, files=files, replace=True)
        schema = table.schema()
        _say("      columns: " + ", ".join(f"{f.name} {f.field_type}" for f in schema.fields))

    with _Step(2, steps, f"Starting Spark {master} and computing NDV statistics"):
        spark = ps.local_session(master, app_name="puffin-demo", memory="2g")
        start = time.perf_counter()
        stats = ps.compute_table_statistics(spark, table)
        _say(
            f"      sketched {len(stats.blob_metadata)} columns on Spark in "
            f"{time.perf_counter() - start:.1f} s"
        )
        _say(f"      committed {_local(stats.statistics_path)}")

    with _Step(3, steps, f"Writing deletion vectors for rows where {condition}"):
        table = catalog.load_table("demo.events")
        entries = ps.deletion_vectors_for(spark, table, condition)
        deleted = sum(e.record_count for e in entries)
        dv_path = _local(entries[0].path) if entries else None
        _say(f"      {deleted:,} rows in {len(entries)} data files -> {dv_path}")

    problems = 0
    with _Step(4, steps, "Verifying the table, both files, the vectors and the sketches"):
        table = catalog.load_table("demo.events")
        report = verify_table(table)
        registered = [s for s in table.metadata.statistics if s.snapshot_id == stats.snapshot_id]
        if registered != [stats]:
            problems += 1
            _say("      PROBLEM: the statistics file is not registered in the table metadata")
        for p in report.problems:
            problems += 1
            _say(f"      PROBLEM: {p}")
        _say(
            f"      verify_table: {report.statistics_files} statistics file(s), "
            f"{'ok' if report.ok else 'problems found'}"
        )
        files_to_check = [_local(stats.statistics_path), *([dv_path] if dv_path else [])]
        if puffin_cli(["verify", "-q", *files_to_check]) != 0:
            problems += 1
            _say("      PROBLEM: puffin verify rejected a file")
        else:
            _say("      puffin verify: both files valid")
        if condition == DEFAULT_CONDITION:
            for e in entries:
                expected = _matching_rows(e.referenced_data_file)
                if expected != e.record_count:
                    problems += 1
                    _say(
                        f"      PROBLEM: {e.referenced_data_file}: DV holds {e.record_count} "
                        f"rows, pyarrow finds {expected}"
                    )
            _say(
                f"      pyarrow agrees on the deleted rows of all {len(entries)} data files"
                if not problems
                else "      pyarrow disagrees (see above)"
            )
        exact, differ = _single_machine_check(table, schema, _local(stats.statistics_path))
        for name in differ:
            problems += 1
            _say(f"      PROBLEM: column {name}: the Spark sketch differs from the local one")
        if not differ:
            _say(
                f"      all {len(exact)} sketches equal single-machine ThetaSketch.from_values, "
                "byte for byte"
            )

    _say(f"[5/{steps}] Showing both files with `puffin inspect`")
    for path in files_to_check:
        _say("")
        _say(f"$ puffin inspect {path}")
        puffin_cli(["inspect", "--color", "never", "--positions", "5", path])

    _say("")
    _say("Summary")
    _say(
        f"  table        demo.events, {rows:,} rows, {files} data files, snapshot "
        f"{stats.snapshot_id}"
    )
    _say(
        f"  statistics   {stats.file_size_in_bytes:,} bytes, footer "
        f"{stats.file_footer_size_in_bytes:,} bytes, committed"
    )
    by_id = {f.field_id: f.name for f in schema.fields}
    _say(f"  {'column':<12} {'ndv (sketch)':>14} {'exact':>12} {'error':>8}")
    for b in stats.blob_metadata:
        name = by_id[b.fields[0]]
        ndv = int((b.properties or {})["ndv"])
        true = exact[name]
        error = (ndv - true) / true * 100 if true else 0.0
        _say(f"  {name:<12} {ndv:>14,} {true:>12,} {error:>7.2f}%")
    if entries:
        _say(
            f"  deletes      {deleted:,} rows in {len(entries)} deletion vectors, "
            f"{entries[0].file_size_in_bytes:,} bytes"
        )
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
