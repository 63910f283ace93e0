"""``puffin table append|add-files``: loading data into a table, v3 included."""

from __future__ import annotations

import argparse
from typing import Any

from puffin.cli.output import print_json
from puffin.errors import UsageError
from puffin.iceberg.cli._base import TableCommands

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


def add_write_commands(commands: TableCommands) -> None:
    """Add ``append`` and ``add-files`` to the ``puffin table`` subparsers."""
    for name, run, what in (
        ("append", _run_append, "append the rows of Parquet files (rewritten into data files)"),
        ("add-files", _run_add_files, "register existing Parquet files as data files"),
    ):
        command = commands.add(name, run, help=what, epilog=_EPILOG_APPEND)
        command.add_argument("files", nargs="+", metavar="FILE", help="Parquet files")


def _reader(paths: list[str], partitioned: bool) -> Any:
    """The files' rows: streamed, or whole for a partitioned table (pyiceberg's limit).
    A file that is not Parquet, or files whose schemas differ, are the user's mistake."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from puffin.cli._common import require_regular

    for path in paths:
        require_regular(path, "a Parquet file")
    try:
        dataset = ds.dataset(paths, format="parquet")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        why = " ".join(str(exc).split())
        raise UsageError(f"cannot read the files as Parquet: {why}") from None
    if partitioned:
        return dataset.to_table()
    import pyarrow.parquet as pq

    def batches() -> Any:
        # A file at a time, a column chunk at a time: pyarrow's dataset scanner and a
        # pre-buffered ParquetFile keep what they read until the end (apache/arrow#39808).
        for path in dataset.files:
            with dataset.filesystem.open_input_file(path) as stream:
                source = pq.ParquetFile(stream, pre_buffer=False)
                missing = sorted(set(dataset.schema.names) - set(source.schema_arrow.names))
                if missing:
                    raise UsageError(
                        f"{path} has no column {', '.join(missing)}: the files of one "
                        f"append need the columns of the first ({paths[0]})"
                    )
                for batch in source.iter_batches(batch_size=65536):
                    yield batch.select(dataset.schema.names).cast(dataset.schema)

    return pa.RecordBatchReader.from_batches(dataset.schema, batches())


def _run_append(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.writes.append import append

    before = table.current_snapshot()
    partitioned = not table.spec().is_unpartitioned()
    import pyarrow as pa

    try:
        committed = append(table, _reader(list(args.files), partitioned))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # a file that reads wrong midway
        raise UsageError(f"cannot read the files: {' '.join(str(exc).split())}") from None
    return _report(args, "table append", before, committed)


def _run_add_files(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.writes.add_files import add_files

    before = table.current_snapshot()
    return _report(args, "table add-files", before, add_files(table, list(args.files)))


def _report(args: argparse.Namespace, command: str, before: Any, table: Any) -> int:
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
