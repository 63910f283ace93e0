"""How a ``puffin table`` subcommand is declared: once, the same way for every one of them.

Every subcommand takes the table as its first argument, the catalog options (``--catalog``,
``--warehouse``), the common options (``--debug``, ``--color``) and, when it prints a
result, ``--json``; :meth:`TableCommands.add` declares all of that, and the handler gets
the table already opened (pyiceberg is imported only when a command runs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["TABLE_HELP", "TableCommands", "show_help"]

TABLE_HELP = "table identifier, e.g. db.events"
_FORMATTER = argparse.RawDescriptionHelpFormatter
Handler = Callable[[argparse.Namespace, Any], int]


def _catalog_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("catalog")
    group.add_argument(
        "--catalog",
        metavar="NAME",
        help="catalog name from ~/.pyiceberg.yaml or PYICEBERG_CATALOG__NAME__* variables "
        "(default: pyiceberg's default catalog if configured, else the embedded SQLite catalog)",
    )
    group.add_argument(
        "--warehouse",
        metavar="DIR",
        help="use the embedded SQLite catalog in DIR (DIR/catalog.db); default "
        "$PUFFIN_WAREHOUSE or ./warehouse",
    )
    return parent


def _parents() -> list[argparse.ArgumentParser]:
    from puffin.cli import common_options

    return [_catalog_options(), common_options()]


def show_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The handler of a command group given no subcommand: its help, exit status 2."""

    def handler(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return handler


@dataclass(frozen=True)
class TableCommands:
    """The subparsers of ``puffin table`` (or of one of its groups, such as ``stats``) and
    the function that opens the table an invocation names."""

    groups: Any
    open_table: Callable[[argparse.Namespace], Table]

    def add(
        self,
        name: str,
        run: Handler,
        *,
        help: str,
        epilog: str | None = None,
        json: bool = True,
        opens: bool = True,
        table_help: str = TABLE_HELP,
    ) -> argparse.ArgumentParser:
        """``puffin table NAME TABLE [--catalog ...] [--warehouse ...] [--json]``, which
        runs ``run(args, table)``; ``opens=False``: ``run(args, None)``, for a command that
        makes its table (``sample``)."""
        parser: argparse.ArgumentParser = self.groups.add_parser(
            name, help=help, epilog=epilog, parents=_parents(), formatter_class=_FORMATTER
        )
        parser.add_argument("table", help=table_help)
        if json:
            parser.add_argument(
                "--json", action="store_true", help="print the result as JSON (docs/cli.md)"
            )
        if opens:
            parser.set_defaults(func=lambda args: run(args, self.open_table(args)))
        else:
            parser.set_defaults(func=lambda args: run(args, None))
        return parser

    def group(self, name: str, *, help: str) -> TableCommands:
        """A group of subcommands (``puffin table stats ...``), declared the same way."""
        parser = self.groups.add_parser(name, help=help, formatter_class=_FORMATTER)
        parser.set_defaults(func=show_help(parser))
        subparsers = parser.add_subparsers(dest=f"{name}_command", metavar="COMMAND")
        return TableCommands(subparsers, self.open_table)
