"""How a ``puffin table`` subcommand is declared: once, the same way for every one of them.

Every subcommand takes the table as its first argument, the catalog options (``--catalog``,
``--warehouse``), the common options (``--debug``, ``--color``) and, when it prints a
result, ``--json``; :meth:`TableCommands.add` declares all of that, and the handler gets
the table already opened (pyiceberg is imported only when a command runs).  A command's
``check`` runs first, before the table is opened: a mistake in the options that needs no
table is answered in a tenth of a second, not after the two seconds pyiceberg takes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["TABLE_HELP", "TableCommands", "at_least_one", "check_where_syntax", "show_help"]

TABLE_HELP = "table identifier, e.g. db.events"
_FORMATTER = argparse.RawDescriptionHelpFormatter
Handler = Callable[[argparse.Namespace, Any], int]
#: Checks a command's options before its table is opened; raises a ``UsageError``.
Check = Callable[[argparse.Namespace], object]


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


def check_where_syntax(args: argparse.Namespace) -> None:
    """``--where``'s syntax, read before the table opens (pyiceberg's parser alone, a tenth
    of a second; the columns and literals are bound to the table's schema later)."""
    where = getattr(args, "where", None)
    if where is not None:
        from puffin.iceberg.scan.where import parse_where

        parse_where(where)


def at_least_one(args: argparse.Namespace, *dests: str) -> None:
    """Each count option given (``--retain-last``, ``--min-input-files``) is 1 or more, told
    in the option's own name before the table opens."""
    for dest in dests:
        value = getattr(args, dest)
        if value is not None and value < 1:
            option = "--" + dest.replace("_", "-")
            raise UsageError(f"{option} must be at least 1, got {value}")


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
        check: Check | None = None,
    ) -> argparse.ArgumentParser:
        """``puffin table NAME TABLE [--catalog ...] [--warehouse ...] [--json]``, which
        runs ``check(args)`` and then ``run(args, table)``; ``opens=False``: ``run(args,
        None)``, for a command that makes its table (``sample``, ``create``)."""
        parser: argparse.ArgumentParser = self.groups.add_parser(
            name, help=help, epilog=epilog, parents=_parents(), formatter_class=_FORMATTER
        )
        parser.add_argument("table", help=table_help)
        if json:
            parser.add_argument(
                "--json", action="store_true", help="print the result as JSON (docs/cli.md)"
            )
        parser.set_defaults(func=self._handler(run, check, opens))
        return parser

    def _handler(self, run: Handler, check: Check | None, opens: bool) -> Callable[..., int]:
        def handler(args: argparse.Namespace) -> int:
            if getattr(args, "json", False) and getattr(args, "progress", None) is None:
                args.progress = False  # a document on stdout: no progress line beside it
            if check is not None:
                check(args)
            return run(args, self.open_table(args) if opens else None)

        return handler

    def group(self, name: str, *, help: str) -> TableCommands:
        """A group of subcommands (``puffin table stats ...``), declared the same way."""
        parser = self.groups.add_parser(name, help=help, formatter_class=_FORMATTER)
        parser.set_defaults(func=show_help(parser))
        subparsers = parser.add_subparsers(dest=f"{name}_command", metavar="COMMAND")
        return TableCommands(subparsers, self.open_table)
