"""A table recipe's values: its position lists and its data files' rows as Arrow.

Shared by the recipe builder (:mod:`puffin.conformance.tables`) and the steps that commit a
deletion vector a writer got wrong (:mod:`puffin.conformance.table_mistakes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["TYPES", "arrow_rows", "positions_of"]

#: A recipe column type -> (pyiceberg type class, pyarrow type function)
TYPES = {
    "long": ("LongType", "int64"),
    "int": ("IntegerType", "int32"),
    "string": (
        "StringType",
        "string",
    ),
}


def positions_of(spec: Iterable[int | Sequence[int]]) -> list[int]:
    """Ascending distinct positions of a recipe's position list (integers and ranges)."""
    out: set[int] = set()
    for item in spec:
        if isinstance(item, int):
            out.add(item)
        else:
            out.update(range(*item))
    return sorted(out)


def arrow_rows(columns: Sequence[Mapping[str, Any]], rows: Sequence[Sequence[Any]]) -> pa.Table:
    """A data file's rows as an Arrow table of the recipe's columns."""
    import pyarrow as pa

    arrays = {
        c["name"]: pa.array([r[i] for r in rows], getattr(pa, TYPES[c["type"]][1])())
        for i, c in enumerate(columns)
    }
    return pa.table(arrays)
