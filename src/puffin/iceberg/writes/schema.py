"""Data that fits the table, or one line that says why not.

pyiceberg checks an Arrow schema against the table's and, when it does not fit, prints a
box-drawn table of every field on stdout and raises a ``ValueError`` holding it again: an
"internal error" to the command line, and noise on a ``--json`` stdout.  :func:`conform`
runs the same check quietly and names the mismatching fields in one line
(:class:`~puffin.errors.UsageError`).

It also accepts what pyarrow and pandas make by default: every field nullable.  A nullable
field for a required column is checked, not assumed: data without a null in it is appended
(its schema made non-nullable), data with nulls is refused naming the column and the count.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import Table

__all__ = ["check_schema", "conform", "required_as_declared", "schema_errors"]

_MISMATCH_ROW = re.compile(r"❌\s*│\s*(?P<table>[^│]*?)\s*│\s*(?P<data>[^│]*?)\s*│")


def conform(table: Table, data: pa.Table | pa.RecordBatchReader) -> Any:
    """``data`` as the table takes it: checked against the table's schema (a
    :class:`UsageError` naming the fields that do not fit), nullable fields of required
    columns made non-nullable once they are known to hold no null."""
    import pyarrow as pa

    required = _required_but_nullable(table, data.schema)
    if required:
        strict = _strict(data.schema, required)
        check_schema(table, strict)
        if isinstance(data, pa.Table):
            _no_nulls(data.select(sorted(required)), required)
            return data.cast(strict)
        return pa.RecordBatchReader.from_batches(strict, _checked(data, strict, required))
    check_schema(table, data.schema)
    return data


def check_schema(table: Table, schema: pa.Schema, *, what: str = "the data") -> None:
    """pyiceberg's own compatibility check (names, types, promotions, required fields),
    with its printed table kept off stdout and its verdict in one line."""
    from pyiceberg.io.pyarrow import _check_pyarrow_schema_compatible

    with schema_errors(table, what):
        _check_pyarrow_schema_compatible(
            table.schema(), provided_schema=schema, format_version=table.metadata.format_version
        )


@contextlib.contextmanager
def schema_errors(table: Table, what: str = "the data") -> Iterator[None]:
    """Run pyiceberg's schema checks quietly: its printed table off stdout, its
    ``ValueError`` a one-line :class:`UsageError` naming the fields that differ (and an
    Arrow type Iceberg has no type for, the column that has it)."""
    from pyiceberg.io.pyarrow import UnsupportedPyArrowTypeException

    with contextlib.redirect_stdout(io.StringIO()):
        try:
            yield
        except UnsupportedPyArrowTypeException as exc:
            raise UsageError(
                f"{what} does not fit table {_name(table)}: {_one_line(exc)}, which a format "
                f"version {table.metadata.format_version} table cannot hold"
            ) from None
        except ValueError as exc:
            if isinstance(exc, UsageError):
                raise
            text, why = str(exc), _one_line(exc)
            if "Mismatch in fields" in text or "more columns" in text:
                raise UsageError(f"{what} does not fit table {_name(table)}: {why}") from None
            raise UsageError(f"{what}: {why}") from None


def _name(table: Table) -> str:
    return ".".join(table.name())


def _one_line(exc: Exception) -> str:
    """pyiceberg's message, its box-drawn field table reduced to the rows that differ."""
    text = str(exc)
    rows = [
        f"table {m['table']} vs data {m['data'].replace('Missing', 'missing')}"
        for m in _MISMATCH_ROW.finditer(text)
    ]
    if rows:
        return "; ".join(rows)
    return " ".join(text.split())


def _required_but_nullable(table: Table, schema: pa.Schema) -> set[str]:
    """Top-level columns the table requires that the data declares nullable."""
    names = set(schema.names)
    return {
        f.name
        for f in table.schema().fields
        if f.required and f.name in names and schema.field(f.name).nullable
    }


def required_as_declared(table: Table, metadata: Any, path: str) -> pa.Schema:
    """A Parquet file's Arrow schema with the nullable fields of required columns made
    non-nullable, once its row groups' statistics (or, without them, the column itself)
    show no null in them; a :class:`UsageError` naming the column and the count if any."""
    import pyarrow.parquet as pq

    schema = metadata.schema.to_arrow_schema()
    required = _required_but_nullable(table, schema)
    for name in sorted(required):
        index = schema.get_field_index(name)
        nulls = 0
        for group in range(metadata.num_row_groups):
            stats = metadata.row_group(group).column(index).statistics
            if stats is None or not stats.has_null_count:
                with table.io.new_input(path).open() as stream:
                    nulls = pq.read_table(stream, columns=[name]).column(name).null_count
                break
            nulls += stats.null_count
        if nulls:
            raise UsageError(
                f"{path}: column {name!r} is required by the table, and the file has "
                f"{nulls} null(s) in it"
            )
    return _strict(schema, required)


def _strict(schema: pa.Schema, required: set[str]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [f.with_nullable(False) if f.name in required else f for f in schema],
        metadata=schema.metadata,
    )


def _no_nulls(data: Any, required: set[str]) -> None:
    for name in sorted(required):
        nulls = data.column(name).null_count
        if nulls:
            raise UsageError(
                f"column {name!r} is required by the table, and the data has {nulls} null(s) "
                "in it: fill or drop those rows first"
            )


def _checked(reader: Any, strict: pa.Schema, required: set[str]) -> Iterator[Any]:
    """The reader's batches with the strict schema, each checked for nulls first."""
    import pyarrow as pa

    for batch in reader:
        _no_nulls(batch, required)
        yield pa.RecordBatch.from_arrays(batch.columns, schema=strict)
