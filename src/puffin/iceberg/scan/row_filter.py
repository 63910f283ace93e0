"""The rows a delete's filter matches: binding ``where`` and reading one data file's matches.

Used by :func:`puffin.iceberg.deletes.rows.delete_rows`; a filter string is pyiceberg's
row-filter syntax, and its mistakes (syntax, unknown column) are the caller's
(:class:`puffin.errors.UsageError`, :class:`puffin.errors.ColumnNotFoundError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from puffin.errors import ColumnNotFoundError, UnsupportedTableError, UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["bind_where", "matching_positions"]


def bind_where(table: Table, where: BooleanExpression | str) -> BooleanExpression:
    """``where`` bound to the table's current schema (``AlwaysFalse`` when nothing can match)."""
    from pyiceberg.expressions import AlwaysFalse, BooleanExpression
    from pyiceberg.expressions.visitors import bind

    expr = _parse(where) if isinstance(where, str) else where
    if not isinstance(expr, BooleanExpression):
        raise TypeError(f"where must be a row-filter string or BooleanExpression, got {where!r}")
    try:
        bound = bind(table.schema(), expr, case_sensitive=True)
    except ValueError as exc:
        if "Could not find field" in str(exc):
            raise ColumnNotFoundError(f"{exc} (in where={where!r})") from exc
        raise
    return AlwaysFalse() if bound == AlwaysFalse() else bound


def _parse(where: str) -> Any:
    """A row-filter string as pyiceberg parses it; a syntax error is the caller's mistake."""
    from pyiceberg.expressions.parser import parse
    from pyparsing import ParseException

    try:
        return parse(where)
    except ParseException as exc:
        raise UsageError(
            f"cannot parse the row filter {where!r} at column {exc.col}: pyiceberg's syntax "
            "is comparisons (=, !=, <, <=, >, >=), in (...), is null, is nan, like, between, "
            "combined with and, or, not (no arithmetic)"
        ) from None


def matching_positions(
    table: Table, planned: PlannedFile, bound: BooleanExpression
) -> npt.NDArray[np.int64]:
    """Row positions of one data file that ``bound`` matches, deleted or not, sorted."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.dataset as ds
    from pyiceberg.expressions import AlwaysFalse, AlwaysTrue
    from pyiceberg.expressions.visitors import bind, extract_field_ids, translate_column_names
    from pyiceberg.io.pyarrow import (
        _get_column_projection_values,
        expression_to_pyarrow,
        pyarrow_to_schema,
    )
    from pyiceberg.manifest import FileFormat

    df = planned.data_file
    if df.file_format != FileFormat.PARQUET:
        raise UnsupportedTableError(f"data file {planned.path} is {df.file_format}, not Parquet")
    if bound == AlwaysFalse():
        return np.empty(0, dtype=np.int64)
    if bound == AlwaysTrue():
        return np.arange(planned.record_count, dtype=np.int64)
    schema = table.schema()
    with table.io.new_input(planned.path).open() as f:
        fragment = ds.ParquetFileFormat().make_fragment(f)
        file_schema = pyarrow_to_schema(
            fragment.physical_schema, table.metadata.name_mapping(), format_version=3
        )
        missing = _get_column_projection_values(
            df, schema, schema, table.specs().get(df.spec_id), file_schema.field_ids
        )
        translated = translate_column_names(
            bound, file_schema, case_sensitive=True, projected_field_values=missing
        )
        file_bound = bind(file_schema, translated, True)
        file_filter = expression_to_pyarrow(file_bound, file_schema)
        columns = sorted(
            {
                str(file_schema.find_column_name(i)).split(".")[0]
                for i in extract_field_ids(file_bound)
            }
        )
        data = fragment.to_table(schema=fragment.physical_schema, columns=columns)
    data = data.append_column("__pos", pa.array(np.arange(data.num_rows, dtype=np.int64)))
    matched = data.filter(file_filter).column("__pos").to_numpy()
    return np.sort(matched.astype(np.int64, copy=False))
