"""The rows a delete's filter matches: binding ``where`` and reading one data file's matches.

Used by :func:`puffin.iceberg.deletes.rows.delete_rows`; a filter string is pyiceberg's
row-filter syntax, and its mistakes (syntax, unknown column) are the caller's
(:class:`puffin.errors.UsageError`, :class:`puffin.errors.ColumnNotFoundError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.errors import ColumnNotFoundError, UnsupportedTableError, UsageError
from puffin.iceberg.scan.where import parse_where

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = [
    "FileSchemas",
    "bind_checked",
    "bind_where",
    "check_where",
    "filter_for_file",
    "matching_by_file",
    "matching_positions",
    "rows_matching",
]


def bind_where(table: Table, where: BooleanExpression | str) -> BooleanExpression:
    """``where`` bound to the table's current schema (``AlwaysFalse`` when nothing can match).

    Strict, so that a mistake never changes which rows match: a string must parse whole
    (pyiceberg's row-filter grammar), every column must exist, and every literal must be
    exactly a value of its column's type (:mod:`puffin.iceberg.scan.literals`: ``9.5`` on an
    integer column, ``'7'`` on a number or ``99999999999`` on an ``int`` is refused, never
    rounded, coerced or clamped).  A decimal literal with fewer decimal places than the
    column is rescaled (``999.5`` for a ``decimal(12, 2)`` column is ``999.50``).
    """
    return bind_checked(table, check_where(table, where), where)


def bind_checked(
    table: Table, expr: BooleanExpression, where: object = None
) -> BooleanExpression:
    """A condition :func:`check_where` gave, bound to the table's current schema (a job that
    needs both checks its condition once: an ``in`` list of 100,000 keys costs seconds)."""
    from pyiceberg.expressions import AlwaysFalse
    from pyiceberg.expressions.visitors import bind

    where = expr if where is None else where
    try:
        bound = bind(table.schema(), expr, case_sensitive=True)
    except (ValueError, TypeError) as exc:  # pragma: no cover - _Checked binds each first
        raise UsageError(f"cannot apply the row filter {where!r} to the table: {exc}") from None
    return AlwaysFalse() if bound == AlwaysFalse() else bound


def check_where(table: Table, where: BooleanExpression | str) -> BooleanExpression:
    """``where`` unbound, with every literal replaced by the exact value of its column's
    type, or refused as :func:`bind_where` refuses it: what to hand pyiceberg's own
    ``overwrite``/``delete``, which bind it themselves."""
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.expressions.visitors import rewrite_not, visit

    expr = parse_where(where) if isinstance(where, str) else where
    if not isinstance(expr, BooleanExpression):
        raise TypeError(f"where must be a row-filter string or BooleanExpression, got {where!r}")
    # Negations pushed down to the predicates first (``not x in (1, 2)`` is ``x not in (1,
    # 2)``), so that a null matches neither ``in`` nor ``not in``, as in SQL engines and as
    # pyiceberg's own ``x not in (1)`` (its ``x != 1``) already does.
    checked: BooleanExpression = visit(rewrite_not(expr), _checked(table.schema(), where))
    return checked


def _literal_values(pred: Any) -> list[Any]:
    if hasattr(pred, "literals"):
        return sorted(pred.literals, key=repr)
    return [pred.literal] if hasattr(pred, "literal") else []


def _exact(pred: Any, field_type: Any) -> Any:
    """``pred`` with each literal exactly a value of the column's type (or refused)."""
    from puffin.iceberg.scan.key_list import KeyIn, KeyNotIn
    from puffin.iceberg.scan.literals import exact_literal

    if isinstance(pred, (KeyIn, KeyNotIn)) and pred.fits(field_type):
        return pred  # a long list of keys, each already exactly a value of the column

    values = [exact_literal(lit, field_type, pred.term.name) for lit in _literal_values(pred)]
    if hasattr(pred, "literals"):
        return type(pred)(pred.term, values)
    if hasattr(pred, "literal"):
        return type(pred)(pred.term, values[0])
    return pred


def _check_predicate(schema: Any, pred: Any, where: object) -> Any:
    """``pred`` if it binds to ``schema``, else a :class:`UsageError` naming the column,
    its type and the literal (or :class:`ColumnNotFoundError`)."""
    name = pred.term.name
    try:
        field = schema.find_field(name, case_sensitive=True)
    except ValueError:
        raise ColumnNotFoundError(
            f"the row filter {where!r} names column {name!r}, which the table does not "
            f"have (columns: {', '.join(f.name for f in schema.fields)})"
        ) from None
    pred = _exact(pred, field.field_type)
    try:
        pred.bind(schema, case_sensitive=True)
    except (ValueError, TypeError):
        values = ", ".join(repr(lit.value) for lit in _literal_values(pred))
        raise UsageError(
            f"the row filter {where!r} compares column {name!r} ({field.field_type}) with "
            f"{values}, which is not a value of type {field.field_type}"
        ) from None
    return pred


def _checked(schema: Any, where: object) -> Any:
    """A visitor that rebuilds an unbound expression with each predicate checked."""
    from pyiceberg.expressions import And, Not, Or
    from pyiceberg.expressions.visitors import BooleanExpressionVisitor

    class Checked(BooleanExpressionVisitor[Any]):
        def visit_true(self) -> Any:
            from pyiceberg.expressions import AlwaysTrue

            return AlwaysTrue()

        def visit_false(self) -> Any:
            from pyiceberg.expressions import AlwaysFalse

            return AlwaysFalse()

        def visit_not(self, child_result: Any) -> Any:
            return Not(child_result)

        def visit_and(self, left_result: Any, right_result: Any) -> Any:
            return And(left_result, right_result)

        def visit_or(self, left_result: Any, right_result: Any) -> Any:
            return Or(left_result, right_result)

        def visit_unbound_predicate(self, predicate: Any) -> Any:
            from pyiceberg.expressions import NotIn, NotNull

            checked = _check_predicate(schema, predicate, where)
            if isinstance(checked, NotIn):  # SQL: a null is in nothing and not in nothing
                return And(checked, NotNull(term=checked.term))
            return checked

        def visit_bound_predicate(self, predicate: Any) -> Any:
            return predicate

    return Checked()


def matching_by_file(
    table: Table, planned: Sequence[PlannedFile], bound: BooleanExpression
) -> dict[str, npt.NDArray[np.int64]]:
    """``{data file path: positions}`` that ``bound`` matches, files without a match left
    out (what a delete or an overwrite deletes, before merging with the live deletes).

    A file whose column metrics rule every match out is not opened: pyiceberg's inclusive
    metrics evaluator decides, as in its own planning (missing metrics: the file is read).
    Without it, every delete read every data file, and a table of many small appends got
    slower to delete from with each one."""
    from puffin.iceberg.scan.bounds import bound_test, sorting_once
    from puffin.iceberg.scan.keys import KeyMatch

    with sorting_once():  # a long key list sorted once for both
        quick = bound_test(bound, in_limit=None) or (lambda _: True)  # any length of in list
        job = _Job.of(table, KeyMatch.of(bound))  # bound once per job, not once per file
    might_match = _metrics_filter(bound)
    out = {}
    for p in planned:
        if not (quick(p.data_file) and might_match(p.data_file)):
            continue
        found = matching_positions(table, p, bound, job)
        if len(found):
            out[p.path] = found
    return out


@dataclass
class _Job:
    """What one job prepares once for all its files: a list of keys sorted, and for each
    file schema met its Iceberg schema and Arrow filter."""

    keys: Any  # KeyMatch | None
    filters: dict[Any, tuple[Any, list[str]]]
    schemas: FileSchemas

    @classmethod
    def of(cls, table: Table, keys: Any = None) -> _Job:
        """A job on ``table``'s files, matching by ``keys`` (a ``KeyMatch``) where given."""
        return cls(keys, {}, FileSchemas(table.metadata.name_mapping(), format_version=3))


class FileSchemas:
    """pyiceberg's schema of each distinct Parquet file schema a job meets (by field ids, or
    the table's name mapping), converted once: converting it for each of 20,000 small files of
    one schema was half of a read. ``options``: ``pyarrow_to_schema``'s."""

    def __init__(self, name_mapping: Any, **options: Any) -> None:
        self._mapping, self._options = name_mapping, options
        self._known: dict[str, Any] = {}

    def of(self, arrow_schema: Any) -> tuple[str, Any]:
        """The text naming ``arrow_schema`` (field ids included: a key for what a job
        prepares per file schema) and pyiceberg's schema of it."""
        from pyiceberg.io.pyarrow import pyarrow_to_schema

        text = arrow_schema.to_string(show_field_metadata=True, show_schema_metadata=False)
        schema = self._known.get(text)
        if schema is None:
            schema = pyarrow_to_schema(arrow_schema, self._mapping, **self._options)
            self._known[text] = schema
        return text, schema


def _metrics_filter(bound: BooleanExpression) -> Any:
    """A ``DataFile -> bool`` that is False only when the file's metrics exclude a match:
    pyiceberg's inclusive metrics visitor on the condition already bound (its evaluator's
    constructor would bind it again), every file kept when there is nothing to decide."""
    from pyiceberg.expressions import AlwaysFalse, AlwaysTrue
    from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluationVisitor, visit

    if bound in (AlwaysTrue(), AlwaysFalse()):
        return lambda df: True
    # A negative record count (old imports) says nothing about the rows, as in pyiceberg.
    return lambda df: df.record_count < 0 or visit(bound, _InclusiveMetricsEvaluationVisitor(df))


def matching_positions(
    table: Table, planned: PlannedFile, bound: BooleanExpression, job: _Job | None = None
) -> npt.NDArray[np.int64]:
    """Row positions of one data file that ``bound`` matches, deleted or not, sorted.
    ``job``: what :func:`matching_by_file` prepared once for every file."""
    import numpy as np
    from pyiceberg.expressions import AlwaysFalse, AlwaysTrue
    from pyiceberg.io.pyarrow import _get_column_projection_values
    from pyiceberg.manifest import FileFormat

    from puffin.iceberg.scan.parquet_files import open_data_file, parquet_file, read_columns

    df = planned.data_file
    if df.file_format != FileFormat.PARQUET:
        raise UnsupportedTableError(f"data file {planned.path} is {df.file_format}, not Parquet")
    if bound == AlwaysFalse():
        return np.empty(0, dtype=np.int64)
    if bound == AlwaysTrue():
        return np.arange(planned.record_count, dtype=np.int64)
    schema = table.schema()
    with open_data_file(table.io, planned.path) as f:
        # pyarrow's dataset fragment took twice as long per small file (issue 43).
        parquet = parquet_file(f, planned.path)
        job = job if job is not None else _Job.of(table)
        text, file_schema = job.schemas.of(parquet.schema_arrow)
        missing = _get_column_projection_values(
            df, schema, schema, table.specs().get(df.spec_id), file_schema.field_ids
        )
        keys = job.keys
        column = _key_column(keys, file_schema, missing)
        if keys is not None and column is not None:
            wanted = keys.keys_for(df)
            if not len(wanted):
                return np.empty(0, dtype=np.int64)
            values = read_columns(parquet, [column])
            return keys.positions(values.column(0), wanted)  # type: ignore[no-any-return]
        key = (text, tuple(sorted((k, repr(v)) for k, v in missing.items())))
        known = job.filters.get(key)
        if known is None:
            known = job.filters[key] = filter_for_file(bound, file_schema, missing)
        file_filter, columns = known
        data = read_columns(parquet, columns)
    return np.sort(rows_matching(data, file_filter))


def _key_column(keys: Any, file_schema: Any, missing: dict[int, Any]) -> str | None:
    """The file's top-level column the keys are matched on, when the file holds it."""
    if keys is None or keys.field_id in missing:
        return None
    try:
        name = file_schema.find_column_name(keys.field_id)
    except ValueError:
        return None
    return None if name is None or "." in name else str(name)


def filter_for_file(
    bound: BooleanExpression, file_schema: Any, missing: dict[int, Any], case_sensitive: bool = True
) -> tuple[Any, list[str]]:
    """``bound`` (on the table's schema) as an Arrow expression over one data file's columns
    (pyiceberg's ``file_schema`` of it; ``missing``: identity-partition values the file lacks),
    and the file's top-level columns it reads. Evaluate it with :func:`rows_matching`."""
    from pyiceberg.expressions.visitors import bind, extract_field_ids, translate_column_names
    from pyiceberg.io.pyarrow import expression_to_pyarrow

    translated = translate_column_names(
        bound, file_schema, case_sensitive=case_sensitive, projected_field_values=missing
    )
    file_schema = _uuid_as_fixed(file_schema)
    file_bound = bind(file_schema, translated, case_sensitive)
    columns = sorted(
        {str(file_schema.find_column_name(i)).split(".")[0] for i in extract_field_ids(file_bound)}
    )
    return expression_to_pyarrow(file_bound, file_schema), columns


def rows_matching(data: Any, file_filter: Any) -> npt.NDArray[np.int64]:
    """Indices of the rows of ``data`` (an Arrow table or batch of the file's columns) that
    ``file_filter`` (from :func:`filter_for_file`) matches, in order."""
    import numpy as np
    import pyarrow as pa

    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    data = _uuid_storage(data)
    data = data.append_column("__pos", pa.array(np.arange(data.num_rows, dtype=np.int64)))
    matched: npt.NDArray[np.int64] = data.filter(file_filter).column("__pos").to_numpy()
    return matched


def _uuid_as_fixed(schema: Any) -> Any:
    """``schema`` with top-level ``uuid`` columns as ``fixed[16]``: Arrow has no comparison
    for its uuid extension type, so they are compared as their 16 bytes (the same values)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import FixedType, NestedField, UUIDType

    if not any(isinstance(f.field_type, UUIDType) for f in schema.fields):
        return schema
    fields = [
        NestedField(f.field_id, f.name, FixedType(16), f.required, f.doc)
        if isinstance(f.field_type, UUIDType)
        else f
        for f in schema.fields
    ]
    return Schema(*fields, schema_id=schema.schema_id)


def _uuid_storage(data: Any) -> Any:
    """``data`` with Arrow uuid extension columns as their ``fixed_size_binary(16)`` storage."""
    import pyarrow as pa

    for i, field in enumerate(data.schema):
        kind = field.type
        if isinstance(kind, pa.BaseExtensionType) and kind.storage_type == pa.binary(16):
            storage = pa.chunked_array(
                [chunk.storage for chunk in data.column(i).chunks], type=pa.binary(16)
            )
            data = data.set_column(i, field.with_type(pa.binary(16)), storage)
    return data
