"""Reading a snapshot's live rows column by column, by field id, with its deletes applied.

pyiceberg plans the snapshot (which data files, which delete files apply to each); the
columns are then read here with pyarrow, one row group at a time, matched to the table's
columns by Parquet field id (or, for files written without ids, by the table's name
mapping), so renamed and reordered columns read correctly and dropped or later-added columns
are simply absent from older files.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from pyiceberg.io import FileIO
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.name_mapping import MappedField, NameMapping
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.types import IcebergType, NestedField, PrimitiveType

__all__ = [
    "ColumnNotFoundError",
    "DeleteIndex",
    "PlannedFile",
    "ScanColumn",
    "UnsupportedTableError",
    "arrow_type_for",
    "local_path",
    "open_input",
    "plan_files",
    "read_columns",
    "resolve_columns",
    "to_iceberg_arrow",
]

FIELD_ID_KEY = b"PARQUET:field_id"
DELETE_FILE_PATH = "file_path"
DELETE_POS = "pos"


class UnsupportedTableError(NotImplementedError):
    """The table uses a feature this reader does not handle (equality deletes, ORC, ...)."""


class ColumnNotFoundError(LookupError):
    """A requested column is not in the snapshot's schema."""


# --- locations ------------------------------------------------------------------------------


def local_path(location: str) -> str | None:
    """The local path of a ``file:`` (or scheme-less) location, else ``None``.

    Mirrors how pyiceberg's own FileIO maps such locations, so both see the same file.
    """
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return f"{parsed.netloc}{parsed.path}" if parsed.netloc else parsed.path
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return os.path.abspath(location)
    return None


def open_input(io: FileIO, location: str) -> Any:
    """A seekable binary file for ``location``: the local file, or the FileIO's stream."""
    path = local_path(location)
    if path is not None:
        return open(path, "rb")  # the caller closes it
    return io.new_input(location).open(seekable=True)


# --- columns --------------------------------------------------------------------------------


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


def _struct_paths(schema: Schema) -> dict[int, tuple[tuple[int, ...], str, NestedField]]:
    """Every field reachable through structs only: id -> (id path, dotted name, field)."""
    from pyiceberg.types import StructType

    out: dict[int, tuple[tuple[int, ...], str, NestedField]] = {}

    def walk(struct: StructType, ids: tuple[int, ...], prefix: str) -> None:
        for f in struct.fields:
            name = f"{prefix}{f.name}"
            out[f.field_id] = ((*ids, f.field_id), name, f)
            if isinstance(f.field_type, StructType):
                walk(f.field_type, (*ids, f.field_id), f"{name}.")

    walk(schema.as_struct(), (), "")
    return out


def resolve_columns(
    schema: Schema,
    columns: Sequence[str | int] | None,
    *,
    supported: Any = None,
) -> tuple[list[ScanColumn], list[str]]:
    """The columns to read and notes on the ones skipped.

    ``columns=None`` means every top-level primitive column (as Iceberg Java's statistics
    action does); non-primitive ones are skipped with a note.  Named columns may be dotted
    paths into structs, or field ids; a name that does not exist, or a list, map or struct,
    is an error.  ``supported(iceberg_type) -> bool`` filters primitive types the caller
    cannot handle; those are skipped with a note either way.
    """
    from pyiceberg.types import PrimitiveType

    paths = _struct_paths(schema)
    notes: list[str] = []
    chosen: list[tuple[tuple[int, ...], str, NestedField]] = []
    if columns is None:
        for f in schema.fields:
            if isinstance(f.field_type, PrimitiveType):
                chosen.append(paths[f.field_id])
            else:
                notes.append(
                    f"skipped column {f.name!r} ({f.field_type}): only primitive columns "
                    "have theta sketches"
                )
    else:
        by_name = {name: entry for entry in paths.values() for name in (entry[1],)}
        seen: set[int] = set()
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
                raise ValueError(
                    f"column {entry[1]!r} is {entry[2].field_type}, not a primitive type: "
                    "theta sketches are computed for primitive columns only"
                )
            if entry[0][-1] not in seen:
                seen.add(entry[0][-1])
                chosen.append(entry)
    out: list[ScanColumn] = []
    for ids, name, f in chosen:
        ftype = f.field_type
        assert isinstance(ftype, PrimitiveType)
        if supported is not None and not supported(ftype):
            notes.append(f"skipped column {name!r}: type {ftype} is not supported for sketches")
            continue
        out.append(ScanColumn(field_id=f.field_id, name=name, iceberg_type=ftype, path=ids))
    return out, notes


def arrow_type_for(iceberg_type: IcebergType) -> pa.DataType:
    """The Arrow type whose values are exactly the Iceberg type's values."""
    import pyarrow as pa
    from pyiceberg import types as t

    simple: dict[type, pa.DataType] = {
        t.BooleanType: pa.bool_(),
        t.IntegerType: pa.int32(),
        t.LongType: pa.int64(),
        t.FloatType: pa.float32(),
        t.DoubleType: pa.float64(),
        t.DateType: pa.date32(),
        t.TimeType: pa.time64("us"),
        t.TimestampType: pa.timestamp("us"),
        t.TimestamptzType: pa.timestamp("us", tz="UTC"),
        t.StringType: pa.large_string(),
        t.BinaryType: pa.large_binary(),
        t.UUIDType: pa.binary(16),
    }
    for name, unit, tz in (
        ("TimestampNanoType", "ns", None),
        ("TimestamptzNanoType", "ns", "UTC"),
    ):
        cls = getattr(t, name, None)
        if cls is not None:
            simple[cls] = pa.timestamp(unit, tz=tz)
    for cls, arrow in simple.items():
        if isinstance(iceberg_type, cls):
            return arrow
    if isinstance(iceberg_type, t.DecimalType):
        return pa.decimal128(iceberg_type.precision, iceberg_type.scale)
    if isinstance(iceberg_type, t.FixedType):
        return pa.binary(len(iceberg_type))
    raise TypeError(f"no Arrow type for Iceberg type {iceberg_type}")


def to_iceberg_arrow(
    array: Any, iceberg_type: IcebergType, *, distinct_ok: bool = False
) -> pa.Array:
    """``array`` as an Arrow array holding the Iceberg type's values.

    Undoes what a file may differ in: extension types (``arrow.uuid``), dictionary
    encoding, chunking, promoted types (an ``int`` file in a ``long`` column, ``float`` to
    ``double``, wider decimals) and timestamp units.  String and binary keep their offset
    width; the sketch reads both.

    With ``distinct_ok`` a dictionary-encoded array becomes just the dictionary values its
    rows use (each once): enough for a distinct-count sketch, and far less to hash.
    """
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        if distinct_ok and pa.types.is_dictionary(array.type) and array.num_chunks > 1:
            parts = [to_iceberg_arrow(c, iceberg_type, distinct_ok=True) for c in array.chunks]
            return pa.concat_arrays(parts)
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    if pa.types.is_dictionary(array.type):
        array = _used_dictionary_values(array) if distinct_ok else array.dictionary_decode()
    target = arrow_type_for(iceberg_type)
    have = array.type
    if have == target:
        return array
    if pa.types.is_large_string(target) and pa.types.is_string(have):
        return array
    if pa.types.is_large_binary(target) and (pa.types.is_binary(have)):
        return array
    if pa.types.is_large_string(target) and pa.types.is_string_view(have):
        return array.cast(pa.large_string())
    if pa.types.is_large_binary(target) and pa.types.is_binary_view(have):
        return array.cast(pa.large_binary())
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(have):
        # Older writers (INT96, millisecond files) store other units; truncate like Java.
        return array.cast(target, safe=False)
    return array.cast(target)


def _used_dictionary_values(array: pa.DictionaryArray) -> pa.Array:
    """The dictionary entries that the array's non-null rows point at, each once."""
    import numpy as np
    import pyarrow.compute as pc

    indices = array.indices
    if array.null_count:
        indices = pc.drop_null(indices)
    if len(indices) == 0:
        return array.dictionary.slice(0, 0)
    counts = np.bincount(
        indices.to_numpy(zero_copy_only=False), minlength=len(array.dictionary)
    )
    return array.dictionary.take(np.flatnonzero(counts))


# Dictionary pages of Parquet writers are capped at about 1 MiB; RLE/bit-packed indices
# take at most 4 bytes a row.  A column chunk larger than that fell back to plain pages.
_DICTIONARY_SLACK = 2 << 20
_INDEX_BYTES = 4


def _dictionary_columns(metadata: Any, tops: Sequence[str], string_tops: set[str]) -> list[str]:
    """Top-level string/binary columns whose every chunk is dictionary-encoded.

    Reading those as Arrow dictionaries skips materializing every row's bytes; reading a
    column that fell back to plain pages as a dictionary would cost a hash per row instead,
    so those are read plainly.
    """
    wanted = [t for t in tops if t in string_tops]
    if not wanted or not metadata.num_row_groups:
        return []
    first = metadata.row_group(0)
    index = {first.column(i).path_in_schema: i for i in range(first.num_columns)}
    out = []
    for name in wanted:
        col = index.get(name)
        if col is None:
            continue
        chunks = [metadata.row_group(rg).column(col) for rg in range(metadata.num_row_groups)]
        if all(
            c.has_dictionary_page
            and c.total_uncompressed_size <= _INDEX_BYTES * c.num_values + _DICTIONARY_SLACK
            for c in chunks
        ):
            out.append(name)
    return out


# --- planning ---------------------------------------------------------------------------------


@dataclass
class PlannedFile:
    """A live data file of the snapshot and the delete files that apply to it."""

    data_file: DataFile
    delete_files: list[DataFile] = field(default_factory=list)

    @property
    def path(self) -> str:
        return str(self.data_file.file_path)

    @property
    def record_count(self) -> int:
        return int(self.data_file.record_count)


def plan_files(table: Table, snapshot: Snapshot) -> list[PlannedFile]:
    """pyiceberg's plan of the snapshot: data files with the deletes that apply to each."""
    from pyiceberg.manifest import DataFileContent

    try:
        tasks = list(table.scan(snapshot_id=snapshot.snapshot_id).plan_files())
    except ValueError as exc:
        if "equality delete" in str(exc).lower():
            raise UnsupportedTableError(
                "the snapshot has equality delete files, which neither pyiceberg nor this "
                "library applies; compute statistics on Spark or after compaction"
            ) from exc
        raise
    planned = []
    for task in tasks:
        deletes = sorted(task.delete_files, key=lambda d: str(d.file_path))
        for d in deletes:
            if d.content == DataFileContent.EQUALITY_DELETES:
                raise UnsupportedTableError(
                    f"equality delete file {d.file_path} applies to {task.file.file_path}; "
                    "equality deletes are not supported"
                )
        planned.append(PlannedFile(task.file, deletes))
    planned.sort(key=lambda p: p.path)
    return planned


# --- deletes ----------------------------------------------------------------------------------


class DeleteIndex:
    """Deleted positions per data file, loaded once per delete file.

    Reads Parquet position-delete files (``file_path``, ``pos``) and deletion-vector Puffin
    files (each blob's ``referenced-data-file``).  Positions come back sorted and unique.
    """

    def __init__(self, io: FileIO) -> None:
        self._io = io
        self._loaded: dict[str, dict[str, npt.NDArray[np.int64]]] = {}
        self._lock = threading.Lock()

    def positions(
        self, data_path: str, delete_files: Iterable[DataFile]
    ) -> npt.NDArray[np.int64] | None:
        import numpy as np

        parts = []
        for d in delete_files:
            found = self._load(d).get(data_path)
            if found is not None and len(found):
                parts.append(found)
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return np.unique(np.concatenate(parts))

    def _load(self, delete_file: DataFile) -> dict[str, npt.NDArray[np.int64]]:
        from pyiceberg.manifest import FileFormat

        path = str(delete_file.file_path)
        with self._lock:
            cached = self._loaded.get(path)
        if cached is not None:
            return cached
        fmt = delete_file.file_format
        if fmt == FileFormat.PUFFIN:
            loaded = self._load_puffin(path)
        elif fmt == FileFormat.PARQUET:
            loaded = self._load_parquet(path)
        else:
            raise UnsupportedTableError(
                f"position delete file {path} is {fmt}; only Parquet and Puffin are read"
            )
        with self._lock:
            self._loaded[path] = loaded
        return loaded

    def _load_parquet(self, path: str) -> dict[str, npt.NDArray[np.int64]]:
        import numpy as np
        import pyarrow.parquet as pq

        with open_input(self._io, path) as f:
            table = pq.read_table(f, columns=[DELETE_FILE_PATH, DELETE_POS])
        if table.num_rows == 0:
            return {}
        encoded = table.column(DELETE_FILE_PATH).combine_chunks().dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        pos = table.column(DELETE_POS).to_numpy().astype(np.int64, copy=False)
        order = np.argsort(codes, kind="stable")
        codes, pos = codes[order], pos[order]
        names = encoded.dictionary.to_pylist()
        bounds = np.searchsorted(codes, np.arange(len(names) + 1))
        return {
            str(name): np.unique(pos[bounds[i] : bounds[i + 1]]) for i, name in enumerate(names)
        }

    def _load_puffin(self, path: str) -> dict[str, npt.NDArray[np.int64]]:
        from puffin.blobs.deletion_vector import read_deletion_vectors

        with open_input(self._io, path) as f:
            vectors = read_deletion_vectors(f)
        return {entry_path: dv.to_numpy() for entry_path, dv in _dv_items(vectors)}


def _dv_items(vectors: Any) -> Iterator[tuple[str, Any]]:
    """(referenced data file, DeletionVector) pairs from ``read_deletion_vectors``' result."""
    if isinstance(vectors, Mapping):
        yield from ((str(k), v) for k, v in vectors.items())
        return
    for item in vectors:
        if isinstance(item, tuple):
            yield str(item[0]), item[-1]
        else:  # an object with the path and the vector
            path = getattr(item, "referenced_data_file", None)
            dv = getattr(item, "deletion_vector", None) or getattr(item, "vector", None)
            yield str(path), dv


def keep_mask(
    positions: npt.NDArray[np.int64] | None, start: int, count: int
) -> npt.NDArray[np.bool_] | None:
    """Rows ``start .. start+count`` of a file that survive ``positions``; None if all do."""
    import numpy as np

    if positions is None or not len(positions):
        return None
    lo, hi = np.searchsorted(positions, [start, start + count])
    if lo == hi:
        return None
    mask = np.ones(count, dtype=bool)
    mask[positions[lo:hi] - start] = False
    return mask


# --- reading ----------------------------------------------------------------------------------


def _file_columns(
    arrow_schema: pa.Schema, mapping: NameMapping | None, location: str
) -> dict[int, tuple[str, ...]]:
    """Field id -> path of Arrow field names in one data file.

    As in Iceberg Java, a file's own field ids win; only a file with none at all is matched
    by name through the table's name mapping.
    """
    ids = _walk_fields(arrow_schema, None)
    if ids:
        return ids
    if mapping is None:
        raise UnsupportedTableError(
            f"data file {location} has no Parquet field ids and the table has no name "
            "mapping (schema.name-mapping.default) to match its columns by name"
        )
    return _walk_fields(arrow_schema, list(mapping.root))


def _walk_fields(
    arrow_schema: pa.Schema, mapping: list[MappedField] | None
) -> dict[int, tuple[str, ...]]:
    import pyarrow as pa

    out: dict[int, tuple[str, ...]] = {}

    def walk(
        fields: Iterable[pa.Field], names: tuple[str, ...], mapped: list[MappedField] | None
    ) -> None:
        for f in fields:
            path = (*names, f.name)
            fid: int | None = None
            children: list[MappedField] | None = None
            if mapping is None:
                raw = (f.metadata or {}).get(FIELD_ID_KEY)
                if raw is not None:
                    try:
                        fid = int(raw)
                    except ValueError:
                        fid = None
            else:
                m = next((m for m in mapped or [] if f.name in m.names), None)
                if m is not None:
                    fid, children = m.field_id, list(m.fields)
            if fid is not None:
                out.setdefault(fid, path)
            if pa.types.is_struct(f.type):
                walk([f.type.field(i) for i in range(f.type.num_fields)], path, children)

    walk(arrow_schema, (), mapping)
    return out


def _extract(table: pa.Table, names: tuple[str, ...]) -> pa.ChunkedArray:
    import pyarrow.compute as pc

    column = table.column(names[0])
    for name in names[1:]:
        column = pc.struct_field(column, name)
    return column


@dataclass
class Batch:
    """Columns of one row group of one data file, deleted rows already removed.

    ``rows`` counts the rows read before deletes (for progress); ``columns[field_id]`` is
    ``None`` where the file does not have the column (it was added later: all null).
    """

    data_path: str
    rows: int
    live_rows: int
    columns: dict[int, pa.Array | None]


def _read_file(
    io: FileIO,
    planned: PlannedFile,
    columns: Sequence[ScanColumn],
    deletes: DeleteIndex,
    mapping: NameMapping | None,
    distinct_ok: bool,
) -> Iterator[Batch]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.manifest import FileFormat

    if planned.data_file.file_format != FileFormat.PARQUET:
        raise UnsupportedTableError(
            f"data file {planned.path} is {planned.data_file.file_format}; only Parquet is read"
        )
    positions = deletes.positions(planned.path, planned.delete_files)
    local = local_path(planned.path)
    # A native Arrow file: Parquet reads then never take the GIL (a Python file object would).
    source = pa.OSFile(local, "r") if local is not None else io.new_input(planned.path).open()
    with source as f:
        pf = pq.ParquetFile(f)
        ids = _file_columns(pf.schema_arrow, mapping, planned.path)
        present = {c.field_id: ids[c.field_id] for c in columns if c.field_id in ids}
        tops = sorted({p[0] for p in present.values()})
        if distinct_ok:
            from pyiceberg.types import BinaryType, StringType

            string_tops = {
                present[c.field_id][0]
                for c in columns
                if c.field_id in present
                and len(present[c.field_id]) == 1
                and isinstance(c.iceberg_type, (StringType, BinaryType))
            }
            dictionary = _dictionary_columns(pf.metadata, tops, string_tops)
            if dictionary:
                pf = pq.ParquetFile(f, metadata=pf.metadata, read_dictionary=dictionary)
        start = 0
        for rg in range(pf.metadata.num_row_groups):
            count = pf.metadata.row_group(rg).num_rows
            mask = keep_mask(positions, start, count)
            out: dict[int, pa.Array | None] = {c.field_id: None for c in columns}
            live = count if mask is None else int(mask.sum())
            if tops and live:
                table = pf.read_row_group(rg, columns=tops, use_threads=True)
                if mask is not None:
                    table = table.filter(pa.array(mask))
                for c in columns:
                    names = present.get(c.field_id)
                    if names is not None:
                        out[c.field_id] = to_iceberg_arrow(
                            _extract(table, names), c.iceberg_type, distinct_ok=distinct_ok
                        )
            yield Batch(planned.path, count, live, out)
            start += count


T = TypeVar("T")


def _prefetch(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Run ``items`` in a background thread, ``depth`` ahead of the consumer.

    Reading (Parquet decoding, which releases the GIL) then overlaps the consumer's work.
    Errors are re-raised in the consumer; leaving early stops the producer.
    """
    buffer: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        buffer.put((0, item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            buffer.put((1, None))
        except BaseException as exc:
            buffer.put((2, exc))

    thread = threading.Thread(target=produce, name="puffin-iceberg-reader", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = buffer.get()
            if kind == 0:
                yield value
            elif kind == 1:
                return
            else:
                raise value
    finally:
        stop.set()
        while thread.is_alive():
            try:
                buffer.get_nowait()
            except queue.Empty:
                thread.join(timeout=0.05)


def read_columns(
    table: Table,
    planned: Sequence[PlannedFile],
    columns: Sequence[ScanColumn],
    *,
    prefetch: bool = True,
    distinct_ok: bool = False,
) -> Iterator[Batch]:
    """Every live row of the planned files, as batches of the requested columns.

    ``distinct_ok``: the caller only needs each batch's set of values (a sketch), so
    dictionary-encoded string columns may come back as the distinct values they use.
    """
    io = table.io
    deletes = DeleteIndex(io)
    mapping = table.metadata.name_mapping()

    def batches() -> Iterator[Batch]:
        for p in planned:
            yield from _read_file(io, p, columns, deletes, mapping, distinct_ok)

    return _prefetch(batches()) if prefetch else batches()
