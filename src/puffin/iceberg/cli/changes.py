"""``puffin table changes``: the rows that changed between two snapshots, as CSV, JSON Lines
or Parquet, streamed as ``table scan`` streams rows (:func:`puffin.iceberg.changelog`)."""

from __future__ import annotations

import argparse
from typing import Any

from puffin.iceberg.cli._base import TableCommands, check_where_syntax
from puffin.iceberg.cli.scan import (
    add_output_options,
    check_output,
    column_list,
    row_progress,
    write_rows,
)

__all__ = ["add_changes_command"]

_EPILOG = """\
examples:
  puffin table changes db.events --from 4411093232913391120
  puffin table changes db.events --from v1 --to audit --where "category = 3" --format json
  puffin table changes db.events --from v1 --updates --net --format parquet -o changes.parquet

--from and --to take a snapshot id, a tag or a branch; --from is exclusive, --to inclusive
(default: the current snapshot). Each row has _change_type (INSERT, DELETE; UPDATE_BEFORE and
UPDATE_AFTER with --updates), _change_ordinal and _commit_snapshot_id, on a v3 table _row_id
and _last_updated_sequence_number, and _file and _pos (where the row is, or was). Rows deleted
by deletion vectors, position deletes and equality deletes are all reported; replace commits
(compaction, rewrites) change no row. --updates pairs a row deleted and inserted by one commit
by its _row_id (v3) or --identifier-columns; --net gives each row as it was at --from and is
at --to. A snapshot of the range that was expired: exit status 2.
"""


def add_changes_command(commands: TableCommands) -> None:
    """Add ``changes`` to the ``puffin table`` subparsers."""
    from puffin.cli import add_progress_option

    command = commands.add(
        "changes",
        _run,
        help="print the rows that changed between two snapshots (a changelog)",
        epilog=_EPILOG,
        json=False,  # --format json: the rows themselves
        check=_check,
    )
    command.add_argument(
        "--from", dest="start", metavar="SNAPSHOT", required=True,
        help="snapshot id, tag or branch the changes come after (exclusive)",
    )  # fmt: skip
    command.add_argument(
        "--to", dest="end", metavar="SNAPSHOT",
        help="snapshot id, tag or branch the changes go up to (default: the current snapshot)",
    )  # fmt: skip
    command.add_argument("--where", metavar="FILTER", help='row filter, e.g. "category = 3"')
    command.add_argument("--columns", metavar="A,B", help="columns (default: every column)")
    command.add_argument(
        "--updates", action="store_true",
        help="pair a row deleted and inserted by one commit as UPDATE_BEFORE/UPDATE_AFTER",
    )  # fmt: skip
    command.add_argument(
        "--identifier-columns", metavar="A,B",
        help="the columns that pair updates (default: _row_id on v3, the schema's identifier "
        "fields on v2)",
    )  # fmt: skip
    command.add_argument(
        "--net", action="store_true",
        help="net changes: each row as it was at --from and is at --to",
    )  # fmt: skip
    add_output_options(command)
    add_progress_option(command, "and the rows go to --output")


def _check(args: argparse.Namespace) -> None:
    """What needs no table: the output and the condition's syntax."""
    check_output(args)
    check_where_syntax(args)


def _run(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.changelog.scan import changes

    identifiers = None
    if args.identifier_columns:
        identifiers = [c.strip() for c in args.identifier_columns.split(",")]
    scan = changes(
        table, args.start, args.end, args.where, column_list(args.columns),
        compute_updates=args.updates or identifiers is not None,
        identifier_columns=identifiers, net_changes=args.net,
    )  # fmt: skip
    reader = scan.to_arrow_batch_reader(progress=row_progress(args))
    return write_rows(reader, args.format, args.output)
