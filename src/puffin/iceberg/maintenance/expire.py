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

import datetime
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from puffin.errors import InterruptedAfterCommit, UsageError
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.maintenance.guard import Deletions, TableLocations
from puffin.iceberg.metadata.commits import backoff, main_branch_requirements, with_retries
from puffin.iceberg.metadata.retention import (
    MAX_AGE_PROPERTY,
    MIN_KEEP_PROPERTY,
    OlderThan,
    StillExpired,
    cutoff_ms_of,
    expired_snapshots,
)
from puffin.iceberg.metadata.v3 import checks_requirements_here, commit
from puffin.iceberg.metadata.versions import newer_metadata, still_there
from puffin.iceberg.verify.orphans import kind_of, reachable_files
from puffin.io.locations import location_key
from puffin.io.stores import first_line, says_store_failures

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadata

__all__ = ["Deleter", "ExpireResult", "delete_here", "expire_snapshots"]

#: Readings of what the table reaches after the commit, while a commit in flight settles
#: (about three seconds of backoff), and how recent a newer metadata file is waited for.
_SETTLE_ATTEMPTS = 6
_SETTLING = datetime.timedelta(seconds=30)

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
    #: files only expired snapshots reached, kept because a newer metadata file (a commit
    #: in flight) could not be read whole; ``remove_orphan_files`` removes them later
    left_undeleted: list[str] = field(default_factory=list)

    @property
    def deleted_files(self) -> int:
        return sum(n for n, _ in self.deleted.values())


@says_store_failures("expire_snapshots")
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
    done: list[tuple[TableMetadata, set[int]]] = []  # what the committed attempt removed

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        expired = expired_snapshots(current.metadata, cutoff_ms, retain_last)
        done[:] = [(current.metadata, expired)]
        if not expired:
            return current
        requirements = _requirements(current, StillExpired(expired, cutoff_ms, retain_last))
        return commit(current, requirements, _updates(current.metadata, expired))

    committed = with_retries(table, attempt)
    old, removed = done[0]
    deletions = Deletions(committed, TableLocations.of(committed, allow_prefixes))
    left: list[str] = []
    if removed:
        left = _delete_unreached(table, committed, old, removed, deletions, deleter)
    return ExpireResult(
        committed,
        sorted(removed),
        {k: (v[0], v[1]) for k, v in sorted(deletions.deleted.items())},
        deletions.skipped_outside_table,
        left,
    )


def _updates(metadata: TableMetadata, expired: set[int]) -> list[Any]:
    """Removing a snapshot removes its refs and statistics entry (pyiceberg's rule); its
    partition statistics go explicitly."""
    from pyiceberg.table.update import RemovePartitionStatisticsUpdate, RemoveSnapshotsUpdate

    updates: list[Any] = [RemoveSnapshotsUpdate.model_validate({"snapshot-ids": sorted(expired)})]
    updates += [
        RemovePartitionStatisticsUpdate.model_validate({"snapshot-id": p.snapshot_id})
        for p in metadata.partition_statistics
        if p.snapshot_id in expired
    ]
    return updates


def _requirements(table: Table, still: StillExpired) -> list[Any]:
    """Commit against the catalog's table as it is when the commit lands, as Java does, if
    the catalog checks requirements here (what is removed must still be expired then:
    ``main`` may have moved on); otherwise ``main`` must not have moved (a REST server
    knows only Iceberg's own requirement types)."""
    from pyiceberg.table.update import AssertTableUUID

    if not checks_requirements_here(table):
        return main_branch_requirements(table, table.current_snapshot())
    return [AssertTableUUID(uuid=table.metadata.table_uuid), still]


def _delete_unreached(
    table: Table,
    committed: Table,
    old: TableMetadata,
    removed: set[int],
    deletions: Deletions,
    deleter: Deleter,
) -> list[str]:
    """Delete what only the ``removed`` snapshots reached; the files left undeleted
    (listed) when what a newer metadata file reaches could not be read.

    What the table reaches is read after the commit, so a file a concurrent commit has just
    made reachable again is kept, as is anything a metadata file newer than the catalog's
    reaches (a commit in flight, or another catalog writing to the same folder). A commit in
    flight that loses its race removes its manifest list and then its metadata file, so one
    is not read but waited for, with a backoff, until it lands or goes."""
    try:
        expired = _expired_files(table, old, removed)
    except OSError as exc:  # the expiry stands; what it could not read is orphans now
        _warn_store_failed(committed, exc, "the files the expired snapshots reached")
        return []
    try:
        for number in range(1, _SETTLE_ATTEMPTS + 1):
            live = _live_files(committed, wait=number < _SETTLE_ATTEMPTS)
            if live is not None:
                kept = {location_key(p) for p in live}
                unreached = [
                    (location, kind_of(location))
                    for location in sorted(expired)
                    if location_key(location) not in kept
                ]
                deleter(deletions, unreached)
                return []
            time.sleep(backoff(number))
    except KeyboardInterrupt as exc:  # the expiry stands; what is left is orphans
        snapshot = committed.current_snapshot()
        raise InterruptedAfterCommit(
            snapshot.snapshot_id if snapshot else None,
            committed,
            "some files only the expired snapshots reached were not deleted: "
            f"{table_command(committed, 'remove-orphans', '--delete')} "
            "(remove_orphan_files) removes them",
        ) from exc
    except OSError as exc:  # the store failed after the commit: the expiry stands
        _warn_store_failed(committed, exc, f"up to {len(expired)} of those files")
        return sorted(expired)
    warnings.warn(
        f"{len(expired)} files only the expired snapshots reached were kept: a metadata file "
        "newer than the catalog's could not be read; "
        f"{table_command(committed, 'remove-orphans', '--delete')} removes them once it is "
        "gone or committed",
        stacklevel=3,
    )
    return sorted(expired)


def _warn_store_failed(committed: Table, exc: OSError, what: str) -> None:
    warnings.warn(
        f"the expiry committed, but {what} were not deleted: the object store failed "
        f"({first_line(exc)}); {table_command(committed, 'remove-orphans', '--delete')} "
        "removes them",
        stacklevel=4,
    )


def _live_files(committed: Table, wait: bool) -> set[str] | None:
    """What the table reaches now, and every newer metadata file too; ``None`` when one of
    those could not be read whole, or (``wait``) while a commit is in flight: its manifest
    list may be removed any moment if it loses, so it is waited for, to land or go, rather
    than read (one still there when the waiting is over is read)."""
    current = committed.refresh()
    newer = [n for n in newer_metadata(current) if still_there(current, n)]
    if any(n.metadata is None or (wait and n.in_flight(_SETTLING)) for n in newer):
        return None
    try:
        live = reachable_files(current, live_only=True)
        for n in newer:
            assert n.metadata is not None
            live |= reachable_files(current, n.metadata)
    except FileNotFoundError:
        return None  # a file of a commit that lost its race, removed while read
    return live


def _expired_files(table: Table, old: TableMetadata, removed: set[int]) -> set[str]:
    """Every file the ``removed`` snapshots of ``old`` reach (their manifest lists,
    manifests, content files and statistics files); a snapshot whose manifest list another
    expiry deleted already is skipped."""
    found = {s.statistics_path for s in old.statistics if s.snapshot_id in removed}
    found.update(p.statistics_path for p in old.partition_statistics if p.snapshot_id in removed)
    seen: set[str] = set()
    for snapshot in old.snapshots:
        if snapshot.snapshot_id not in removed:
            continue
        one = old.model_copy(
            update={"snapshots": [snapshot], "statistics": [], "partition_statistics": []}
        )
        try:
            found |= reachable_files(table, one, seen=seen)
        except FileNotFoundError:
            found.add(snapshot.manifest_list)  # what is left of it, if anything
    return found
