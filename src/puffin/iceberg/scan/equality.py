"""Rows an equality delete removes, matched in Arrow and NumPy, never as Python objects per row.

An equality delete file holds rows of key columns (its ``equality_ids``); a data row it
applies to is deleted when its values in those columns equal one of the file's rows, a null
equal to a null (the spec; Java compares keys with ``StructLikeSet``, nulls equal). The keys
are prepared once (:class:`KeySet`): one integer key column as a sorted NumPy array, found by
binary search; another single column as its unique values, matched with ``is_in``; several
by a hash join of the data's keys against the delete keys, each column made null-safe first
(its nulls replaced by one value of its type beside a column saying which were null, so that
a null meets only a null). Which delete files apply to which data file is the delete-file
index's business (``scan/delete_file_index.py``); this module reads each delete file's keys
once per job (:class:`EqualityDeletes`), joins the sets a large data file meets into one,
and matches the rows, for ``scan_table``'s row reader and the jobs that work with positions
(``scan/delete_filter.py``). ``tests/iceberg/scan/test_equality.py`` holds the matching to a
model for integer, text, binary, fixed, date, timestamp, decimal, boolean and floating-point
keys, the last as Java compares them (``Float.compareTo``: a NaN equals a NaN, ``-0.0`` is not
``0.0``, as Arrow's hashing has it too). A key nested in structs is read through its parents
(``test_equality_scan.py``); one inside a list or a map, which the spec forbids, is refused.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from puffin.errors import TableMetadataError, UnsupportedTableError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

__all__ = ["EqualityDeletes", "FileKeys", "KeySet", "deleted_by_keys"]

_POSITION = "__puffin_pos"
#: How many times a data file's lookups (rows times the deletes it meets) must outnumber
#: their keys for the keys to be merged into one set: sorting a key costs several lookups.
#: On the 10 M-row CDC benchmark (50 upserts, each file of one meeting every later delete),
#: merging for those files too made the scan 2.2x the converted table's.
MERGE_FROM = 8
#: Integer keys are also held as a table of flags when they span at most this many times
#: their number of values (one byte a value).
DENSE_SPAN = 32
#: Keys the merged sets an :class:`EqualityDeletes` keeps may hold together, the latest set
#: always kept (each large data file meets the union of the deletes that apply to it, and
#: the files of one commit share theirs): 16 M keys, 128 MiB of integer keys.
KEPT_KEYS = 1 << 24


def deleted_by_keys(rows: pa.Table, keys: pa.Table) -> npt.NDArray[np.bool_]:
    """For each row of ``rows`` (the data's key columns), whether it equals a row of ``keys``
    (an equality delete's rows: the same columns, by name), nulls equal to nulls. Each of
    ``keys``' columns is cast to the type of ``rows``' (a delete written before a column's
    type was promoted holds the narrower type)."""
    names = list(rows.column_names)
    if sorted(names) != sorted(keys.column_names):
        raise ValueError(f"key columns differ: {names} and {keys.column_names}")
    return KeySet(keys.select(names).cast(rows.schema)).deleted(rows)


class KeySet:
    """The rows of one or more equality deletes on the same key columns, prepared once for
    matching many batches: ``pc.is_in`` and a join build their hash table again at every
    call, so one integer key column is kept as a sorted NumPy array and found by binary
    search (on the 10 M-row CDC benchmark, 50 deletes of 20,000 keys each met every
    64 K-row batch), another single column as its unique values, several as a table of
    unique null-safe keys."""

    def __init__(self, keys: pa.Table) -> None:
        import numpy as np
        import pyarrow as pa

        self.names, self.rows = list(keys.column_names), keys.num_rows
        self.sorted: npt.NDArray[Any] | None = None
        self.dense: npt.NDArray[np.bool_] | None = None
        self.values: pa.Array | None = None
        self.table: pa.Table | None = None
        if len(self.names) > 1:
            right = _null_safe(keys, self.names)
            self.table = right.group_by(right.column_names).aggregate([])
            return
        column = keys.column(0).combine_chunks()
        self.has_null = column.null_count > 0
        present = column.drop_null().unique()
        if pa.types.is_integer(column.type):
            self.sorted = np.sort(present.to_numpy())
            self.dense = _dense(self.sorted)
        else:
            self.values = present

    @classmethod
    def union(cls, parts: list[KeySet]) -> KeySet:
        """One set of the keys of ``parts`` (on the same columns): sorted runs sorted
        together (NumPy's stable sort merges runs), values or tables joined and deduplicated."""
        import numpy as np
        import pyarrow as pa

        merged = cls.__new__(cls)
        first = parts[0]
        merged.names, merged.rows = first.names, sum(p.rows for p in parts)
        merged.sorted = merged.values = merged.table = merged.dense = None
        merged.has_null = any(getattr(p, "has_null", False) for p in parts)
        if first.sorted is not None:
            runs = [p.sorted for p in parts if p.sorted is not None]
            merged.sorted = np.sort(np.concatenate(runs), kind="stable")
            merged.dense = _dense(merged.sorted)
        elif first.values is not None:
            merged.values = pa.concat_arrays([p.values for p in parts if p.values is not None])
            merged.values = merged.values.unique()
        else:
            tables = pa.concat_tables([p.table for p in parts if p.table is not None])
            merged.table = tables.group_by(tables.column_names).aggregate([])
        return merged

    def deleted(self, rows: pa.Table) -> npt.NDArray[np.bool_]:
        """Which of ``rows`` (the key columns, by the same names and types) are deleted."""
        import numpy as np
        import pyarrow.compute as pc

        if not rows.num_rows or not self.rows:
            return np.zeros(rows.num_rows, dtype=bool)
        if self.table is not None:
            return _joined(rows, self.table, self.names)
        column = rows.column(self.names[0])
        nulls = column.null_count
        if self.sorted is None:  # skip_nulls: a null in the data is matched below
            found = pc.is_in(column, value_set=self.values, skip_nulls=True)
            hit: npt.NDArray[np.bool_] = found.to_numpy(zero_copy_only=False)
        elif not len(self.sorted):
            hit = np.zeros(rows.num_rows, dtype=bool)
        else:
            values = (pc.fill_null(column, 0) if nulls else column).to_numpy()
            hit = self._integer_hits(values)
        if nulls:
            is_null = pc.is_null(column).to_numpy(zero_copy_only=False)
            hit = np.where(is_null, self.has_null, hit)
        return hit


    def _integer_hits(self, values: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
        """Which ``values`` are keys: one read of the dense table when there is one (a
        random read per value, where a binary search makes twenty), else a binary search."""
        import numpy as np

        assert self.sorted is not None
        if self.dense is None:
            at = np.minimum(np.searchsorted(self.sorted, values), len(self.sorted) - 1)
            hit: npt.NDArray[np.bool_] = self.sorted[at] == values
            return hit
        low, high = self.sorted[0], self.sorted[-1]
        inside = (values >= low) & (values <= high)
        # Outside the keys' range an offset may wrap around; ``inside`` discards it.
        with np.errstate(over="ignore"):
            offsets = values.astype(np.int64, copy=False) - np.int64(low)
        found: npt.NDArray[np.bool_] = self.dense[np.clip(offsets, 0, len(self.dense) - 1)]
        both: npt.NDArray[np.bool_] = inside & found
        return both


def _dense(ordered: npt.NDArray[Any]) -> npt.NDArray[np.bool_] | None:
    """A table of one flag per value from the smallest key to the largest, when that span
    is at most :data:`DENSE_SPAN` times the keys (and 64 Mi slots): on the CDC benchmark
    1 M keys among 10 M ids were matched 3.6x faster than by binary search."""
    import numpy as np

    if not len(ordered):
        return None
    span = int(ordered[-1]) - int(ordered[0]) + 1
    if span > min(DENSE_SPAN * len(ordered), 1 << 26):
        return None
    table = np.zeros(span, dtype=bool)
    table[ordered.astype(np.int64) - np.int64(ordered[0])] = True
    return table


def _joined(rows: pa.Table, right: pa.Table, names: list[str]) -> npt.NDArray[np.bool_]:
    """Several key columns: a semi join of the data's null-safe keys on the delete's."""
    import numpy as np
    import pyarrow as pa

    left = _null_safe(rows, names)
    left = left.append_column(_POSITION, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    on = right.column_names
    joined = left.join(right, keys=on, join_type="left semi")
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
        self._keys: dict[str, tuple[tuple[int, ...], KeySet]] = {}  # by delete file
        self._types: dict[int, pa.DataType] = {}
        self._sets: OrderedDict[tuple[tuple[int, ...], tuple[str, ...]], KeySet] = OrderedDict()
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._sequence: dict[str, int] = {}  # each delete file's data sequence number
        self._by_scope: dict[tuple[tuple[int, ...], Any], Any] = {}  # NewestKeys
        self._unpartitioned: frozenset[int] | None = None

    def for_file(self, planned: Any, file_schema: Any) -> FileKeys | None:
        """What matching ``planned``'s rows needs (None when no equality delete applies):
        ``file_schema`` is pyiceberg's schema of the data file, by field id.

        A data file whose rows, times the deletes it meets, outnumber their keys
        :data:`MERGE_FROM` times is matched against their union (built once for the data
        files that share those deletes); a smaller one against each delete's own set, so
        that a small file does not pay for sorting more keys than it has lookups to make."""
        if not planned.equality_deletes:
            return None
        by_ids: dict[tuple[int, ...], list[Any]] = {}
        for d in planned.equality_deletes:
            ids, _ = self.load(d)
            by_ids.setdefault(ids, []).append(d)
        sets: list[tuple[tuple[int, ...], Any]] = []
        for ids, deletes in by_ids.items():
            newest = self._newest(planned, ids, deletes)
            if newest is not None:
                sets.extend((ids, n) for n in newest)
                continue
            paths = sorted(str(d.file_path) for d in deletes)
            parts = [self._key_set(p) for p in paths]
            lookups = planned.record_count * len(parts)
            if len(parts) > 1 and lookups >= MERGE_FROM * sum(p.rows for p in parts):
                sets.append((ids, self._merged(ids, tuple(paths), parts)))
            else:
                sets.extend((ids, p) for p in parts)
        columns = {
            fid: _path(file_schema, fid, planned.path)
            for fid in sorted({fid for ids in by_ids for fid in ids})
        }
        return FileKeys(sets, columns, {fid: self._type(fid) for fid in columns})

    def _newest(self, planned: Any, ids: tuple[int, ...], deletes: list[Any]) -> list[Any] | None:
        """Matchers of ``planned``'s rows by the newest delete holding each key
        (:mod:`~puffin.iceberg.scan.newest_keys`), one per scope of ``deletes``; None when
        that does not apply (keys not integers, or the plan did not read the sequence
        numbers)."""
        from puffin.iceberg.scan.newest_keys import AtSequence

        sequences = planned.equality_sequences
        if planned.data_sequence is None or len(ids) != 1:
            return None
        paths = [str(d.file_path) for d in deletes]
        if any(p not in sequences or self._key_set(p).sorted is None for p in paths):
            return None
        scopes: dict[Any, set[str]] = {}
        for d, path in zip(deletes, paths, strict=True):
            self._sequence[path] = sequences[path]
            scopes.setdefault(self._scope(d), set()).add(path)
        return [
            AtSequence(self._newest_keys(ids, scope, found), planned.data_sequence)
            for scope, found in scopes.items()
        ]

    def _scope(self, delete_file: Any) -> Any:
        """Where an equality delete applies: every partition (a delete of an unpartitioned
        spec), or its own."""
        from puffin.iceberg.scan.delete_file_index import partition_key

        if self._unpartitioned is None:
            specs = self.table.metadata.partition_specs
            self._unpartitioned = frozenset(s.spec_id for s in specs if s.is_unpartitioned())
        if (delete_file.spec_id or 0) in self._unpartitioned:
            return "global"
        return partition_key(delete_file)

    def _newest_keys(self, ids: tuple[int, ...], scope: Any, paths: set[str]) -> Any:
        """The scope's :class:`NewestKeys`, built again with ``paths`` when it lacks some."""
        from puffin.iceberg.scan.newest_keys import NewestKeys

        with self._build_lock:  # files read in parallel wait for one build, not make their own
            known = self._by_scope.get((ids, scope))
            if known is not None and paths <= known.paths:
                return known
            every = frozenset(paths | (known.paths if known is not None else set()))
            parts = []
            for p in sorted(every):
                keys = self._key_set(p)
                assert keys.sorted is not None
                parts.append((self._sequence[p], keys.sorted, keys.has_null))
            built = self._by_scope[(ids, scope)] = NewestKeys(parts, every)
            return built

    def _key_set(self, path: str) -> KeySet:
        """The :class:`KeySet` of one delete file (already loaded)."""
        return self._keys[path][1]

    def _merged(self, ids: tuple[int, ...], paths: tuple[str, ...], parts: list[KeySet]) -> KeySet:
        """The union of ``parts`` (the sets of ``paths``), the last few unions kept."""
        key = (ids, paths)
        with self._lock:
            known = self._sets.get(key)
            if known is not None:
                self._sets.move_to_end(key)
                return known
        merged = KeySet.union(parts)
        with self._lock:
            self._sets[key] = merged
            while len(self._sets) > 1 and sum(k.rows for k in self._sets.values()) > KEPT_KEYS:
                self._sets.popitem(last=False)
        return merged

    def load(self, delete_file: Any) -> tuple[tuple[int, ...], KeySet]:
        """The key columns and keys of ``delete_file``, read on first use (the rows are
        held only as their :class:`KeySet`)."""
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
            paths = [_path(schema, fid, path) for fid in ids]
            if None in paths:
                lacking = [fid for fid, n in zip(ids, paths, strict=True) if n is None]
                raise TableMetadataError(
                    f"equality delete file {path} has no column for its equality field ids "
                    f"{lacking}: its rows cannot say what they delete"
                )
            read = read_columns(parquet, sorted({n[0] for n in paths if n is not None}))
        keys = _by_ids(read, ids, paths, {fid: self._type(fid) for fid in ids})
        self._keys[path] = (ids, KeySet(keys))
        return self._keys[path]

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
        sets: list[tuple[tuple[int, ...], Any]],
        columns: dict[int, tuple[str, ...] | None],
        types: dict[int, pa.DataType],
    ) -> None:
        self.sets, self.by_id, self.types = sets, columns, types
        #: the top-level columns to read (a struct whole, for a key nested in it)
        self.columns = sorted({n[0] for n in columns.values() if n is not None})

    def deleted(self, batch: pa.RecordBatch) -> npt.NDArray[np.bool_]:
        """Which rows of ``batch`` (read with :attr:`columns`) any of the deletes removes."""
        import numpy as np

        gone = np.zeros(batch.num_rows, dtype=bool)
        for ids, keys in self.sets:
            names = [self.by_id[fid] for fid in ids]
            gone |= keys.deleted(_by_ids(batch, ids, names, self.types))
        return gone


def _by_ids(
    data: Any,
    ids: tuple[int, ...],
    paths: list[tuple[str, ...] | None],
    types: dict[int, pa.DataType],
) -> pa.Table:
    """``data``'s columns at ``paths`` (a struct's field through its parents) as a table named
    by field id, of the table's types (a column the file lacks is all null, as the spec
    reads it; so is a nested one whose parent struct is null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for fid, path in zip(ids, paths, strict=True):
        if path is None:
            columns.append(pa.nulls(data.num_rows, types[fid]))
            continue
        column = data.column(path[0])
        for name in path[1:]:
            column = pc.struct_field(column, name)
        columns.append(column.cast(types[fid]))
    return pa.table(columns, names=[str(fid) for fid in ids])


def _path(schema: Any, fid: int, where: str) -> tuple[str, ...] | None:
    """The names leading to field ``fid`` through a file's structs (pyiceberg's schema of
    the file); None when the file lacks it. A field inside a list or a map cannot be an
    equality key (the spec), and is refused."""
    from pyiceberg.types import StructType

    def walk(fields: Any, prefix: tuple[str, ...]) -> tuple[str, ...] | None:
        for f in fields:
            here = (*prefix, f.name)
            if f.field_id == fid:
                return here
            if isinstance(f.field_type, StructType):
                found = walk(f.field_type.fields, here)
                if found is not None:
                    return found
        return None

    found = walk(schema.fields, ())
    if found is None and _has_field(schema, fid):
        raise UnsupportedTableError(
            f"{where}: equality field {fid} lies inside a list or a map, which the spec does "
            "not allow as an equality key"
        )
    return found


def _has_field(schema: Any, fid: int) -> bool:
    try:
        schema.find_field(fid)
    except ValueError:
        return False
    return True
