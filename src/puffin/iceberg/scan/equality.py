"""Rows an equality delete removes, matched in Arrow and NumPy, never as Python objects per row.

An equality delete file holds rows of key columns (its ``equality_ids``); a data row it
applies to is deleted when its values in those columns equal one of the file's rows, a null
equal to a null (the spec; Java compares keys with ``StructLikeSet``, nulls equal). Which
delete files apply to which data file is the delete-file index's business
(``scan/delete_file_index.py``). This module reads each delete file's keys once per job
(:class:`EqualityDeletes`: by field id, a key nested in structs through its parents, cast to
the table's types) and says what matches a data file's rows (:class:`FileKeys`): for one
integer key, the newest delete holding each key of a scope (``scan/newest_keys.py``: one
lookup per row); otherwise the deletes' prepared keys (``scan/key_sets.py``), joined into one
set for a large data file. ``scan_table``'s row reader and the jobs that work with positions
(``scan/delete_filter.py``) use it. A key inside a list or a map, which the spec forbids, is
refused; ``test_equality_scan.py`` and ``test_equality_cdc.py`` hold the results to models.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from puffin.errors import TableMetadataError, UnsupportedTableError
from puffin.iceberg.scan.arrow import nested_column
from puffin.iceberg.scan.key_sets import KeySet

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

__all__ = ["EqualityDeletes", "FileKeys", "key_fields"]

#: How many times a data file's lookups (rows times the deletes it meets) must outnumber
#: their keys for the keys to be merged into one set: sorting a key costs several lookups.
#: On the 10 M-row CDC benchmark (50 upserts, each file of one meeting every later delete),
#: merging for those files too made the scan 2.2x the converted table's.
MERGE_FROM = 8
#: Keys the merged sets an :class:`EqualityDeletes` keeps may hold together, the latest set
#: always kept (each large data file meets the union of the deletes that apply to it, and
#: the files of one commit share theirs): 16 M keys, 128 MiB of integer keys.
KEPT_KEYS = 1 << 24


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
        from puffin.iceberg.scan.plan import unpartitioned_specs

        if self._unpartitioned is None:
            self._unpartitioned = unpartitioned_specs(self.table.metadata)
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

    def _merged(
        self, ids: tuple[int, ...], paths: tuple[str, ...], parts: list[KeySet]
    ) -> KeySet:
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

    columns = [
        pa.nulls(data.num_rows, types[fid])
        if path is None
        else nested_column(data, path).cast(types[fid])
        for fid, path in zip(ids, paths, strict=True)
    ]
    return pa.table(columns, names=[str(fid) for fid in ids])


def _path(schema: Any, fid: int, where: str) -> tuple[str, ...] | None:
    """The names leading to field ``fid`` through a file's structs (pyiceberg's schema of
    the file); None when the file lacks it (:func:`key_fields`)."""
    fields = key_fields(schema, fid, where)
    return None if fields is None else tuple(f.name for f in fields)


def key_fields(schema: Any, fid: int, where: str) -> list[Any] | None:
    """The fields leading to equality key ``fid`` through ``schema``'s structs, the key's
    own last; None when the schema lacks it. A field inside a list or a map cannot be an
    equality key (the spec): :class:`UnsupportedTableError` naming ``where``."""
    from pyiceberg.types import StructType

    def walk(fields: Any, prefix: list[Any]) -> list[Any] | None:
        for f in fields:
            here = [*prefix, f]
            if f.field_id == fid:
                return here
            if isinstance(f.field_type, StructType):
                found = walk(f.field_type.fields, here)
                if found is not None:
                    return found
        return None

    found = walk(schema.fields, [])
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
