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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.iceberg.metadata.manifests import delete_file_key

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
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
        after = planned(snapshot)
        if not _is_replace(snapshot):
            tasks = tuple(_tasks(before, after, ordinal, snapshot.snapshot_id))
            yield Commit(snapshot, parent, ordinal, tasks)
            ordinal += 1
        before, parent = after, snapshot


def _tasks(
    before: dict[str, PlannedFile], after: dict[str, PlannedFile], ordinal: int, snapshot_id: int
) -> Iterator[ChangeTask]:
    """The tasks of one commit, in path order: removed files, changed deletes, added files."""
    for path in sorted(before.keys() - after.keys()):
        yield ChangeTask(DELETED_DATA_FILE, ordinal, snapshot_id, before[path])
    for path in sorted(before.keys() & after.keys()):
        old, new = before[path], after[path]
        if delete_keys(old) != delete_keys(new):
            yield ChangeTask(DELETED_ROWS, ordinal, snapshot_id, old, new)
    for path in sorted(after.keys() - before.keys()):
        yield ChangeTask(ADDED_ROWS, ordinal, snapshot_id, after[path])


def delete_keys(planned: PlannedFile) -> frozenset[tuple[str, str | None]]:
    """What identifies the delete files applying to ``planned``."""
    files = (*planned.delete_files, *planned.equality_deletes)
    return frozenset(delete_file_key(d) for d in files)


def _is_replace(snapshot: Snapshot) -> bool:
    summary = snapshot.summary
    return summary is not None and str(summary.operation.value) == "replace"
