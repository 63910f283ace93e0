"""``puffin table scan``: a table's live rows (deletes applied) as CSV, JSON Lines or Parquet.

Rows stream one data file at a time (:func:`puffin.iceberg.scan_table`), so memory stays
about one row group whatever the table's size. ``--output FILE`` is written atomically:
an interrupted scan leaves no partial file.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.cli._base import TableCommands, check_where_syntax

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "add_output_options",
    "add_scan_command",
    "check_output",
    "column_list",
    "row_progress",
    "write_rows",
]

_EPILOG = """\
examples:
  puffin table scan db.events --where "category = 3" --columns id,user_name --limit 10
  puffin table scan db.events --columns id,_row_id --format json
  puffin table scan db.events --format parquet --output events.parquet

Deletion vectors, position deletes and equality deletes are applied.  --where
takes pyiceberg's filter syntax, bound strictly (9.5 on an integer column is an error, not
a rounded value).  _row_id and _last_updated_sequence_number are the row-lineage columns
of a v3 table.  csv and json write binary values as base64, uuids as text, nested values
(csv) as JSON.
"""


def add_scan_command(commands: TableCommands) -> None:
    """Add ``scan`` to the ``puffin table`` subparsers."""
    from puffin.cli import add_progress_option

    scan = commands.add(
        "scan",
        _run,
        help="print a table's rows (deletes applied) as csv, json or parquet",
        epilog=_EPILOG,
        json=False,  # --format json: the rows themselves
        check=_check,
    )
    scan.add_argument("--where", metavar="FILTER", help='row filter, e.g. "category = 3"')
    scan.add_argument(
        "--columns", metavar="A,B", help="columns to read (default: every column)"
    )
    scan.add_argument("--snapshot-id", type=int, metavar="ID", help="read this snapshot")
    scan.add_argument("--limit", type=int, metavar="N", help="at most N rows")
    add_output_options(scan)
    add_progress_option(scan, "and the rows go to --output")


def _check(args: argparse.Namespace) -> None:
    """What needs no table: the limit, the output, the condition's syntax."""
    if args.limit is not None and args.limit < 0:
        raise UsageError(f"--limit must be 0 or more, got {args.limit}")
    check_output(args)
    check_where_syntax(args)


def _run(args: argparse.Namespace, table: Any) -> int:
    from puffin.iceberg.scan.table_scan import scan_table

    scan = scan_table(table, args.where, column_list(args.columns), args.snapshot_id, args.limit)
    reader = scan.to_arrow_batch_reader(progress=row_progress(args))
    return write_rows(reader, args.format, args.output)


def add_output_options(command: argparse.ArgumentParser) -> None:
    """``--format`` and ``--output``, as ``table scan`` and ``table changes`` take them."""
    command.add_argument(
        "--format", choices=("csv", "json", "parquet"), default="csv",
        help="csv (default), json (one object per line) or parquet",
    )  # fmt: skip
    command.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")


def check_output(args: argparse.Namespace) -> None:
    """Refuse Parquet on a terminal and an ``--output`` that cannot be written, before the
    table is opened."""
    from puffin.cli._common import is_terminal, require_output

    binary_out = getattr(sys.stdout, "buffer", None) is not None and not is_terminal(sys.stdout)
    if args.output is None and args.format == "parquet" and not binary_out:
        raise UsageError("refusing to write Parquet to a terminal: pass --output FILE")
    if args.output is not None:
        require_output(args.output)


def column_list(text: str | None) -> tuple[str, ...]:
    """``--columns A,B`` as names (every column when not given)."""
    return ("*",) if not text else tuple(c.strip() for c in text.split(","))


def row_progress(args: argparse.Namespace) -> bool | None:
    """Whether to draw a progress bar for a command that writes rows."""
    # Rows on a terminal show progress themselves; a bar would mix with them.
    return args.progress if args.output is not None or args.progress else False


def write_rows(reader: pa.RecordBatchReader, fmt: str, output: str | None) -> int:
    """Stream ``reader`` as ``fmt`` (csv, json or parquet) to ``output`` (written
    atomically: an interrupted write leaves no file) or stdout; exit status 0."""
    write = {"csv": _write_csv, "json": _write_json, "parquet": _write_parquet}[fmt]
    if output is None:
        sys.stdout.flush()
        out = getattr(sys.stdout, "buffer", None)
        if out is None:  # a program that replaced stdout with a text stream gets the text
            out = _BinaryOut(lambda b: sys.stdout.write(bytes(b).decode()), sys.stdout.flush)
        write(reader, out)
        out.flush()
        return 0
    from puffin.io.local import LocalSink

    sink = LocalSink(output)
    try:
        write(reader, _BinaryOut(sink.write))
        sink.commit()
    finally:
        sink.discard()
    return 0


class _BinaryOut:
    """A byte sink as the file object pyarrow's writers take: ``write`` takes the bytes,
    ``flush`` (optional) follows each flush."""

    def __init__(
        self, write: Callable[[memoryview], Any], flush: Callable[[], Any] = lambda: None
    ) -> None:
        self._write, self._flush, self._written, self.closed = write, flush, 0, False

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._write(view)
        self._written += len(view)
        return len(view)

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        self._flush()

    def close(self) -> None:
        self.closed = True


def _write_parquet(reader: pa.RecordBatchReader, out: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetWriter(pa.PythonFile(out, mode="w"), reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)


def _write_csv(reader: pa.RecordBatchReader, out: Any) -> None:
    import pyarrow as pa
    import pyarrow.csv as csv

    batches = (_printable(b, nested_as_json=True) for b in reader)
    first = next(batches, None)
    empty = pa.RecordBatch.from_pylist([], schema=reader.schema)
    schema = (first if first is not None else _printable(empty, nested_as_json=True)).schema
    with csv.CSVWriter(pa.PythonFile(out, mode="w"), schema) as writer:
        for batch in _chain(first, batches):
            writer.write_batch(batch)


def _write_json(reader: pa.RecordBatchReader, out: Any) -> None:
    for batch in reader:
        rows = _printable(batch, nested_as_json=False).to_pylist()
        text = "".join(json.dumps(r, default=_json_value, ensure_ascii=False) + "\n" for r in rows)
        out.write(text.encode())


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    if first is not None:
        yield first
    yield from rest


def _json_value(value: Any) -> Any:
    """JSON for what ``to_pylist`` returns beyond JSON's types."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)  # Decimal, UUID


def _printable(batch: pa.RecordBatch, *, nested_as_json: bool) -> pa.RecordBatch:
    """Columns text formats can hold: uuids as text, binary as base64, and (for csv)
    nested values as JSON text and timestamps as json writes them (pyarrow's csv writer
    puts a space between date and time)."""
    import pyarrow as pa

    columns, names = [], batch.schema.names
    for column in batch.columns:
        kind = column.type
        if isinstance(kind, pa.BaseExtensionType):
            column = pa.array([None if v is None else str(v) for v in column.to_pylist()])
        elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or (
            pa.types.is_fixed_size_binary(kind)
        ):
            column = _texts(column, lambda v: base64.b64encode(v).decode())
        elif nested_as_json and pa.types.is_nested(kind):
            column = _texts(column, lambda v: json.dumps(v, default=_json_value))
        elif nested_as_json and pa.types.is_timestamp(kind):  # ISO 8601 as json writes it
            column = _texts(column, _json_value)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=names)


def _texts(column: Any, text: Callable[[Any], str]) -> pa.Array:
    import pyarrow as pa

    return pa.array([None if v is None else text(v) for v in column.to_pylist()], pa.string())
