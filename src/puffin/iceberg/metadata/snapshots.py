"""Snapshots that change only delete files: their manifests, manifest list and summary.

:func:`write_delete_snapshot` writes what a ``delete`` (or an upgrade's ``replace``) snapshot
needs, with the v3 writers of :mod:`puffin.iceberg.metadata.v3`: new delete manifests for the
added deletion vectors, the manifests that held superseded delete files rewritten with those
entries ``DELETED``, every other manifest carried as it is, and a v3 manifest list that gives
data manifests their ``first_row_id``.  Nothing is committed here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.iceberg.metadata import v3
from puffin.iceberg.metadata.commits import snapshot_updates
from puffin.iceberg.metadata.manifests import (
    CONTENT_SIZE,
    DeleteFileKey,
    delete_file_key,
    read_manifest_entries,
    read_manifest_list,
    remove_files,
)
from puffin.iceberg.metadata.v3 import (
    DataManifestWriterV3,
    DeleteManifestWriterV3,
    ManifestListWriterV3,
    to_v3_data_file,
)

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile, ManifestEntry, ManifestFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["DeleteSnapshot", "commit_snapshot", "snapshot_summary", "write_delete_snapshot"]


def snapshot_summary(
    table: Table,
    parent: Snapshot | None,
    added: Sequence[DataFile],
    removed: Sequence[DataFile],
    *,
    added_data: Sequence[DataFile] = (),
    operation: str = "delete",
) -> dict[str, str]:
    """Snapshot summary by pyiceberg's collector; a DV counts its blob, as in Java.

    ``added``/``removed`` are delete files, ``added_data`` data files."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.table.snapshots import (
        Operation,
        SnapshotSummaryCollector,
        Summary,
        update_snapshot_summaries,
    )

    def view(df: DataFile) -> DataFile:
        dv = df.file_format == FileFormat.PUFFIN and len(df) > CONTENT_SIZE
        return DataFile.from_args(
            content=DataFileContent.POSITION_DELETES,
            file_path=df.file_path,
            file_format=df.file_format,
            partition=df.partition,
            record_count=df.record_count,
            file_size_in_bytes=df[CONTENT_SIZE] if dv else df.file_size_in_bytes,
        )

    collector = SnapshotSummaryCollector()
    for df in added_data:
        collector.add_file(df, table.schema())
    for df in added:
        collector.add_file(view(df), table.schema())
    for df in removed:
        collector.remove_file(view(df), table.schema())
    props = collector.build()
    for side, files in (("added", added), ("removed", removed)):
        # Java counts a DV as a delete file and a DV, not as a position-delete file.
        dvs = sum(1 for df in files if df.file_format == FileFormat.PUFFIN)
        files_key = f"{side}-position-delete-files"
        left = int(props.pop(files_key, 0)) - dvs
        if left:
            props[files_key] = str(left)
        if dvs:
            props[f"{side}-dvs"] = str(dvs)
    previous = dict(parent.summary.additional_properties) if parent and parent.summary else None
    # pyiceberg totals appends, overwrites and deletes; a replace changes totals as a delete.
    kind = Operation.DELETE if operation == "replace" else Operation(operation)
    summary = update_snapshot_summaries(Summary(kind, **props), previous)
    return dict(summary.additional_properties)


@dataclass(frozen=True)
class DeleteSnapshot:
    """A written but uncommitted snapshot, and every file written for it (to clean up)."""

    snapshot: Snapshot
    written: tuple[str, ...]


def _metadata_file(table: Table, name: str) -> str:
    return str(table.location_provider().new_metadata_location(name))


def _entry(status: Any, snapshot_id: int, entry: ManifestEntry | None, data_file: Any) -> Any:
    from pyiceberg.manifest import ManifestEntry

    # The spec: "Snapshot id where the file was added, or deleted if status is 2": callers
    # pass the entry's own id for EXISTING entries and the new snapshot's otherwise.
    return ManifestEntry.from_args(
        status=status,
        snapshot_id=snapshot_id,
        sequence_number=None if entry is None else entry.sequence_number,
        file_sequence_number=None if entry is None else entry.file_sequence_number,
        data_file=data_file,
    )


def _delete_manifests(
    table: Table,
    manifests: Sequence[ManifestFile],
    added: Sequence[DataFile],
    removed: set[DeleteFileKey],
    snapshot_id: int,
    written: list[str],
) -> tuple[list[ManifestFile], list[ManifestFile], list[DataFile]]:
    """Manifests carried as they are, new v3 delete manifests (one per spec), files removed."""
    from pyiceberg.manifest import ManifestContent
    from pyiceberg.manifest import ManifestEntryStatus as S

    carried: list[ManifestFile] = []
    gone_files: list[DataFile] = []
    groups: dict[int, list[Any]] = {}
    for df in added:
        groups.setdefault(df.spec_id, []).append(_entry(S.ADDED, snapshot_id, None, df))
    for manifest in manifests:
        if manifest.content != ManifestContent.DELETES:
            carried.append(manifest)
            continue
        entries = read_manifest_entries(table.io, manifest)
        if not any(delete_file_key(e.data_file) in removed for e in entries):
            carried.append(manifest)
            continue
        for e in entries:
            gone = delete_file_key(e.data_file) in removed
            if gone:
                gone_files.append(e.data_file)
            status = S.DELETED if gone else S.EXISTING
            who = snapshot_id if gone else e.snapshot_id
            groups.setdefault(manifest.partition_spec_id, []).append(
                _entry(status, who or snapshot_id, e, e.data_file)
            )
    new: list[ManifestFile] = []
    for spec_id, entries in sorted(groups.items()):
        path = _metadata_file(table, f"{uuid.uuid4()}-m{len(new)}.avro")
        written.append(path)  # before writing: a partial manifest is cleaned up too
        spec = table.specs()[spec_id]
        out = table.io.new_output(path)
        with DeleteManifestWriterV3(spec, table.schema(), out, snapshot_id, "deflate") as w:
            for e in entries:
                w.add_entry(e)
        new.append(w.to_manifest_file())
    return carried, new, gone_files


def write_delete_snapshot(
    table: Table,
    added: Sequence[DataFile],
    removed: set[DeleteFileKey],
    *,
    operation: str = "delete",
    added_data: Sequence[DataFile] = (),
) -> DeleteSnapshot:
    """Manifests, manifest list and ``Snapshot`` for a change of delete files (and, for an
    append or overwrite, new data files).

    ``added`` are v3 delete-file records (DVs); ``removed`` the :func:`delete_file_key` of
    live delete files to drop (superseded DVs, merged position deletes); ``added_data`` new
    data files, written to one new v3 data manifest whose ``first_row_id`` the manifest
    list assigns.  Data manifests are carried unchanged and get a ``first_row_id`` if they
    have none; the snapshot's ``first-row-id`` is the table's ``next-row-id`` (0 for a
    table being upgraded) and ``added-rows`` the row ids it reserves.
    """
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary

    parent = table.current_snapshot()
    metadata = table.metadata
    snapshot_id = metadata.new_snapshot_id()
    sequence_number = int(getattr(metadata, "last_sequence_number", 0)) + 1
    first_row_id = int(getattr(metadata, "next_row_id", None) or 0)
    manifests = read_manifest_list(table.io, parent.manifest_list) if parent else []
    written: list[str] = []
    list_path = _metadata_file(table, f"snap-{snapshot_id}-1-{uuid.uuid4()}.avro")
    try:
        carried, new, gone = _delete_manifests(
            table, manifests, added, removed, snapshot_id, written
        )
        if added_data:
            new.insert(0, _data_manifest(table, added_data, snapshot_id, written))
        written.append(list_path)
        with ManifestListWriterV3(
            table.io.new_output(list_path), snapshot_id,
            parent.snapshot_id if parent else None, sequence_number, first_row_id,
        ) as writer:
            writer.add_manifests([*new[:1], *carried, *new[1:]] if added_data else [*carried, *new])
    except BaseException:
        remove_files(table, written)
        raise
    props = snapshot_summary(
        table, parent, added, gone, added_data=added_data, operation=operation
    )
    snapshot = Snapshot.model_validate(
        {
            "snapshot-id": snapshot_id,
            "parent-snapshot-id": parent.snapshot_id if parent else None,
            "sequence-number": sequence_number,
            "manifest-list": list_path,
            "summary": Summary(Operation(operation), **props),
            "schema-id": metadata.current_schema_id,
            "first-row-id": first_row_id,
            "added-rows": writer.next_row_id - first_row_id,
        }
    )
    return DeleteSnapshot(snapshot, tuple(written))


def commit_snapshot(
    table: Table,
    written: list[str],
    *,
    deletes: Sequence[DataFile] = (),
    superseded: Set[DeleteFileKey] = frozenset(),
    added_data: Sequence[DataFile] = (),
    operation: str = "delete",
    first_updates: Sequence[Any] = (),
) -> tuple[Table, Snapshot]:
    """Write a snapshot (:func:`write_delete_snapshot`) and commit it as ``main``; the
    table as committed and the snapshot.  The files written go into ``written`` as they are
    written (the commit loop removes them if the commit fails); ``first_updates`` go before
    the snapshot's (an upgrade, a property)."""
    staged = write_delete_snapshot(
        table, deletes, set(superseded), operation=operation, added_data=added_data
    )
    written.extend(staged.written)
    requirements, updates = snapshot_updates(table, staged.snapshot)
    return v3.commit(table, requirements, [*first_updates, *updates]), staged.snapshot


def _data_manifest(
    table: Table, added: Sequence[DataFile], snapshot_id: int, written: list[str]
) -> ManifestFile:
    """One v3 data manifest of the added data files (ADDED entries, of the default spec)."""
    from pyiceberg.manifest import ManifestEntryStatus

    path = _metadata_file(table, f"{uuid.uuid4()}-m-data.avro")
    written.append(path)
    spec = table.spec()
    out = table.io.new_output(path)
    with DataManifestWriterV3(spec, table.schema(), out, snapshot_id, "deflate") as writer:
        for df in added:
            record = to_v3_data_file(df, spec.spec_id)
            writer.add_entry(_entry(ManifestEntryStatus.ADDED, snapshot_id, None, record))
    return writer.to_manifest_file()

