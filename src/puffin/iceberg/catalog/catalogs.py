"""Catalogs and tables: pyiceberg's own configuration, or an embedded SQLite catalog.

A catalog named in ``~/.pyiceberg.yaml`` (or in ``PYICEBERG_CATALOG__<NAME>__*`` environment
variables) is loaded exactly as pyiceberg loads it.  Without one, the library uses an embedded
SQLite catalog whose database and data live in one local folder, so a table can be made and
used with nothing to set up.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from puffin.errors import (
    CatalogNotFoundError,
    SnapshotNotFoundError,
    TableError,
    TableFileNotFoundError,
    TableNotFoundError,
    UsageError,
)
from puffin.io.locations import cut_by_pyiceberg

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = [
    "DEFAULT_WAREHOUSE",
    "WAREHOUSE_ENV",
    "CatalogNotFoundError",
    "SnapshotNotFoundError",
    "TableNotFoundError",
    "load_catalog",
    "load_table",
    "local_catalog",
    "resolve_snapshot",
]

#: The embedded catalog's folder when nothing else is given (relative to the working folder).
DEFAULT_WAREHOUSE = "warehouse"
#: Environment variable that moves the embedded catalog's folder.
WAREHOUSE_ENV = "PUFFIN_WAREHOUSE"
#: File name of the SQLite database inside the warehouse folder.
CATALOG_DB = "catalog.db"


def default_warehouse() -> Path:
    """The embedded catalog's folder: ``$PUFFIN_WAREHOUSE`` or ``./warehouse``."""
    return Path(os.environ.get(WAREHOUSE_ENV) or DEFAULT_WAREHOUSE).resolve()


def local_catalog(
    warehouse: str | os.PathLike[str] | None = None,
    *,
    name: str = "default",
    create: bool = True,
    busy_timeout: float | None = None,
) -> Catalog:
    """An embedded SQLite catalog: ``<warehouse>/catalog.db`` plus table folders beside it.

    The folder is created if needed, unless ``create`` is false: then a folder without a
    catalog is a :class:`CatalogNotFoundError` and nothing is left behind (a command that
    only reads a table, run in the wrong folder).  A catalog created here that then only
    fails to find a table (:func:`load_table`) is removed again.

    Other processes and engines (pyiceberg, Iceberg Java's ``JdbcCatalog``) may share it:
    the database runs in WAL mode, each connection waits ``busy_timeout`` seconds (default
    ``$PUFFIN_CATALOG_BUSY_TIMEOUT`` or 5) for another's lock and is closed after each call
    (:mod:`puffin.iceberg.catalog.sqlite`).
    """
    from pyiceberg.catalog.sql import SqlCatalog

    from puffin.iceberg.catalog import sqlite

    folder = Path(warehouse).resolve() if warehouse is not None else default_warehouse()
    mark = cut_by_pyiceberg(str(folder))
    if mark is not None:
        raise UsageError(
            f"the warehouse folder {str(folder)!r} contains {mark!r}, which pyiceberg reads as "
            "the end of a file location (it would write the tables' files outside the "
            f"folder): choose a folder whose path has no '#' or '?'"
        )
    if not create and not (folder / CATALOG_DB).is_file():
        raise CatalogNotFoundError(
            f"no embedded catalog in {folder} (no {CATALOG_DB}): name the folder of one "
            f"(--warehouse DIR, ${WAREHOUSE_ENV}) or a catalog from pyiceberg's configuration "
            "(--catalog NAME)"
        )
    timeout = sqlite.busy_timeout() if busy_timeout is None else busy_timeout
    database = folder / CATALOG_DB
    read_only = sqlite.is_read_only(folder)
    if read_only and not database.is_file():
        raise CatalogNotFoundError(
            f"no embedded catalog in {folder} (no {CATALOG_DB}), and the folder is read-only"
        )
    created = [p for p in (folder, database) if not p.exists()]
    if not read_only:
        folder.mkdir(parents=True, exist_ok=True)
        sqlite.use_wal(database, timeout)
    catalog = SqlCatalog(
        name,
        uri=sqlite.database_uri(database, read_only=read_only),
        # Not Path.as_uri(): pyiceberg and Java map file: locations to paths without
        # unquoting, so a space or an 'é' stays as it is in the location.
        warehouse=f"file://{folder}",
    )
    if database in created:
        _CREATED[catalog] = created
    return sqlite.shareable(catalog, database, timeout, read_only=read_only)


def load_catalog(
    name: str | None = None,
    *,
    warehouse: str | os.PathLike[str] | None = None,
    create: bool = True,
) -> Catalog:
    """A catalog by name, through pyiceberg's configuration, else the embedded one.

    * ``warehouse`` given: the embedded SQLite catalog in that folder.
    * ``name`` given: the catalog of that name from ``~/.pyiceberg.yaml`` or the
      ``PYICEBERG_CATALOG__<NAME>__*`` environment variables; :class:`CatalogNotFoundError`
      if neither defines it (except for the name ``default``, which falls back to the
      embedded catalog).
    * neither: pyiceberg's default catalog if one is configured, else the embedded catalog
      in ``$PUFFIN_WAREHOUSE`` or ``./warehouse``.

    ``create`` as for :func:`local_catalog`, when the embedded catalog is the one used.
    """
    if warehouse is not None:
        return local_catalog(warehouse, name=name or "default", create=create)
    from pyiceberg.catalog import load_catalog as pyiceberg_load_catalog
    from pyiceberg.utils.config import Config

    config = Config()  # read now, so configuration changed since import is seen
    lookup = name or config.get_default_catalog_name()
    properties = config.get_catalog_config(lookup)
    if properties is not None:
        # Handed over as pyiceberg read them (its own load_catalog merges them the same way).
        return pyiceberg_load_catalog(lookup, **cast("dict[str, Any]", properties))
    if name is not None and name.lower() != "default":
        known = ", ".join(sorted(config.get_known_catalogs())) or "none"
        raise CatalogNotFoundError(
            f"no catalog named {name!r} in ~/.pyiceberg.yaml or PYICEBERG_CATALOG__"
            f"{name.upper()}__* environment variables (configured catalogs: {known}); "
            "leave the name out to use the embedded SQLite catalog"
        )
    return local_catalog(name=lookup, create=create)


def load_table(catalog: Catalog, identifier: str | tuple[str, ...]) -> Table:
    """``catalog.load_table`` with an error that names what exists.

    An identifier without a namespace is a :class:`UsageError`; a missing table is a
    :class:`TableNotFoundError`, and an embedded catalog that this process created for the
    call is removed again, so a typo leaves no empty ``catalog.db`` behind.
    """
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    name = identifier if isinstance(identifier, str) else ".".join(identifier)
    if len(catalog.identifier_to_tuple(identifier)) < 2:
        raise UsageError(
            f"table identifiers are NAMESPACE.TABLE (like db.events); {name!r} has no namespace"
        )
    try:
        return catalog.load_table(identifier)
    except (NoSuchTableError, NoSuchNamespaceError):
        pass
    except FileNotFoundError as exc:
        raise _missing_metadata(catalog, identifier, name, exc) from None
    _forget_if_empty(catalog)
    hint = ""
    try:
        namespace = catalog.namespace_from(identifier)
        tables = [".".join(t) for t in catalog.list_tables(namespace)] if namespace else []
        if tables:
            hint = f"; tables in {'.'.join(namespace)}: {', '.join(sorted(tables)[:20])}"
        else:
            spaces = [".".join(n) for n in catalog.list_namespaces()]
            hint = f"; namespaces: {', '.join(sorted(spaces)) or 'none'}"
    except Exception:  # the hint is a courtesy; the error below is the message
        pass
    raise TableNotFoundError(f"table {name!r} not found in catalog {catalog.name!r}{hint}")


def _missing_metadata(
    catalog: Catalog, identifier: str | tuple[str, ...], name: str, exc: FileNotFoundError
) -> TableError:
    """The error of a table whose metadata file the catalog names but that cannot be read:
    a relative location (it resolves against the working folder), or a file that is gone."""
    from puffin.iceberg.catalog import sqlite
    from puffin.io.locations import is_url, local_path

    stored = sqlite.stored_metadata_location(catalog, catalog.identifier_to_tuple(identifier))
    if stored is not None and not is_url(stored) and not os.path.isabs(stored):
        return TableError(
            f"table {name!r} has the relative metadata location {stored!r}, which resolves "
            f"against the working folder ({os.getcwd()}): run from the folder it was created "
            "in, or register the table anew with an absolute location"
        )
    where = stored or str(exc.filename or exc)
    folder = local_path(os.path.dirname(where)) if stored else None
    newest = sorted(Path(folder).glob("*.metadata.json")) if folder else []
    hint = (
        f"; the newest metadata file in its folder is {newest[-1]}: register it "
        "(pyiceberg's catalog.register_table) if it is this table's"
        if newest
        else ""
    )
    return TableFileNotFoundError(
        f"table {name!r}: the catalog names the metadata file {where}, which is missing "
        f"(deleted outside any commit?){hint}"
    )


def resolve_snapshot(table: Table, snapshot_id: int | None) -> Snapshot:
    """The given snapshot, or the current one, with errors that say what is missing."""
    if snapshot_id is None:
        snapshot = table.current_snapshot()
        if snapshot is None:
            raise SnapshotNotFoundError(
                f"table {_table_name(table)} has no snapshot yet (no data was ever committed)"
            )
        return snapshot
    snapshot = table.snapshot_by_id(snapshot_id)
    if snapshot is None:
        known = [s.snapshot_id for s in table.snapshots()]
        shown = ", ".join(str(s) for s in known[-10:]) or "none"
        raise SnapshotNotFoundError(
            f"table {_table_name(table)} has no snapshot {snapshot_id} "
            f"({len(known)} snapshots; latest: {shown})"
        )
    return snapshot


def _table_name(table: Table) -> str:
    return ".".join(table.name()) if table.name() else table.metadata.location


# Embedded catalogs this process created, and the paths it created for them (folder and/or
# database file): removed by _forget_if_empty when the catalog holds nothing.
_CREATED: weakref.WeakKeyDictionary[Catalog, list[Path]] = weakref.WeakKeyDictionary()


def _forget_if_empty(catalog: Catalog) -> None:
    """Remove an embedded catalog created by this process if it holds no namespace."""
    created = _CREATED.pop(catalog, None)
    if not created:
        return
    try:
        if catalog.list_namespaces():
            return
    except Exception:  # pragma: no cover - then keep it: we cannot tell it is empty
        return
    sql: Any = catalog  # an SqlCatalog: its engine's connections go first
    sql.engine.dispose()
    for path in sorted(created, key=lambda p: len(p.parts), reverse=True):
        for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            if leftover.is_file():
                leftover.unlink()
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()

