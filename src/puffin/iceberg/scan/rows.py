"""The one row reader: a planned data file's live rows, shaped as pyiceberg's reader shapes
them, deletes of both kinds applied here.

Every job that reads a table's data rows reads them here: ``scan_table``, the matching of
``delete_rows`` and ``overwrite`` (with each row's position, ``_pos``), compaction, the
statistics (:meth:`RowReader.file_columns`: columns by field id), the equality matches that
``DeleteFilter`` turns into positions (:meth:`RowReader.equality_positions`) and the Spark
tasks. It is the only module that calls pyiceberg's private read functions.

The shaping is pyiceberg's own (the file's schema by field id or name mapping, pruning,
partition values for identity columns a file lacks, type promotion and timestamp units:
``pyarrow_to_schema``, ``prune_columns``, ``_to_requested_schema``), and so is the filter
(translated to the file's column names, then to an Arrow expression). The reading is not:

* a file with deletes or row lineage is read with ``ParquetFile.iter_batches`` in batches of
  :data:`BATCH_ROWS` when streaming (a whole row group at a time into one table), each batch
  masked by :func:`~puffin.iceberg.scan.plan.keep_mask` (a binary search of the file's
  sorted deleted positions), then filtered, so memory stays about one row group (pyarrow's
  dataset scanner, which pyiceberg uses, reads ahead);
* a file with neither but a filter is read by pyiceberg's ``_task_to_record_batches`` with
  the filter pushed down, so row groups whose statistics exclude it are skipped;
* a file with neither and no filter takes the first path with no mask.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from puffin.errors import UnsupportedTableError
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.columns import ScanColumn
from puffin.iceberg.scan.equality import EqualityDeletes, FileKeys
from puffin.iceberg.scan.file_columns import Batch, column_batches
from puffin.iceberg.scan.lineage import LINEAGE_COLUMNS, FileLineage, lineage_column
from puffin.iceberg.scan.parquet_files import (
    open_data_file,
    parquet_file,
    row_groups,
    row_groups_at,
    threaded,
)
from puffin.iceberg.scan.plan import PlannedFile, keep_mask, pick_mask
from puffin.iceberg.scan.row_filter import FileSchemas, filter_for_file, rows_matching

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table

__all__ = ["BATCH_ROWS", "POSITION", "RowReader"]

#: The column of each row's position in its data file (Iceberg's ``_pos`` metadata column).
POSITION = "_pos"

#: Rows decoded at a time when streaming: on the 10 M-row benchmark table 64 K-row batches
#: kept the stream's peak RSS growth near one row group (pyarrow's dataset scanner, with its
#: 128 K-row batches and read-ahead, 2.7 to 4.3 row groups).
BATCH_ROWS = 64 * 1024


class RowReader:
    """Reads planned data files of ``table``: ``projection`` (plus the ``lineage`` columns
    named, and with ``positions`` each row's position in its file as a last ``_pos``
    column) of the rows ``row_filter`` (unbound) matches, deletes from ``deletes`` applied.

    ``bound``: the filter already bound to the table's current schema, used instead of
    ``row_filter`` (a job binds a long ``in`` list once, not once per reader). ``deletes``
    None: no delete of any kind is applied (a delete's matching reads rows deleted or not).
    ``inherited`` (each file's :class:`FileLineage`) fills the ``lineage`` columns; None
    leaves them as the file stores them (a changelog fills them per snapshot).

    Example (each row's position in its file, for the rows ``id > 5`` matches)::

        reader = RowReader(table, table.schema(), GreaterThan("id", 5), True,
                           DeleteIndex(table, snapshot), [], {}, positions=True)
        for batch in reader.file_batches(planned):
            print(batch.column("_pos"))
    """

    def __init__(
        self,
        table: Table,
        projection: Schema,
        row_filter: BooleanExpression,
        case_sensitive: bool,
        deletes: DeleteIndex | None,
        lineage: list[str],
        inherited: dict[str, FileLineage] | None,
        batch_rows: int | None = BATCH_ROWS,
        *,
        positions: bool = False,
        bound: BooleanExpression | None = None,
    ) -> None:
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.expressions.visitors import extract_field_ids
        from pyiceberg.io.pyarrow import ArrowScan
        from pyiceberg.schema import Schema
        from pyiceberg.types import LongType, NestedField

        # None: a row group at a time (into one table, whose rows are all held anyway). After
        # another read had freed its memory, 256 K-row batches read the 10 M-row numeric
        # benchmark table (0.1 % deleted) in 0.32 s, row groups in 0.20 s (issue 43).
        self.table, self.deletes, self.batch_rows = table, deletes, batch_rows
        self.release = batch_rows is not None
        self.lineage, self.inherited = lineage, inherited
        self.positions = positions
        self.projection, self.case_sensitive = projection, case_sensitive
        scan_filter = row_filter if bound is None else AlwaysTrue()
        self.arrow = ArrowScan(table.metadata, table.io, projection, scan_filter, case_sensitive)
        self.bound = self.arrow._bound_row_filter if bound is None else bound
        self.filtered = self.bound != AlwaysTrue()
        # pyiceberg's reader cannot compare uuid columns (Arrow has no kernel for its uuid
        # type); ours compares their 16 bytes.
        self.pushdown = self.filtered and not _on_uuid(table.metadata.schema(), self.bound)
        extra = [NestedField(LINEAGE_COLUMNS[n], n, LongType(), required=False) for n in lineage]
        self.read_schema = Schema(*projection.fields, *extra)
        self.read_ids = self.arrow._projected_field_ids | {f.field_id for f in extra}
        self.read_ids |= extract_field_ids(self.bound)  # the filter's columns, read to match
        configured = self.arrow._downcast_ns_timestamp_to_us
        # As pyiceberg: nanoseconds are cut to microseconds on v1/v2 unless configured.
        self.downcast = configured if configured is not None else table.format_version <= 2
        self._schemas = FileSchemas(
            table.metadata.name_mapping(),
            downcast_ns_timestamp_to_us=self.downcast,
            format_version=table.metadata.format_version,
        )
        self._shapes: dict[tuple[str, tuple[tuple[int, str], ...]], _FileShape] = {}
        self.equality = EqualityDeletes(table, self._schemas)

    def file_batches(
        self, planned: PlannedFile, deleted: Any = None, *, only: Any = None
    ) -> Iterator[pa.RecordBatch]:
        """``planned``'s live rows matching the filter, in file order; ``deleted`` (sorted
        positions) replaces what its position deletes delete. ``only`` (sorted positions):
        the rows at those positions that match, deleted or not, reading only the row groups
        that hold them (the rows a changelog's new delete removed)."""
        if only is not None:
            yield from self._masked(planned, None, only)
            return
        if deleted is not None:
            positions = deleted
        elif self.deletes is None:
            positions = None
        else:
            positions = self.deletes.planned_positions(planned)
        plain = positions is None and not self._equality(planned)
        if plain and not self.lineage and not self.positions and self.pushdown:
            yield from self._pushed_down(planned)
        else:
            yield from self._masked(planned, positions)

    def file_columns(
        self, planned: PlannedFile, columns: Sequence[ScanColumn], *, distinct_ok: bool = False
    ) -> Iterator[Batch]:
        """``planned``'s live rows as the ``columns`` it holds, by field id (a column the
        file lacks is None), in :class:`~puffin.iceberg.scan.file_columns.Batch`es; the
        filter and projection are not applied. Deletes of both kinds are taken as positions
        (``deletes`` must be a :class:`~puffin.iceberg.scan.delete_filter.DeleteFilter` when
        equality deletes apply). ``distinct_ok``: see :func:`column_batches`."""
        from pyiceberg.manifest import FileFormat

        if planned.data_file.file_format != FileFormat.PARQUET:
            raise UnsupportedTableError(
                f"data file {planned.path} is {planned.data_file.file_format}; only Parquet is read"
            )
        deletes = self.deletes
        positions = None if deletes is None else deletes.deleted_positions(planned)
        with open_data_file(self.table.io, planned.path) as f:
            parquet = parquet_file(f, planned.path)  # the footer: ColumnChunks reads the data
            schema = self._schemas.of(parquet.schema_arrow, planned.path)[1]
            yield from column_batches(
                f, parquet.metadata, planned.path, schema, columns, positions,
                distinct_ok=distinct_ok,
            )  # fmt: skip

    def equality_positions(self, planned: PlannedFile) -> npt.NDArray[np.int64]:
        """The sorted positions of ``planned`` that its equality deletes remove (whatever
        else deletes them): its key columns read a row group at a time and matched."""
        import numpy as np

        parts, offset = [], 0
        with open_data_file(self.table.io, planned.path) as f:
            parquet = parquet_file(f, planned.path)
            schema = self._schemas.of(parquet.schema_arrow, planned.path)[1]
            keys = self.equality.for_file(planned, schema)
            if keys is None:
                return np.empty(0, dtype=np.int64)
            for group in row_groups(parquet, keys.columns):
                gone = keys.deleted(group)  # no column read: the rows are still counted
                parts.append(np.flatnonzero(gone).astype(np.int64) + offset)
                offset += group.num_rows
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def _pushed_down(self, planned: PlannedFile) -> Iterator[pa.RecordBatch]:
        from pyiceberg.io.pyarrow import _task_to_record_batches
        from pyiceberg.table import FileScanTask

        metadata = self.table.metadata
        yield from _task_to_record_batches(
            self.table.io,
            FileScanTask(planned.data_file),
            self.bound,
            self.projection,
            metadata.schema(),
            self.arrow._projected_field_ids,
            None,
            self.case_sensitive,
            metadata.name_mapping(),
            metadata.specs().get(planned.data_file.spec_id),
            metadata.format_version,
            self.arrow._downcast_ns_timestamp_to_us,
        )

    def _masked(
        self, planned: PlannedFile, positions: Any, only: Any = None
    ) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        pool = pa.default_memory_pool()
        with open_data_file(self.table.io, planned.path) as f:
            parquet = parquet_file(f, planned.path, buffer_size=8 << 20)
            shape = self._shape(planned, parquet.schema_arrow)
            keys = None
            if self._equality(planned) and only is None:
                keys = self.equality.for_file(planned, shape.schema)
            extra = [] if keys is None else [c for c in keys.columns if c not in shape.columns]
            columns = [*shape.columns, *extra]  # the keys of equality deletes, then dropped
            for i, (offset, batch) in enumerate(self._slices(parquet, columns, only)):
                out = self._live(planned, shape, batch, positions, offset, keys, only)
                if self.release and positions is not None and i % 4 == 3:
                    # Masked copies leave Arrow's allocator holding freed pages: handing them
                    # back every 4 batches kept a stream's RSS growth near one row group on
                    # the benchmark table (instead of about 2), for 8 % of its time.
                    pool.release_unused()
                if out is not None:
                    yield out

    def _slices(
        self, parquet: Any, columns: list[str], only: Any
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        """``(first row, batch)`` of the file's rows in order: in batches of ``batch_rows``,
        a row group at a time, or (``only``) the row groups holding those positions."""
        groups: Iterator[tuple[int, pa.Table]]
        if only is not None:
            groups = row_groups_at(parquet, columns, only)
        elif self.batch_rows is None:
            groups = _numbered(row_groups(parquet, columns))
        else:
            batches = parquet.iter_batches(
                self.batch_rows, columns=columns, use_threads=threaded(parquet)
            )
            yield from _numbered(batches)
            return
        for start, table in groups:
            yield from _numbered(table.to_batches(), start)

    def _equality(self, planned: PlannedFile) -> bool:
        """Whether equality deletes are applied to ``planned``."""
        return self.deletes is not None and bool(planned.equality_deletes)

    def _shape(self, planned: PlannedFile, arrow_schema: pa.Schema) -> _FileShape:
        """The file's :class:`_FileShape`, made once per distinct file schema (and identity
        partition values the file lacks): reading 20,000 small files of one schema spent
        half its time making it anew for each."""
        from pyiceberg.io.pyarrow import _get_column_projection_values

        metadata = self.table.metadata
        text, schema = self._schemas.of(arrow_schema, planned.path)
        missing = _get_column_projection_values(
            planned.data_file,
            self.read_schema,
            metadata.schema(),
            metadata.specs().get(planned.data_file.spec_id),
            schema.field_ids,
        )
        key = (text, tuple(sorted((k, repr(v)) for k, v in missing.items())))
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = _FileShape(self, schema, missing, arrow_schema)
        return shape

    def _live(
        self,
        planned: PlannedFile,
        shape: _FileShape,
        batch: pa.RecordBatch,
        positions: Any,
        offset: int,
        keys: FileKeys | None = None,
        only: Any = None,
    ) -> pa.RecordBatch | None:
        """The rows of ``batch`` (rows ``offset ..`` of the file) that are live (or among
        ``only``) and match, in the scan's shape; None if there are none."""
        import numpy as np
        import pyarrow as pa

        count = batch.num_rows
        tracked = self.lineage or self.positions
        pos = np.arange(offset, offset + count, dtype=np.int64) if tracked else None
        if only is None:
            mask = keep_mask(positions, offset, count)
        else:
            mask = pick_mask(only, offset, count)
        if keys is not None:  # rows an equality delete removes, then the key columns dropped
            gone = keys.deleted(batch)
            mask = ~gone if mask is None else mask & ~gone
            batch = batch.select(shape.columns)
        if mask is not None:
            batch = batch.filter(pa.array(mask))  # an Arrow mask filters faster than NumPy's
            pos = None if pos is None else pos[mask]
        if shape.filter is not None:
            batch, pos = _filtered(batch, pos, shape.filter)
        if not batch.num_rows:
            return None
        if shape.as_read:
            batch = pa.RecordBatch.from_arrays(batch.columns, schema=shape.target)
        else:
            batch = shape.convert(self.read_schema, batch)
        if self.lineage and self.inherited is not None:
            batch = self._with_lineage(planned, batch, pos)
        return batch.append_column(POSITION, pa.array(pos)) if self.positions else batch

    def _with_lineage(
        self, planned: PlannedFile, batch: pa.RecordBatch, pos: Any
    ) -> pa.RecordBatch:
        """The lineage columns filled in: stored values, else inherited ones (Java's rules)."""
        import pyarrow as pa

        inherit = (self.inherited or {}).get(planned.path, FileLineage(None, None))
        stored = [batch.column(n) for n in self.lineage]
        kept = batch.drop_columns(self.lineage)
        filled = [
            lineage_column(n, s, pos, inherit) for n, s in zip(self.lineage, stored, strict=True)
        ]
        columns = [*kept.columns, *filled]
        return pa.RecordBatch.from_arrays(columns, names=[*kept.schema.names, *self.lineage])


class _FileShape:
    """How one file schema's columns map to the scan's: the columns to read, identity-partition
    values the file lacks, the filter in its column names, and whether the rows read are
    already in the scan's shape (then pyiceberg's conversion of each batch is skipped)."""

    def __init__(
        self, reader: RowReader, schema: Schema, missing: dict[int, Any], arrow_schema: pa.Schema
    ) -> None:
        import pyarrow as pa
        from pyiceberg.schema import prune_columns

        self.downcast, self.missing = reader.downcast, missing
        self.schema = schema  # the whole file's, by field id (equality keys are found in it)
        self.filter: Any = None
        if reader.filtered:
            self.filter = filter_for_file(reader.bound, schema, missing, reader.case_sensitive)[0]
        self.file_schema = prune_columns(schema, reader.read_ids, select_full_types=False)
        self.columns = [c.name for c in self.file_schema.columns]
        read = pa.schema([arrow_schema.field(c) for c in self.columns])
        empty = pa.RecordBatch.from_pylist([], schema=read)
        self.target: pa.Schema = self.convert(reader.read_schema, empty).schema
        # Flat columns of the same names, types and nullability: the conversion would only
        # drop the Parquet field ids from the schema.
        flat = all(not pa.types.is_nested(f.type) for f in read)
        self.as_read = flat and not missing and self.target.equals(read, check_metadata=False)

    def convert(self, read_schema: Schema, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` (the file's columns) in the scan's shape: pyiceberg's conversion."""
        from pyiceberg.io.pyarrow import _to_requested_schema

        return _to_requested_schema(
            read_schema,
            self.file_schema,
            batch,
            downcast_ns_timestamp_to_us=self.downcast,
            projected_missing_fields=self.missing,
            allow_timestamp_tz_mismatch=True,
        )


def _numbered(batches: Iterator[Any], start: int = 0) -> Iterator[tuple[int, Any]]:
    """Each of ``batches`` with the file row it starts at (the first at ``start``)."""
    for batch in batches:
        yield start, batch
        start += batch.num_rows


def _filtered(batch: pa.RecordBatch, pos: Any, expression: Any) -> tuple[pa.RecordBatch, Any]:
    """The rows of ``batch`` (and their positions, if tracked) that ``expression`` keeps."""
    kept = rows_matching(batch, expression)
    return batch.take(kept), None if pos is None else pos[kept]


def _on_uuid(schema: Schema, bound: BooleanExpression) -> bool:
    """Whether ``bound`` reads a uuid column."""
    from pyiceberg.expressions.visitors import extract_field_ids
    from pyiceberg.types import UUIDType

    return any(isinstance(schema.find_type(i), UUIDType) for i in extract_field_ids(bound))
