"""A row filter checked and bound strictly, and the same filter over one data file's columns.

Used by :mod:`puffin.iceberg.scan.matching` (what ``delete_rows`` and ``overwrite`` match) and
the row reader; a filter string is pyiceberg's row-filter syntax, and its mistakes (syntax,
unknown column) are the caller's (:class:`puffin.errors.UsageError`,
:class:`puffin.errors.ColumnNotFoundError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from puffin.errors import ColumnNotFoundError, UnsupportedTableError, UsageError
from puffin.iceberg.scan.where import parse_where

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table


__all__ = [
    "FileSchemas",
    "bind_checked",
    "bind_where",
    "check_where",
    "filter_for_file",
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


class FileSchemas:
    """pyiceberg's schema of each distinct Parquet file schema a job meets (by field ids, or
    the table's name mapping), converted once: converting it for each of 20,000 small files of
    one schema was half of a read. ``options``: ``pyarrow_to_schema``'s."""

    def __init__(self, name_mapping: Any, **options: Any) -> None:
        self._mapping, self._options = name_mapping, options
        self._known: dict[str, Any] = {}

    def of(self, arrow_schema: Any, location: str = "a data file") -> tuple[str, Any]:
        """The text naming ``arrow_schema`` (field ids included: a key for what a job
        prepares per file schema) and pyiceberg's schema of it (the file at ``location``'s).

        Raises:
            UnsupportedTableError: the file has no Parquet field ids and the table no name
                mapping to match its columns by name.
        """
        from pyiceberg.io.pyarrow import pyarrow_to_schema

        text = arrow_schema.to_string(show_field_metadata=True, show_schema_metadata=False)
        schema = self._known.get(text)
        if schema is None:
            try:
                schema = pyarrow_to_schema(arrow_schema, self._mapping, **self._options)
            except ValueError as exc:
                if self._mapping is not None or "field-ids" not in str(exc):
                    raise
                raise UnsupportedTableError(
                    f"data file {location} has no Parquet field ids and the table has no "
                    "name mapping (schema.name-mapping.default) to match its columns by name"
                ) from exc
            self._known[text] = schema
        return text, schema


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
