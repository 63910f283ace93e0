"""Reading a snapshot's live rows column by column, by field id, with its deletes applied.

The planned data files (:mod:`puffin.iceberg.scan.plan`) are read here with pyarrow, in
batches of :data:`BATCH_ROWS` rows of one row group, matched to the table's columns by Parquet
field id (or, for files written without ids, by the table's name mapping), so renamed and
reordered columns read correctly and dropped or later-added columns are simply absent from
older files.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from puffin.errors import UnsupportedTableError
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.arrow import nested_column, to_iceberg_arrow
from puffin.iceberg.scan.columns import ScanColumn
from puffin.iceberg.scan.parquet_files import open_data_file
from puffin.iceberg.scan.plan import PlannedFile, keep_mask

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.io import FileIO
    from pyiceberg.table import Table
    from pyiceberg.table.name_mapping import MappedField, NameMapping

    from puffin.ndv.parquet import ColumnChunks

__all__ = ["Batch", "read_columns"]

FIELD_ID_KEY = b"PARQUET:field_id"
#: Rows decoded at a time.  Memory is a batch per reading thread, not a row group (1 M rows
#: as pyiceberg writes them): on the 10 M-row statistics benchmark, 64 K rows took the job's
#: peak RSS below 256 MiB at the speed of whole row groups; 32 K rows saved little more.
BATCH_ROWS = 64 * 1024
T = TypeVar("T")


@dataclass
class Batch:
    """Columns of a batch of rows of one data file, deleted rows already removed.

    ``rows`` counts the rows read before deletes (for progress); ``columns[field_id]`` is
    ``None`` where the file does not have the column (it was added later: all null).  Read
    with ``distinct_ok``, a batch holds the columns of one top-level field, and ``rows`` is
    0 but for the first field's batches, so that each row is counted once.
    """

    data_path: str
    rows: int
    live_rows: int
    columns: dict[int, pa.Array | None]


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


def _field_id(f: pa.Field) -> int | None:
    raw = (f.metadata or {}).get(FIELD_ID_KEY)
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return None


def _walk_fields(
    arrow_schema: pa.Schema, mapping: list[MappedField] | None
) -> dict[int, tuple[str, ...]]:
    """Field id -> Arrow name path: from the file's ids, or from ``mapping`` when given."""
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
                fid = _field_id(f)
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


def _dictionary_tops(
    metadata: pq.FileMetaData,
    columns: Sequence[ScanColumn],
    present: dict[int, tuple[str, ...]],
    tops: list[str],
) -> list[str]:
    """The file's top-level string columns to read as Arrow dictionaries."""
    from pyiceberg.types import BinaryType, StringType

    string_tops = {
        present[c.field_id][0]
        for c in columns
        if c.field_id in present
        and len(present[c.field_id]) == 1
        and isinstance(c.iceberg_type, (StringType, BinaryType))
    }
    return read_as_dictionary(metadata, [t for t in tops if t in string_tops])


def read_as_dictionary(metadata: Any, names: Sequence[str]) -> list[str]:
    """The string/binary columns of ``names`` to read as Arrow dictionaries.

    Any chunk that stayed dictionary-encoded qualifies: writers cap dictionary pages at
    about 1 MiB, and RLE/bit-packed indices take at most 4 bytes a row; a larger chunk fell
    back to plain pages, and reading it as a dictionary would cost a hash per row.  pyarrow
    copies the dictionary into every batch; the NDV engine recognises the copies and hashes
    the entries once (:class:`puffin.ndv.engine.ColumnSketch`).
    """
    from puffin.ndv.parquet import dictionary_columns  # loads NumPy

    return dictionary_columns(metadata, names, row_bytes=4, slack=2 << 20)


def _read_file(
    io: FileIO,
    planned: PlannedFile,
    columns: Sequence[ScanColumn],
    deletes: DeleteIndex,
    mapping: NameMapping | None,
    distinct_ok: bool,
) -> Iterator[Batch]:
    import pyarrow.parquet as pq
    from pyiceberg.manifest import FileFormat

    from puffin.ndv.parquet import ColumnChunks  # loads NumPy

    if planned.data_file.file_format != FileFormat.PARQUET:
        raise UnsupportedTableError(
            f"data file {planned.path} is {planned.data_file.file_format}; only Parquet is read"
        )
    positions = deletes.deleted_positions(planned)
    with open_data_file(io, planned.path) as f:
        pf = pq.ParquetFile(f)  # the footer; the data is read through ColumnChunks
        meta = pf.metadata
        ids = _file_columns(pf.schema_arrow, mapping, planned.path)
        present = {c.field_id: ids[c.field_id] for c in columns if c.field_id in ids}
        tops = sorted({p[0] for p in present.values()})
        dictionary = _dictionary_tops(meta, columns, present, tops) if distinct_ok else []
        file = _FileReader(planned.path, ColumnChunks(f, meta, dictionary), present, distinct_ok)
        # A sketch needs each column's values, not rows: reading one top-level field at a
        # time, pyarrow holds one column chunk's pages and buffers instead of every one's.
        groups = [[t] for t in tops] if distinct_ok else [tops]
        start = 0
        for rg in range(meta.num_row_groups):
            count = meta.row_group(rg).num_rows
            mask = keep_mask(positions, start, count)
            live = count if mask is None else int(mask.sum())
            if not tops or not live:
                yield Batch(planned.path, count, live, {c.field_id: None for c in columns})
            else:
                for i, group in enumerate(groups):
                    wanted = columns if not distinct_ok else file.columns_of(columns, group[0])
                    yield from file.row_group(rg, group, wanted, mask, counted=i == 0)
            start += count


@dataclass
class _FileReader:
    """One data file's reader, its field id -> Arrow name path map, and the read mode."""

    path: str
    chunks: ColumnChunks
    present: dict[int, tuple[str, ...]]
    distinct_ok: bool

    def columns_of(self, columns: Sequence[ScanColumn], top: str) -> list[ScanColumn]:
        """The ``columns`` under the top-level field ``top`` in this file."""
        return [c for c in columns if self.present.get(c.field_id, ("",))[0] == top]

    def row_group(
        self,
        rg: int,
        tops: list[str],
        columns: Sequence[ScanColumn],
        mask: Any,
        *,
        counted: bool,
    ) -> Iterator[Batch]:
        """``columns`` (all under ``tops``, or absent) of row group ``rg`` batch by batch,
        the rows ``mask`` (None: all) keeps; ``counted``: report the rows read."""
        import pyarrow as pa

        offset = 0
        for batch in self.chunks.batches(rg, tops, BATCH_ROWS):
            count = batch.num_rows
            if mask is not None:
                batch = batch.filter(pa.array(mask[offset : offset + count]))
            offset += count
            out: dict[int, pa.Array | None] = {c.field_id: None for c in columns}
            for c in columns:
                names = self.present.get(c.field_id)
                if names is not None:
                    out[c.field_id] = to_iceberg_arrow(
                        nested_column(batch, names), c.iceberg_type, distinct_ok=self.distinct_ok
                    )
            yield Batch(self.path, count if counted else 0, batch.num_rows, out)


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
    deletes: DeleteIndex,
    prefetch: bool = True,
    distinct_ok: bool = False,
) -> Iterator[Batch]:
    """Every live row of the planned files, as batches of the requested columns.

    ``distinct_ok``: the caller only needs each column's set of values (a sketch), so
    top-level fields are read one at a time (each batch holds one field's columns, see
    :class:`Batch`) and dictionary-encoded string columns may come back as Arrow
    dictionaries. ``deletes``: the snapshot's delete files, shared by every call.
    """
    io = table.io
    mapping = table.metadata.name_mapping()

    def batches() -> Iterator[Batch]:
        for p in planned:
            yield from _read_file(io, p, columns, deletes, mapping, distinct_ok)

    return _prefetch(batches()) if prefetch else batches()
