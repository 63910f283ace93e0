"""Iceberg tables for the tests: SQLite catalogs, and snapshots with deletes.

pyiceberg 0.12 writes only copy-on-write deletes and cannot write v3 table metadata, so the
tables that other engines would produce (v2 with Parquet position deletes, v3 with deletion
vectors) are built here by hand: the delete file, a delete manifest and a manifest list
written with pyiceberg's own Avro manifest writers (at format version 3 for v3, through
small subclasses, since 0.12 has v3 manifest schemas but no v3 writer classes), and a new
metadata JSON that adds the snapshot, registered in the catalog under a new name.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog import Catalog
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestListWriterV2,
    ManifestWriter,
    ManifestWriterV2,
)
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from puffin.iceberg import (
    deletion_vector_data_files,
    local_catalog,
    write_table_deletion_vectors,
)
from puffin.iceberg._scan import local_path

__all__ = [
    "commit_deletion_vectors_v3",
    "commit_position_deletes_v2",
    "make_catalog",
]


def make_catalog(folder: Path) -> Catalog:
    """A fresh embedded SQLite catalog in ``folder`` with a ``db`` namespace."""
    catalog = local_catalog(folder)
    catalog.create_namespace_if_not_exists("db")
    return catalog


# --- manifest writers --------------------------------------------------------------------------


class _DeleteManifestWriterV2(ManifestWriterV2):
    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _DeleteManifestWriterV3(ManifestWriter):
    """A v3 delete manifest: the v3 ``data_file`` struct keeps the DV fields."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def version(self) -> Any:
        return 3

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}

    def new_writer(self) -> Any:
        from pyiceberg.avro.file import AvroOutputFile

        schema = self._with_partition(3)
        return AvroOutputFile[ManifestEntry](
            output_file=self._output_file,
            file_schema=schema,
            record_schema=schema,
            schema_name="manifest_entry",
            metadata=self._meta,
        )

    def prepare_entry(self, entry: ManifestEntry) -> ManifestEntry:
        return entry


class _ManifestListWriterV3(ManifestListWriterV2):
    def __init__(self, output_file: Any, snapshot_id: int, parent: int | None, seq: int) -> None:
        super().__init__(output_file, snapshot_id, parent, seq, "deflate")
        self._format_version = 3
        self._meta = {**self._meta, "format-version": "3"}

    def __enter__(self) -> _ManifestListWriterV3:
        from pyiceberg.avro.file import AvroOutputFile

        self._writer = AvroOutputFile[ManifestFile](
            output_file=self._output_file,
            record_schema=MANIFEST_LIST_FILE_SCHEMAS[2],
            file_schema=MANIFEST_LIST_FILE_SCHEMAS[3],
            schema_name="manifest_file",
            metadata=self._meta,
        )
        self._writer.__enter__()
        return self


# --- snapshots ---------------------------------------------------------------------------------


def _metadata_folder(table: Table) -> str:
    return f"{table.metadata.location.rstrip('/')}/metadata"


def _commit_delete_snapshot(
    catalog: Catalog,
    table: Table,
    delete_files: Sequence[DataFile],
    *,
    format_version: int,
    new_identifier: str,
) -> Table:
    """Add a snapshot with one delete manifest of ``delete_files``; register as a new table."""
    io: FileIO = table.io
    parent = table.current_snapshot()
    assert parent is not None
    snapshot_id = int(uuid.uuid4().int & ((1 << 62) - 1))
    sequence_number = int(getattr(table.metadata, "last_sequence_number", 0)) + 1
    folder = _metadata_folder(table)
    manifest_path = f"{folder}/{uuid.uuid4()}-m0.avro"
    writer_cls = _DeleteManifestWriterV3 if format_version == 3 else _DeleteManifestWriterV2
    with writer_cls(
        table.spec(), table.schema(), io.new_output(manifest_path), snapshot_id, "deflate"
    ) as writer:
        for d in delete_files:
            writer.add_entry(
                ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED,
                    snapshot_id=snapshot_id,
                    sequence_number=None,
                    file_sequence_number=None,
                    data_file=d,
                )
            )
    delete_manifest = writer.to_manifest_file()
    manifests = [*parent.manifests(io), delete_manifest]
    list_path = f"{folder}/snap-{snapshot_id}-1-{uuid.uuid4()}.avro"
    if format_version == 3:
        list_writer: Any = _ManifestListWriterV3(
            io.new_output(list_path), snapshot_id, parent.snapshot_id, sequence_number
        )
    else:
        list_writer = ManifestListWriterV2(
            io.new_output(list_path), snapshot_id, parent.snapshot_id, sequence_number, "deflate"
        )
    with list_writer as lw:
        lw.add_manifests(manifests)

    doc = json.loads(Path(local_path(table.metadata_location) or "").read_text())
    now = int(time.time() * 1000)
    deleted = sum(int(d.record_count) for d in delete_files)
    snapshot: dict[str, Any] = {
        "snapshot-id": snapshot_id,
        "parent-snapshot-id": parent.snapshot_id,
        "sequence-number": sequence_number,
        "timestamp-ms": now,
        "manifest-list": list_path,
        "summary": {
            "operation": "delete",
            "added-delete-files": str(len(delete_files)),
            "added-position-deletes": str(deleted),
        },
        "schema-id": table.schema().schema_id,
    }
    if format_version == 3:
        total = sum(
            int(e.data_file.record_count)
            for m in parent.manifests(io)
            for e in m.fetch_manifest_entry(io)
        )
        doc["next-row-id"] = total
        snapshot["first-row-id"] = total
        snapshot["added-rows"] = 0
    doc["format-version"] = format_version
    doc["snapshots"].append(snapshot)
    doc["current-snapshot-id"] = snapshot_id
    doc["last-sequence-number"] = sequence_number
    doc["last-updated-ms"] = now
    doc.setdefault("refs", {})["main"] = {"snapshot-id": snapshot_id, "type": "branch"}
    doc.setdefault("snapshot-log", []).append({"snapshot-id": snapshot_id, "timestamp-ms": now})
    doc.setdefault("metadata-log", []).append(
        {"metadata-file": table.metadata_location, "timestamp-ms": now}
    )
    metadata_path = f"{folder}/{uuid.uuid4()}.metadata.json"
    Path(local_path(metadata_path) or "").write_text(json.dumps(doc))
    return catalog.register_table(new_identifier, metadata_path)


def commit_position_deletes_v2(
    catalog: Catalog,
    table: Table,
    positions: Mapping[str, Sequence[int] | np.ndarray[Any, Any]],
    *,
    new_identifier: str,
) -> Table:
    """A v2 table like ``table`` plus one Parquet position-delete file (as Spark writes)."""
    rows = sorted((path, int(p)) for path, ps in positions.items() for p in ps)
    delete_schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
        ]
    )
    data = pa.table(
        {"file_path": [r[0] for r in rows], "pos": [r[1] for r in rows]}, schema=delete_schema
    )
    location = table.location_provider().new_data_location(f"{uuid.uuid4()}-deletes.parquet")
    path = local_path(location)
    assert path is not None
    pq.write_table(data, path)
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=len(rows),
        file_size_in_bytes=Path(path).stat().st_size,
    )
    delete_file.spec_id = table.spec().spec_id
    return _commit_delete_snapshot(
        catalog, table, [delete_file], format_version=2, new_identifier=new_identifier
    )


def commit_deletion_vectors_v3(
    catalog: Catalog,
    table: Table,
    positions: Mapping[str, Any],
    *,
    new_identifier: str,
    tamper: Any = None,
) -> tuple[Table, list[Any]]:
    """A v3 table like ``table`` whose new snapshot deletes ``positions`` with DVs.

    The Puffin file is written by :func:`write_table_deletion_vectors`; ``tamper(records)``
    may alter the manifest records before they are written (to build broken tables).
    Returns the new table and the entries.
    """
    entries = write_table_deletion_vectors(table, positions)
    records = deletion_vector_data_files(table, entries)
    if tamper is not None:
        tamper(records)
    return (
        _commit_delete_snapshot(
            catalog, table, records, format_version=3, new_identifier=new_identifier
        ),
        entries,
    )
