"""The embedded catalog's SQLite database, shared with other processes and engines.

pyiceberg's ``SqlCatalog`` opens SQLite in its default rollback-journal mode with a pooled
connection: any other process holding a read transaction (a ``sqlite3`` shell, Iceberg
Java's ``JdbcCatalog`` over the same file) makes a commit fail at once with "database is
locked", and a failed process keeps its connection, and sometimes its lock, until exit.
Here the database runs in WAL mode (readers never block the writer, nor the writer them),
every connection waits up to :func:`busy_timeout` seconds for a lock and is closed when its
call ends (no pool), so nothing outlives a call.  A commit that still finds the database
locked is retried by the commit loop and ends in :class:`~puffin.errors.CatalogLockedError`.

WAL keeps two side files (``catalog.db-wal``, ``catalog.db-shm``) beside the database and
needs a local file system (not NFS or SMB); a database another process holds open in
rollback mode is left in that mode (switching needs a moment without readers).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from puffin.errors import CatalogLockedError, SetupError, UsageError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

__all__ = [
    "BUSY_TIMEOUT_ENV",
    "busy_timeout",
    "database_of",
    "database_uri",
    "is_locked",
    "is_read_only",
    "is_read_only_database",
    "locked_error",
    "read_only_catalog",
    "require_writable_catalog",
    "shareable",
    "stored_metadata_location",
    "use_wal",
]

#: Seconds a connection to the embedded catalog waits for another process's lock.
BUSY_TIMEOUT_ENV = "PUFFIN_CATALOG_BUSY_TIMEOUT"
_DEFAULT_BUSY_TIMEOUT = 5.0


def busy_timeout() -> float:
    """:data:`BUSY_TIMEOUT_ENV` in seconds (5 by default)."""
    text = os.environ.get(BUSY_TIMEOUT_ENV, "")
    try:
        value = float(text) if text else _DEFAULT_BUSY_TIMEOUT
    except ValueError:
        raise SetupError(f"{BUSY_TIMEOUT_ENV}={text!r} is not a number of seconds") from None
    if value < 0:
        raise SetupError(f"{BUSY_TIMEOUT_ENV}={text!r} must not be negative")
    return value


def use_wal(database: Path, timeout: float) -> bool:
    """Switch the database to WAL mode (persistent in the file); False when it is busy."""
    conn = sqlite3.connect(database, timeout=min(timeout, 1.0))
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
    except sqlite3.OperationalError:
        return False  # another process holds it in rollback mode: stay in that mode
    finally:
        conn.close()
    return bool(mode) and str(mode[0]).lower() == "wal"


def database_uri(database: Path, *, read_only: bool = False) -> str:
    """SQLAlchemy's URL of a SQLite database file: the path percent-encoded, since SQLAlchemy
    decodes it (a folder named ``a%20b`` is not ``a b``; ``#`` and ``?`` end a URL's path).

    ``read_only``: opened as SQLite's ``immutable`` URI, which reads a WAL-mode database
    without creating its side files (a read-only folder or mount cannot hold them); the
    path is encoded twice, once for SQLAlchemy and once for SQLite's URI.
    """
    from urllib.parse import quote

    if read_only:
        return f"sqlite:///file:{quote(quote(str(database)))}?mode=ro&immutable=1&uri=true"
    return f"sqlite:///{quote(str(database))}"


def is_read_only(folder: Path) -> bool:
    """Whether the warehouse folder exists and this process cannot write in it (a read-only
    mount, or permissions): its catalog is then opened read-only."""
    return folder.is_dir() and not os.access(folder, os.W_OK)


def shareable(
    catalog: Catalog, database: Path, timeout: float, *, read_only: bool = False
) -> Catalog:
    """``catalog`` with an engine that waits ``timeout`` s for locks and pools nothing."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    target: Any = catalog
    target.engine.dispose()  # pyiceberg's pooled engine: its connection would linger
    target.engine = create_engine(
        database_uri(database, read_only=read_only),
        poolclass=NullPool,
        connect_args={"timeout": timeout},
    )
    return catalog


def database_of(catalog: Catalog) -> tuple[Path, bool] | None:
    """The SQLite database file behind a SQL catalog, and whether it was opened read-only
    (:func:`database_uri`'s two forms); ``None`` for any other catalog."""
    from urllib.parse import unquote, urlsplit

    uri = str(getattr(catalog, "properties", {}).get("uri", ""))
    if not uri.startswith("sqlite:///") or uri == "sqlite:///:memory:":
        return None
    rest = uri.removeprefix("sqlite:///")
    if rest.startswith("file:") and "immutable=1" in rest:
        return Path(unquote(unquote(urlsplit(rest).path))), True
    return Path(unquote(rest)), False


def stored_metadata_location(catalog: Catalog, identifier: tuple[str, ...]) -> str | None:
    """The metadata location a SQL catalog's row names for a table, as stored (``None`` for
    another catalog, or no such row)."""
    from sqlalchemy import text

    engine = getattr(catalog, "engine", None)
    if engine is None or database_of(catalog) is None or len(identifier) < 2:
        return None
    query = text(
        "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = :c AND "
        "table_namespace = :n AND table_name = :t"
    )
    names = {"c": catalog.name, "n": ".".join(identifier[:-1]), "t": identifier[-1]}
    with engine.connect() as conn:
        row = conn.execute(query, names).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def require_writable_catalog(catalog: Catalog) -> None:
    """A :class:`UsageError` before any work when the catalog is an embedded database this
    process cannot write (a read-only mount, its permissions, or opened read-only because
    its folder is); nothing for any other catalog."""
    found = database_of(catalog)
    if found is None:
        return
    database, opened_read_only = found
    if opened_read_only or not os.access(database, os.W_OK):
        raise read_only_catalog(database)


def read_only_catalog(database: object) -> UsageError:
    """The error of a write to an embedded catalog this process cannot write."""
    return UsageError(
        f"the catalog database {database} is read-only to this process (a read-only mount, "
        "or its permissions): nothing was committed; reading commands (verify, scan, stats "
        "show) work, writing ones need write access to it"
    )


def is_read_only_database(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "attempt to write a readonly database"."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "OperationalError" in names and "readonly database" in str(exc).lower()


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (through SQLAlchemy or not)."""
    text = str(exc).lower()
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "OperationalError" in names and ("database is locked" in text or "is busy" in text)


def locked_error(catalog: Catalog, attempts: int) -> CatalogLockedError:
    """The error for a commit that found the database locked on every attempt."""
    from urllib.parse import unquote

    uri = str(getattr(catalog, "properties", {}).get("uri", "the catalog database"))
    where = unquote(uri.removeprefix("sqlite:///"))
    return CatalogLockedError(
        f"the embedded catalog ({where}) stayed locked by another "
        f"process for {busy_timeout():g} s on each of {attempts} attempts: nothing was "
        "committed and the files written for the commit were removed; find the process "
        "holding a transaction open (a sqlite3 shell, a JDBC catalog in a running JVM), or "
        f"wait longer ({BUSY_TIMEOUT_ENV}=SECONDS)"
    )
