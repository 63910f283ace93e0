"""Orphan cleanup's deletes on an object store: marked, checked again, deleted in bulk.

A local cleanup renames each orphan aside, reads the references again and only then
deletes (:mod:`puffin.iceberg.maintenance.orphans`). An object store has no rename, so each
batch of up to 1,000 orphans (one S3 ``DeleteObjects`` request) goes:

1. a mark naming the batch is written (:mod:`puffin.iceberg.metadata.cleanup_marks`): a
   writer of this library whose files it names asks for them before its commit;
2. the references are read again: the catalog, and the metadata prefix for commits in
   flight; an orphan referenced now is kept;
3. the rest is deleted in one request, if that is still within
   :data:`~puffin.iceberg.metadata.cleanup_marks.DELETE_WITHIN` of step 1 (else the batch
   starts again with a new mark); each key the store did not delete is reported;
4. the mark is written again, done.

Marks are kept an hour for the writers; each cleanup removes the older ones first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from puffin.iceberg.maintenance.guard import Deletions
from puffin.iceberg.metadata.cleanup_marks import (
    DELETE_WITHIN,
    kept,
    mark_body,
    marks_in,
    new_mark_location,
)
from puffin.iceberg.metadata.versions import newer_metadata
from puffin.io.listing import BULK_DELETE_KEYS, Failed, ObjectStore, object_store
from puffin.io.locations import location_key

if TYPE_CHECKING:
    from pyiceberg.table import Table

    from puffin.iceberg.verify.orphans import Orphan

__all__ = [
    "References",
    "State",
    "StoreDeletes",
    "StoreOutcome",
    "finish_on_store",
    "remove_old_marks",
    "state_of",
]

# A batch whose references took longer than this to read again starts over with a new mark.
_DELETE_WITHIN_S = DELETE_WITHIN.total_seconds()
_ATTEMPTS = 3


@dataclass(frozen=True)
class StoreDeletes:
    """How the orphans of one batch are deleted: ``delete(store, locations)`` gives the ones
    not deleted (:meth:`ObjectStore.delete` in this process by default; Spark's executors
    for :func:`puffin.spark.remove_orphan_files`), ``batch`` orphans a mark at a time."""

    delete: Callable[[ObjectStore, Sequence[str]], list[Failed]] = ObjectStore.delete
    batch: int = BULK_DELETE_KEYS


@dataclass
class StoreOutcome:
    """What the deletes on the store did."""

    removed: list[Orphan] = field(default_factory=list)
    kept_referenced: list[str] = field(default_factory=list)
    #: ``(location, the store's reason)`` of each orphan the store did not delete
    failed: list[tuple[str, str]] = field(default_factory=list)


#: What the references depend on: the catalog's metadata file and the newer ones beside it.
State = tuple[str, tuple[str, ...]]


def state_of(table: Table) -> State:
    """The table's :data:`State` as it is now (the metadata prefix listed: one request)."""
    return table.metadata_location, tuple(n.path for n in newer_metadata(table))


@dataclass
class References:
    """The references, read again only when the table's :data:`State` changed: ``found``
    was read from the state ``seen`` or a later one (a reading made after ``seen`` was taken
    holds at least what that state references)."""

    read: Callable[[Table], set[str]]
    seen: State | None = None
    found: set[str] = field(default_factory=set)

    def now(self, table: Table) -> set[str]:
        table = table.refresh()
        key = state_of(table)
        if key != self.seen:
            self.found, self.seen = self.read(table), key
        return self.found


def finish_on_store(
    table: Table,
    deletions: Deletions,
    chosen: Sequence[Orphan],
    references: References,
    store: ObjectStore | None = None,
    deletes: StoreDeletes = StoreDeletes(),
) -> StoreOutcome:
    """Delete the orphans ``chosen`` (under the table's object-store location) batch by
    batch, as the module's docstring says; ``references`` reads them again (the reading
    the orphans were chosen by, with the state taken before it, spares a second reading
    when nothing changed)."""
    store = store or object_store(table.location(), table.io)
    outcome = StoreOutcome()
    owned = []
    for orphan in chosen:
        if deletions.locations.owns(orphan.path):
            owned.append(orphan)
        else:
            deletions.skipped_outside_table.append(orphan.path)
    for start in range(0, len(owned), deletes.batch):
        batch = owned[start : start + deletes.batch]
        _batch(table, deletions, store, batch, references, outcome, deletes)
    outcome.kept_referenced.sort()
    return outcome


def _batch(
    table: Table,
    deletions: Deletions,
    store: ObjectStore,
    batch: list[Orphan],
    references: References,
    outcome: StoreOutcome,
    deletes: StoreDeletes,
) -> None:
    names = [o.path for o in batch]
    for _ in range(_ATTEMPTS):
        mark = new_mark_location(table.location())
        started = time.monotonic()
        store.put(mark, mark_body(names, done=False))
        try:
            again = references.now(table)
            doomed = [o for o in batch if location_key(o.path) not in again]
            if time.monotonic() - started > _DELETE_WITHIN_S:
                continue  # writers stop waiting for this mark soon: mark again
            gone = deletes.delete(store, [o.path for o in doomed])
            failed = {f.location: f.reason for f in gone}
        finally:
            store.put(mark, mark_body(names, done=True))
        outcome.kept_referenced += [o.path for o in batch if location_key(o.path) in again]
        for orphan in doomed:
            if orphan.path in failed:
                outcome.failed.append((orphan.path, failed[orphan.path]))
            else:
                outcome.removed.append(orphan)
                deletions.count(orphan.kind, orphan.size)
        return
    raise TimeoutError(
        f"orphan cleanup stopped: reading the table's references took over "
        f"{_DELETE_WITHIN_S:.0f} s {_ATTEMPTS} times, too long to delete safely after; "
        "nothing more was deleted"
    )


def remove_old_marks(table: Table, store: ObjectStore | None = None) -> list[str]:
    """Remove the marks older than
    :data:`~puffin.iceberg.metadata.cleanup_marks.MARK_RETENTION`; their locations."""
    store = store or object_store(table.location(), table.io)
    old = [m.location for m in marks_in(store, table.location()) if not kept(m)]
    store.delete(old)
    return old
