"""The warnings ``verify_table`` gives about the files in and around a table's folders.

Each is a ``(kind, path, message)``: ``orphan`` (a file nothing references), ``newer-metadata``
(a metadata file numbered above the catalog's current one: another catalog or a copy of the
warehouse writes here, or a commit is in flight), ``set-aside`` (a file an interrupted orphan
cleanup renamed), ``outside-table`` (a referenced file outside the table's locations),
``stale-statistics`` (the current snapshot has none while an ancestor has) and ``not-listed``
(an object store no client here can list: nothing above that needs a listing was looked for).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING

from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.metadata.versions import NewerMetadata, metadata_version, newer_metadata
from puffin.iceberg.verify.orphans import (
    DEFAULT_OLDER_THAN,
    find_orphans,
    referenced_files,
    set_aside_files,
)
from puffin.io.locations import local_path
from puffin.support.durations import spell_age

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["folder_warnings"]

Warning = tuple[str, str, str]
# An orphan younger than the cleanup's default grace period is left by it until then.
_ONCE_OLD = (
    f" once it is {spell_age(DEFAULT_OLDER_THAN)} old: a commit in flight may still take it before"
)


def folder_warnings(table: Table) -> list[Warning]:
    """Every warning of the module's docstring, each manifest read once. A location no
    client here can list is said so in one warning, ``not-listed``."""
    from puffin.io.listing import CannotListError

    unlisted: CannotListError | None = None
    try:
        newer = newer_metadata(table)
    except CannotListError as exc:
        newer, unlisted = [], exc
    referenced = referenced_files(table, newer)
    found = _newer_metadata(table, newer)
    orphans = [] if unlisted else find_orphans(table, referenced)
    if unlisted is not None:
        found.append(("not-listed", table.location(),
                      f"{unlisted}: no orphan or newer metadata file looked for"))  # fmt: skip
    clean = table_command(table, "remove-orphans", "--delete")
    cutoff = datetime.datetime.now(datetime.timezone.utc) - DEFAULT_OLDER_THAN
    found += [
        (
            "orphan",
            o.path,
            f"{o.size} bytes, referenced by no snapshot or statistics entry ({clean} removes "
            f"it{'' if o.modified <= cutoff else _ONCE_OLD})",
        )
        for o in orphans
    ]
    found += _set_aside(table)
    found += _stale_statistics(table)
    found += _outside_table(table, referenced)
    return found


def _newer_metadata(table: Table, newer: Sequence[NewerMetadata]) -> list[Warning]:
    """A warning for each metadata file numbered above the catalog's current one."""
    version = metadata_version(table.metadata_location)
    return [
        (
            "newer-metadata",
            n.path,
            f"{n.describe(version)}: orphan cleanup refuses to run while it is there, unless "
            "it is a commit in flight",
        )
        for n in newer
    ]


def _set_aside(table: Table) -> list[Warning]:
    """A warning for each file an interrupted orphan cleanup set aside."""
    root = local_path(table.location())
    return [
        (
            "set-aside",
            original,
            f"set aside as {aside} by an interrupted orphan cleanup: the next cleanup, "
            f"{table_command(table, 'remove-orphans', '--delete')}, puts it back (and removes "
            "it if it is an orphan older than its grace period)",
        )
        for aside, original in (set_aside_files(root) if root else [])
    ]


def _outside_table(table: Table, referenced: set[str]) -> list[Warning]:
    """A warning for each file the metadata references outside the table's locations
    (an added file kept where it was, or metadata pointing at another table's files):
    maintenance never deletes such a file."""
    from puffin.iceberg.metadata.table_locations import TableLocations

    owned = TableLocations.of(table)
    return [
        (
            "outside-table",
            path,
            "referenced by the metadata but outside the table's locations: expiring or "
            "compacting never deletes it (allow its prefix to let them)",
        )
        for path in sorted(referenced)
        if not owned.owns(path)
    ]


def _stale_statistics(table: Table) -> list[Warning]:
    """A warning when the current snapshot has no statistics while an ancestor has."""
    from puffin.iceberg.statistics.update import base_statistics

    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    base, since = base_statistics(table, snapshot)
    if base is None or not since:
        return []
    path = next(
        s.statistics_path for s in table.metadata.statistics if s.snapshot_id == base.snapshot_id
    )
    added = sum(_added_records(s) for s in since)
    return [
        (
            "stale-statistics",
            path,
            f"the current snapshot {snapshot.snapshot_id} has no statistics; the newest are "
            f"{len(since)} snapshot(s) behind, with {added} rows added since "
            f"({table_command(table, 'stats update')} brings them up to date)",
        )
    ]


def _added_records(snapshot: Snapshot) -> int:
    summary = snapshot.summary.additional_properties if snapshot.summary else {}
    return int(summary.get("added-records", 0) or 0)
