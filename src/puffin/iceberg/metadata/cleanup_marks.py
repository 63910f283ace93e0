"""Marks an orphan cleanup on an object store leaves of what it deletes: what writers check.

On a local disk an orphan cleanup renames each file aside before it reads the table's
references again, and a commit checks that each file it adds exists before the catalog swap
(:mod:`puffin.iceberg.metadata.presence`); a file set aside fails the commit with nothing
committed. An object store has no rename, and a request per file would make every commit
pay for the cleanups that rarely run. Instead a cleanup keeps a log of what it deletes, in
*marks*: small hidden objects ``<table location>/.puffin-cleanup-<id>.json``, one per bulk
delete, naming its objects. For each batch the cleanup

1. writes the mark (``"done": false``),
2. reads the references again (the catalog and the metadata prefix: a commit whose
   metadata file is written by then is seen, and its files kept),
3. deletes what is still unreferenced, only within :data:`DELETE_WITHIN` of step 1 (else it
   starts the batch again),
4. writes the mark again with ``"done": true``.

Marks are kept for :data:`MARK_RETENTION`; later cleanups remove older ones. A commit of
this library, after writing its metadata file and before the swap, lists the marks (one
request, whatever the number of files) and reads the ones it has not read yet (a done mark
never changes: each process reads it once). For each file it adds that a mark names, it
waits until that mark is done (at most :data:`DELETE_WITHIN` and a margin from when it first
saw it: after that its cleanup deletes nothing more), then asks for the file: a file gone
fails the commit with nothing committed.

Why this is enough for this library's cleanups: one that read the references after the
commit's metadata file was written keeps its files; one that read them before wrote its
mark before that, so the commit's listing sees the mark. Left open: a write that takes
longer than :data:`MARK_RETENTION` (its cleanup's mark may be gone when it commits), and
deletes by anything else (Iceberg Java's cleanup, a user's ``rm``), which only a request per
file would see.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.io.locations import location_key

if TYPE_CHECKING:
    from puffin.io.listing import Listed, ObjectStore

__all__ = [
    "DELETE_WITHIN",
    "MARK_PREFIX",
    "MARK_RETENTION",
    "Mark",
    "is_mark",
    "kept",
    "mark_body",
    "marked_by",
    "marks_in",
    "new_mark_location",
    "settled",
]

#: A cleanup deletes a batch only this long after it started writing the batch's mark.
DELETE_WITHIN = datetime.timedelta(seconds=60)
#: Marks are kept this long (by the listing's time); later cleanups remove older ones.
MARK_RETENTION = datetime.timedelta(hours=1)
#: The name of every mark starts so, in the table's root (hidden: never an orphan).
MARK_PREFIX = ".puffin-cleanup-"
# What a writer waits beyond DELETE_WITHIN for a mark not done: a delete request in flight.
_MARGIN_S = 30.0
# Marks a writer reads at once, the first time it sees them.
_READS_AT_ONCE = 16
# How often a writer reads a mark it waits for.
_POLL_S = 0.2
# Done marks each process keeps, by location.
_READ: OrderedDict[str, Mark] = OrderedDict()
_READ_SIZE = 4096
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Mark:
    """One mark: its location, what it names (as :func:`location_key` keys), and whether its
    delete is over."""

    location: str
    names: frozenset[str]
    done: bool


def new_mark_location(root: str) -> str:
    """The location of a new mark under the table root ``root``."""
    return f"{root.rstrip('/')}/{MARK_PREFIX}{uuid.uuid4().hex}.json"


def mark_body(locations: Iterable[str], *, done: bool) -> bytes:
    """The bytes of a mark naming ``locations``."""
    body = {
        "written": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "done": done,
        "deletes": sorted(location_key(loc) for loc in locations),
    }
    return json.dumps(body).encode()


def is_mark(location: str) -> bool:
    return location.rsplit("/", 1)[-1].startswith(MARK_PREFIX)


def marks_in(store: ObjectStore, root: str) -> list[Listed]:
    """The marks under the table root ``root`` (one listing request)."""
    return [entry for entry in store.children(root) if is_mark(entry.location)]


def kept(entry: Listed, now: float | None = None) -> bool:
    """Whether a listed mark is within :data:`MARK_RETENTION` (a mark without a time is)."""
    if entry.modified is None:
        return True
    now = time.time() if now is None else now
    return now - entry.modified < MARK_RETENTION.total_seconds()


def marked_by(store: ObjectStore, root: str, locations: Iterable[str]) -> dict[str, Mark]:
    """Each of ``locations`` a kept mark under ``root`` names, with that mark."""
    from concurrent.futures import ThreadPoolExecutor

    wanted = {location_key(loc): loc for loc in locations}
    found: dict[str, Mark] = {}
    listed = [entry.location for entry in marks_in(store, root) if kept(entry)]
    with ThreadPoolExecutor(max_workers=_READS_AT_ONCE) as pool:
        for mark in pool.map(lambda loc: _read(store, loc), listed):
            if mark is not None:
                found.update((wanted[k], mark) for k in mark.names & wanted.keys())
    return found


def settled(store: ObjectStore, mark: Mark) -> None:
    """Wait until ``mark`` is done, gone, or old enough that its cleanup deletes nothing
    more (:data:`DELETE_WITHIN` and a margin from now: it was written before now)."""
    deadline = time.monotonic() + DELETE_WITHIN.total_seconds() + _MARGIN_S
    while not mark.done and time.monotonic() < deadline:
        time.sleep(_POLL_S)
        again = _read(store, mark.location)
        if again is None:
            return
        mark = again


def _read(store: ObjectStore, location: str) -> Mark | None:
    """The mark at ``location`` (``None``: removed meanwhile); a done one from memory."""
    with _LOCK:
        known = _READ.get(location)
    if known is not None:
        return known
    try:
        body = json.loads(store.get(location))
    except FileNotFoundError:
        return None
    mark = Mark(location, frozenset(body.get("deletes", [])), bool(body.get("done")))
    if mark.done:
        with _LOCK:
            _READ[location] = mark
            while len(_READ) > _READ_SIZE:
                _READ.popitem(last=False)
    return mark
