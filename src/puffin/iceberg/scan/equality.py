"""Rows an equality delete removes, matched in Arrow: the keys are never Python objects per row.

An equality delete file holds rows of key columns (its ``equality_ids``); a data row it
applies to is deleted when its values in those columns equal one of the file's rows, a null
equal to a null (the spec; Java compares keys with ``StructLikeSet``, nulls equal). One key
column is matched with ``is_in`` (nulls matched as values); several with a hash join of the
data's keys against the delete keys, each column made null-safe first: its nulls replaced by
one value of its type beside a column saying which were null, so that a null meets only a
null. Which delete files apply to which data file is the delete-file index's business
(``scan/delete_file_index.py``); this module only matches the rows. No reader calls it yet
(issue 44 wires it into the one row reader); ``tests/iceberg/scan/test_equality.py`` holds it
to a model for integer, text, binary, fixed, date, timestamp, decimal and boolean keys, not
yet for floating-point ones (NaN).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

__all__ = ["deleted_by_keys"]

_POSITION = "__puffin_pos"


def deleted_by_keys(rows: pa.Table, keys: pa.Table) -> npt.NDArray[np.bool_]:
    """For each row of ``rows`` (the data's key columns), whether it equals a row of ``keys``
    (an equality delete's rows: the same columns, by name), nulls equal to nulls. Each of
    ``keys``' columns is cast to the type of ``rows``' (a delete written before a column's
    type was promoted holds the narrower type)."""
    import numpy as np
    import pyarrow.compute as pc

    names = list(rows.column_names)
    if sorted(names) != sorted(keys.column_names):
        raise ValueError(f"key columns differ: {names} and {keys.column_names}")
    if not rows.num_rows or not keys.num_rows:
        return np.zeros(rows.num_rows, dtype=bool)
    keys = keys.select(names).cast(rows.schema)
    if len(names) == 1:
        found = pc.is_in(rows.column(0), value_set=keys.column(0).unique(), skip_nulls=False)
        matched: npt.NDArray[np.bool_] = found.to_numpy(zero_copy_only=False)
        return matched
    return _joined(rows, keys, names)


def _joined(rows: pa.Table, keys: pa.Table, names: list[str]) -> npt.NDArray[np.bool_]:
    """Several key columns: a semi join of the data's null-safe keys on the delete's."""
    import numpy as np
    import pyarrow as pa

    left = _null_safe(rows, names)
    left = left.append_column(_POSITION, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    right = _null_safe(keys, names)
    on = right.column_names
    joined = left.join(right.group_by(on).aggregate([]), keys=on, join_type="left semi")
    matched = np.zeros(rows.num_rows, dtype=bool)
    matched[joined.column(_POSITION).to_numpy()] = True
    return matched


def _null_safe(table: pa.Table, names: list[str]) -> pa.Table:
    """Each column with its nulls as one value of its type, and beside it whether it was null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns, fields = [], []
    for i, name in enumerate(names):
        column = table.column(name)
        columns += [pc.fill_null(column, _filler(column.type)), pc.is_null(column)]
        fields += [f"k{i}", f"n{i}"]
    return pa.table(columns, names=fields)


def _filler(kind: pa.DataType) -> Any:
    """A value of ``kind`` to stand for null (the null flag beside it tells them apart)."""
    import pyarrow as pa

    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pa.scalar("", kind)
    if pa.types.is_fixed_size_binary(kind):
        return pa.scalar(bytes(kind.byte_width), kind)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return pa.scalar(b"", kind)
    if pa.types.is_boolean(kind):
        return pa.scalar(False, kind)
    if pa.types.is_decimal(kind):
        return pa.scalar(Decimal(0), kind)
    if pa.types.is_temporal(kind):  # dates, times, timestamps: from the integer of their width
        width = pa.int32() if kind.bit_width == 32 else pa.int64()
        return pa.array([0], width).cast(kind)[0]
    return pa.array([0]).cast(kind)[0]
