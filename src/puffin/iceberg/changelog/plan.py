"""A changelog's plan: for each commit in the range, the data files whose rows it inserted or
deleted, found by comparing the plan of the commit's snapshot with its parent's.

Each snapshot is planned as a scan plans it (pyiceberg's pruning by the row filter, the
deletes of each data file found by :class:`~puffin.iceberg.scan.delete_file_index.DeleteFileIndex`,
the manifests read once per process), so a data file is compared by the delete files that
apply to it, never opened. Three kinds of task come out, as Iceberg Java names them:

* ``added-rows``: a data file the commit added; its rows live in the commit's snapshot are
  ``INSERT`` (a delete of the same commit already removed the others);
* ``deleted-data-file``: a data file the commit removed; its rows live in the parent are
  ``DELETE``;
* ``deleted-rows``: a data file of both snapshots whose deletes changed; the rows deleted in
  the commit's snapshot and live in the parent are ``DELETE`` (read: only those positions).

A ``replace`` commit (compaction, a DV rewrite, a manifest rewrite, an equality delete
conversion) changes no row: it yields no task, and does not count as an ordinal, as in Java.

A commit that only adds and replaces deletion vectors (most v3 deletes) is not planned: its
plan is its parent's with the vectors its own manifests add (:func:`vector_commit`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.iceberg.metadata.manifests import delete_file_key

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = [
    "ADDED_ROWS",
    "DELETED_DATA_FILE",
    "DELETED_ROWS",
    "ChangeTask",
    "Commit",
    "delete_keys",
    "plan_commits",
    "vector_commit",
]

ADDED_ROWS = "added-rows"
DELETED_DATA_FILE = "deleted-data-file"
DELETED_ROWS = "deleted-rows"


@dataclass(frozen=True)
class ChangeTask:
    """Rows of one data file that one commit changed.

    ``file`` is the data file as planned in the snapshot its rows are read from: the
    commit's for ``added-rows``, the parent's otherwise; ``after`` (``deleted-rows``) is the
    file as planned in the commit's snapshot, with the deletes that now apply."""

    kind: str
    change_ordinal: int
    commit_snapshot_id: int
    file: PlannedFile
    after: PlannedFile | None = None

    @property
    def path(self) -> str:
        return self.file.path


@dataclass(frozen=True)
class Commit:
    """One commit of the range that changed rows: its snapshot, the snapshot before it (None
    before the table's first), its ordinal and its tasks."""

    snapshot: Snapshot
    parent: Snapshot | None
    ordinal: int
    tasks: tuple[ChangeTask, ...]


def plan_commits(
    table: Table,
    start: Snapshot | None,
    snapshots: list[Snapshot],
    row_filter: BooleanExpression | None,
) -> Iterator[Commit]:
    """The commits of ``snapshots`` (the range after ``start``, oldest first) that are not
    ``replace`` commits, with their tasks, each snapshot planned once."""
    from puffin.iceberg.scan.plan import plan_files

    def planned(snapshot: Snapshot | None) -> dict[str, PlannedFile]:
        if snapshot is None:
            return {}
        files = plan_files(table, snapshot, row_filter, equality=True)
        return {p.path: p for p in files}

    before, parent = planned(start), start
    ordinal = 0
    for snapshot in snapshots:
        derived = None if parent is None else vector_commit(table, snapshot, before)
        after, changed = derived if derived is not None else (planned(snapshot), None)
        if not _is_replace(snapshot):
            tasks = tuple(_tasks(before, after, ordinal, snapshot.snapshot_id, changed))
            yield Commit(snapshot, parent, ordinal, tasks)
            ordinal += 1
        before, parent = after, snapshot


def vector_commit(
    table: Table, snapshot: Snapshot, before: dict[str, PlannedFile]
) -> tuple[dict[str, PlannedFile], set[str]] | None:
    """The plan of ``snapshot`` made from its parent's (``before``), and the files whose
    deletes changed, when its commit only added and removed deletion vectors (a v3
    ``delete_rows``, a DV rewrite): the files its new vectors name get them, every other
    file is as before. Only the commit's own manifests are read, so a range of such commits
    costs what they changed, not the table. None for any other commit (data files added or
    removed, other delete files, a file left with two vectors): the caller plans it in
    full, with every check of the planner."""
    from dataclasses import replace

    from pyiceberg.manifest import FileFormat, ManifestContent, ManifestEntryStatus

    from puffin.iceberg.metadata.manifests import read_manifest_entries

    added: dict[str, DataFile] = {}
    removed: set[tuple[str, str | None]] = set()
    for manifest in snapshot.manifests(table.io):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        for entry in read_manifest_entries(table.io, manifest, include_deleted=True, cached=True):
            if entry.status == ManifestEntryStatus.EXISTING:
                continue
            df = entry.data_file
            if manifest.content != ManifestContent.DELETES or df.file_format != FileFormat.PUFFIN:
                return None
            key = delete_file_key(df)
            if entry.status == ManifestEntryStatus.DELETED:
                removed.add(key)
            elif key[1] is None or key[1] in added:
                return None
            else:
                added[key[1]] = df
    after = dict(before)
    named = {k[1] for k in removed if k[1] is not None}
    changed = (named | added.keys()) & before.keys()
    for path in changed:
        old = before[path]
        kept = [d for d in old.delete_files if delete_file_key(d) not in removed]
        if path in added:
            if any(d.file_format == FileFormat.PUFFIN for d in kept):
                return None  # two vectors for one file: the planner's check says what
            kept.append(added[path])
        after[path] = replace(old, delete_files=tuple(kept))
    return after, changed


def _tasks(
    before: dict[str, PlannedFile],
    after: dict[str, PlannedFile],
    ordinal: int,
    snapshot_id: int,
    changed: set[str] | None = None,
) -> Iterator[ChangeTask]:
    """The tasks of one commit, in path order: removed files, changed deletes, added files.
    ``changed``: the only files whose deletes may differ, none added or removed (else every
    file is compared)."""
    if changed is None:
        for path in sorted(before.keys() - after.keys()):
            yield ChangeTask(DELETED_DATA_FILE, ordinal, snapshot_id, before[path])
    for path in sorted(before.keys() & after.keys() if changed is None else changed):
        old, new = before[path], after[path]
        if delete_keys(old) != delete_keys(new):
            yield ChangeTask(DELETED_ROWS, ordinal, snapshot_id, old, new)
    if changed is None:
        for path in sorted(after.keys() - before.keys()):
            yield ChangeTask(ADDED_ROWS, ordinal, snapshot_id, after[path])


def delete_keys(planned: PlannedFile) -> frozenset[tuple[str, str | None]]:
    """What identifies the delete files applying to ``planned``."""
    files = (*planned.delete_files, *planned.equality_deletes)
    return frozenset(delete_file_key(d) for d in files)


def _is_replace(snapshot: Snapshot) -> bool:
    summary = snapshot.summary
    return summary is not None and str(summary.operation.value) == "replace"
