"""When a table needs maintenance: the warnings ``verify_table`` adds for a backlog of expired
snapshots, position deletes spread over many files (deletion vectors over many Puffin files, or
a v2 table's position-delete files, more than one per data file), equality delete files and data
files with many deleted rows, each naming the command that helps. Read from metadata alone
(manifests, no data or delete file is opened)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from puffin.errors import TableMetadataError
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.metadata.delete_files import DeletionVectorRef, deletion_vector_refs
from puffin.iceberg.metadata.retention import (
    MAX_AGE_PROPERTY,
    MIN_KEEP_PROPERTY,
    cutoff_ms_of,
    expired_snapshots,
)
from puffin.iceberg.scan.delete_file_index import lenient_vectors, scoped_data_file
from puffin.iceberg.scan.plan import plan_files

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyiceberg.table import Table

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["SPREAD_FILES", "maintenance_hints"]

#: Live position deletes in at least this many files: every reader opens each.
SPREAD_FILES = 10
#: A data file with at least this fraction of its rows deleted (Java's compaction default).
DELETED_FRACTION = 0.3


def maintenance_hints(
    table: Table,
    planned: Sequence[PlannedFile] | None = None,
    refs: Sequence[DeletionVectorRef] | None = None,
) -> list[tuple[str, str, str]]:
    """Warnings ``(kind, location, message)``: ``expire-backlog``, ``spread-deletes``,
    ``equality-deletes`` and ``deleted-rows`` (see module) for the current snapshot; ``planned`` and
    ``refs`` (its deletion vectors) save reading them again."""
    found: list[tuple[str, str, str]] = []
    metadata = table.metadata
    location = metadata.location
    keep = int(metadata.properties.get(MIN_KEEP_PROPERTY, 1))
    cutoff = cutoff_ms_of(None, metadata.properties.get(MAX_AGE_PROPERTY))
    expired = expired_snapshots(metadata, cutoff, keep)
    if expired:
        found.append(
            (
                "expire-backlog",
                location,
                f"{len(expired)} snapshot(s) are past the table's retention and keep their files: "
                f"{table_command(table, 'expire')} (expire_snapshots) removes them",
            )
        )
    snapshot = table.current_snapshot()
    if snapshot is None:
        return found
    if metadata.format_version >= 3:
        try:
            refs = deletion_vector_refs(table, snapshot) if refs is None else refs
        except TableMetadataError:
            return found  # a broken delete manifest: verify_table reports it as a problem
    if planned is None:
        with lenient_vectors():  # verify_table reports a broken vector rule as a problem
            planned = plan_files(table, snapshot, equality=True)
    deleted, spread = _deleted_rows(planned, refs or ())
    if spread:
        found.append(("spread-deletes", location, spread))
    equality = {str(d.file_path) for p in planned for d in p.equality_deletes}
    if equality:
        found.append(
            (
                "equality-deletes",
                location,
                f"{len(equality)} equality delete file(s) apply to live data files: every "
                "reader matches their keys, and some engines refuse the table; "
                f"{table_command(table, 'convert-equality-deletes')} (convert_equality_deletes) "
                "turns them into position deletes",
            )
        )
    heavy = [
        p
        for p in planned
        if p.record_count and deleted.get(p.path, 0) >= DELETED_FRACTION * p.record_count
    ]
    if heavy:
        found.append(
            (
                "deleted-rows",
                location,
                f"{len(heavy)} data file(s) have {DELETED_FRACTION:.0%} or more of their rows "
                "deleted, which readers still decode: "
                f"{table_command(table, 'compact')} (rewrite_data_files) writes them again "
                "without those rows",
            )
        )
    return found


def _deleted_rows(
    planned: Sequence[PlannedFile], refs: Sequence[DeletionVectorRef]
) -> tuple[dict[str, int], str | None]:
    """Rows deleted per data file as the delete files' metadata says (a vector's
    cardinality; a Parquet file scoped to one data file, its record count), and the
    ``spread-deletes`` message when the live position deletes sit in many files."""
    from pyiceberg.manifest import FileFormat

    deleted = {r.referenced_data_file: r.record_count for r in refs}
    puffins = {r.path for r in refs}
    parquet = {
        str(d.file_path): d
        for p in planned
        for d in p.delete_files
        if d.file_format == FileFormat.PARQUET
    }
    for d in parquet.values():
        scoped = scoped_data_file(d)
        if scoped is not None:
            deleted[scoped] = deleted.get(scoped, 0) + int(d.record_count)
    targets = sum(1 for p in planned if p.delete_files)
    files = len(puffins) + len(parquet)
    if files < SPREAD_FILES or (not puffins and files <= targets):
        return deleted, None  # few, or (v2) one Parquet file per data file at most
    where = f"{len(puffins)} Puffin files" if not parquet else f"{files} delete files"
    return deleted, (
        f"the live position deletes sit in {where}, each opened by every reader: `puffin "
        "table rewrite-deletes` (rewrite_position_delete_files) gathers them"
    )
