"""Statistics files: write one, register it in the table, find it and read it back.

A statistics file is ``<snapshot-id>-<uuid>.stats`` beside the table metadata: one zstd
``apache-datasketches-theta-v1`` blob per column with its ``ndv``, registered as the
snapshot's ``StatisticsFile``.  Both statistics jobs (this process's and Spark's) write
through :func:`write_statistics_file`, which commits with the one commit loop
(:func:`puffin.iceberg.metadata.commits.with_retries`): the file is written once and only
its registration is retried after a lost race; a commit that finally fails removes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from puffin.blobs import standard
from puffin.errors import StatisticsNotFoundError
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.catalog.catalogs import resolve_snapshot
from puffin.iceberg.metadata import v3
from puffin.iceberg.metadata.commits import with_retries
from puffin.iceberg.scan.columns import column_names
from puffin.io.locations import open_input, open_output
from puffin.reader import open as open_puffin
from puffin.version import CREATED_BY
from puffin.writer import create

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.statistics import StatisticsFile

    from puffin.blobs.theta.files import ThetaSketch
    from puffin.metadata import BlobMetadata

__all__ = [
    "NDV_UPPER_BOUND",
    "THETA_BLOB_TYPE",
    "ColumnStatistics",
    "TableStatistics",
    "read_table_statistics",
    "register_statistics",
    "statistics_file_for",
    "table_statistics_for",
    "write_statistics_file",
]

THETA_BLOB_TYPE = standard.APACHE_DATASKETCHES_THETA_V1
#: Blob property (``"true"``) of a sketch carried over deletes by an incremental update: it
#: still counts values of deleted rows, so its ``ndv`` is an upper bound (as in Trino).
NDV_UPPER_BOUND = "iceberg-puffin.ndv-upper-bound"


def _new_stats_location(table: Table, snapshot_id: int) -> str:
    name = f"{snapshot_id}-{uuid.uuid4()}.stats"
    provider = table.location_provider()
    new_metadata_location = getattr(provider, "new_metadata_location", None)
    if new_metadata_location is not None:
        return str(new_metadata_location(name))
    return f"{table.metadata.location.rstrip('/')}/metadata/{name}"  # pragma: no cover


def write_statistics_file(
    table: Table,
    sketches: Sequence[tuple[int, ThetaSketch]],
    *,
    snapshot_id: int,
    sequence_number: int,
    commit: bool = True,
    max_attempts: int | None = None,
    blob_properties: Mapping[str, str] | None = None,
) -> StatisticsFile:
    """Write ``(field id, sketch)`` pairs as ``<snapshot-id>-<uuid>.stats`` and register it.

    The file goes under the table's metadata folder through the table's FileIO (or straight
    to disk for local tables), one zstd ``apache-datasketches-theta-v1`` blob per field with
    its ``ndv``.  With ``commit`` (the default) it replaces the snapshot's statistics file
    in the table metadata, retried on conflicts as the table's ``commit.retry.*``
    properties say (``max_attempts``: that many attempts instead).  Shared by
    :func:`compute_table_statistics` and :func:`puffin.spark.compute_table_statistics`,
    which differ only in how they sketch.  ``blob_properties`` are added to every blob
    after ``ndv`` (:data:`NDV_UPPER_BOUND` for statistics carried over deletes).
    """
    if max_attempts is not None and max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    location = _new_stats_location(table, snapshot_id)
    file_size, footer_size, blobs = _write_stats_file(
        table, location, sketches, snapshot_id=snapshot_id, sequence_number=sequence_number,
        properties=blob_properties,
    )
    stats = statistics_file_for(
        location,
        snapshot_id=snapshot_id,
        file_size=file_size,
        footer_size=footer_size,
        blobs=blobs,
    )
    if commit:
        _commit(table, stats, max_attempts)
    return stats


def register_statistics(table: Table, stats: StatisticsFile) -> None:
    """One commit setting ``stats`` as its snapshot's statistics file (``table`` is updated
    in place), through :func:`puffin.iceberg.metadata.v3.commit` with the updates and
    requirement of ``table.update_statistics()`` (which pyiceberg 0.12 refuses for v3), so
    a failed commit removes its metadata file on every format version."""
    from pyiceberg.table.update import AssertTableUUID, SetStatisticsUpdate

    committed = v3.commit(
        table,
        [AssertTableUUID(uuid=table.metadata.table_uuid)],
        [SetStatisticsUpdate.model_validate({"statistics": stats})],
    )
    table.metadata = committed.metadata
    table.metadata_location = committed.metadata_location


def _commit(table: Table, stats: StatisticsFile, max_attempts: int | None) -> None:
    """Register ``stats``; after a lost race the table is refreshed and the same file is
    registered again: it describes a snapshot, not the table's current state, so it is
    written once, and removed only when the commit finally fails."""

    def attempt(current: Table, number: int, written: list[str]) -> None:
        register_statistics(current, stats)

    with_retries(table, attempt, max_attempts, kept=[stats.statistics_path])


def _write_stats_file(
    table: Table,
    location: str,
    sketches: Sequence[tuple[int, ThetaSketch]],
    *,
    snapshot_id: int,
    sequence_number: int,
    properties: Mapping[str, str] | None = None,
) -> tuple[int, int, list[BlobMetadata]]:
    from puffin.blobs.theta.files import add_theta_blob

    with (
        open_output(location, table.io) as target,
        create(target, created_by=CREATED_BY) as writer,
    ):
        for field_id, sketch in sketches:
            add_theta_blob(
                writer, sketch, field_id, snapshot_id=snapshot_id,
                sequence_number=sequence_number, properties=properties,
            )
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

    @property
    def upper_bound_only(self) -> bool:
        """Whether the sketch counts rows deleted since it was made (the blob's
        :data:`NDV_UPPER_BOUND` property): its ``ndv`` is then at most that many."""
        return (self.blob.properties or {}).get(NDV_UPPER_BOUND) == "true"

    @property
    def mode(self) -> str:
        """``"exact"`` (every distinct value kept), ``"estimate"`` (a theta sample), or
        ``"upper bound"`` (either, counting rows deleted since: never exact)."""
        if self.upper_bound_only:
            return "upper bound"
        return "exact" if float(self.sketch.theta) >= 1.0 else "estimate"


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
    current = table.current_snapshot()
    which = [] if current == snapshot else ["--snapshot-id", str(snapshot.snapshot_id)]
    raise StatisticsNotFoundError(
        f"no statistics file for snapshot {snapshot.snapshot_id}"
        + (f" (statistics exist for snapshots {', '.join(map(str, have))})" if have else "")
        + "; compute them with compute_table_statistics or "
        + table_command(table, "stats compute", *which)
    )


def read_table_statistics(table: Table, *, snapshot_id: int | None = None) -> TableStatistics:
    """Read a snapshot's statistics file: per column, the ``ndv`` and the sketch.

    The file is opened with the metadata's ``file-footer-size-in-bytes``, so a footer size
    that does not match the file fails (as in Java).  Blobs of other types are ignored.
    """
    from puffin.blobs.theta.files import read_theta_blobs

    stats = table_statistics_for(table, snapshot_id)
    names = column_names(table.schema())
    with (
        open_input(table.io, stats.statistics_path) as f,
        open_puffin(f, footer_size=stats.file_footer_size_in_bytes) as reader,
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
