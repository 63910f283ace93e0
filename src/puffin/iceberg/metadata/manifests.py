"""Manifest lists and manifests read with the v3 schemas, and what identifies a delete file.

pyiceberg 0.12 reads manifests with the schema of the table's format version as it knows
it, which drops ``first_row_id`` from manifest lists and the deletion-vector fields
(``referenced_data_file``, ``content_offset``, ``content_size_in_bytes``) from data-file
records; these readers use the v3 schemas, which read every older file too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyiceberg.io import FileIO
    from pyiceberg.manifest import DataFile, ManifestEntry, ManifestFile
    from pyiceberg.table import Table

__all__ = [
    "CONTENT_OFFSET",
    "CONTENT_SIZE",
    "FIRST_ROW_ID",
    "REFERENCED_DATA_FILE",
    "DeleteFileKey",
    "delete_file_key",
    "read_manifest_entries",
    "read_manifest_list",
    "remove_files",
]

# Positions of the v3-only data_file fields in pyiceberg's v3 DataFile struct.
FIRST_ROW_ID, REFERENCED_DATA_FILE, CONTENT_OFFSET, CONTENT_SIZE = 16, 17, 18, 19

#: A delete file's path, and for a deletion vector the data file it references.
DeleteFileKey = tuple[str, "str | None"]


def read_manifest_list(io: FileIO, manifest_list: str) -> list[ManifestFile]:
    """A manifest list read with the v3 schema: ``first_row_id`` survives (pyiceberg drops it)."""
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.manifest import (
        MANIFEST_LIST_FILE_SCHEMAS,
        ManifestContent,
        ManifestFile,
        PartitionFieldSummary,
    )

    with AvroFile[ManifestFile](
        io.new_input(manifest_list),
        MANIFEST_LIST_FILE_SCHEMAS[3],
        read_types={-1: ManifestFile, 508: PartitionFieldSummary},
        read_enums={517: ManifestContent},
    ) as reader:
        return list(reader)


def read_manifest_entries(
    io: FileIO, manifest: ManifestFile, *, include_deleted: bool = False
) -> list[ManifestEntry]:
    """A manifest's live entries (``include_deleted``: all of them) as v3 records (keeps the
    DV fields), sequence numbers inherited."""
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.manifest import (
        MANIFEST_ENTRY_SCHEMAS,
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestEntry,
        ManifestEntryStatus,
        _inherit_from_manifest,
    )

    with AvroFile[ManifestEntry](
        io.new_input(manifest.manifest_path),
        MANIFEST_ENTRY_SCHEMAS[3],
        read_types={-1: ManifestEntry, 2: DataFile},
        read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
    ) as reader:
        return [
            _inherit_from_manifest(entry, manifest)
            for entry in reader
            if include_deleted or entry.status != ManifestEntryStatus.DELETED
        ]


def delete_file_key(data_file: DataFile) -> DeleteFileKey:
    """What identifies a delete file: its path, and for a DV the data file it references
    (one Puffin file holds many DVs).  A Parquet position-delete file is its path alone,
    even when it records ``referenced_data_file`` (Java does for file-scoped deletes)."""
    from pyiceberg.manifest import FileFormat

    if data_file.file_format != FileFormat.PUFFIN:
        return str(data_file.file_path), None
    referenced = data_file[REFERENCED_DATA_FILE] if len(data_file) > REFERENCED_DATA_FILE else None
    return str(data_file.file_path), None if referenced is None else str(referenced)


def remove_files(table: Table, locations: Iterable[str]) -> None:
    """Delete files written for a commit that did not happen (best effort: the commit's
    own error is what the caller reports).  Only files under the table's locations: what
    a writer wrote for the table lies there, and nothing else is ever deleted."""
    from puffin.iceberg.metadata.table_locations import TableLocations

    owned = TableLocations.of(table)
    for location in locations:
        if not owned.owns(location):
            continue
        try:
            table.io.delete(location)
        except OSError:  # pragma: no cover - the commit error is what matters
            pass
