"""A bound Iceberg row filter as a Spark ``Column``: one condition language for every job.

The Spark jobs take the same ``where`` as :func:`puffin.iceberg.delete_rows` (pyiceberg's
row-filter grammar or a ``BooleanExpression``), bound strictly to the table's schema by
:func:`puffin.iceberg.scan.row_filter.bind_where` before Spark runs, and never hand the
user's text to Spark's SQL parser (which reads ``category = 7 and`` as a column alias and
deletes every ``category = 7`` row).

The column matches exactly the rows pyiceberg's Arrow evaluation matches, where Spark's SQL
semantics differ: ``in`` is false (not null) for a null value (``bind_where`` adds ``is not
null`` to a ``not in``, so a null matches neither, as in SQL);
``is_nan`` of a null is null (Spark's ``isnan`` says false, so ``not x is nan`` would match
nulls); a NaN is neither equal to, less than nor greater than anything (Spark orders NaN
above every number and equal to itself).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.scan.columns import field_paths
from puffin.spark._frames import column_ref

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.schema import Schema
    from pyspark.sql import Column

__all__ = ["spark_column"]

_EPOCH = datetime.datetime(1970, 1, 1)
_FLOATS = ("float", "double")


def spark_column(bound: BooleanExpression, schema: Schema) -> Column:
    """The Spark ``Column`` matching the rows ``bound`` (bound to ``schema``) matches.

    ``schema`` is the schema the DataFrame was read with (columns named by it, matched to
    the Parquet files by field id).
    """
    from pyiceberg.expressions.visitors import visit

    result: Column = visit(bound, _visitor(schema))
    return result


def _literal(value: Any, iceberg_type: Any) -> Column:
    """A Spark literal of ``value`` (pyiceberg's internal form) for a column of the type."""
    from pyspark.sql import functions as F

    name = str(iceberg_type)
    if name == "date":
        return F.lit(datetime.date(1970, 1, 1) + datetime.timedelta(days=int(value)))
    if name == "timestamp":  # Spark's timestamp_ntz: exact from its text form
        text = (_EPOCH + datetime.timedelta(microseconds=int(value))).isoformat(" ")
        return F.lit(text).cast("timestamp_ntz")
    if name == "timestamptz":
        return F.timestamp_micros(F.lit(int(value)))
    if name == "uuid":
        return F.lit(bytearray(value.bytes))  # read as 16-byte binary
    if name == "binary" or name.startswith("fixed"):
        return F.lit(bytearray(value))
    if name == "float":
        return F.lit(float(value)).cast("float")
    return F.lit(value)


class _Terms:
    """Spark columns and literals for the bound terms of one schema."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.paths = field_paths(schema)

    def col(self, term: Any) -> tuple[Column, Any]:
        field = term.ref().field
        if field.field_id not in self.paths:
            raise UsageError(f"column {field.name!r} cannot be read on Spark")
        return column_ref(self.schema, self.paths[field.field_id][0]), field.field_type

    def compare(self, term: Any, literal: Any, op: str) -> Column:
        from pyspark.sql import functions as F

        column, iceberg_type = self.col(term)
        result: Column = getattr(column, op)(_literal(literal.value, iceberg_type))
        if str(iceberg_type) in _FLOATS and op != "__ne__":
            result = ~F.isnan(column) & result  # IEEE: NaN compares false
        return result

    def member(self, term: Any, literals: set[Any]) -> Column:
        from pyspark.sql import functions as F

        column, iceberg_type = self.col(term)
        values = [_literal(v, iceberg_type) for v in sorted(literals, key=repr)]
        return F.coalesce(column.isin(*values), F.lit(False))  # Arrow: false for null

    def nan(self, term: Any, negate: bool) -> Column:
        from pyspark.sql import functions as F

        column = self.col(term)[0]
        found = F.isnan(column)
        return F.when(column.isNotNull(), ~found if negate else found)  # null stays null


def _visitor(schema: Schema) -> Any:
    from pyiceberg.expressions.visitors import BoundBooleanExpressionVisitor
    from pyspark.sql import functions as F

    t = _Terms(schema)

    class ToSpark(BoundBooleanExpressionVisitor[Any]):
        def visit_in(self, term: Any, literals: set[Any]) -> Column:
            return t.member(term, literals)

        def visit_not_in(self, term: Any, literals: set[Any]) -> Column:
            return ~t.member(term, literals)

        def visit_is_nan(self, term: Any) -> Column:
            return t.nan(term, negate=False)

        def visit_not_nan(self, term: Any) -> Column:
            return t.nan(term, negate=True)

        def visit_is_null(self, term: Any) -> Column:
            return t.col(term)[0].isNull()

        def visit_not_null(self, term: Any) -> Column:
            return t.col(term)[0].isNotNull()

        def visit_equal(self, term: Any, literal: Any) -> Column:
            return t.compare(term, literal, "__eq__")

        def visit_not_equal(self, term: Any, literal: Any) -> Column:
            return t.compare(term, literal, "__ne__")

        def visit_greater_than_or_equal(self, term: Any, literal: Any) -> Column:
            return t.compare(term, literal, "__ge__")

        def visit_greater_than(self, term: Any, literal: Any) -> Column:
            return t.compare(term, literal, "__gt__")

        def visit_less_than(self, term: Any, literal: Any) -> Column:
            return t.compare(term, literal, "__lt__")

        def visit_less_than_or_equal(self, term: Any, literal: Any) -> Column:
            return t.compare(term, literal, "__le__")

        def visit_starts_with(self, term: Any, literal: Any) -> Column:
            return t.col(term)[0].startswith(str(literal.value))

        def visit_not_starts_with(self, term: Any, literal: Any) -> Column:
            return ~t.col(term)[0].startswith(str(literal.value))

        def visit_true(self) -> Column:
            return F.lit(True)

        def visit_false(self) -> Column:
            return F.lit(False)

        def visit_not(self, child_result: Column) -> Column:
            return ~child_result

        def visit_and(self, left_result: Column, right_result: Column) -> Column:
            return left_result & right_result

        def visit_or(self, left_result: Column, right_result: Column) -> Column:
            return left_result | right_result

    return ToSpark()
