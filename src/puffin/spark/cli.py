"""``puffin spark stats|dv|migrate-deletes|convert-equality-deletes`` (and, from
:mod:`.cli_maintenance`, ``compact|expire|remove-orphans|rewrite-deletes``): the Spark jobs.

:func:`register_cli` is the ``puffin`` command's plugin hook.  This module is imported only
by the command line, so ``import puffin.spark`` stays free of argparse; pyspark and
pyiceberg are imported when a command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from puffin.blobs.standard import NDV
from puffin.cli.output import print_json
from puffin.errors import IntegrationError, MissingDependencyError, PuffinError, UsageError
from puffin.iceberg.cli.deletes import written_files, written_line
from puffin.spark._java import check_java, local_session, log_directory
from puffin.spark._progress import JobProgress
from puffin.spark.cli_checks import check_arguments, check_table, current_only
from puffin.spark.cli_maintenance import add_maintenance_commands
from puffin.spark.deletes import (
    delete_rows,
    deletion_vectors_for,
    position_deletes_to_deletion_vectors,
    upgrade_to_v3,
)
from puffin.spark.ndv import ENGINES
from puffin.spark.statistics import compute_table_statistics
from puffin.support.deps import install_hint, require

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

    from puffin.blobs.dv.files import DeletionVectorEntry
    from puffin.iceberg import DeleteResult

__all__ = ["register_cli"]

# Uncommitted vectors never go into the table's folders, where nothing would remove them.
_OUTPUT_HELP = "Puffin file to write (default: a new temporary folder)"

_CLI_EPILOG = """\
examples:
  puffin spark stats db.events                       sketch every column, commit the file
  puffin spark stats db.events --columns id,user --no-commit --json
  puffin spark dv db.events --where "country = 'XX' and ts < '2024-01-01T00:00:00'"
  puffin spark dv db.events --where "category = 7" --commit   delete them
  puffin spark migrate-deletes db.events             v2 position deletes -> deletion vectors
  puffin spark migrate-deletes db.events --commit    ... committed: the table becomes v3
  puffin spark compact db.events --target-size 128MB  files written again on the executors
  puffin spark expire db.events --older-than 7d       the expired files deleted there too
  puffin spark convert-equality-deletes db.cdc        equality deletes -> deletion vectors
  puffin spark stats prod.db.events --catalog prod --master spark://host:7077

The session is local[*] unless --master (or SPARK_REMOTE, for Spark Connect) says otherwise;
a local session needs Java 17+, and what its JVM prints goes to $TMPDIR/puffin-spark-UID/
spark.log, not the terminal.  On a terminal a progress line on stderr shows the phase
(loading the table, starting Spark), then the tasks of Spark's stages (--no-progress: none).
The catalog is --catalog NAME from pyiceberg's configuration, or --warehouse DIR for the
embedded SQLite catalog (default: pyiceberg's default catalog if configured, else the
embedded catalog in $PUFFIN_WAREHOUSE or ./warehouse).
"""

_FORMATTER = argparse.RawDescriptionHelpFormatter


def register_cli(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``puffin spark ...`` to the ``puffin`` command (the CLI's plugin hook)."""
    from puffin.cli import add_progress_option, common_options

    shared = _shared_options()
    add_progress_option(shared)
    parents = [shared, common_options()]
    top = subparsers.add_parser(
        "spark",
        help="table statistics and deletion vectors computed on Spark (needs the spark extra)",
        description="Compute an Iceberg table's NDV statistics or deletion vectors on Spark.",
        epilog=_CLI_EPILOG,
        formatter_class=_FORMATTER,
    )
    top.set_defaults(func=lambda args: _cli_help(top))
    commands = top.add_subparsers(dest="spark_command", metavar="COMMAND")

    stats = _command(
        commands,
        "stats",
        parents,
        "compute NDV sketches of a snapshot on Spark and commit the statistics file",
    )
    stats.add_argument("--columns", help="comma-separated columns (default: all primitive)")
    stats.add_argument("--engine", choices=ENGINES, default="auto", help="sketch engine")
    stats.add_argument("--no-commit", action="store_true", help="write the file, do not commit")
    stats.set_defaults(func=_cli_stats)
    _add_delete_commands(commands, parents)
    add_maintenance_commands(commands, parents, _command, _run_job)


def _add_delete_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    """``dv``, ``migrate-deletes`` and ``convert-equality-deletes``."""
    dv = _command(
        commands, "dv", parents, "write deletion vectors for the rows matching a condition"
    )
    dv.add_argument(
        "--where",
        required=True,
        metavar="COND",
        help="row filter in pyiceberg's syntax, as `puffin table delete` takes",
    )
    dv.add_argument(
        "--all-rows",
        action="store_true",
        help="with --commit: allow a condition that matches every row",
    )
    dv.add_argument(
        "--no-merge",
        action="store_true",
        help="leave out positions the snapshot already deletes in those files",
    )
    dv.add_argument("--output", metavar="LOCATION", help=_OUTPUT_HELP)
    dv.add_argument(
        "--commit",
        action="store_true",
        help="commit the rows as deleted: on v3 one `delete` snapshot merged with the live "
        "vectors; on v2 as the table's write.delete.mode says",
    )
    dv.set_defaults(func=_cli_dv)

    migrate = _command(
        commands,
        "migrate-deletes",
        parents,
        "turn the table's v2 position-delete files into deletion vectors",
    )
    migrate.add_argument("--output", metavar="LOCATION", help=_OUTPUT_HELP)
    migrate.add_argument(
        "--commit",
        action="store_true",
        help="upgrade the table to format version 3 with those vectors, in one commit",
    )
    migrate.set_defaults(func=_cli_migrate)
    current_only(migrate)

    convert = _command(
        commands,
        "convert-equality-deletes",
        parents,
        "replace the table's equality deletes by deletion vectors, keys matched on Spark",
    )
    convert.set_defaults(func=_cli_convert)


def _shared_options() -> argparse.ArgumentParser:
    """The options every ``puffin spark`` command takes: the session, catalog and output."""
    shared = argparse.ArgumentParser(add_help=False)
    group = shared.add_argument_group("Spark and catalog")
    group.add_argument(
        "--master", default="local[*]", help="Spark master, or sc://host:port (default local[*])"
    )
    group.add_argument(
        "--ship-environment",
        action="store_true",
        help="send this environment to the executors (a PEX built once and cached) for "
        "clusters whose nodes lack the library",
    )
    group.add_argument("--catalog", metavar="NAME", help="catalog from pyiceberg's configuration")
    group.add_argument("--warehouse", metavar="DIR", help="embedded SQLite catalog in DIR")
    group.add_argument("--snapshot-id", type=int, help="snapshot (default: current)")
    group.add_argument("--json", action="store_true", help="print the result as JSON")
    return shared


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    parents: list[argparse.ArgumentParser],
    help_text: str,
) -> argparse.ArgumentParser:
    parser = commands.add_parser(name, help=help_text, parents=parents, formatter_class=_FORMATTER)
    parser.add_argument("table", help="table identifier, e.g. db.events")
    return parser


def _cli_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@contextlib.contextmanager
def _cli_errors() -> Iterator[None]:
    """Errors from other libraries (pyspark, pyiceberg) become one-line errors of our tree.

    This library's own errors pass through: the command line maps each branch of
    :mod:`puffin.errors` to its exit status (a missing Java is a setup error, exit 2).
    """
    from puffin.cli import InputError

    try:
        yield
    except (PuffinError, IntegrationError):
        raise
    except ImportError as exc:
        raise MissingDependencyError(f"{exc}: {install_hint('spark,iceberg')}") from None
    except (LookupError, NotImplementedError, ValueError) as exc:
        raise InputError(_first_line(exc)) from None
    except Exception as exc:
        if type(exc).__module__.startswith("pyspark.errors"):
            raise InputError(_first_line(exc)) from None
        raise


def _cli_open(args: argparse.Namespace, progress: JobProgress) -> tuple[SparkSession, Table]:
    # Both extras first: a missing one is the same one line (exit 2) whatever else is wrong.
    require("pyspark.sql", "spark")
    require("pyiceberg.expressions.parser", "iceberg")  # the first checks need it, no more
    check_arguments(args)  # a mistake in the options is told before Java is even looked for
    require("pyiceberg.catalog", "iceberg")
    from puffin.iceberg import load_catalog, load_table

    if not (args.master.startswith("sc://") or os.environ.get("SPARK_REMOTE")):
        check_java()  # before the table: the one thing a fresh machine may lack
    progress.phase("loading the table")
    catalog = load_catalog(args.catalog, warehouse=args.warehouse, create=False)
    table = load_table(catalog, args.table)
    check_table(args, table)  # a second, no JVM: Spark starts only for a job that can run
    progress.phase(
        "packing the environment (once) and starting Spark"
        if args.ship_environment
        else "starting Spark"
    )
    spark = local_session(
        args.master,
        log_file=os.path.join(log_directory(), "spark.log"),
        ship_environment=args.ship_environment,
    )
    progress.phase("planning")
    return spark, table


def _cli_stats(args: argparse.Namespace) -> int:
    with _cli_errors(), JobProgress(enabled=args.progress) as progress:
        spark, table = _cli_open(args, progress)
        from puffin.iceberg import SkippedColumnWarning

        columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
        with progress.watching(spark), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stats = compute_table_statistics(
                spark,
                table,
                columns=columns,
                snapshot_id=args.snapshot_id,
                commit=not args.no_commit,
                engine=args.engine,
            )
    for w in caught:
        if issubclass(w.category, SkippedColumnWarning):
            sys.stderr.write(f"puffin spark stats: note: {w.message}\n")
    if args.json:
        doc = stats.model_dump(by_alias=True, exclude_none=True)
        doc["committed"] = not args.no_commit
        print_json(f"spark {args.spark_command}", doc)
        return 0
    names = {f.field_id: f.name for f in table.schema().fields}
    print(f"{'wrote' if args.no_commit else 'committed'} {stats.statistics_path}")
    print(
        f"  snapshot {stats.snapshot_id}, {stats.file_size_in_bytes} bytes, "
        f"footer {stats.file_footer_size_in_bytes} bytes"
    )
    for b in stats.blob_metadata:
        name = names.get(b.fields[0], f"field {b.fields[0]}")
        print(f"  {name:<20} ndv {(b.properties or {}).get(NDV, '?')}")
    return 0


def _vector_docs(entries: Sequence[DeletionVectorEntry]) -> list[dict[str, object]]:
    keys = ("referenced_data_file", "content_offset", "content_size_in_bytes", "record_count")
    return [{k: getattr(e, k) for k in keys} for e in entries]


def _print_entries(args: argparse.Namespace, entries: Sequence[DeletionVectorEntry]) -> int:
    if args.json:
        doc = {
            "path": entries[0].path if entries else None,
            "file_size_in_bytes": entries[0].file_size_in_bytes if entries else None,
            "deletion_vectors": _vector_docs(entries),
        }
        print_json(f"spark {args.spark_command}", doc)
        return 0
    if not entries:
        print("no rows to delete: nothing written")
        return 0
    total = sum(e.record_count for e in entries)
    print(f"wrote {entries[0].path} ({entries[0].file_size_in_bytes} bytes)")
    print(f"  {len(entries)} deletion vectors, {total} deleted rows")
    for e in entries:
        print(f"  {e.record_count:>10}  {e.referenced_data_file}")
    return 0


def _print_committed(args: argparse.Namespace, result: DeleteResult) -> int:
    if args.json:
        doc = {
            "committed": result.snapshot_id is not None,
            "snapshot_id": result.snapshot_id,
            "deleted_rows": result.deleted_rows,
            "path": result.puffin_path,
            "deletion_vectors": _vector_docs(result.vectors),
            **written_files(result),
        }
        print_json(f"spark {args.spark_command}", doc)
    elif result.snapshot_id is None:
        print("no live row matches: nothing committed")
    else:
        print(f"committed snapshot {result.snapshot_id}: {result.deleted_rows} rows deleted")
        print(f"  {written_line(result)}")
    return 0


def _cli_dv(args: argparse.Namespace) -> int:
    if args.commit and (args.output or args.no_merge or args.snapshot_id is not None):
        raise UsageError(
            "--commit deletes from the current snapshot into the table's own Puffin file: "
            "it takes no --output, --no-merge or --snapshot-id"
        )
    with _cli_errors(), JobProgress(enabled=args.progress) as progress:
        spark, table = _cli_open(args, progress)
        with progress.watching(spark):
            if args.commit:
                result = delete_rows(spark, table, args.where, allow_all_rows=args.all_rows)
            else:
                entries = deletion_vectors_for(
                    spark,
                    table,
                    args.where,
                    snapshot_id=args.snapshot_id,
                    merge_existing=not args.no_merge,
                    location=args.output,
                )
    return _print_committed(args, result) if args.commit else _print_entries(args, entries)


def _cli_migrate(args: argparse.Namespace) -> int:
    if args.commit and args.output:
        raise UsageError("--commit writes the vectors into the table: it takes no --output")
    with _cli_errors(), JobProgress(enabled=args.progress) as progress:
        spark, table = _cli_open(args, progress)
        with progress.watching(spark):
            if args.commit:
                before = table.metadata.format_version
                upgraded = upgrade_to_v3(spark, table)
            else:
                entries = position_deletes_to_deletion_vectors(spark, table, location=args.output)
    if not args.commit:
        return _print_entries(args, entries)
    snapshot = upgraded.current_snapshot()
    doc = {
        "committed": before < 3,
        "previous_format_version": before,
        "format_version": upgraded.metadata.format_version,
        "snapshot_id": None if snapshot is None else snapshot.snapshot_id,
        "metadata_location": upgraded.metadata_location,
    }
    if args.json:
        print_json(f"spark {args.spark_command}", doc)
    elif before >= 3:
        print(f"{args.table} is already format version {before}; nothing to do")
    else:
        print(f"upgraded {args.table} to format version 3, snapshot {doc['snapshot_id']}")
    return 0


def _cli_convert(args: argparse.Namespace) -> int:
    from puffin.iceberg.cli.rewrites import report_conversion
    from puffin.spark.convert import convert_equality_deletes

    if args.snapshot_id is not None:
        raise UsageError("convert-equality-deletes works on the current snapshot only")
    result = _run_job(args, convert_equality_deletes)
    return report_conversion(args, f"spark {args.spark_command}", result)


def _run_job(args: argparse.Namespace, job: Callable[[SparkSession, Table], Any]) -> Any:
    """``job(spark, table)`` for a command: the session opened, Spark's progress shown,
    other libraries' errors made one line (``convert-equality-deletes`` and
    :mod:`.cli_maintenance`'s commands)."""
    with _cli_errors(), JobProgress(enabled=args.progress) as progress:
        spark, table = _cli_open(args, progress)
        with progress.watching(spark):
            return job(spark, table)
