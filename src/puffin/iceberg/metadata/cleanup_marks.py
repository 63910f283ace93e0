"""Marks an orphan cleanup on an object store puts down before it deletes: what writers check.

On a local disk an orphan cleanup renames each file aside before it reads the table's
references again, so a writer whose commit checks its files after that finds one missing
and fails with nothing committed (:mod:`puffin.iceberg.metadata.presence`). An object store
has no rename. Instead, before each bulk delete the cleanup writes a *mark*: a small hidden
object ``<table location>/.puffin-cleanup-<id>.json`` naming the objects it is about to
delete. Then it reads the references again (the catalog and the metadata prefix), deletes
what is still unreferenced, and removes the mark.

A writer of this library, after writing its metadata file and before the catalog swap,
first waits while a live mark names a file its commit adds (one listing request of the
table's root when there is none), then checks that each of those files exists (one
request each, in parallel: :mod:`puffin.iceberg.metadata.presence`):

* a cleanup that read the references again after the metadata file was written sees the
  commit in flight and keeps its files;
* one that read them before put its mark down before that, so its delete is either over
  when the writer looks (the file is missing: the commit fails with nothing committed) or
  under way, and then its mark is live and waited for.

A mark lives :data:`MARK_LIFE` at most: a cleanup deletes only within half of it after
writing its mark (else it writes a new one and reads again), and a writer takes a mark
older than that for a killed cleanup's and ignores it; the next cleanup removes it. The
clocks of the writer and the store may differ by up to half of :data:`MARK_LIFE`.
"""

from __future__ import annotations

import datetime
import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.io.locations import location_key

if TYPE_CHECKING:
    from puffin.io.listing import Listed, ObjectStore

__all__ = [
    "MARK_LIFE",
    "MARK_PREFIX",
    "Mark",
    "live_marks",
    "marked_files",
    "new_mark",
    "wait_for_marks",
]

#: A mark older than this is a killed cleanup's: writers ignore it, the next cleanup
#: removes it.
MARK_LIFE = datetime.timedelta(minutes=10)
#: The name of every mark starts so, in the table's root (hidden: never an orphan).
MARK_PREFIX = ".puffin-cleanup-"
# How often a writer looks whether a mark naming its files is gone.
_POLL_S = 0.2


@dataclass(frozen=True)
class Mark:
    """One mark: its location and what it names, as :func:`location_key` keys."""

    location: str
    names: frozenset[str]


def new_mark(root: str, locations: Iterable[str]) -> tuple[str, bytes]:
    """The location and bytes of a new mark under the table root ``root`` naming
    ``locations``."""
    body = {
        "written": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "deletes": sorted(location_key(loc) for loc in locations),
    }
    name = f"{MARK_PREFIX}{uuid.uuid4().hex}.json"
    return f"{root.rstrip('/')}/{name}", json.dumps(body).encode()


def is_mark(location: str) -> bool:
    return location.rsplit("/", 1)[-1].startswith(MARK_PREFIX)


def marks_in(store: ObjectStore, root: str) -> list[Listed]:
    """The marks under the table root ``root``, live or dead (one listing request)."""
    return [entry for entry in store.children(root) if is_mark(entry.location)]


def is_live(entry: Listed, now: float | None = None) -> bool:
    """Whether a listed mark may still belong to a running cleanup."""
    if entry.modified is None:
        return True  # the store does not say: taken as new
    now = time.time() if now is None else now
    return now - entry.modified < MARK_LIFE.total_seconds()


def live_marks(store: ObjectStore, root: str) -> list[Mark]:
    """The live marks under ``root``, read (a mark removed meanwhile is left out)."""
    found = []
    for entry in marks_in(store, root):
        if not is_live(entry):
            continue
        try:
            body = json.loads(store.get(entry.location))
        except FileNotFoundError:
            continue  # its cleanup finished meanwhile
        found.append(Mark(entry.location, frozenset(body.get("deletes", []))))
    return found


def marked_files(marks: Iterable[Mark], locations: Iterable[str]) -> list[str]:
    """Those of ``locations`` that one of ``marks`` names."""
    named = frozenset().union(*(m.names for m in marks))
    return [loc for loc in locations if location_key(loc) in named]


def wait_for_marks(store: ObjectStore, root: str, locations: list[str]) -> None:
    """The first half of the writer's check (see the module's docstring): wait while a live
    mark names one of ``locations`` (at most :data:`MARK_LIFE`, after which it is dead)."""
    deadline = time.monotonic() + MARK_LIFE.total_seconds()
    while marked_files(live_marks(store, root), locations) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
