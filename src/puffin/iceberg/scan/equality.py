"""Rows an equality delete removes, matched in Arrow: the keys are never Python objects per row.

An equality delete file holds rows of key columns (its ``equality_ids``); a data row it
applies to is deleted when its values in those columns equal one of the file's rows, a null
equal to a null (the spec; Java compares keys with ``StructLikeSet``, nulls equal). One key
column is matched with ``is_in`` (nulls matched as values); several with a hash join of the
data's keys against the delete keys, each column made null-safe first: its nulls replaced by
one value of its type beside a column saying which were null, so that a null meets only a
null. Which delete files apply to which data file is the delete-file index's business
(``scan/delete_file_index.py``); this module reads each delete file's keys once per scan
(:class:`EqualityDeletes`) and matches the rows, for ``scan_table``'s row reader and the jobs that
work with positions (``scan/delete_filter.py``). ``tests/iceberg/scan/test_equality.py`` holds the
matching to a model for integer, text, binary, fixed, date, timestamp, decimal and boolean keys, not
yet for floating-point ones (NaN); nested key columns are refused.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from puffin.errors import TableMetadataError, UnsupportedTableError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

__all__ = ["EqualityDeletes", "FileKeys", "deleted_by_keys"]

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


class EqualityDeletes:
    """A scan's equality delete files: each read once (its key columns, found by field id,
    cast to the table's types), then matched against each data file's rows."""

    def __init__(self, table: Any, schemas: Any) -> None:
        self.table, self.schemas = table, schemas  # schemas: row_filter.FileSchemas
        self._keys: dict[str, tuple[tuple[int, ...], pa.Table]] = {}
        self._types: dict[int, pa.DataType] = {}

    def for_file(self, planned: Any, file_schema: Any) -> FileKeys | None:
        """What matching ``planned``'s rows needs (None when no equality delete applies):
        ``file_schema`` is pyiceberg's schema of the data file, by field id."""
        if not planned.equality_deletes:
            return None
        sets = [self._load(d) for d in planned.equality_deletes]
        columns = {
            fid: _top_level(_name(file_schema, fid), fid, planned.path)
            for fid in sorted({fid for ids, _ in sets for fid in ids})
        }
        return FileKeys(sets, columns, {fid: self._type(fid) for fid in columns})

    def _load(self, delete_file: Any) -> tuple[tuple[int, ...], pa.Table]:
        from puffin.iceberg.scan.parquet_files import open_data_file, parquet_file, read_columns

        path = str(delete_file.file_path)
        known = self._keys.get(path)
        if known is not None:
            return known
        ids = tuple(sorted(delete_file.equality_ids or ()))
        if not ids:
            raise UnsupportedTableError(f"equality delete file {path} names no equality ids")
        with open_data_file(self.table.io, path) as f:
            parquet = parquet_file(f, path)
            _, schema = self.schemas.of(parquet.schema_arrow)
            names = [_top_level(_name(schema, fid), fid, path) for fid in ids]
            if None in names:
                lacking = [fid for fid, n in zip(ids, names, strict=True) if n is None]
                raise TableMetadataError(
                    f"equality delete file {path} has no column for its equality field ids "
                    f"{lacking}: its rows cannot say what they delete"
                )
            read = read_columns(parquet, [n for n in names if n is not None])
        keys = _by_ids(read, ids, names, {fid: self._type(fid) for fid in ids})
        self._keys[path] = (ids, keys)
        return ids, keys

    def _type(self, fid: int) -> pa.DataType:
        """The Arrow type of field ``fid`` in the table's schema, worked out once per scan."""
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        known = self._types.get(fid)
        if known is None:
            found = self.table.schema().find_type(fid)
            known = self._types[fid] = schema_to_pyarrow(found, include_field_ids=False)
        return known


class FileKeys:
    """One data file's equality deletes: the columns to read, and the rows they delete."""

    def __init__(
        self,
        sets: list[tuple[tuple[int, ...], pa.Table]],
        columns: dict[int, str | None],
        types: dict[int, pa.DataType],
    ) -> None:
        self.sets, self.by_id, self.types = sets, columns, types
        self.columns = sorted({n for n in columns.values() if n is not None})

    def deleted(self, batch: pa.RecordBatch) -> npt.NDArray[np.bool_]:
        """Which rows of ``batch`` (read with :attr:`columns`) any of the deletes removes."""
        import numpy as np

        gone = np.zeros(batch.num_rows, dtype=bool)
        for ids, keys in self.sets:
            names = [self.by_id[fid] for fid in ids]
            rows = _by_ids(batch, ids, names, self.types)
            gone |= deleted_by_keys(rows, keys)
        return gone


def _by_ids(
    data: Any, ids: tuple[int, ...], names: list[str | None], types: dict[int, pa.DataType]
) -> pa.Table:
    """``data``'s columns ``names`` as a table named by field id, of the table's types (a
    column the file lacks is all null, as the spec reads it)."""
    import pyarrow as pa

    columns = [
        pa.nulls(data.num_rows, types[fid]) if name is None else data.column(name).cast(types[fid])
        for fid, name in zip(ids, names, strict=True)
    ]
    return pa.table(columns, names=[str(fid) for fid in ids])


def _name(schema: Any, fid: int) -> str | None:
    """The column of field ``fid`` in a file's schema; None when the file lacks it."""
    try:
        name = schema.find_column_name(fid)
    except ValueError:
        return None
    return None if name is None else str(name)


def _top_level(name: str | None, fid: int, path: str) -> str | None:
    if name is not None and "." in name:
        raise UnsupportedTableError(
            f"{path}: equality field {fid} ({name}) is nested; only top-level equality "
            "columns are applied yet"
        )
    return name
