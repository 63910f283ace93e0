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
from pyiceberg.catalog import Catalog
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
    ManifestWriterV2,
)
from pyiceberg.table import Table

from puffin.conformance.tables import write_position_delete_file
from puffin.iceberg import (
    deletion_vector_data_files,
    local_catalog,
    write_table_deletion_vectors,
)
from puffin.iceberg.metadata.manifest_writers import DataManifestWriter, DeleteManifestWriter
from puffin.iceberg.metadata.v3 import ManifestListWriterV3
from puffin.io.locations import local_path

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


class _ManifestListWriterV3NoLineage(ManifestListWriterV2):
    """A v3 manifest list that leaves ``first_row_id`` null (breaks the row-lineage rule)."""

    def __init__(self, output_file: Any, snapshot_id: int, parent: int | None, seq: int) -> None:
        super().__init__(output_file, snapshot_id, parent, seq, "deflate")
        self._format_version = 3
        self._meta = {**self._meta, "format-version": "3"}

    def __enter__(self) -> _ManifestListWriterV3NoLineage:
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


def _write_manifests(
    table: Table,
    delete_files: Sequence[DataFile],
    snapshot_id: int,
    manifest_cls: type[ManifestWriterV2],
    sequence_number: int | None = None,
) -> ManifestFile:
    """One manifest of ``delete_files``, added by ``snapshot_id`` (with ``sequence_number``
    written out instead of inherited, to build a table that breaks the rules)."""
    path = f"{_metadata_folder(table)}/{uuid.uuid4()}-m0.avro"
    out = table.io.new_output(path)
    with manifest_cls(table.spec(), table.schema(), out, snapshot_id, "deflate") as writer:
        for d in delete_files:
            writer.add_entry(
                ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED,
                    snapshot_id=snapshot_id,
                    sequence_number=sequence_number,
                    file_sequence_number=sequence_number,
                    data_file=d,
                )
            )
    return writer.to_manifest_file()


def _write_list(
    table: Table, manifests: Sequence[ManifestFile], ids: tuple[int, int, int], lineage: Any
) -> tuple[str, int]:
    """The manifest list; returns its path and the rows it assigned row ids to.

    ``lineage``: ``None`` for a v2 list, ``False`` for a v3 list without row ids, else the
    first row id to assign.
    """
    snapshot_id, parent_id, sequence_number = ids
    path = f"{_metadata_folder(table)}/snap-{snapshot_id}-1-{uuid.uuid4()}.avro"
    out = table.io.new_output(path)
    writer: Any
    if lineage is None:
        writer = ManifestListWriterV2(out, snapshot_id, parent_id, sequence_number, "deflate")
    elif lineage is False:
        writer = _ManifestListWriterV3NoLineage(out, snapshot_id, parent_id, sequence_number)
    else:
        writer = ManifestListWriterV3(out, snapshot_id, parent_id, sequence_number, lineage)
    with writer as w:
        w.add_manifests(manifests)
    assigned = w.next_row_id - lineage if isinstance(w, ManifestListWriterV3) else 0
    return path, assigned


def _commit_delete_snapshot(
    catalog: Catalog,
    table: Table,
    delete_files: Sequence[DataFile],
    *,
    format_version: int,
    new_identifier: str,
    broken: str | None = None,
) -> Table:
    """Add a snapshot with one delete manifest of ``delete_files``; register as a new table.

    v3 snapshots follow the row-lineage rules (``first_row_id`` assigned from
    ``next-row-id``) unless ``broken`` is ``"lineage"`` (null ``first_row_id``, as pre-v3
    writers leave it), ``"data-manifest"`` (the PUFFIN entries in a data manifest),
    ``"v2"`` (v3 manifests, DVs included, under v2 table metadata) or ``"stale-sequence"``
    (the entries' sequence number 0, below every data file's).
    """
    parent = table.current_snapshot()
    assert parent is not None
    doc = json.loads(Path(local_path(table.metadata_location) or "").read_text())
    snapshot_id = int(uuid.uuid4().int & ((1 << 62) - 1))
    sequence_number = int(getattr(table.metadata, "last_sequence_number", 0)) + 1
    v3 = format_version == 3
    manifest_cls: type[ManifestWriterV2] = _DeleteManifestWriterV2
    if v3:
        manifest_cls = DeleteManifestWriter
    if v3 and broken == "data-manifest":
        manifest_cls = DataManifestWriter  # deletes in a data manifest
    stale = 0 if broken == "stale-sequence" else None
    manifest = _write_manifests(table, delete_files, snapshot_id, manifest_cls, stale)
    first = int(doc.get("next-row-id", 0))
    lineage: Any = None if not v3 else (False if broken == "lineage" else first)
    ids = (snapshot_id, parent.snapshot_id, sequence_number)
    list_path, added = _write_list(table, [*parent.manifests(table.io), manifest], ids, lineage)
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
    if broken == "v2":
        format_version = 2
    elif v3:
        doc["next-row-id"] = first + added
        snapshot["first-row-id"] = first
        snapshot["added-rows"] = added
    return _register(catalog, table, doc, snapshot, new_identifier, format_version)


def _register(
    catalog: Catalog,
    table: Table,
    doc: dict[str, Any],
    snapshot: dict[str, Any],
    new_identifier: str,
    format_version: int,
) -> Table:
    """``doc`` plus ``snapshot`` as the current one, written and registered as a new table."""
    now = snapshot["timestamp-ms"]
    snapshot_id = snapshot["snapshot-id"]
    doc["format-version"] = format_version
    doc["snapshots"].append(snapshot)
    doc["current-snapshot-id"] = snapshot_id
    doc["last-sequence-number"] = snapshot["sequence-number"]
    doc["last-updated-ms"] = now
    doc.setdefault("refs", {})["main"] = {"snapshot-id": snapshot_id, "type": "branch"}
    doc.setdefault("snapshot-log", []).append({"snapshot-id": snapshot_id, "timestamp-ms": now})
    doc.setdefault("metadata-log", []).append(
        {"metadata-file": table.metadata_location, "timestamp-ms": now}
    )
    metadata_path = f"{_metadata_folder(table)}/{uuid.uuid4()}.metadata.json"
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
    delete_file = write_position_delete_file(table, positions)
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
    broken: str | None = None,
) -> tuple[Table, list[Any]]:
    """A v3 table like ``table`` whose new snapshot deletes ``positions`` with DVs.

    The Puffin file is written by :func:`write_table_deletion_vectors`; ``tamper(records)``
    may alter the manifest records before they are written and ``broken`` break a table
    rule (see :func:`_commit_delete_snapshot`), to build broken tables.  Returns the new
    table and the entries.
    """
    entries = write_table_deletion_vectors(table, positions)
    records = deletion_vector_data_files(table, entries)
    if tamper is not None:
        tamper(records)
    return (
        _commit_delete_snapshot(
            catalog,
            table,
            records,
            format_version=3,
            new_identifier=new_identifier,
            broken=broken,
        ),
        entries,
    )


def copy_warehouse(source: Path, target: Path, identifier: str = "db.t") -> Table:
    """A copy of an embedded catalog's warehouse whose catalog names the copy's metadata
    files (their contents still name the original's data, which the copy reads): a fresh
    start for a job that commits, from the same table state each time."""
    import shutil
    import sqlite3

    from puffin.iceberg import local_catalog

    shutil.copytree(source, target)
    with sqlite3.connect(target / "catalog.db") as db:
        for column in ("metadata_location", "previous_metadata_location"):
            db.execute(
                f"UPDATE iceberg_tables SET {column} = replace({column}, ?, ?)",
                (str(source), str(target)),
            )
    return local_catalog(target).load_table(identifier)


def equality_delete_file(
    table: Table,
    path: Path | str,
    keys: Any,
    equality_ids: Sequence[int],
    partition: Any = None,
) -> DataFile:
    """An equality delete file of ``keys`` (an Arrow table whose fields carry their Parquet
    field ids) written to ``path`` (a local path, or a URL written through the table's
    FileIO), as the ``DataFile`` a delete manifest lists, in ``partition`` (a value tuple;
    none: unpartitioned) of the table's current spec."""
    import io

    import pyarrow.parquet as pq
    from pyiceberg.typedef import Record

    if isinstance(path, Path):
        pq.write_table(keys, path)
        location, size = f"file://{path}", path.stat().st_size
    else:
        buffer = io.BytesIO()
        pq.write_table(keys, buffer)
        with table.io.new_output(path).create() as out:
            out.write(buffer.getvalue())
        location, size = path, len(buffer.getvalue())
    made = DataFile.from_args(
        _table_format_version=table.format_version,
        content=DataFileContent.EQUALITY_DELETES,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=Record() if partition is None else Record(*partition),
        record_count=keys.num_rows,
        file_size_in_bytes=size,
        equality_ids=list(equality_ids),
    )
    made.spec_id = table.spec().spec_id
    return made
