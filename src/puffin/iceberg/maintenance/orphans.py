"""Removing orphan files: :func:`remove_orphan_files`.

An orphan is a file under the table's location that nothing in its metadata references
(:func:`puffin.iceberg.verify.orphans.find_orphans`): what a write killed before its commit,
a commit whose outcome was unknown or a replaced statistics file leaves. Only files older
than a grace period are chosen (3 days, as Iceberg Java's ``DeleteOrphanFiles``), so a
commit still in flight keeps what it has just written, and the references are read again
right before anything is removed. Every delete goes through the guard
(:mod:`puffin.iceberg.maintenance.guard`): a symlink inside the table whose target lies
outside is reported, never followed.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.errors import UsageError
from puffin.iceberg.maintenance.guard import Deletions, TableLocations
from puffin.iceberg.verify.orphans import DEFAULT_OLDER_THAN, Orphan, find_orphans, referenced_files
from puffin.io.locations import location_key

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["OrphanResult", "remove_orphan_files"]


@dataclass(frozen=True)
class OrphanResult:
    """What :func:`remove_orphan_files` found and did."""

    #: the orphans older than the cutoff, oldest first
    orphans: list[Orphan]
    dry_run: bool
    #: the orphans deleted (on a dry run: those that would be)
    removed: list[Orphan]
    #: kind -> (files deleted, bytes); empty on a dry run
    deleted: dict[str, tuple[int, int]]
    #: orphans the guard keeps: they resolve outside the table's locations
    skipped_outside_table: list[str]


def remove_orphan_files(
    table: Table,
    *,
    older_than: datetime.timedelta = DEFAULT_OLDER_THAN,
    dry_run: bool = False,
    allow_prefixes: Iterable[str] = (),
) -> OrphanResult:
    """Delete the files under the table's location that nothing references and that are
    older than ``older_than`` (``dry_run``: only list them).

    Example::

        result = remove_orphan_files(table, dry_run=True)
        for orphan in result.orphans:
            print(orphan.kind, orphan.path, orphan.size)
    """
    if older_than < datetime.timedelta(0):
        raise UsageError("older_than must not be negative")
    table = table.refresh()
    cutoff = datetime.datetime.now(datetime.timezone.utc) - older_than
    chosen = [o for o in find_orphans(table) if o.modified <= cutoff]
    locations = TableLocations.of(table, allow_prefixes)
    if dry_run or not chosen:
        kept = [o.path for o in chosen if not locations.owns(o.path)]
        return OrphanResult(chosen, dry_run, [o for o in chosen if o.path not in kept], {}, kept)
    table = table.refresh()
    still = referenced_files(table)
    deletions = Deletions(table, locations)
    removed = [
        o
        for o in chosen
        # not registered by a commit meanwhile, and inside the table
        if location_key(o.path) not in still and deletions.delete(o.path, o.kind)
    ]
    return OrphanResult(
        chosen,
        dry_run,
        removed,
        {k: (v[0], v[1]) for k, v in sorted(deletions.deleted.items())},
        deletions.skipped_outside_table,
    )
