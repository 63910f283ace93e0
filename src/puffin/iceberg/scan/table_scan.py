"""A table's live rows as Arrow, with deletion vectors and position deletes applied by
this library: :func:`scan_table`.

pyiceberg plans the scan (partition and metrics pruning, the snapshot's schema) and
shapes each data file's rows (schema evolution, partition values, type promotion) as its
own ``DataScan`` does. What differs is the deletes: pyiceberg 0.12 reads a whole Puffin file
with a pure-Python decoder and, for every batch of a file with deletes, computes a set
difference against all of that file's deleted positions. Here each delete file is read once
(a deletion vector by its manifest range: ``DeleteIndex``), and a batch's deleted rows
become a boolean mask from a binary search of the sorted positions (``keep_mask``); how each
file is read is in :mod:`puffin.iceberg.scan.rows`.

Row lineage (v3): ``"_row_id"`` and ``"_last_updated_sequence_number"`` in
``selected_fields`` add those columns (:mod:`puffin.iceberg.scan.lineage`), which
pyiceberg 0.12 cannot read.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from puffin.errors import ColumnNotFoundError, UsageError
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.arrow import conform_batch
from puffin.iceberg.scan.lineage import LINEAGE_COLUMNS, file_lineage, require_lineage
from puffin.iceberg.scan.plan import PlannedFile, planned_from_tasks
from puffin.iceberg.scan.rows import BATCH_ROWS, RowReader

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["TableScan", "scan_table"]


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
        require_lineage(table, self.lineage)
        # The snapshot's own schema only for time travel: the current snapshot is read with
        # the table's current schema (a column renamed or added since it was written), as
        # Iceberg Java and pyiceberg read it.
        self._scan = table.scan(
            row_filter=self.row_filter,
            selected_fields=fields,
            snapshot_id=snapshot_id,
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
            scan = self._scan  # equality deletes are applied by the row reader
            self._planned = [] if self.snapshot is None else planned_from_tasks(scan, equality=True)
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
        conformed = (conform_batch(b, schema) for b in batches)
        return pa.RecordBatchReader.from_batches(schema, conformed)

    def to_arrow(self) -> pa.Table:
        """Every row as one Arrow table; files are read in parallel by pyiceberg's executor.

        Column types are those pyiceberg's ``to_arrow`` returns (a file's ``string`` stays
        ``string``); :attr:`schema` (``large_string``) is the batch reader's.
        """
        import pyarrow as pa
        from pyiceberg.utils.concurrent import ExecutorFactory

        schema = self.schema
        if self.limit is not None:  # one file after another, until the limit
            batches = list(_limited(self._batches(False), self.limit))
        else:
            reader = self._reader(None)  # a row group at a time
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
        import pyarrow as pa

        from puffin.support.progress import Progress

        planned = self.plan_files()
        reader = self._reader()
        pool = pa.default_memory_pool()
        with Progress(self.planned_rows(), label="scan ", enabled=progress, transient=True) as bar:
            for i, p in enumerate(planned, 1):
                yield from reader.file_batches(p)
                bar.update(p.record_count, note=f"file {i}/{len(planned)}")
                # Arrow's allocator keeps freed pages; between files they go back to the
                # system, or a long stream's RSS creeps up by a row group at a time.
                pool.release_unused()

    def _reader(self, batch_rows: int | None = BATCH_ROWS) -> RowReader:
        from pyiceberg.utils.concurrent import ExecutorFactory

        planned = self.plan_files()
        deletes = DeleteIndex(self.table, self.snapshot)
        # Every delete file once, in parallel, before any data file needs it.
        unique = {str(d.file_path): d for p in planned for d in p.delete_files}
        list(ExecutorFactory.get_or_create().map(deletes.load, unique.values()))
        lineage = file_lineage(self.table, self.snapshot) if self.lineage and self.snapshot else {}
        reader = RowReader(
            self.table, self.projection, self.row_filter, self._scan.case_sensitive, deletes,
            self.lineage, lineage, batch_rows,
        )
        # So are the equality deletes' keys: files read in parallel would each load them.
        keyed = {str(d.file_path): d for p in planned for d in p.equality_deletes}
        list(ExecutorFactory.get_or_create().map(reader.equality.load, keyed.values()))
        return reader


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
