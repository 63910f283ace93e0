"""One data file's columns by field id, a row group at a time: the row reader's way for jobs
that need each column's values rather than rows (statistics, sketches).

:meth:`puffin.iceberg.scan.rows.RowReader.file_columns` opens the file, finds its schema (by
Parquet field id, or the table's name mapping: the scan's rules) and its deleted positions
(both kinds of delete, as positions), then reads through :func:`column_batches`: in batches
of :data:`BATCH_ROWS` rows of one row group, deleted rows removed, each column made to hold
its Iceberg type's values (:func:`~puffin.iceberg.scan.arrow.to_iceberg_arrow`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.iceberg.scan.arrow import nested_column, to_iceberg_arrow
from puffin.iceberg.scan.columns import ScanColumn, field_paths
from puffin.iceberg.scan.plan import keep_mask

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.schema import Schema

    from puffin.ndv.parquet import ColumnChunks

__all__ = ["BATCH_ROWS", "Batch", "column_batches", "read_as_dictionary"]

#: Rows decoded at a time.  Memory is a batch per reading thread, not a row group (1 M rows
#: as pyiceberg writes them): on the 10 M-row statistics benchmark, 64 K rows took the job's
#: peak RSS below 256 MiB at the speed of whole row groups; 32 K rows saved little more.
BATCH_ROWS = 64 * 1024


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


def column_batches(
    source: pa.NativeFile,
    meta: pq.FileMetaData,
    path: str,
    file_schema: Schema,
    columns: Sequence[ScanColumn],
    positions: Any,
    *,
    distinct_ok: bool,
) -> Iterator[Batch]:
    """``columns`` of the Parquet file ``source`` (at ``path``; ``meta``: its footer,
    ``file_schema``: its schema by field id) batch by batch, the sorted ``positions`` (or
    None) left out.

    ``distinct_ok``: the caller only needs each column's set of values (a sketch), so
    top-level fields are read one at a time (each batch holds one field's columns, see
    :class:`Batch`) and dictionary-encoded string columns may come back as Arrow dictionaries.
    """
    from puffin.ndv.parquet import ColumnChunks  # loads NumPy

    names = _name_paths(file_schema)
    present = {c.field_id: names[c.field_id] for c in columns if c.field_id in names}
    tops = sorted({p[0] for p in present.values()})
    dictionary = _dictionary_tops(meta, columns, present, tops) if distinct_ok else []
    file = _FileReader(path, ColumnChunks(source, meta, dictionary), present, distinct_ok)
    # A sketch needs each column's values, not rows: reading one top-level field at a
    # time, pyarrow holds one column chunk's pages and buffers instead of every one's.
    groups = [[t] for t in tops] if distinct_ok else [tops]
    start = 0
    for rg in range(meta.num_row_groups):
        count = meta.row_group(rg).num_rows
        mask = keep_mask(positions, start, count)
        live = count if mask is None else int(mask.sum())
        if not tops or not live:
            yield Batch(path, count, live, {c.field_id: None for c in columns})
        else:
            for i, group in enumerate(groups):
                wanted = columns if not distinct_ok else file.columns_of(columns, group[0])
                yield from file.row_group(rg, group, wanted, mask, counted=i == 0)
        start += count


def _name_paths(schema: Schema) -> dict[int, tuple[str, ...]]:
    """Field id -> the names from the top-level field down to it (as the file spells them),
    for every field reachable through structs."""
    paths = field_paths(schema)
    return {fid: tuple(paths[i][2].name for i in ids) for fid, (ids, _, _) in paths.items()}


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
