"""``puffin table create|append|add-files``: loading data into a table, v3 included."""

from __future__ import annotations

import argparse
from typing import Any

from puffin.cli.output import print_json
from puffin.iceberg.cli._base import TableCommands
from puffin.iceberg.writes.parquet_files import require_present

__all__ = ["add_write_commands"]

_EPILOG_APPEND = """\
examples:
  puffin table append db.events day1.parquet day2.parquet
  puffin table add-files db.events s3://bucket/landing/part-0.parquet --json

append rewrites the rows into new data files as pyiceberg writes them (field ids, metrics,
target file size); add-files registers existing Parquet files as they are (no field ids;
columns matched by name).  On a v3 table both commit with the spec's row lineage, which
pyiceberg 0.12 cannot write; on v1/v2 tables they are pyiceberg's own.
"""


_EPILOG_CREATE = """\
examples:
  puffin table create db.events day1.parquet day2.parquet
  puffin table create db.events events/*.parquet --partition-by "days(event_time)" \\
      --partition-by "bucket(16, id) as shard" --format-version 3 --json

The first file gives the schema; the others must have the same columns with the same
types (a file that differs is named, with the column). The rows are appended: written
again into the table's own folder with field ids, metrics and its partitioning, as
`puffin table append` writes them (the files given are left as they are); `puffin table
add-files` registers files in place instead. A partition field is written as Spark writes
it (as `puffin table alter --add-partition-field` takes it). Nothing is created when a
check fails, and a load that fails drops the table again.
"""


def add_write_commands(commands: TableCommands) -> None:
    """Add ``create``, ``append`` and ``add-files`` to the ``puffin table`` subparsers."""
    from puffin.cli import add_progress_option

    create = commands.add(
        "create",
        _run_create,
        help="make a table from Parquet files (schema from the first; their rows appended)",
        epilog=_EPILOG_CREATE,
        opens=False,
        check=_check_create,
        table_help="table identifier to create, e.g. db.events",
    )
    create.add_argument("files", nargs="+", metavar="FILE", help="Parquet files")
    create.add_argument(
        "--partition-by", action="append", default=[], metavar="FIELD",
        help='a partition field: COLUMN, days(COLUMN), bucket(16, COLUMN), truncate(4, '
        'COLUMN), optionally "as NAME" (repeatable; default: unpartitioned)',
    )  # fmt: skip
    create.add_argument(
        "--format-version", type=int, choices=(1, 2, 3), default=2,
        help="the table's format version (default 2; 3 for deletion vectors and row ids)",
    )  # fmt: skip
    add_progress_option(create, "for the rows read")
    for name, run, what in (
        ("append", _run_append, "append the rows of Parquet files (rewritten into data files)"),
        ("add-files", _run_add_files, "register existing Parquet files as data files"),
    ):
        command = commands.add(name, run, help=what, epilog=_EPILOG_APPEND, check=check_files)
        command.add_argument("files", nargs="+", metavar="FILE", help="Parquet files")
        if name == "append":
            add_progress_option(command, "for the rows read")


def check_files(args: argparse.Namespace) -> None:
    """Every local file named exists and is a regular file, before the table is opened: a
    typo is one line saying so, not a path alone after pyiceberg has loaded."""
    from puffin.cli._common import require_regular

    require_present(args.files)
    for path in args.files:
        require_regular(path, "a Parquet file")


def _check_create(args: argparse.Namespace) -> None:
    """The files there, the partition fields spelled right, before anything loads."""
    from puffin.iceberg.cli.alter import parse_partition_field

    check_files(args)
    args.partition_fields = [parse_partition_field(text) for text in args.partition_by]


def _run_create(args: argparse.Namespace, _: None) -> int:
    from puffin.iceberg.catalog.catalogs import load_catalog
    from puffin.iceberg.writes.create import checked_files, create_table_from_parquet

    fields = [(c, t, n) for c, t, n in args.partition_fields]
    files = checked_files(list(args.files), fields)  # before a new catalog is made for it
    table = create_table_from_parquet(
        load_catalog(args.catalog, warehouse=args.warehouse),
        args.table,
        files,
        partition_by=fields,
        format_version=args.format_version,
        progress=args.progress,
    )
    spec = [str(f.name) for f in table.spec().fields]
    if not args.json:
        split = f", partitioned by {', '.join(spec)}" if spec else ""
        print(f"created {args.table} (format version {args.format_version}{split})")
    return _report(args, "table create", None, table, {"partition_fields": spec})


def _run_append(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.writes.append import append
    from puffin.iceberg.writes.parquet_files import ParquetFiles
    from puffin.support.progress import Progress

    before = table.current_snapshot()
    files = ParquetFiles(args.files)
    files.require_fit(table)
    with Progress(files.rows, label="append ", enabled=args.progress, delay=1.0) as bar:
        # pyiceberg writes a partitioned table from a whole table; an unpartitioned one streams
        rows = files.reader(bar) if table.spec().is_unpartitioned() else files.table(bar)
        committed = append(table, rows)
    return _report(args, "table append", before, committed)


def _run_add_files(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.writes.add_files import add_files

    before = table.current_snapshot()
    return _report(args, "table add-files", before, add_files(table, list(args.files)))


def _report(
    args: argparse.Namespace,
    command: str,
    before: Any,
    table: Any,
    extra: dict[str, Any] | None = None,
) -> int:
    """What a load committed, in a line or as the document ``command`` (docs/cli.md);
    ``extra``: the command's own keys."""
    snapshot = table.current_snapshot()
    previous = None if before is None else before.snapshot_id
    changed = snapshot is not None and snapshot.snapshot_id != previous
    summary = dict(snapshot.summary.additional_properties) if changed and snapshot.summary else {}
    doc = {
        "table": args.table,
        "files": list(args.files),
        "snapshot_id": snapshot.snapshot_id if changed else None,
        "added_records": int(summary.get("added-records", 0)),
        "added_data_files": int(summary.get("added-data-files", 0)),
        "first_row_id": getattr(snapshot, "first_row_id", None) if changed else None,
        "format_version": table.metadata.format_version,
        "metadata_location": table.metadata_location,
        **(extra or {}),
    }
    if args.json:
        print_json(command, doc)
    elif not changed:
        print("nothing to add: the files hold no rows; nothing was committed")
    else:
        print(
            f"committed snapshot {doc['snapshot_id']}: {doc['added_records']} rows in "
            f"{doc['added_data_files']} data file(s)"
        )
    return 0
