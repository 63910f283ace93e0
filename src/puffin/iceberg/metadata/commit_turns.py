"""Writers of this library take turns at a table's commit instead of racing for it.

Iceberg's commits are optimistic: each attempt reads the table, writes its new metadata and
swaps the catalog's pointer only if nobody swapped it meanwhile. With many writers committing
as fast as they can, most attempts lose (eight processes appending to one table on two cores
lost 28 commits of 200 after five attempts each), and a bounded retry cannot promise every
commit lands. Iceberg Java's Hive catalog takes a lock for the commit; its JDBC and REST
catalogs do not.

Here, a commit through a SQL catalog holds the table's *turn* from reading the table to the
pointer swap, and the next writer of this library waits for it instead of losing:

* on PostgreSQL, a session advisory lock (``pg_advisory_lock``) keyed by catalog and table,
  which every machine sharing the catalog sees;
* on an embedded SQLite catalog, a byte-range lock (``fcntl``) in a file of the system's
  temporary folder named after the database's device and inode, for the processes of that
  machine (nothing is written in the warehouse; the database file itself is not locked
  here, since closing any descriptor of it would drop SQLite's own locks).

* through any other catalog (REST, Glue, ...), for a table on a local disk, the same kind of
  lock named after the table's metadata folder, for the processes of that machine. A table
  on an object store behind such a catalog has no turns.

The turn only orders this library's writers: other writers (Java, Spark, pyiceberg) still
race, and the optimistic commit still settles that. A turn is waited for at most
:data:`WAIT_S` seconds (then the attempt goes ahead without it); an attempt whose work is
long (a compaction's first rewrite) does not take one, so a quick append never waits behind
it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["WAIT_S", "turn"]

#: The longest wait for a table's turn before an attempt goes ahead without it.
WAIT_S = 60.0
_HELD: set[tuple[str, int]] = set()  # turns this process holds: a nested commit goes ahead
_HELD_LOCK = threading.Lock()


@contextlib.contextmanager
def turn(table: Table, wait_s: float = WAIT_S) -> Iterator[bool]:
    """Hold ``table``'s turn for one commit attempt; yields whether another writer had it
    (the table is then stale: refresh it). Without turns for its catalog: yields False."""
    place = _place(table)
    if place is None:
        yield False
        return
    kind, where, key = place
    mine = (where, key)
    with _HELD_LOCK:
        nested = mine in _HELD
        if not nested:
            _HELD.add(mine)
    if nested:
        yield False
        return
    try:
        taker = _postgres_turn if kind == "postgresql" else _local_turn
        with taker(table, where, key, wait_s) as waited:
            yield waited
    finally:
        with _HELD_LOCK:
            _HELD.discard(mine)


def _place(table: Table) -> tuple[str, str, int] | None:
    """``(kind, where, key)`` of the table's turn (``postgresql``: the database URL;
    ``local``: the lock file), or ``None`` where there are no turns."""
    from puffin.iceberg.catalog.sqlite import database_of
    from puffin.io.locations import local_path

    catalog = table.catalog
    engine = getattr(catalog, "engine", None)
    ident = f"{catalog.name}\0{'.'.join(table.name())}".encode()
    key = int.from_bytes(hashlib.blake2b(ident, digest_size=8).digest(), "big", signed=True)
    if engine is not None and engine.dialect.name == "postgresql":
        return "postgresql", str(engine.url), key
    database = database_of(catalog) if engine is not None else None
    if database is not None and not database[1]:
        return _local(database[0], key)
    folder = local_path(table.location())
    if engine is None and folder is not None:
        return _local(os.path.join(folder, "metadata"), 0)
    return None


def _local(path: str | os.PathLike[str], key: int) -> tuple[str, str, int] | None:
    """The lock file of the temporary folder named after ``path``'s device and inode."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    lock = f"puffin-turns-{found.st_dev:x}-{found.st_ino:x}"
    return "local", os.path.join(tempfile.gettempdir(), lock), key


@contextlib.contextmanager
def _postgres_turn(table: Table, where: str, key: int, wait_s: float) -> Iterator[bool]:
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    with table.catalog.engine.connect() as conn:  # type: ignore[attr-defined]
        if conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar():
            held, waited = True, False
        else:
            conn.execute(text(f"SET lock_timeout = {max(1, int(wait_s * 1000))}"))
            try:
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
                held, waited = True, True
            except OperationalError:  # waited long enough: go ahead without the turn
                conn.rollback()
                held, waited = False, True
        conn.commit()  # no transaction left open while the turn is held
        try:
            yield waited
        finally:
            if held:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                conn.commit()


@contextlib.contextmanager
def _local_turn(table: Table, where: str, key: int, wait_s: float) -> Iterator[bool]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no turns
        yield False
        return
    try:
        fd = os.open(where, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:  # a folder we may not write to: no turns, the commit still races safely
        yield False
        return
    offset = key % (2**31 - 1)
    try:
        waited = not _try_lock(fcntl, fd, offset)
        held = not waited or _wait_lock(fcntl, fd, offset, wait_s)
        try:
            yield waited
        finally:
            if held:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)
    finally:
        os.close(fd)


def _try_lock(fcntl: Any, fd: int, offset: int) -> bool:
    """Take the byte's lock if no other process holds it."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError:
        return False
    return True


def _wait_lock(fcntl: Any, fd: int, offset: int, wait_s: float) -> bool:
    """Poll for the lock up to ``wait_s`` (``lockf`` has no timeout of its own)."""
    deadline = time.monotonic() + wait_s
    pause = 0.002
    while time.monotonic() < deadline:
        if _try_lock(fcntl, fd, offset):
            return True
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    return False
