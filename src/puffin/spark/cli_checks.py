"""What ``puffin spark`` checks before it starts Spark (12 to 15 s on 2 cores).

Two steps, each as early as it can be: :func:`check_arguments` before anything loads (the
options that need no table: a ``--where`` that does not parse, a size, an age, options that
exclude each other), and :func:`check_table` once the table is loaded, which costs a second
and no JVM (the snapshot exists, ``--where`` names the table's columns with values of their
types, ``--columns`` are the table's).  A mistake is then one line and exit 2 (or 1 for a
snapshot the table does not have) in a second or two, not after Spark has started.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from puffin.errors import UsageError

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["check_arguments", "check_table", "current_only"]


def check_arguments(args: argparse.Namespace) -> None:
    """The options of any ``puffin spark`` command that need no table."""
    where = getattr(args, "where", None)
    if where is not None:
        from puffin.iceberg.scan.where import parse_where

        parse_where(where)  # its syntax; what it names is checked against the table


def current_only(parser: argparse.ArgumentParser) -> None:
    """Mark a command that works on the current snapshot only (``--snapshot-id``, when
    given, must name it)."""
    parser.set_defaults(current_only=True)


def check_table(args: argparse.Namespace, table: Table) -> None:
    """The options that need the table, checked before Spark starts."""
    from puffin.iceberg.catalog.catalogs import resolve_snapshot

    current = table.current_snapshot()
    snapshot = current if args.snapshot_id is None else resolve_snapshot(table, args.snapshot_id)
    if getattr(args, "current_only", False) and snapshot != current:
        raise UsageError(
            f"`puffin spark {args.spark_command}` works on the current snapshot only "
            f"({current.snapshot_id if current else 'none'}); leave out --snapshot-id"
        )
    where = getattr(args, "where", None)
    if where is not None:
        from puffin.iceberg.scan.row_filter import check_where

        check_where(table, where)  # the columns and literals, against the table's schema
    columns = getattr(args, "columns", None)
    if columns and snapshot is not None:
        from puffin.iceberg.scan.columns import by_current_names, resolve_columns, snapshot_schema

        names: list[str | int] = [c.strip() for c in columns.split(",") if c.strip()]
        schema = snapshot_schema(table, snapshot.schema_id)
        resolve_columns(schema, by_current_names(table.schema(), schema, names))
