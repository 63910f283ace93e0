"""Snapshots written here: their manifests, manifest list and summary.

:func:`write_delete_snapshot` writes what a ``delete``, ``append``, ``overwrite`` or
``replace`` snapshot needs, at the table's format version (2 or 3): new manifests for the
added delete files (deletion vectors, or position-delete files on v2) and data files, the
manifests that held superseded delete files or removed data files rewritten with those
entries ``DELETED`` (the files kept in them keep their row ids), every other manifest carried
as it is, and a manifest list (on v3 the one of :mod:`puffin.iceberg.metadata.v3`, which
gives data manifests their ``first_row_id``; on v2 pyiceberg's).  Nothing is committed here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.errors import UnsupportedTableError
from puffin.iceberg.metadata import v3
from puffin.iceberg.metadata.commits import snapshot_updates
from puffin.iceberg.metadata.manifest_merge import MergePolicy, merge_manifests
from puffin.iceberg.metadata.manifests import (
    CONTENT_SIZE,
    DeleteFileKey,
    read_manifest_list,
    remove_files,
)
from puffin.iceberg.metadata.snapshot_manifests import (
    Gone,
    ManifestReuse,
    data_manifests,
    rewritten_manifests,
)
from puffin.iceberg.metadata.v3 import ManifestListWriterV3

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile, ManifestFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

#: Lays a snapshot's data manifests out anew: (table, manifests, snapshot id, written) ->
#: manifests; every file it writes is listed in ``written``.
Regroup = Callable[["Table", list["ManifestFile"], int, list[str]], list["ManifestFile"]]

__all__ = ["DeleteSnapshot", "commit_snapshot", "snapshot_summary", "write_delete_snapshot"]


def snapshot_summary(
    table: Table,
    parent: Snapshot | None,
    added: Sequence[DataFile],
    removed: Sequence[DataFile],
    *,
    added_data: Sequence[DataFile] = (),
    removed_data: Sequence[DataFile] = (),
    operation: str = "delete",
) -> dict[str, str]:
    """Snapshot summary by pyiceberg's collector; a DV counts its blob, as in Java.

    ``added``/``removed`` are delete files, ``added_data``/``removed_data`` data files."""
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
    for df in removed_data:
        collector.remove_file(df, table.schema())
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


def write_delete_snapshot(
    table: Table,
    added: Sequence[DataFile],
    removed: set[DeleteFileKey],
    *,
    operation: str = "delete",
    added_data: Sequence[DataFile] = (),
    removed_data: Set[str] = frozenset(),
    regroup: Regroup | None = None,
    reuse: ManifestReuse | None = None,
) -> DeleteSnapshot:
    """Manifests, manifest list and ``Snapshot`` for a change of delete files (and, for an
    append, overwrite or compaction, new data files; for a compaction, data files removed).

    ``added`` are v3 delete-file records (DVs); ``removed`` the :func:`delete_file_key` of
    live delete files to drop (superseded DVs, merged position deletes); ``added_data`` new
    data files, written to one new v3 data manifest whose ``first_row_id`` the manifest
    list assigns; ``removed_data`` paths of live data files to drop (their manifests are
    rewritten, every other entry keeping its ``first_row_id``); ``regroup`` lays the data
    manifests out instead of merging (``rewrite_manifests``); with ``reuse``, under its
    snapshot id, the manifests written for it before are used again
    (:mod:`.snapshot_manifests`).  Other data manifests are carried unchanged and get a
    ``first_row_id`` if they have none; the snapshot's ``first-row-id`` is the table's
    ``next-row-id`` (0 for a table being upgraded), ``added-rows`` the ids it reserves.
    """
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary

    parent = table.current_snapshot()
    metadata = table.metadata
    _require_v2(metadata.format_version)
    snapshot_id = metadata.new_snapshot_id() if reuse is None else reuse.snapshot_id
    sequence_number = int(getattr(metadata, "last_sequence_number", 0)) + 1
    first_row_id = int(getattr(metadata, "next_row_id", None) or 0)
    written: list[str] = []
    list_path = _metadata_file(table, f"snap-{snapshot_id}-1-{uuid.uuid4()}.avro")
    ids = (snapshot_id, parent.snapshot_id if parent else None, sequence_number)
    try:
        gone, next_row_id = _write_manifests(
            table,
            (added, removed, added_data, removed_data),
            ids,
            first_row_id,
            list_path,
            written,
            regroup,
            reuse,
        )
    except BaseException:
        remove_files(table, written)
        raise
    props = snapshot_summary(table, parent, added, gone.deletes, added_data=added_data,
                             removed_data=gone.data, operation=operation)  # fmt: skip
    fields = {
        "snapshot-id": snapshot_id,
        "parent-snapshot-id": ids[1],
        "sequence-number": sequence_number,
        "manifest-list": list_path,
        "summary": Summary(Operation(operation), **props),
        "schema-id": metadata.current_schema_id,
    }
    if metadata.format_version >= 3:
        fields.update({"first-row-id": first_row_id, "added-rows": next_row_id - first_row_id})
    return DeleteSnapshot(Snapshot.model_validate(fields), tuple(written))


def _require_v2(version: int) -> None:
    if version < 2:
        raise UnsupportedTableError(
            f"puffin writes snapshots of Iceberg v2 and v3 tables; this table is format "
            f"version {version}: upgrade it (puffin.iceberg.upgrade_to_v3)"
        )


def _write_manifests(
    table: Table,
    change: tuple[Sequence[DataFile], Set[DeleteFileKey], Sequence[DataFile], Set[str]],
    ids: tuple[int, int | None, int],
    first_row_id: int,
    list_path: str,
    written: list[str],
    regroup: Regroup | None = None,
    reuse: ManifestReuse | None = None,
) -> tuple[Gone, int]:
    """The snapshot's manifests, merged as the table's properties say (Java's defaults:
    :mod:`.manifest_merge`) or data manifests regrouped by ``regroup``, and manifest list
    (``change``: delete files added and removed, data files added and removed); what was
    removed, and the next row id."""
    from pyiceberg.manifest import ManifestContent

    added, removed, added_data, removed_data = change
    parent = table.current_snapshot()
    carried, new_data, new_deletes, gone = rewritten_manifests(
        table,
        read_manifest_list(table.io, parent.manifest_list) if parent else [],
        (added, removed, removed_data),
        ids[0],
        written,
        reuse,
    )
    if added_data:
        new_data[:0] = data_manifests(table, added_data, ids[0], written, reuse)
    policy = MergePolicy.of(table)
    old_data = [m for m in carried if m.content == ManifestContent.DATA]
    old_deletes = [m for m in carried if m.content != ManifestContent.DATA]
    data = [*new_data, *old_data]
    manifests = [
        *(
            regroup(table, data, ids[0], written)
            if regroup
            else merge_manifests(table, data, ids[0], written, policy)
        ),
        *merge_manifests(table, [*new_deletes, *old_deletes], ids[0], written, policy),
    ]
    # A manifest of this commit that a merge took in is referenced by nothing: it goes now
    # (as Java's cleanUncommitted does), not as an orphan later.
    listed = {m.manifest_path for m in manifests}
    merged_away = [p for p in written if p not in listed]
    remove_files(table, merged_away)
    written[:] = [p for p in written if p in listed]
    written.append(list_path)
    output = table.io.new_output(list_path)
    if table.metadata.format_version < 3:
        from pyiceberg.manifest import ManifestListWriterV2

        with ManifestListWriterV2(output, *ids, "deflate") as v2_writer:
            v2_writer.add_manifests(manifests)
        return gone, first_row_id
    with ManifestListWriterV3(output, *ids, first_row_id) as writer:
        writer.add_manifests(manifests)
    return gone, writer.next_row_id


def commit_snapshot(
    table: Table,
    written: list[str],
    *,
    deletes: Sequence[DataFile] = (),
    superseded: Set[DeleteFileKey] = frozenset(),
    added_data: Sequence[DataFile] = (),
    removed_data: Set[str] = frozenset(),
    operation: str = "delete",
    first_updates: Sequence[Any] = (),
    regroup: Regroup | None = None,
    reuse: ManifestReuse | None = None,
) -> tuple[Table, Snapshot]:
    """Write a snapshot (:func:`write_delete_snapshot`) and commit it as ``main``; the
    table as committed and the snapshot.  The files written go into ``written`` as they are
    written (the commit loop removes them if the commit fails); ``first_updates`` go before
    the snapshot's (an upgrade, a property)."""
    staged = write_delete_snapshot(
        _as_upgraded(table) if _upgrades(first_updates) else table,
        deletes,
        set(superseded),
        operation=operation,
        added_data=added_data,
        removed_data=removed_data,
        regroup=regroup,
        reuse=reuse,
    )
    written.extend(staged.written)
    requirements, updates = snapshot_updates(table, staged.snapshot)
    return v3.commit(table, requirements, [*first_updates, *updates]), staged.snapshot


def _upgrades(updates: Sequence[Any]) -> bool:
    """Whether ``updates`` set format version 3 (the snapshot is then written at v3)."""
    from pyiceberg.table.update import UpgradeFormatVersionUpdate

    return any(
        isinstance(u, UpgradeFormatVersionUpdate) and u.format_version >= 3 for u in updates
    )


def _as_upgraded(table: Table) -> Table:
    """``table`` as its upgrade to v3 will leave it (``next-row-id`` 0), to write for."""
    from pyiceberg.table import Table as PyTable

    from puffin.iceberg.metadata.sql_commit import upgraded_to_v3

    metadata = upgraded_to_v3(table.metadata)
    return PyTable(table.name(), metadata, table.metadata_location, table.io, table.catalog)
