"""Table statistics: one Theta sketch per column in a Puffin file, registered in the table.

:func:`compute_table_statistics` does what Iceberg Java's ``ComputeTableStats`` Spark action
does, in one Python process: it plans the snapshot's live data files, reads the chosen
columns by field id, drops deleted rows, sketches every column with the Iceberg type's
single-value bytes, writes ``<snapshot-id>-<uuid>.stats`` beside the table metadata and
commits it as the snapshot's ``StatisticsFile``.  :func:`read_table_statistics` reads it
back.

Commits are optimistic, as in :mod:`puffin.iceberg.row_deletes` (whose conflict test,
backoff and cleanup they share): when another writer commits first, the table is refreshed
and the same file is registered again, a bounded number of times; a commit that finally
fails removes the file and raises :class:`~puffin.errors.CommitConflictError`.
"""

from __future__ import annotations

import functools
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from puffin._integration.locations import open_input, open_output
from puffin._integration.progress import Progress
from puffin.blobs import standard
from puffin.errors import SnapshotNotFoundError, StatisticsNotFoundError, UsageError
from puffin.iceberg._catalog import resolve_snapshot
from puffin.iceberg._columns import ScanColumn, by_current_names, resolve_columns
from puffin.iceberg._plan import plan_files
from puffin.iceberg._read import read_columns

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.statistics import StatisticsFile

    from puffin.blobs.theta import ThetaSketch
    from puffin.metadata import BlobMetadata

__all__ = [
    "THETA_BLOB_TYPE",
    "ColumnStatistics",
    "SkippedColumnWarning",
    "SnapshotNotFoundError",
    "StatisticsNotFoundError",
    "TableStatistics",
    "compute_table_statistics",
    "created_by",
    "read_table_statistics",
    "statistics_file_for",
    "table_statistics_for",
]

THETA_BLOB_TYPE = standard.APACHE_DATASKETCHES_THETA_V1
#: Commits tried before a statistics commit that keeps losing gives up.
MAX_ATTEMPTS = 8


class SkippedColumnWarning(UserWarning):
    """A column was left out of the statistics (its type has no sketch)."""


def created_by() -> str:
    """The ``created-by`` property of the files this library writes."""
    from puffin import __version__

    return f"iceberg-puffin {__version__}"


def sketchable(iceberg_type: Any) -> bool:
    """Whether a column of this Iceberg type gets a theta sketch (primitive types do)."""
    from puffin.blobs.single_value import parse_type

    try:
        parse_type(iceberg_type)
    except (TypeError, ValueError):
        return False
    return True


def _sketch_files(
    table: Table, planned: Sequence[Any], scan_columns: list[ScanColumn], lg_k: int, bar: Progress
) -> dict[Any, ThetaSketch]:
    """Each column's sketch: the NDV engine reads and hashes one planned file per part."""
    from puffin._integration.ndv import Batches, sketch_parts

    def part(f: Any) -> Batches:
        for b in read_columns(table, [f], scan_columns, prefetch=False, distinct_ok=True):
            yield b.rows, b.columns

    def on_batch(rows: int, index: int) -> None:
        bar.set_note(f"file {index + 1}/{len(planned)}")
        bar.update(rows)

    types = {c.field_id: c.iceberg_type for c in scan_columns}
    parts = [functools.partial(part, p) for p in planned]
    return sketch_parts(parts, types, lg_k=lg_k, on_batch=on_batch).sketches


def _new_stats_location(table: Table, snapshot_id: int) -> str:
    name = f"{snapshot_id}-{uuid.uuid4()}.stats"
    provider = table.location_provider()
    new_metadata_location = getattr(provider, "new_metadata_location", None)
    if new_metadata_location is not None:
        return str(new_metadata_location(name))
    return f"{table.metadata.location.rstrip('/')}/metadata/{name}"  # pragma: no cover


def compute_table_statistics(
    table: Table,
    *,
    columns: Sequence[str | int] | None = None,
    snapshot_id: int | None = None,
    lg_k: int = 12,
    commit: bool = True,
    progress: bool | None = None,
    max_attempts: int = MAX_ATTEMPTS,
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
            whose metadata pyiceberg 0.12 cannot write, through :mod:`puffin.iceberg._v3`.
        progress: draw a progress bar on stderr; default only when stderr is a terminal.
        max_attempts: commits tried, each on the refreshed table, before giving up.

    Returns:
        The ``StatisticsFile`` (also committed unless ``commit=False``).

    Raises:
        SnapshotNotFoundError: no such snapshot, or the table is empty.
        ColumnNotFoundError: a named column is not in the snapshot's schema.
        UnsupportedTableError: equality deletes, or data files that are not Parquet.
        CommitConflictError: concurrent commits won ``max_attempts`` times (the file
            written is removed).

    Example::

        stats = compute_table_statistics(catalog.load_table("db.events"))
        print(stats.statistics_path, [b.properties["ndv"] for b in stats.blob_metadata])
    """
    snapshot, scan_columns, planned = plan_statistics(table, snapshot_id, columns)
    total = sum(p.record_count for p in planned)
    with Progress(total, label="statistics ", enabled=progress) as bar:
        sketches = _sketch_files(table, planned, scan_columns, lg_k, bar)

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
    return snapshot, scan_columns, plan_files(table, snapshot)


def write_statistics_file(
    table: Table,
    sketches: Sequence[tuple[int, ThetaSketch]],
    *,
    snapshot_id: int,
    sequence_number: int,
    commit: bool = True,
    max_attempts: int = MAX_ATTEMPTS,
) -> StatisticsFile:
    """Write ``(field id, sketch)`` pairs as ``<snapshot-id>-<uuid>.stats`` and register it.

    The file goes under the table's metadata folder through the table's FileIO (or straight
    to disk for local tables), one zstd ``apache-datasketches-theta-v1`` blob per field with
    its ``ndv``.  With ``commit`` (the default) it replaces the snapshot's statistics file
    in the table metadata, retried up to ``max_attempts`` times on conflicts.  Shared by
    :func:`compute_table_statistics` and :func:`puffin.spark.compute_table_statistics`,
    which differ only in how they sketch.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    location = _new_stats_location(table, snapshot_id)
    file_size, footer_size, blobs = _write_stats_file(
        table, location, sketches, snapshot_id=snapshot_id, sequence_number=sequence_number
    )
    stats = statistics_file_for(
        location,
        snapshot_id=snapshot_id,
        file_size=file_size,
        footer_size=footer_size,
        blobs=blobs,
    )
    if commit:
        _commit_with_retries(table, stats, max_attempts)
    return stats


def _commit_with_retries(table: Table, stats: StatisticsFile, max_attempts: int) -> None:
    """Commit ``stats``; on a lost race refresh the table and commit the same file again.

    The file describes a snapshot, not the table's current state, so it is written once;
    only the commit is repeated.  When the commit finally fails the file is removed, unless
    the catalog cannot tell whether it went through (then the file may be registered).
    """
    from puffin.iceberg.row_deletes import _backoff, _conflict, _discard, _is_conflict

    for attempt in range(1, max_attempts + 1):
        try:
            _commit_statistics(table, stats)
            return
        except BaseException as exc:
            if _is_conflict(exc) and attempt < max_attempts:
                time.sleep(_backoff(attempt))
                table.refresh()
                continue
            _discard(table, [stats.statistics_path], exc)
            if not _is_conflict(exc):
                raise
            raise _conflict(exc, attempt) from exc


def _commit_statistics(table: Table, stats: StatisticsFile) -> None:
    """Set ``stats`` as its snapshot's statistics file; ``table`` is updated in place.

    pyiceberg 0.12 writes no v3 metadata, so v3 tables go through :mod:`._v3`'s commit
    (the same updates and requirement as ``table.update_statistics()``).
    """
    if table.metadata.format_version < 3:
        with table.update_statistics() as update:
            update.set_statistics(stats)
        return
    from pyiceberg.table.update import AssertTableUUID, SetStatisticsUpdate

    from puffin.iceberg import _v3

    committed = _v3.commit(
        table,
        [AssertTableUUID(uuid=table.metadata.table_uuid)],
        [SetStatisticsUpdate.model_validate({"statistics": stats})],
    )
    table.metadata = committed.metadata
    table.metadata_location = committed.metadata_location


def _write_stats_file(
    table: Table,
    location: str,
    sketches: Sequence[tuple[int, ThetaSketch]],
    *,
    snapshot_id: int,
    sequence_number: int,
) -> tuple[int, int, list[BlobMetadata]]:
    import puffin
    from puffin.blobs.theta import add_theta_blob

    with (
        open_output(location, table.io) as target,
        puffin.create(target, created_by=created_by()) as writer,
    ):
        for field_id, sketch in sketches:
            add_theta_blob(
                writer, sketch, field_id, snapshot_id=snapshot_id, sequence_number=sequence_number
            )
    assert writer.file_size is not None and writer.footer_size is not None
    return writer.file_size, writer.footer_size, writer.blobs


def statistics_file_for(
    location: str,
    *,
    snapshot_id: int,
    file_size: int,
    footer_size: int,
    blobs: Sequence[BlobMetadata],
) -> StatisticsFile:
    """The ``StatisticsFile`` that registers a written Puffin file in table metadata."""
    from pyiceberg.table.statistics import StatisticsFile

    # Validated through the JSON aliases, exactly as pyiceberg reads table metadata.
    return StatisticsFile.model_validate(
        {
            "snapshot-id": snapshot_id,
            "statistics-path": location,
            "file-size-in-bytes": file_size,
            "file-footer-size-in-bytes": footer_size,
            "blob-metadata": [
                {
                    "type": b.type,
                    "snapshot-id": b.snapshot_id,
                    "sequence-number": b.sequence_number,
                    "fields": list(b.fields),
                    **({"properties": dict(b.properties)} if b.properties else {}),
                }
                for b in blobs
            ],
        }
    )


def snapshot_schema(table: Table, schema_id: int | None) -> Any:
    """The schema a snapshot was written with (the current one if it is not recorded)."""
    if schema_id is not None:
        for schema in table.metadata.schemas:
            if schema.schema_id == schema_id:
                return schema
    return table.schema()


# --- reading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnStatistics:
    """One column's statistics: its ``ndv`` property and its sketch.

    ``name`` is the column's name in the table's current schema (``None`` if the column was
    dropped since); ``ndv`` is the blob's ``ndv`` property (``None`` if absent).
    """

    field_id: int
    name: str | None
    ndv: int | None
    sketch: ThetaSketch
    blob: BlobMetadata

    @property
    def estimate(self) -> float:
        """The sketch's distinct-count estimate (exact below the sketch's k entries)."""
        return float(self.sketch.estimate)


@dataclass(frozen=True)
class TableStatistics:
    """A snapshot's statistics file, read back: columns in file order."""

    snapshot_id: int
    statistics_file: StatisticsFile
    columns: list[ColumnStatistics] = field(default_factory=list)
    created_by: str | None = None

    def __getitem__(self, key: str | int) -> ColumnStatistics:
        """The column by name (current schema) or by field id."""
        for c in self.columns:
            if (isinstance(key, int) and c.field_id == key) or c.name == key:
                return c
        raise KeyError(key)

    def __iter__(self) -> Iterator[ColumnStatistics]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def ndv(self) -> dict[str, int | None]:
        """``{column name: ndv}`` (field id as text for dropped columns)."""
        return {c.name or str(c.field_id): c.ndv for c in self.columns}


def table_statistics_for(table: Table, snapshot_id: int | None = None) -> StatisticsFile:
    """The registered ``StatisticsFile`` of a snapshot (default: the current one)."""
    snapshot = resolve_snapshot(table, snapshot_id)
    for stats in table.metadata.statistics:
        if stats.snapshot_id == snapshot.snapshot_id:
            return stats
    have = sorted({s.snapshot_id for s in table.metadata.statistics})
    raise StatisticsNotFoundError(
        f"no statistics file for snapshot {snapshot.snapshot_id}"
        + (f" (statistics exist for snapshots {', '.join(map(str, have))})" if have else "")
        + "; compute them with compute_table_statistics or `puffin table stats compute`"
    )


def read_table_statistics(table: Table, *, snapshot_id: int | None = None) -> TableStatistics:
    """Read a snapshot's statistics file: per column, the ``ndv`` and the sketch.

    The file is opened with the metadata's ``file-footer-size-in-bytes``, so a footer size
    that does not match the file fails (as in Java).  Blobs of other types are ignored.
    """
    import puffin
    from puffin.blobs.theta import read_theta_blobs

    stats = table_statistics_for(table, snapshot_id)
    names = _current_names(table)
    with (
        open_input(table.io, stats.statistics_path) as f,
        puffin.open(f, footer_size=stats.file_footer_size_in_bytes) as reader,
    ):
        file_created_by = reader.properties.get("created-by")
        out = [
            ColumnStatistics(
                field_id=blob.field_id,
                name=names.get(blob.field_id),
                ndv=blob.ndv,
                sketch=blob.sketch,
                blob=blob.metadata,
            )
            for blob in read_theta_blobs(reader)
        ]
    return TableStatistics(
        snapshot_id=stats.snapshot_id,
        statistics_file=stats,
        columns=out,
        created_by=file_created_by,
    )


def _current_names(table: Table) -> dict[int, str]:
    from puffin.iceberg._columns import column_names

    return column_names(table.schema())
