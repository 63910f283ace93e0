"""Which columns of a snapshot's schema to read: field ids, dotted names, Iceberg types.

Columns are addressed by field id so renamed and reordered columns still match; a field
inside structs carries its id path from the top-level field down.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.errors import ColumnNotFoundError, UsageError

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.types import NestedField, PrimitiveType

__all__ = [
    "FieldPath",
    "ScanColumn",
    "by_current_names",
    "column_names",
    "field_paths",
    "resolve_columns",
    "snapshot_schema",
]

#: (field ids from the top-level field down, dotted name, the field itself)
FieldPath = tuple[tuple[int, ...], str, "NestedField"]


@dataclass(frozen=True)
class ScanColumn:
    """A primitive column to read: its field id, dotted name and Iceberg type.

    ``path`` holds the field ids from the top-level field down to this one (one element
    for a top-level column, more for a field inside structs).
    """

    field_id: int
    name: str
    iceberg_type: PrimitiveType
    path: tuple[int, ...]


def field_paths(schema: Schema) -> dict[int, FieldPath]:
    """Every field reachable through structs only: id -> (id path, dotted name, field)."""
    from pyiceberg.types import StructType

    out: dict[int, FieldPath] = {}

    def walk(struct: StructType, ids: tuple[int, ...], prefix: str) -> None:
        for f in struct.fields:
            name = f"{prefix}{f.name}"
            out[f.field_id] = ((*ids, f.field_id), name, f)
            if isinstance(f.field_type, StructType):
                walk(f.field_type, (*ids, f.field_id), f"{name}.")

    walk(schema.as_struct(), (), "")
    return out


def column_names(schema: Schema) -> dict[int, str]:
    """Field id -> dotted column name, for every field reachable through structs."""
    return {fid: entry[1] for fid, entry in field_paths(schema).items()}


def by_current_names(
    current: Schema, schema: Schema, columns: Sequence[str | int]
) -> list[str | int]:
    """``columns`` with each name the ``current`` schema knows turned into its field id, when
    the (older) ``schema`` has that field: after a rename the new name works, the old one too.
    """
    ids = {name: fid for fid, name in column_names(current).items()}
    known = column_names(schema)
    return [ids[c] if isinstance(c, str) and ids.get(c) in known else c for c in columns]


def _all_primitive(
    schema: Schema, paths: dict[int, FieldPath]
) -> tuple[list[FieldPath], list[str]]:
    """Every top-level primitive column (as Iceberg Java's statistics action takes)."""
    from pyiceberg.types import PrimitiveType

    chosen: list[FieldPath] = []
    notes: list[str] = []
    for f in schema.fields:
        if isinstance(f.field_type, PrimitiveType):
            chosen.append(paths[f.field_id])
        else:
            notes.append(
                f"skipped column {f.name!r} ({f.field_type}): only primitive columns "
                "have theta sketches"
            )
    return chosen, notes


def _named(paths: dict[int, FieldPath], columns: Sequence[str | int]) -> list[FieldPath]:
    """The named (or numbered) columns, each once; unknown or non-primitive ones are errors."""
    from pyiceberg.types import PrimitiveType

    by_name = {entry[1]: entry for entry in paths.values()}
    seen: set[int] = set()
    chosen: list[FieldPath] = []
    for col in columns:
        if isinstance(col, bool):
            raise TypeError(f"column must be a name or a field id, got {col!r}")
        entry = paths.get(col) if isinstance(col, int) else by_name.get(col)
        if entry is None:
            known = ", ".join(e[1] for e in paths.values())
            raise ColumnNotFoundError(
                f"no column {col!r} in the snapshot's schema (outside lists and maps); "
                f"columns: {known}"
            )
        if not isinstance(entry[2].field_type, PrimitiveType):
            raise UsageError(
                f"column {entry[1]!r} is {entry[2].field_type}, not a primitive type: "
                "theta sketches are computed for primitive columns only"
            )
        if entry[0][-1] not in seen:
            seen.add(entry[0][-1])
            chosen.append(entry)
    return chosen


def resolve_columns(
    schema: Schema,
    columns: Sequence[str | int] | None,
    *,
    supported: Callable[[PrimitiveType], bool] | None = None,
) -> tuple[list[ScanColumn], list[str]]:
    """The columns to read and notes on the ones skipped.

    ``columns=None`` means every top-level primitive column (as Iceberg Java's statistics
    action does); non-primitive ones are skipped with a note.  Named columns may be dotted
    paths into structs, or field ids; a name that does not exist
    (:class:`~puffin.errors.ColumnNotFoundError`), or a list, map or struct
    (:class:`~puffin.errors.UsageError`), is an error.  ``supported(iceberg_type)`` filters
    primitive types the caller cannot handle; those are skipped with a note either way.
    """
    from pyiceberg.types import PrimitiveType

    paths = field_paths(schema)
    if columns is None:
        chosen, notes = _all_primitive(schema, paths)
    else:
        chosen, notes = _named(paths, columns), []
    out: list[ScanColumn] = []
    for ids, name, f in chosen:
        ftype = f.field_type
        assert isinstance(ftype, PrimitiveType)
        if supported is not None and not supported(ftype):
            notes.append(f"skipped column {name!r}: type {ftype} is not supported for sketches")
            continue
        out.append(ScanColumn(field_id=f.field_id, name=name, iceberg_type=ftype, path=ids))
    return out, notes


def snapshot_schema(table: Table, schema_id: int | None) -> Any:
    """The schema a snapshot was written with (the current one if it is not recorded)."""
    if schema_id is not None:
        for schema in table.metadata.schemas:
            if schema.schema_id == schema_id:
                return schema
    return table.schema()
