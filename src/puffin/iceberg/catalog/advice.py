"""The ``puffin table`` command an error message suggests, written so that it runs when pasted.

A message that says what to do next names the whole command: the table's identifier (not
``TABLE``), each option as the command line spells it, and the catalog option that finds the
table when it is not in the catalog the command line opens by default (an embedded catalog
in another folder: ``--warehouse DIR``; a configured catalog other than the default one:
``--catalog NAME``).  ``tests/iceberg/cli/test_pasted_advice.py`` pastes each one.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["catalog_options", "table_command"]


def table_command(table: Table, command: str, *arguments: str) -> str:
    """```puffin table COMMAND IDENT ARGUMENTS...```, in backquotes, each word quoted as a
    shell needs it (``command`` may be two words: ``"stats update"``)."""
    identifier = ".".join(table.name())
    words = ["puffin", "table", *command.split(), identifier, *arguments, *catalog_options(table)]
    return f"`{shlex.join(words)}`"


def catalog_options(table: Table) -> list[str]:
    """What finds ``table``'s catalog on the command line: nothing for the default catalog,
    ``--warehouse DIR`` for an embedded catalog in another folder, ``--catalog NAME`` for
    another configured catalog (a table object made some other way: nothing)."""
    from puffin.iceberg.catalog.catalogs import CATALOG_DB, default_warehouse
    from puffin.iceberg.catalog.sqlite import database_of

    catalog = getattr(table, "catalog", None)
    if catalog is None:
        return []
    default, configured = _default_catalog()
    database = database_of(catalog)
    if database is not None and database[0].name == CATALOG_DB:  # an embedded catalog
        folder = database[0].parent.resolve()
        if folder == default_warehouse() and not configured:
            return []  # what the command line opens when no default catalog is configured
        return ["--warehouse", str(folder)]
    name = str(getattr(catalog, "name", "") or "")
    return [] if not name or name == default else ["--catalog", name]


def _default_catalog() -> tuple[str, bool]:
    """pyiceberg's default catalog name, and whether its configuration defines it."""
    try:
        from pyiceberg.utils.config import Config

        config = Config()
        name = config.get_default_catalog_name()
        return name, config.get_catalog_config(name) is not None
    except Exception:  # a configuration that does not read: the command line fails alike
        return "default", False
