"""A table's live rows as Arrow, with deletion vectors and position deletes applied by
this library: :func:`scan_table`.

pyiceberg plans the scan (partition and metrics pruning, the snapshot's schema) and
decodes each data file (schema evolution, partition values, type promotion) exactly as its
own ``DataScan`` does. What differs is the deletes: pyiceberg 0.12 reads a whole Puffin file
with a pure-Python decoder and, for every batch of a file with deletes, computes a set
difference against all of that file's deleted positions. Here each delete file is read once
(a deletion vector by its manifest range: :class:`~puffin.iceberg.metadata.delete_files.
DeleteIndex`), and a batch's deleted rows become a boolean mask from a binary search of the sorted
positions (:func:`~puffin.iceberg.scan.plan.keep_mask`). A file without deletes is read as
pyiceberg reads it, the row filter pushed down into the Parquet scan; one with deletes is
read whole, masked, then filtered.

Row lineage (v3): ``"_row_id"`` and ``"_last_updated_sequence_number"`` in
``selected_fields`` add those columns (:mod:`puffin.iceberg.scan.lineage`), which
pyiceberg 0.12 cannot read.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from puffin.errors import ColumnNotFoundError, UsageError
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.lineage import LINEAGE_COLUMNS, FileLineage, file_lineage, lineage_column
from puffin.iceberg.scan.plan import PlannedFile, keep_mask, planned_from_tasks

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["TableScan", "scan_table"]

_POS = "__puffin_pos"


def scan_table(
    table: Table,
    row_filter: str | BooleanExpression | None = None,
    selected_fields: Sequence[str] = ("*",),
    snapshot_id: int | None = None,
    limit: int | None = None,
    *,
    case_sensitive: bool = True,
) -> TableScan:
    """A scan of ``table``'s live rows: ``.to_arrow()`` or ``.to_arrow_batch_reader()``.

    ``row_filter`` is pyiceberg's filter syntax or expression, bound strictly (a literal
    must be exactly a value of its column's type: ``9.5`` on an integer column is refused,
    never rounded). ``selected_fields`` are column names (``"*"``: every column of the
    snapshot's schema), plus ``"_row_id"`` / ``"_last_updated_sequence_number"`` on a v3
    table. ``snapshot_id`` reads an older snapshot; ``limit`` caps the rows returned.

    Example::

        from puffin.iceberg import load_table, scan_table
        table = load_table("db.events")
        rows = scan_table(table, "category = 3", ("id", "_row_id")).to_arrow()

    Errors: :class:`~puffin.errors.UsageError` (a filter or limit that cannot be applied),
    :class:`~puffin.errors.ColumnNotFoundError`, :class:`~puffin.errors.SnapshotNotFoundError`,
    :class:`~puffin.errors.UnsupportedTableError` (equality deletes, naming the file).
    """
    return TableScan(table, row_filter, tuple(selected_fields), snapshot_id, limit, case_sensitive)


class TableScan:
    """One planned scan (see :func:`scan_table`); each read method reads the files again."""

    def __init__(
        self,
        table: Table,
        row_filter: str | BooleanExpression | None,
        selected_fields: tuple[str, ...],
        snapshot_id: int | None,
        limit: int | None,
        case_sensitive: bool,
    ) -> None:
        from pyiceberg.expressions import AlwaysTrue

        from puffin.iceberg.catalog.catalogs import resolve_snapshot
        from puffin.iceberg.scan.row_filter import check_where

        if limit is not None and (type(limit) is not int or limit < 0):
            raise UsageError(f"limit must be a whole number of rows, 0 or more; got {limit!r}")
        self.table = table
        self.limit = limit
        self.snapshot: Snapshot | None = (
            resolve_snapshot(table, snapshot_id)
            if snapshot_id is not None or table.current_snapshot() is not None
            else None
        )
        self.row_filter = AlwaysTrue() if row_filter is None else check_where(table, row_filter)
        self.lineage = [n for n in LINEAGE_COLUMNS if n in selected_fields and not _has(table, n)]
        fields = tuple(f for f in selected_fields if f not in self.lineage)
        if self.lineage and table.metadata.format_version < 3:
            raise UsageError(
                f"{', '.join(self.lineage)}: row lineage exists only on format version 3 "
                "tables (upgrade_to_v3 / `puffin table upgrade`)"
            )
        self._scan = table.scan(
            row_filter=self.row_filter,
            selected_fields=fields,
            snapshot_id=None if self.snapshot is None else self.snapshot.snapshot_id,
            case_sensitive=case_sensitive,
        )
        try:
            self.projection: Schema = self._scan.projection()
        except ValueError as exc:
            raise ColumnNotFoundError(f"cannot select {list(fields)}: {exc}") from None
        self._planned: list[PlannedFile] | None = None

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows returned."""
        import pyarrow as pa
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        base = schema_to_pyarrow(self.projection, include_field_ids=False)
        for name in self.lineage:
            base = base.append(pa.field(name, pa.int64()))
        return base

    def plan_files(self) -> list[PlannedFile]:
        """The data files to read (pyiceberg's pruning) with the deletes of each."""
        if self._planned is None:
            self._planned = [] if self.snapshot is None else planned_from_tasks(self._scan)
        return self._planned

    def planned_rows(self) -> int:
        """Rows in the planned files before deletes and the filter (for progress)."""
        return sum(p.record_count for p in self.plan_files())

    def to_arrow_batch_reader(self, *, progress: bool | None = False) -> pa.RecordBatchReader:
        """The rows as a stream of batches, one data file at a time (memory: about one
        row group). ``progress``: draw a bar on stderr (None: when it is a terminal)."""
        import pyarrow as pa

        schema = self.schema
        batches = _limited(self._batches(progress), self.limit)
        return pa.RecordBatchReader.from_batches(schema, (_conform(b, schema) for b in batches))

    def to_arrow(self) -> pa.Table:
        """Every row as one Arrow table; files are read in parallel by pyiceberg's executor.

        Column types are those pyiceberg's ``to_arrow`` returns (a file's ``string`` stays
        ``string``); :attr:`schema` (``large_string``) is the batch reader's.
        """
        import pyarrow as pa
        from pyiceberg.utils.concurrent import ExecutorFactory

        schema = self.schema
        if self.limit is not None:
            return self.to_arrow_batch_reader().read_all()
        reader = self._reader()
        executor = ExecutorFactory.get_or_create()
        parts = executor.map(lambda p: list(reader.file_batches(p)), self.plan_files())
        batches = list(itertools.chain.from_iterable(parts))
        if not batches:
            return schema.empty_table()
        # As pyiceberg's to_arrow: each file's own string and binary widths, unified.
        return pa.concat_tables(
            (pa.Table.from_batches([b]) for b in batches), promote_options="permissive"
        )

    def _batches(self, progress: bool | None) -> Iterator[pa.RecordBatch]:
        from puffin.support.progress import Progress

        planned = self.plan_files()
        reader = self._reader()
        with Progress(self.planned_rows(), label="scan ", enabled=progress, transient=True) as bar:
            for i, p in enumerate(planned, 1):
                yield from reader.file_batches(p)
                bar.update(p.record_count, note=f"file {i}/{len(planned)}")

    def _reader(self) -> _FileReader:
        from pyiceberg.utils.concurrent import ExecutorFactory

        planned = self.plan_files()
        deletes = DeleteIndex(self.table, self.snapshot)
        # Every delete file once, in parallel, before any data file needs it.
        unique = {str(d.file_path): d for p in planned for d in p.delete_files}
        list(ExecutorFactory.get_or_create().map(deletes.load, unique.values()))
        lineage = file_lineage(self.table, self.snapshot) if self.lineage and self.snapshot else {}
        return _FileReader(self, deletes, lineage)


class _FileReader:
    """Reads one planned data file's rows, deletes applied, as pyiceberg's reader does."""

    def __init__(self, scan: TableScan, deletes: DeleteIndex, lineage: dict[str, FileLineage]):
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.expressions.visitors import bind, extract_field_ids
        from pyiceberg.io.pyarrow import ArrowScan, expression_to_pyarrow
        from pyiceberg.schema import Schema, prune_columns
        from pyiceberg.types import LongType, NestedField

        table = scan.table
        self.scan, self.deletes, self.lineage = scan, deletes, lineage
        self.arrow = ArrowScan(
            table.metadata, table.io, scan.projection, scan.row_filter, scan._scan.case_sensitive
        )
        # Files with deletes or lineage are read unfiltered with the filter's columns too,
        # then masked and filtered here.
        filter_ids = extract_field_ids(self.arrow._bound_row_filter)
        ids = scan.projection.field_ids | filter_ids
        self.widened = not filter_ids <= scan.projection.field_ids
        base = prune_columns(table.metadata.schema(), ids, select_full_types=False) if (
            self.widened
        ) else scan.projection
        extra = [
            NestedField(LINEAGE_COLUMNS[n], n, LongType(), required=False) for n in scan.lineage
        ]
        self.base_schema = base
        self.read_schema = Schema(*base.fields, *extra)
        self.read_ids = self.arrow._projected_field_ids | ids | {f.field_id for f in extra}
        self.filter: Any = None
        if self.arrow._bound_row_filter != AlwaysTrue():
            sensitive = scan._scan.case_sensitive
            bound = bind(self.read_schema, scan.row_filter, case_sensitive=sensitive)
            self.filter = expression_to_pyarrow(bound, self.read_schema)

    def file_batches(self, planned: PlannedFile) -> Iterator[pa.RecordBatch]:
        """``planned``'s live rows matching the filter, in file order."""
        positions = self.deletes.positions(planned.path, planned.delete_files)
        if positions is None and not self.scan.lineage:
            yield from self._read(planned, pushdown=True)
            return
        import numpy as np

        offset = 0
        for batch in self._read(planned, pushdown=False):
            count = batch.num_rows
            pos = np.arange(offset, offset + count, dtype=np.int64)
            mask = keep_mask(positions, offset, count)
            offset += count
            if mask is not None:
                batch, pos = batch.filter(mask), pos[mask]
            if self.filter is not None:
                batch, pos = self._filtered(batch, pos)
            if batch.num_rows:
                yield self._finish(planned, batch, pos)

    def _read(self, planned: PlannedFile, *, pushdown: bool) -> Iterator[pa.RecordBatch]:
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import _task_to_record_batches
        from pyiceberg.table import FileScanTask

        metadata = self.scan.table.metadata
        return _task_to_record_batches(
            self.scan.table.io,
            FileScanTask(planned.data_file),
            self.arrow._bound_row_filter if pushdown else AlwaysTrue(),
            self.scan.projection if pushdown else self.read_schema,
            metadata.schema(),
            self.arrow._projected_field_ids if pushdown else self.read_ids,
            None,
            self.scan._scan.case_sensitive,
            metadata.name_mapping(),
            metadata.specs().get(planned.data_file.spec_id),
            metadata.format_version,
            self.arrow._downcast_ns_timestamp_to_us,
        )

    def _filtered(self, batch: pa.RecordBatch, pos: Any) -> tuple[pa.RecordBatch, Any]:
        import pyarrow as pa

        table = pa.Table.from_batches([batch.append_column(_POS, pa.array(pos))])
        table = table.filter(self.filter).combine_chunks()
        kept = table.column(_POS).to_numpy()
        table = table.drop_columns([_POS])
        out = table.to_batches()
        return (out[0] if out else batch.slice(0, 0)), kept

    def _finish(self, planned: PlannedFile, batch: pa.RecordBatch, pos: Any) -> pa.RecordBatch:
        """The batch with exactly the projected columns, then the lineage columns."""
        import pyarrow as pa
        from pyiceberg.io.pyarrow import _to_requested_schema

        lineage = [(n, batch.column(n)) for n in self.scan.lineage]
        if lineage:
            batch = batch.drop_columns(self.scan.lineage)
        if self.widened:
            batch = _to_requested_schema(self.scan.projection, self.base_schema, batch)
        if not lineage:
            return batch
        inherit = self.lineage.get(planned.path, FileLineage(None, None))
        columns = [*batch.columns, *(lineage_column(n, a, pos, inherit) for n, a in lineage)]
        names = [*batch.schema.names, *self.scan.lineage]
        return pa.RecordBatch.from_arrays(columns, names=names)


def _has(table: Table, name: str) -> bool:
    """Whether the table's own schema has a column ``name`` (then it is that column)."""
    try:
        table.schema().find_field(name)
    except ValueError:
        return False
    return True


def _limited(batches: Iterator[pa.RecordBatch], limit: int | None) -> Iterator[pa.RecordBatch]:
    if limit is None:
        yield from batches
        return
    left = limit
    for batch in batches:
        if left <= 0:
            return
        if batch.num_rows > left:
            batch = batch.slice(0, left)
        left -= batch.num_rows
        yield batch


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``schema``'s types (files differ in string width, units)."""
    return batch if batch.schema.equals(schema) else batch.cast(schema)
