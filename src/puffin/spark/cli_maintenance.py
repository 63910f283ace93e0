"""``puffin spark compact|expire|remove-orphans|rewrite-deletes``: upkeep on the executors.

Each command takes the options of its ``puffin table`` twin and prints the same lines and
JSON document (command ``spark ...``); :mod:`puffin.spark.cli` registers them and opens the
session (its ``run``), so this module does not import it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.cli.maintenance import (
    add_expire_options,
    add_orphan_options,
    expire_options,
    orphan_options,
    report_expiry,
    report_orphans,
)
from puffin.iceberg.cli.rewrites import (
    add_compact_options,
    add_rewrite_deletes_options,
    compact_options,
    report_compaction,
    report_rewrite_deletes,
    rewrite_deletes_size,
)

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

__all__ = ["add_maintenance_commands"]

#: ``run(args, job)``: ``job(spark, table)`` with the command's session and table.
Runner = Callable[[argparse.Namespace, Callable[["SparkSession", "Table"], Any]], Any]
#: ``command(commands, name, parents, help)``: a subcommand taking a table identifier.
Command = Callable[..., argparse.ArgumentParser]


def add_maintenance_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
    command: Command,
    run: Runner,
) -> None:
    """Add ``compact``, ``expire``, ``remove-orphans`` and ``rewrite-deletes`` to ``puffin
    spark``."""
    for name, help_text, add_options, handler in (
        ("compact",
         "rewrite data files with deleted rows (and small files), written on the executors",
         add_compact_options, _compact),
        ("expire", "expire old snapshots, their files deleted on the executors",
         add_expire_options, _expire),
        ("remove-orphans",
         "list (or --delete) files nothing references, listed and deleted on the executors",
         add_orphan_options, _remove_orphans),
        ("rewrite-deletes",
         "gather the position deletes into as few files as fit, read on the executors",
         add_rewrite_deletes_options, _rewrite_deletes),
    ):  # fmt: skip
        parser = command(commands, name, parents, help_text)
        add_options(parser)
        parser.set_defaults(func=_now(handler, run))


def _now(handler: Callable[[argparse.Namespace, Runner], int], run: Runner) -> Callable[..., int]:
    """``handler`` as a command's function, refusing ``--snapshot-id``: these jobs work on
    the table as it is now."""

    def command(args: argparse.Namespace) -> int:
        if args.snapshot_id is not None:
            raise UsageError(
                f"`puffin spark {args.spark_command}` works on the table as it is now; "
                "leave out --snapshot-id"
            )
        return handler(args, run)

    return command


def _compact(args: argparse.Namespace, run: Runner) -> int:
    options = {**compact_options(args), "progress": False}  # Spark's progress line instead
    from puffin.spark.compact import rewrite_data_files

    result = run(args, lambda spark, table: rewrite_data_files(spark, table, **options))
    return report_compaction(args, f"spark {args.spark_command}", result)


def _expire(args: argparse.Namespace, run: Runner) -> int:
    options = expire_options(args)
    from puffin.spark.table_files import expire_snapshots

    result = run(args, lambda spark, table: expire_snapshots(spark, table, **options))
    return report_expiry(args, f"spark {args.spark_command}", result)


def _remove_orphans(args: argparse.Namespace, run: Runner) -> int:
    options = orphan_options(args)
    from puffin.spark.table_files import remove_orphan_files

    result = run(args, lambda spark, table: remove_orphan_files(spark, table, **options))
    return report_orphans(args, f"spark {args.spark_command}", result)


def _rewrite_deletes(args: argparse.Namespace, run: Runner) -> int:
    size = rewrite_deletes_size(args)
    from puffin.spark.rewrite_deletes import rewrite_position_delete_files


    def job(spark: SparkSession, table: Table) -> Any:
        return rewrite_position_delete_files(spark, table, target_file_size_bytes=size)

    result = run(args, job)
    return report_rewrite_deletes(args, f"spark {args.spark_command}", result)
