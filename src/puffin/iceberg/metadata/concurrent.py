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

    def copy(self) -> Since:
        return Since(
            list(self.snapshot_ids), set(self.removed_data), list(self.added_deletes),
            set(self.removed_deletes), list(self.added_older_data),
        )  # fmt: skip


def commits_since(table: Table, start: Snapshot | None, known: Since | None = None) -> Since | None:
    """The changes of every commit on ``main`` after ``start`` (``None``: the table had no
    snapshot), or ``None`` when ``start`` is no longer an ancestor of ``main``'s head (a
    rollback, or main replaced): then nothing built on ``start`` may be committed.

    ``known``: what an earlier call returned for the same ``start``; only the commits after
    those are read (a job that loses race after race reads each commit once)."""
    seen = set(known.snapshot_ids) if known is not None else set()
    head = table.current_snapshot()
    line: list[Snapshot] = []
    while head is not None and (start is None or head.snapshot_id != start.snapshot_id):
        if head.snapshot_id in seen:
            break
        line.append(head)
        parent = head.parent_snapshot_id
        head = table.snapshot_by_id(parent) if parent is not None else None
    if head is None and start is not None:
        return None
    if head is not None and known is not None and known.snapshot_ids:
        if head.snapshot_id != known.snapshot_ids[-1]:
            return commits_since(table, start)  # main was reset meanwhile: read it all
    since = known.copy() if known is not None else Since()
    for snapshot in reversed(line):
        _add_commit(table, snapshot, since)
    return since


def _add_commit(table: Table, snapshot: Snapshot, since: Since) -> None:
    """What ``snapshot`` itself added and removed, from the manifests it wrote."""
    from pyiceberg.manifest import DataFileContent, ManifestEntryStatus

    since.snapshot_ids.append(snapshot.snapshot_id)
    for manifest in read_manifest_list(table.io, snapshot.manifest_list):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue  # carried from an older commit: nothing of this one's
        entries = read_manifest_entries(table.io, manifest, include_deleted=True, cached=True)
        for entry in entries:
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
