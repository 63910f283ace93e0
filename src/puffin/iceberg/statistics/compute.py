"""Table statistics computed in one Python process: a theta sketch per column.

:func:`compute_table_statistics` does what Iceberg Java's ``ComputeTableStats`` Spark action
does: it plans the snapshot's live data files, reads the chosen columns by field id, drops
deleted rows, sketches every column with the Iceberg type's single-value bytes (the NDV
engine, :mod:`puffin.ndv.engine`) and hands the sketches to
:func:`puffin.iceberg.statistics.files.write_statistics_file`, which writes and commits them.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.catalog.catalogs import resolve_snapshot
from puffin.iceberg.metadata.commits import require_writable_location
from puffin.iceberg.scan.columns import (
    ScanColumn,
    by_current_names,
    resolve_columns,
    snapshot_schema,
)
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.scan.rows import RowReader
from puffin.iceberg.statistics.files import write_statistics_file
from puffin.io.stores import says_store_failures
from puffin.support.progress import Progress

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.table.statistics import StatisticsFile

    from puffin.blobs.theta.files import ThetaSketch

__all__ = [
    "SkippedColumnWarning",
    "compute_table_statistics",
    "plan_statistics",
    "sketch_files",
    "sketchable",
]


class SkippedColumnWarning(UserWarning):
    """A column was left out of the statistics (its type has no sketch)."""


def sketchable(iceberg_type: Any) -> bool:
    """Whether a column of this Iceberg type gets a theta sketch (primitive types do)."""
    from puffin.blobs.single_value import parse_type

    try:
        parse_type(iceberg_type)
    except (TypeError, ValueError):
        return False
    return True


def sketch_files(
    table: Table,
    snapshot: Snapshot,
    planned: Sequence[Any],
    scan_columns: list[ScanColumn],
    lg_k: int,
    bar: Progress,
) -> dict[Any, ThetaSketch]:
    """Each column's sketch: the NDV engine reads and hashes one planned file per part."""
    from pyiceberg.expressions import AlwaysTrue

    from puffin.iceberg.scan.delete_filter import DeleteFilter
    from puffin.ndv.engine import Batches, sketch_parts

    deletes = DeleteFilter(table, snapshot)  # each delete file read once, for every part
    # One reader for every part: it converts each distinct file schema once.
    reader = RowReader(table, table.schema(), AlwaysTrue(), True, deletes, [], {})

    def part(f: Any) -> Batches:
        for b in reader.file_columns(f, scan_columns, distinct_ok=True):
            yield b.rows, b.columns

    def on_batch(rows: int, index: int) -> None:
        bar.set_note(f"file {index + 1}/{len(planned)}")
        bar.update(rows)

    types = {c.field_id: c.iceberg_type for c in scan_columns}
    parts = [functools.partial(part, p) for p in planned]
    return sketch_parts(parts, types, lg_k=lg_k, on_batch=on_batch).sketches


@says_store_failures("compute_table_statistics")
def compute_table_statistics(
    table: Table,
    *,
    columns: Sequence[str | int] | None = None,
    snapshot_id: int | None = None,
    lg_k: int = 12,
    commit: bool = True,
    progress: bool | None = None,
    max_attempts: int | None = None,
) -> StatisticsFile:
    """Compute NDV sketches for a snapshot, write them to a Puffin file and commit it.

    Args:
        table: a pyiceberg table (v1, v2 or v3).
        columns: names (dotted for struct fields) or field ids; default every top-level
            primitive column.  Columns whose type has no sketch are skipped with a
            :class:`SkippedColumnWarning`.
        snapshot_id: the snapshot to describe; default the current one.
        lg_k: log2 of the sketch's nominal entries (12, Java's default: 4096).
        commit: register the file with ``table.update_statistics().set_statistics(...)``
            (replacing the snapshot's previous statistics file, as Java does); v3 tables,
            whose metadata pyiceberg 0.12 cannot write, through :mod:`puffin.iceberg.metadata.v3`.
        progress: draw a progress bar on stderr; default only when stderr is a terminal.
        max_attempts: commits tried, each on the refreshed table, before giving up
            (default: as the table's ``commit.retry.*`` properties say).

    Returns:
        The ``StatisticsFile`` (also committed unless ``commit=False``).

    Raises:
        SnapshotNotFoundError: no such snapshot, or the table is empty.
        ColumnNotFoundError: a named column is not in the snapshot's schema.
        UnsupportedTableError: data files that are not Parquet.
        CommitConflictError: concurrent commits won every attempt (the file
            written is removed).

    Example::

        stats = compute_table_statistics(catalog.load_table("db.events"))
        print(stats.statistics_path, [b.properties["ndv"] for b in stats.blob_metadata])
    """
    require_writable_location(table, catalog=commit)  # before the scan, not after it
    snapshot, scan_columns, planned = plan_statistics(table, snapshot_id, columns)
    total = sum(p.record_count for p in planned)
    with Progress(total, label="statistics ", enabled=progress) as bar:
        sketches = sketch_files(table, snapshot, planned, scan_columns, lg_k, bar)

    sequence_number = snapshot.sequence_number if snapshot.sequence_number is not None else 0
    return write_statistics_file(
        table,
        [(c.field_id, sketches[c.field_id]) for c in scan_columns],
        snapshot_id=snapshot.snapshot_id,
        sequence_number=sequence_number,
        commit=commit,
        max_attempts=max_attempts,
    )


def plan_statistics(
    table: Table, snapshot_id: int | None, columns: Sequence[str | int] | None
) -> tuple[Any, list[ScanColumn], list[Any]]:
    """What a statistics job reads: the snapshot, its sketchable columns and its data files.

    Columns without a sketch are skipped with a :class:`SkippedColumnWarning` pointing at
    the caller of the public job (both jobs call this directly).
    """
    snapshot = resolve_snapshot(table, snapshot_id)
    schema = snapshot_schema(table, snapshot.schema_id)
    if columns is not None:
        columns = by_current_names(table.schema(), schema, columns)
    scan_columns, notes = resolve_columns(schema, columns, supported=sketchable)
    for note in notes:
        warnings.warn(note, SkippedColumnWarning, stacklevel=3)
    if not scan_columns:
        raise UsageError("no column to compute statistics for: " + "; ".join(notes))
    return snapshot, scan_columns, plan_files(table, snapshot, equality=True)
