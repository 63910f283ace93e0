"""Expiring snapshots: :func:`expire_snapshots`.

As Iceberg Java's ``ExpireSnapshots``: snapshots older than a cutoff are removed from the
metadata, except the last ``retain_last`` ancestors of every branch and the snapshot each
branch and tag points at; then every file that only removed snapshots reached is deleted
(data files, deletion-vector and position-delete files, manifests, manifest lists,
statistics and partition-statistics files). The commit comes first and the files after, so
a crash between leaves orphans (``remove_orphan_files`` finds them), never a table that
references a deleted file. Unlike Java, a file is deleted only when it lies under the
table's locations (:mod:`puffin.iceberg.maintenance.guard`); others are reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.errors import InterruptedAfterCommit, UsageError
from puffin.iceberg.maintenance.guard import Deletions, TableLocations
from puffin.iceberg.metadata.commits import main_branch_requirements, with_retries
from puffin.iceberg.metadata.retention import (
    MAX_AGE_PROPERTY,
    MIN_KEEP_PROPERTY,
    OlderThan,
    cutoff_ms_of,
    expired_snapshots,
)
from puffin.iceberg.metadata.v3 import commit
from puffin.iceberg.metadata.versions import newer_metadata
from puffin.iceberg.verify.orphans import kind_of, reachable_files
from puffin.io.locations import location_key

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadata

__all__ = ["Deleter", "ExpireResult", "delete_here", "expire_snapshots"]

MAX_ATTEMPTS = 4

#: What deletes the files only expired snapshots reached, ``(location, kind)`` each, every
#: one through the guard ``Deletions`` (:func:`delete_here` in this process; Spark executors
#: for :func:`puffin.spark.expire_snapshots`).
Deleter = Callable[[Deletions, Sequence[tuple[str, str]]], None]


def delete_here(deletions: Deletions, files: Sequence[tuple[str, str]]) -> None:
    """Each of ``files`` deleted in this process, through the guard."""
    for location, kind in files:
        deletions.delete(location, kind)


@dataclass(frozen=True)
class ExpireResult:
    """What :func:`expire_snapshots` did."""

    table: Table
    expired_snapshot_ids: list[int]
    #: kind (``data``, ``delete``, ``manifest``, ``manifest-list``, ``statistics``) ->
    #: (files deleted, bytes)
    deleted: dict[str, tuple[int, int]]
    #: files only expired snapshots reached that lie outside the table's locations: kept
    skipped_outside_table: list[str]

    @property
    def deleted_files(self) -> int:
        return sum(n for n, _ in self.deleted.values())


def expire_snapshots(
    table: Table,
    *,
    older_than: OlderThan | None = None,
    retain_last: int | None = None,
    allow_prefixes: Iterable[str] = (),
    deleter: Deleter = delete_here,
) -> ExpireResult:
    """Remove the snapshots older than ``older_than`` and delete the files only they reached.

    ``older_than`` is an aware point in time, an age, or a duration such as ``"5d"``
    (default: the table's ``history.expire.max-snapshot-age-ms``, else 5 days);
    ``retain_last`` the ancestors of each branch always kept (default:
    ``history.expire.min-snapshots-to-keep``, else 1).
    Snapshots that branches and tags point at are kept. ``allow_prefixes``: locations
    outside the table whose files may be deleted too (another table's folder is never
    deleted from otherwise). ``deleter`` deletes the files (in this process by default).

    Example::

        from datetime import timedelta
        result = expire_snapshots(table, older_than=timedelta(days=1), retain_last=5)
        print(len(result.expired_snapshot_ids), result.deleted)
    """
    properties = table.metadata.properties
    if retain_last is None:
        retain_last = int(properties.get(MIN_KEEP_PROPERTY, 1))
    if retain_last < 1:
        raise UsageError(f"retain_last must be at least 1 (the current snapshot): {retain_last}")
    cutoff_ms = cutoff_ms_of(older_than, properties.get(MAX_AGE_PROPERTY))
    before: list[TableMetadata] = []

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        from pyiceberg.table.update import RemovePartitionStatisticsUpdate, RemoveSnapshotsUpdate

        expired = expired_snapshots(current.metadata, cutoff_ms, retain_last)
        before[:] = [current.metadata]
        if not expired:
            return current
        # Removing a snapshot removes its refs and statistics entry (pyiceberg's rule);
        # its partition statistics go explicitly.
        updates: list[Any] = [
            RemoveSnapshotsUpdate.model_validate({"snapshot-ids": sorted(expired)})
        ]
        updates += [
            RemovePartitionStatisticsUpdate.model_validate({"snapshot-id": p.snapshot_id})
            for p in current.metadata.partition_statistics
            if p.snapshot_id in expired
        ]
        requirements = main_branch_requirements(current, current.current_snapshot())
        return commit(current, requirements, updates)

    committed = with_retries(table, attempt, MAX_ATTEMPTS)
    old = before[0]
    now = {s.snapshot_id for s in committed.metadata.snapshots}
    removed = sorted({s.snapshot_id for s in old.snapshots} - now)
    deletions = Deletions(committed, TableLocations.of(committed, allow_prefixes))
    if removed:
        _delete_unreached(table, committed, old, deletions, deleter)
    return ExpireResult(
        committed,
        removed,
        {k: (v[0], v[1]) for k, v in sorted(deletions.deleted.items())},
        deletions.skipped_outside_table,
    )


def _delete_unreached(
    table: Table, committed: Table, old: TableMetadata, deletions: Deletions, deleter: Deleter
) -> None:
    """Delete what only the expired snapshots reached. What the table reaches now is read
    after the commit, so a file a concurrent commit has just made reachable again is kept,
    as is anything a metadata file newer than the catalog's reaches (a commit in flight, or
    another catalog writing to the same folder)."""
    try:
        current = committed.refresh()
        newer = newer_metadata(current)
        if any(n.metadata is None for n in newer):
            return  # what it reaches is unknown: its files stay, as orphans at worst
        live = reachable_files(current, live_only=True)
        for n in newer:
            if n.metadata is not None:
                live |= reachable_files(current, n.metadata)
        kept = {location_key(p) for p in live}
        unreached = [
            (location, kind_of(location))
            for location in sorted(reachable_files(table, old))
            if location_key(location) not in kept
        ]
        deleter(deletions, unreached)
    except KeyboardInterrupt as exc:  # the expiry stands; what is left is orphans
        snapshot = committed.current_snapshot()
        raise InterruptedAfterCommit(
            snapshot.snapshot_id if snapshot else None,
            committed,
            "some files only the expired snapshots reached were not deleted: "
            "`puffin table remove-orphans` (remove_orphan_files) removes them",
        ) from exc
