"""Removing orphan files: :func:`remove_orphan_files`, safe beside running writers.

An orphan is a file under the table's location that nothing in its metadata references
(:func:`puffin.iceberg.verify.orphans.find_orphans`): what a write killed before its commit,
a commit whose outcome was unknown or a replaced statistics file leaves. A writer's files
look exactly like orphans until its commit lands, so four rules keep a live table whole:

* **a grace period**: only files older than ``older_than`` (3 days by default, as Iceberg
  Java's ``DeleteOrphanFiles``) are candidates, and under 24 hours the caller must say
  ``allow_short_grace_period=True`` (Java's ``remove_orphan_files`` procedure refuses such a
  period outright and sends the user to its action API);
* **newer metadata**: a metadata file numbered at or above the catalog's current one
  (:mod:`puffin.iceberg.metadata.versions`) is never deleted, nor anything it reaches; one
  that is no commit in flight (written over ten minutes ago, or with a history the catalog
  does not know: another catalog, a copied warehouse), judged against the catalog as read
  again after the listing, makes the cleanup refuse with
  :class:`~puffin.errors.NewerMetadataError`, saying how to tell what the file is;
* **set aside, read again, then delete**: candidates are renamed aside
  (:mod:`puffin.iceberg.maintenance.guard`), the references are read again from the catalog
  and the metadata folder, and a file referenced by then is put back. A commit that checked
  its files before the rename has written its metadata file by then, so it is seen;
* **writers check**: every commit of this library checks, after writing its metadata file and
  before the catalog swap, that the files it adds still exist
  (:mod:`puffin.iceberg.metadata.presence`), and otherwise fails with nothing committed.

Every delete goes through the guard: a symlink inside the table whose target lies outside is
reported, never followed.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from puffin.errors import NewerMetadataError, UsageError
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.maintenance.guard import Deletions, TableLocations, set_aside_files
from puffin.iceberg.maintenance.orphans_store import (
    References,
    StoreDeletes,
    finish_on_store,
    remove_old_marks,
    state_of,
)
from puffin.iceberg.metadata.commits import require_writable_location
from puffin.iceberg.metadata.retention import OlderThan, cutoff_of
from puffin.iceberg.metadata.versions import (
    IN_FLIGHT_WINDOW,
    NewerMetadata,
    metadata_version,
    newer_metadata,
    still_there,
)
from puffin.iceberg.verify.orphans import (
    DEFAULT_OLDER_THAN,
    Lister,
    Orphan,
    find_orphans,
    referenced_files,
    table_files,
)
from puffin.io.listing import ObjectStore, object_store
from puffin.io.locations import local_path, location_key
from puffin.io.stores import says_store_failures
from puffin.support.durations import as_written

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = [
    "MIN_GRACE_PERIOD",
    "Finisher",
    "OrphanResult",
    "check_grace_period",
    "finish_here",
    "remove_orphan_files",
]

#: A shorter grace period needs ``allow_short_grace_period=True``.
MIN_GRACE_PERIOD = datetime.timedelta(hours=24)
# Reads of the references, when commits that failed meanwhile took their files away, and
# the first wait for such a commit to remove its metadata file (doubled each time).
_READS = 4
_SETTLE_S = 0.25


#: What deletes set-aside orphans for good: ``(deletions, [(set-aside path, kind)])`` -> the
#: set-aside paths found gone; what it deletes is counted in ``deletions``
#: (:func:`finish_here` in this process; Spark's executors for
#: :func:`puffin.spark.remove_orphan_files`).
Finisher = Callable[[Deletions, Sequence[tuple[str, str]]], set[str]]


def finish_here(deletions: Deletions, files: Sequence[tuple[str, str]]) -> set[str]:
    """The :data:`Finisher` of this process: each set-aside file deleted in turn."""
    return {aside for aside, kind in files if not deletions.finish(aside, kind)}


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
    #: orphans kept because a commit referenced them while the cleanup ran
    kept_referenced: list[str] = field(default_factory=list)
    #: files an interrupted cleanup had set aside, put back first (a dry run lists them)
    restored: list[str] = field(default_factory=list)
    #: ``(location, the store's reason)`` of each orphan the object store did not delete
    failed: list[tuple[str, str]] = field(default_factory=list)
    #: requests made of the object store, by kind (``list``, ``delete``, ``put``, ``get``);
    #: empty for a local table
    requests: dict[str, int] = field(default_factory=dict)


def remove_orphan_files(
    table: Table,
    *,
    older_than: OlderThan = DEFAULT_OLDER_THAN,
    dry_run: bool = False,
    allow_prefixes: Iterable[str] = (),
    allow_short_grace_period: bool = False,
    lister: Lister | None = None,
    finisher: Finisher = finish_here,
    store_deletes: StoreDeletes = StoreDeletes(),  # noqa: B008 - frozen
) -> OrphanResult:
    """Delete the files under the table's location that nothing references and that are
    older than ``older_than`` (``dry_run``: only list them).

    ``older_than`` is a ``timedelta``, an aware ``datetime`` or a duration such as ``"3d"``;
    a grace period under 24 hours deletes only with ``allow_short_grace_period=True`` (a
    writer's files are orphans until its commit lands). Raises
    :class:`~puffin.errors.NewerMetadataError` when the metadata folder holds metadata newer
    than the catalog's that is no commit in flight (see the module's docstring).
    ``lister`` lists the table's folder and ``finisher`` deletes the orphans once set aside
    and checked (both in this process by default; Spark's executors for
    :func:`puffin.spark.remove_orphan_files`). On an object store the listing and the
    deletes go through :func:`~puffin.io.listing.object_store`, in bulk
    (:mod:`puffin.iceberg.maintenance.orphans_store`); a location it cannot list raises
    :class:`~puffin.io.listing.CannotListError` (a :class:`~puffin.errors.StorageError`),
    and each object the store did not delete is in ``failed`` (``store_deletes``: how and
    how many at a time, in this process by default).

    Example::

        result = remove_orphan_files(table, dry_run=True)
        for orphan in result.orphans:
            print(orphan.kind, orphan.path, orphan.size)
    """
    cutoff = check_grace_period(older_than, not dry_run, allow_short_grace_period)
    if not dry_run:
        require_writable_location(table, catalog=False)  # a read-only mount: say so first
    return _remove(table, cutoff, dry_run, allow_prefixes, lister, finisher, store_deletes)


@says_store_failures(
    "orphan cleanup",
    "nothing the table references was deleted (orphans deleted before it are gone); run it again",
)
def _remove(
    table: Table,
    cutoff: datetime.datetime,
    dry_run: bool,
    allow_prefixes: Iterable[str],
    lister: Lister | None,
    finisher: Finisher,
    store_deletes: StoreDeletes,
) -> OrphanResult:
    """:func:`remove_orphan_files` once its arguments are checked."""
    table = table.refresh()
    store = None if local_path(table.location()) else object_store(table.location(), table.io)
    before = state_of(table) if store is not None and not dry_run else None
    protected = _protected(table)
    deletions = Deletions(table, TableLocations.of(table, allow_prefixes))
    restored = _restore_set_aside(table, deletions, dry_run, store)
    if lister is None and store is not None:  # the same client: its requests are counted
        lister = lambda _root: table_files(table, store)  # noqa: E731
    chosen = [o for o in find_orphans(table, protected, lister=lister) if o.modified <= cutoff]
    requests = {} if store is None else dict(store.requests)
    if dry_run or not chosen:
        kept = [o.path for o in chosen if not deletions.locations.owns(o.path)]
        removed = [o for o in chosen if o.path not in kept]
        return OrphanResult(chosen, dry_run, removed, {}, kept, restored=restored,
                            requests=requests)  # fmt: skip
    failed: list[tuple[str, str]] = []
    if store is None:
        aside = [(o, deletions.set_aside(o.path)) for o in chosen]
        removed, kept_referenced = _finish(table, deletions, aside, finisher)
    else:
        references = References(_protected, before, protected)
        outcome = finish_on_store(table, deletions, chosen, references, store, store_deletes)
        removed, kept_referenced, failed = outcome.removed, outcome.kept_referenced, outcome.failed
    return OrphanResult(
        chosen,
        dry_run,
        removed,
        {k: (v[0], v[1]) for k, v in sorted(deletions.deleted.items())},
        deletions.skipped_outside_table,
        kept_referenced,
        restored,
        failed,
        {} if store is None else dict(store.requests),
    )


def check_grace_period(
    older_than: OlderThan, deletes: bool, allow_short: bool
) -> datetime.datetime:
    """The cutoff ``older_than`` sets; a :class:`UsageError` when it leaves a grace period
    under 24 hours to a cleanup that ``deletes`` without ``allow_short`` (the command line
    asks this before it opens the table; the period is named as the caller wrote it)."""
    cutoff = cutoff_of(older_than)
    grace = datetime.datetime.now(datetime.timezone.utc) - cutoff
    if grace < MIN_GRACE_PERIOD and deletes and not allow_short:
        raise UsageError(
            f"a grace period of {as_written(older_than, grace)} (under 24 hours) can delete "
            "the files of a commit still in flight; pass allow_short_grace_period=True "
            "(--allow-short-grace-period on the command line) only when no writer can be running"
        )
    return cutoff


def _finish(
    table: Table,
    deletions: Deletions,
    aside: list[tuple[Orphan, str | None]],
    finisher: Finisher,
) -> tuple[list[Orphan], list[str]]:
    """Read the references again, put back what a commit took meanwhile, delete the rest.
    Any failure or interrupt before the deletes puts every set-aside file back (one during
    them leaves the rest set aside: the next cleanup puts them back first)."""
    pending = {location_key(o.path): (o, a) for o, a in aside if a is not None}
    kept: list[str] = []

    def put_back(location: str) -> None:  # a manifest a commit in flight needs, to be read
        found = pending.pop(location_key(location), None)
        if found is not None:
            deletions.restore(found[1], _local(found[0].path))
            kept.append(found[0].path)

    try:
        again = _protected(table.refresh(), before_read=put_back)
    except BaseException:
        for o, a in pending.values():
            deletions.restore(a, _local(o.path))
        raise
    doomed: list[tuple[Orphan, str]] = []
    for key, (o, a) in sorted(pending.items()):
        if key in again:
            deletions.restore(a, _local(o.path))
            kept.append(o.path)
        else:
            doomed.append((o, a))
    gone = finisher(deletions, [(a, o.kind) for o, a in doomed])
    return [o for o, a in doomed if a not in gone], sorted(kept)


def _protected(
    table: Table,
    *,
    before_read: Callable[[str], None] | None = None,
) -> set[str]:
    """Every file the catalog's metadata and any commit in flight reference; refuses when
    newer metadata is no commit in flight, or when its files vanish while read (a failed
    commit removing them is read again). Newer metadata is judged against the catalog as
    it is after the folder was listed: a writer may commit twice between a refresh and the
    listing, so its second file looks like a foreign history until the catalog is read again."""
    last = "the catalog took new commits each time"
    for attempt in range(_READS):
        newer = newer_metadata(table)
        stale = [n for n in newer if not n.in_flight(IN_FLIGHT_WINDOW)]
        if stale:
            known = table.metadata_location
            if table.refresh().metadata_location != known:  # pyiceberg refreshes in place
                continue  # the catalog took commits while we looked: look again
            raise NewerMetadataError(_refusal(table, stale))
        try:
            return referenced_files(table, newer, before_read=before_read)
        except FileNotFoundError as exc:
            if not newer:
                raise  # no commit in flight: the table itself misses a file
            last = str(exc)
            if all(still_there(table, n) for n in newer):
                # A commit in flight whose file is gone (an earlier cleanup's) fails its
                # check before the swap and removes its metadata file: give it that time.
                time.sleep(_SETTLE_S * 2**attempt)
        table = table.refresh()
    raise NewerMetadataError(
        f"orphan cleanup refused, nothing was deleted: the table kept changing while its "
        f"files were read ({_READS} readings; last: {last}); run it again"
    )


def _refusal(table: Table, stale: Sequence[NewerMetadata]) -> str:
    """Why the cleanup refuses, how to tell what each file is, and what is safe."""
    version = metadata_version(table.metadata_location)
    lines = "; ".join(f"{n.path} is {n.describe(version)}" for n in stale)
    minutes = int(IN_FLIGHT_WINDOW.total_seconds() // 60)
    return (
        f"orphan cleanup refused, nothing was deleted: {lines}. Every file such metadata "
        "references looks orphaned to this catalog, so none of them is deleted while it is "
        f"there. A commit swaps the catalog's pointer seconds after writing its file, so a "
        f"file older than {minutes} minutes is no commit in flight: if its history is another "
        "catalog's (its metadata-log names files this catalog never had), clean up through "
        "that catalog; if it is a failed commit's, check that no writer of this table runs, "
        f"then move it out of the metadata folder (keep it until {table_command(table, 'verify')} "
        "is clean) and run the cleanup again"
    )


def _restore_set_aside(
    table: Table, deletions: Deletions, dry_run: bool, store: ObjectStore | None
) -> list[str]:
    """Put back what an interrupted cleanup set aside (a dry run only lists it): it then
    counts as what it is, an orphan or a file the table needs. On an object store, remove
    the marks older than an hour instead (nothing was set aside there)."""
    root = local_path(table.location())
    if root is None:
        if store is not None and not dry_run:
            remove_old_marks(table, store)
        return []
    found = set_aside_files(root)
    if not dry_run:
        for aside, original in found:
            deletions.restore(aside, original)
    return [original for _, original in found]


def _local(location: str) -> str:
    local = local_path(location)
    assert local is not None  # only local files are set aside
    return os.path.realpath(local)
