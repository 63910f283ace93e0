"""What a Spark task does with its planned files, through the one row reader.

Each job is built on the executor once per task (:func:`puffin.spark.file_tasks.map_files`)
and reads rows only through :class:`~puffin.iceberg.scan.rows.RowReader` or the jobs made of
it, so every delete applies on Spark exactly as in one process:

* :class:`MatchJob`: the rows a condition matches (:mod:`puffin.iceberg.scan.matching`: a
  long ``in`` list sorted once, files whose bounds rule it out not opened), sent as one
  serialized deletion vector per data file;
* :class:`EqualityJob`: the rows each file's equality deletes remove, sent the same way;
* :class:`PositionsJob`: each file's positions its vectors and position-delete files delete
  (a rewrite of the position deletes), sent the same way;
* :class:`SketchJob`: a theta sketch of each chosen column over the task's live rows (the
  single-process statistics job's reading and sketching), one small row per column;
* :class:`ColumnsJob`: the live rows of chosen columns by field id, as Arrow batches of the
  Spark types that keep their exact values (:func:`puffin.spark.types.spark_read_type`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.iceberg.scan.columns import ScanColumn
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = [
    "SKETCH_SCHEMA", "VECTOR_SCHEMA", "ColumnsJob", "EqualityJob", "MatchJob", "PositionsJob",
    "SketchJob",
    "vector_batch",
]  # fmt: skip

#: One serialized deletion vector per data file: its path, cardinality, largest position.
VECTOR_SCHEMA = "file_path string, record_count long, last long, dv binary"
#: One serialized theta sketch per column (its index among the columns asked for).
SKETCH_SCHEMA = "column int, sketch binary"


def vector_batch(found: Mapping[str, npt.NDArray[np.int64]]) -> pa.RecordBatch:
    """``{data file: sorted positions}`` as rows of :data:`VECTOR_SCHEMA`."""
    import pyarrow as pa

    from puffin.blobs.dv.files import DeletionVector

    items = [(path, DeletionVector(pos), int(pos[-1])) for path, pos in found.items() if len(pos)]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([path for path, _, _ in items], pa.string()),
            pa.array([dv.cardinality for _, dv, _ in items], pa.int64()),
            pa.array([last for _, _, last in items], pa.int64()),
            pa.array([dv.serialize() for _, dv, _ in items], pa.binary()),
        ],
        names=["file_path", "record_count", "last", "dv"],
    )


class MatchJob:
    """The task's files matched against ``bound`` (a condition bound on the driver), all at
    once when the task's files are in: one job prepares the key list and reader for all."""

    def __init__(self, bound: BooleanExpression, table: Table, snapshot: Snapshot) -> None:
        self.bound, self.table = bound, table
        self.files: list[PlannedFile] = []

    def read(self, planned: PlannedFile) -> Iterator[pa.RecordBatch]:
        self.files.append(planned)
        return iter(())

    def finish(self) -> Iterator[pa.RecordBatch]:
        from puffin.iceberg.scan.matching import matching_by_file

        found = matching_by_file(self.table, self.files, self.bound)
        if found:
            yield vector_batch(found)


class EqualityJob:
    """The rows each file's equality deletes remove (each delete file read once a task)."""

    def __init__(self, table: Table, snapshot: Snapshot) -> None:
        from puffin.iceberg.scan.delete_filter import DeleteFilter

        self.deletes = DeleteFilter(table, snapshot, by_entry=True)

    def read(self, planned: PlannedFile) -> Iterator[pa.RecordBatch]:
        found = self.deletes.equality_positions(planned)
        if len(found):
            yield vector_batch({planned.path: found})

    def finish(self) -> Iterator[pa.RecordBatch]:
        return iter(())


class PositionsJob:
    """Each file's live deleted positions from its vectors and position-delete files (what a
    rewrite of the position deletes writes again), sent as one serialized vector a file."""

    def __init__(self, table: Table, snapshot: Snapshot) -> None:
        from puffin.iceberg.scan.delete_filter import DeleteFilter

        self.deletes = DeleteFilter(table, snapshot, by_entry=True)

    def read(self, planned: PlannedFile) -> Iterator[pa.RecordBatch]:
        from puffin.iceberg.deletes.merge import live_positions

        found = live_positions(self.deletes, planned, positions_only=True)
        if len(found):
            yield vector_batch({planned.path: found})

    def finish(self) -> Iterator[pa.RecordBatch]:
        return iter(())


class SketchJob:
    """A theta sketch of each of ``columns`` over the task's live rows: the files read a
    top-level field at a time, dictionary pages hashed once (the single-process job's way),
    no row sent anywhere; :meth:`finish` sends each column's sketch."""

    def __init__(
        self, columns: Sequence[ScanColumn], lg_k: int, table: Table, snapshot: Snapshot
    ) -> None:
        from pyiceberg.expressions import AlwaysTrue

        from puffin.iceberg.scan.delete_filter import DeleteFilter
        from puffin.iceberg.scan.rows import RowReader
        from puffin.ndv.engine import ColumnSketch

        self.columns = columns
        deletes = DeleteFilter(table, snapshot, by_entry=True)
        self.reader = RowReader(table, table.schema(), AlwaysTrue(), True, deletes, [], {})
        self.sketches = [ColumnSketch(c.iceberg_type, lg_k=lg_k) for c in columns]

    def read(self, planned: PlannedFile) -> Iterator[pa.RecordBatch]:
        for batch in self.reader.file_columns(planned, self.columns, distinct_ok=True):
            for column, sketch in zip(self.columns, self.sketches, strict=True):
                values = batch.columns.get(column.field_id)
                if values is not None:
                    sketch.add(values)
        return iter(())

    def finish(self) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        yield pa.RecordBatch.from_arrays(
            [
                pa.array(range(len(self.sketches)), pa.int32()),
                pa.array([s.result().serialize() for s in self.sketches], pa.binary()),
            ],
            names=["column", "sketch"],
        )


class ColumnsJob:
    """The live rows of ``columns`` (deletes of every kind applied), a column ``f<field id>``
    each, of the Arrow ``schema`` Spark declared for them."""

    def __init__(
        self,
        columns: Sequence[ScanColumn],
        schema: pa.Schema,
        table: Table,
        snapshot: Snapshot,
    ) -> None:
        from pyiceberg.expressions import AlwaysTrue

        from puffin.iceberg.scan.delete_filter import DeleteFilter
        from puffin.iceberg.scan.rows import RowReader

        self.columns, self.schema = columns, schema
        deletes = DeleteFilter(table, snapshot, by_entry=True)
        self.reader = RowReader(table, table.schema(), AlwaysTrue(), True, deletes, [], {})

    def read(self, planned: PlannedFile) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        for batch in self.reader.file_columns(planned, self.columns):
            if not batch.live_rows:
                continue
            arrays = [
                _as_spark(batch.columns[c.field_id], field.type, batch.live_rows)
                for c, field in zip(self.columns, self.schema, strict=True)
            ]
            yield pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def finish(self) -> Iterator[pa.RecordBatch]:
        return iter(())


def _as_spark(array: Any, arrow_type: pa.DataType, rows: int) -> pa.Array:
    """A column's values in the Arrow type Spark reads its Spark type from (the same values:
    ``uuid`` and ``fixed`` as binary, ``time`` and nanosecond timestamps as their integers);
    all null where the file lacks the column."""
    import pyarrow as pa

    if array is None:
        return pa.nulls(rows, arrow_type)
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    if array.type == arrow_type:
        return array
    if pa.types.is_integer(arrow_type) and (
        pa.types.is_time(array.type) or pa.types.is_timestamp(array.type)
    ):
        array = array.view(pa.int64()) if array.type.bit_width == 64 else array.cast(pa.int64())
    return array.cast(arrow_type)
