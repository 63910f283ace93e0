"""What the commits on ``main`` since a snapshot changed: what a maintenance job that lost its
race checks before it commits its work on the table as it now is.

Iceberg Java's actions do not redo their work when another writer commits first: the commit
is retried on the refreshed table after checking that the concurrent commits do not touch
what it replaces (``MergingSnapshotProducer.validate*``, ``BaseRewriteManifests``). The
checks need only what those commits added and removed, which the manifests they wrote hold:
a commit's own manifests (``added_snapshot_id`` is its id) list its ``ADDED`` and
``DELETED`` entries, so reading them costs as much as the concurrent work, not the table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from puffin.iceberg.metadata.manifests import (
    REFERENCED_DATA_FILE,
    DeleteFileKey,
    delete_file_key,
    read_manifest_entries,
    read_manifest_list,
)

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["Since", "commits_since", "partition_of", "referenced_file"]


@dataclass
class Since:
    """The changes of the commits after a snapshot, on the line of ``main``'s ancestry."""

    #: the commits, oldest first
    snapshot_ids: list[int] = field(default_factory=list)
    #: data files they removed, by path
    removed_data: set[str] = field(default_factory=set)
    #: delete files they added (vectors, position and equality delete files)
    added_deletes: list[DataFile] = field(default_factory=list)
    #: delete files they removed, by :func:`~.manifests.delete_file_key`
    removed_deletes: set[DeleteFileKey] = field(default_factory=set)
    #: data files they added with a data sequence number older than their commit's (a
    #: compaction that keeps its starting sequence number, as Java's does)
    added_older_data: list[DataFile] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.snapshot_ids


def commits_since(table: Table, start: Snapshot | None) -> Since | None:
    """The changes of every commit on ``main`` after ``start`` (``None``: the table had no
    snapshot), or ``None`` when ``start`` is no longer an ancestor of ``main``'s head (a
    rollback, or main replaced): then nothing built on ``start`` may be committed."""
    from pyiceberg.manifest import DataFileContent, ManifestEntryStatus

    head = table.current_snapshot()
    line: list[Snapshot] = []
    while head is not None and (start is None or head.snapshot_id != start.snapshot_id):
        line.append(head)
        parent = head.parent_snapshot_id
        head = table.snapshot_by_id(parent) if parent is not None else None
    if start is not None and head is None:
        return None
    since = Since()
    for snapshot in reversed(line):
        since.snapshot_ids.append(snapshot.snapshot_id)
        for manifest in read_manifest_list(table.io, snapshot.manifest_list):
            if manifest.added_snapshot_id != snapshot.snapshot_id:
                continue  # carried from an older commit: nothing of this one's
            for entry in read_manifest_entries(table.io, manifest, include_deleted=True):
                df = entry.data_file
                is_data = df.content == DataFileContent.DATA
                if entry.status == ManifestEntryStatus.DELETED:
                    if is_data:
                        since.removed_data.add(str(df.file_path))
                    else:
                        since.removed_deletes.add(delete_file_key(df))
                elif entry.status == ManifestEntryStatus.ADDED:
                    if not is_data:
                        since.added_deletes.append(df)
                    elif (entry.sequence_number or 0) < (snapshot.sequence_number or 0):
                        since.added_older_data.append(df)
    return since


def referenced_file(delete_file: DataFile) -> str | None:
    """The one data file a delete file names (a vector always; a position-delete file when
    its writer recorded it), else ``None``."""
    if len(delete_file) <= REFERENCED_DATA_FILE:
        return None
    found = delete_file[REFERENCED_DATA_FILE]
    return None if found is None else str(found)


def partition_of(data_file: DataFile) -> tuple[int, tuple[Any, ...]]:
    """``(spec id, partition values)`` of a content file, comparable between files."""
    partition = data_file.partition
    values = tuple(partition[i] for i in range(len(partition))) if partition else ()
    return int(data_file.spec_id or 0), values


def partitions_of(files: Iterable[DataFile]) -> set[tuple[int, tuple[Any, ...]]]:
    """The partitions :func:`partition_of` gives ``files``."""
    return {partition_of(f) for f in files}
