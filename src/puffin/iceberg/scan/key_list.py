"""A long ``in`` list of plain keys as a pyiceberg predicate that binds without a dispatch per key.

pyiceberg makes every literal through ``literal()`` and converts each again with ``Literal.to``
whenever the predicate is bound; both are ``singledispatch`` calls of a few microseconds. A
delete is bound five times (checked, bound for the job, and by the planner's manifest,
metrics and residual evaluators), so a list of 100,000 keys spent about 3.5 s on its literals
before reading a file. :class:`KeyIn` and :class:`KeyNotIn` are pyiceberg's ``In`` and ``NotIn``
(every visitor and evaluator takes them as such) whose literals are made once, directly, and
reused as they are when bound to an integer or string column they exactly fit; any other
column binds them the way pyiceberg does.

Only :func:`puffin.iceberg.scan.where.parse_where` makes them, for lists longer than
:data:`~puffin.iceberg.scan.where.LONG_LIST`.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, PrivateAttr
from pyiceberg.expressions import (
    BooleanExpression,
    BoundIn,
    BoundNotIn,
    BoundSetPredicate,
    In,
    NotIn,
    SetPredicate,
    UnboundTerm,
)
from pyiceberg.expressions.literals import DecimalLiteral, Literal, LongLiteral, StringLiteral
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, IntegerType, LongType, StringType

from puffin.support.gc_pause import gc_paused

__all__ = ["KeyIn", "KeyNotIn", "fits", "key_list", "key_literals"]

_RANGES: dict[type[IcebergType], tuple[int, int]] = {
    IntegerType: (-(2**31), 2**31 - 1),
    LongType: (-(2**63), 2**63 - 1),
}


def key_literals(values: Iterable[int | str | Decimal]) -> set[Literal[Any]]:
    """The literals pyiceberg's ``literal()`` makes of ints, strings or decimals, made directly
    (with the cyclic collector held off: 100,000 keys that live on set off two full
    collections, each walking the whole process, 0.15 s and more in a busy one)."""
    made: set[Literal[Any]] = set()
    with gc_paused():
        for value in values:
            if isinstance(value, str):
                made.add(StringLiteral(value))
            elif isinstance(value, Decimal):
                made.add(DecimalLiteral(value))
            elif isinstance(value, int) and not isinstance(value, bool):
                made.add(LongLiteral(value))
            else:
                raise TypeError(f"a key is an int, a str or a Decimal, not {value!r}")
    return made


def fits(literals: set[Literal[Any]], field_type: IcebergType) -> bool:
    """Whether every literal is already exactly a value of ``field_type`` as pyiceberg would
    convert it (``Literal.to`` returns it unchanged): integers in an ``int``/``long``
    column's range, strings on a ``string`` column."""
    if isinstance(field_type, StringType):
        return all(type(lit) is StringLiteral for lit in literals)
    limits = _RANGES.get(type(field_type))
    if limits is None or not all(type(lit) is LongLiteral for lit in literals):
        return False
    values = [int(lit.value) for lit in literals]
    return limits[0] <= min(values) and max(values) <= limits[1]


class KeyIn(In):
    """pyiceberg's ``In`` whose literals are reused, not converted, when they fit the column;
    equal to an ``In`` of the same column and values."""

    _bound: dict[tuple[int, bool], tuple[Schema, BoundSetPredicate]] = PrivateAttr(
        default_factory=dict
    )
    _fit: dict[IcebergType, bool] = PrivateAttr(default_factory=dict)

    def fits(self, field_type: IcebergType) -> bool:
        """:func:`fits` of this list's literals, asked once per column type (a job asks
        when checking the condition and at each bind)."""
        return _fits_once(self, field_type)

    def bind(self, schema: Schema, case_sensitive: bool = True) -> BoundSetPredicate:
        """As ``In.bind``, without a conversion per literal where :func:`fits` holds; the
        same bound predicate again for the same schema."""
        return _bind(self, schema, case_sensitive, BoundIn) or super().bind(schema, case_sensitive)

    def __invert__(self) -> NotIn:
        negated: NotIn = _made(KeyNotIn, self.term, self.literals)
        return negated

    def __eq__(self, other: Any) -> bool:
        return _same(self, other, In)


class KeyNotIn(NotIn):
    """pyiceberg's ``NotIn`` whose literals are reused, not converted, when they fit the
    column; equal to a ``NotIn`` of the same column and values."""

    _bound: dict[tuple[int, bool], tuple[Schema, BoundSetPredicate]] = PrivateAttr(
        default_factory=dict
    )
    _fit: dict[IcebergType, bool] = PrivateAttr(default_factory=dict)

    def fits(self, field_type: IcebergType) -> bool:
        """:func:`fits` of this list's literals, asked once per column type."""
        return _fits_once(self, field_type)

    def bind(self, schema: Schema, case_sensitive: bool = True) -> BoundSetPredicate:
        """As ``NotIn.bind``, without a conversion per literal where :func:`fits` holds; the
        same bound predicate again for the same schema."""
        return _bind(self, schema, case_sensitive, BoundNotIn) or super().bind(
            schema, case_sensitive
        )

    def __invert__(self) -> In:
        negated: In = _made(KeyIn, self.term, self.literals)
        return negated

    def __eq__(self, other: Any) -> bool:
        return _same(self, other, NotIn)


def _bind(
    pred: KeyIn | KeyNotIn, schema: Schema, case_sensitive: bool, kind: type[Any]
) -> BoundSetPredicate | None:
    """``pred`` bound with its own literals (None where they do not fit the column). A
    job binds its condition several times (checked, for itself, by each of pyiceberg's
    evaluators): the bound predicate is kept for the schema object it was bound to."""
    key = (id(schema), case_sensitive)
    known = pred._bound.get(key)
    if known is not None and known[0] is schema:
        return known[1]
    term = pred.term.bind(schema, case_sensitive)
    if not pred.fits(term.ref().field.field_type):
        return None
    bound: BoundSetPredicate = _validated(kind, term=term, literals=pred.literals)
    if len(pred._bound) >= 2:  # a job binds to one schema, or two (each holds a set of keys)
        pred._bound.clear()
    pred._bound[key] = (schema, bound)
    return bound


def _fits_once(pred: KeyIn | KeyNotIn, field_type: IcebergType) -> bool:
    known = pred._fit.get(field_type)
    if known is None:
        known = pred._fit[field_type] = fits(pred.literals, field_type)
    return known


def _same(pred: SetPredicate, other: Any, kind: type[Any]) -> bool:
    """pyiceberg's equality of set predicates, holding both ways between ours and theirs."""
    if not isinstance(other, kind):
        return False
    return bool(pred.term == other.term and pred.literals == other.literals)


def key_list(term: UnboundTerm, values: list[Any], negated: bool) -> BooleanExpression:
    """``term in values`` (``not in`` when ``negated``) as a :class:`KeyIn`/:class:`KeyNotIn`;
    a list of one distinct value is ``=``/``!=``, as pyiceberg reads it."""
    made: BooleanExpression = _made(KeyNotIn if negated else KeyIn, term, key_literals(values))
    return made


def _made(kind: type[SetPredicate], term: UnboundTerm, literals: set[Literal[Any]]) -> Any:
    """``kind(term, literals)``; a set of fewer than two literals as pyiceberg's constructor
    makes it (``=``, ``!=`` or a constant)."""
    if len(literals) < 2:
        constructor: Any = kind  # it takes what pydantic's generated signature does not
        return constructor(term, literals)
    return _validated(kind, term=term, values=literals)


def _validated(kind: type[Any], **fields: Any) -> Any:
    """A ``kind`` of two literals or more, its fields checked by pydantic alone: pyiceberg's
    constructors build the set of literals twice more before pydantic does (0.07 s for
    100,000 keys), only to turn a set of fewer than two into another predicate."""
    made = object.__new__(kind)
    BaseModel.__init__(made, **fields)
    return made
