"""Planned data files as Spark tasks, each read on an executor by the one row reader.

The driver plans the snapshot (our planner and delete-file index) and sends each planned
file, pickled, as one row of a small DataFrame. A Spark task loads the table's metadata once
(from its metadata file, through the table's FileIO properties; a reused Python worker keeps
it), builds the job for its files and runs it: the job reads rows with
:class:`~puffin.iceberg.scan.rows.RowReader` (or what is built on it), deletes of every kind
applied by the same code as in one process, and yields Arrow batches, which Spark returns.
Deletion vectors are read by the range their own delete entry gives, so a task reads no
manifest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow as pa
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyspark.sql import DataFrame, SparkSession

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["FileJob", "TableRef", "map_files"]


class FileJob(Protocol):
    """What one Spark task does with its planned files: :meth:`read` each, then :meth:`finish`
    (for a job that sends one result per task, such as sketches)."""

    def read(self, planned: PlannedFile) -> Iterator[pa.RecordBatch]:
        """The batches ``planned`` gives (none for a job that only gathers)."""
        ...

    def finish(self) -> Iterator[pa.RecordBatch]:
        """The batches sent once the task's files are read."""
        ...


#: Called on the executor with the table and snapshot, once per task.
MakeJob = Callable[["Table", "Snapshot"], FileJob]


@dataclass(frozen=True)
class TableRef:
    """What a task needs to load the table: its metadata file, FileIO properties, snapshot."""

    metadata_location: str
    properties: dict[str, str]
    snapshot_id: int

    @classmethod
    def of(cls, table: Table, snapshot: Snapshot) -> TableRef:
        """The reference to ``snapshot`` of ``table`` (which must have a metadata file)."""
        location = table.metadata_location
        if not location:
            raise ValueError("the table has no metadata file for the executors to load")
        return cls(str(location), dict(table.io.properties), snapshot.snapshot_id)

    def load(self) -> tuple[Table, Snapshot]:
        """The table and snapshot, loaded once per Python worker."""
        from pyiceberg.table import StaticTable

        with _LOCK:
            table = _LOADED.get(self.metadata_location)
            if table is None:
                table = StaticTable.from_metadata(self.metadata_location, self.properties)
                _LOADED.clear()  # one table a worker at a time: jobs follow one another
                _LOADED[self.metadata_location] = table
        snapshot = table.snapshot_by_id(self.snapshot_id)
        if snapshot is None:
            raise ValueError(f"snapshot {self.snapshot_id} is not in {self.metadata_location}")
        return table, snapshot


_LOADED: dict[str, Table] = {}
_LOCK = threading.Lock()


def map_files(
    spark: SparkSession,
    table: Table,
    snapshot: Snapshot,
    planned: Sequence[PlannedFile],
    make_job: MakeJob,
    schema: str,
) -> DataFrame:
    """A DataFrame of ``schema`` (Spark DDL) holding what the job ``make_job`` builds yields
    for ``planned``, run on the executors (``make_job`` must be picklable: a module-level
    function or a ``functools.partial`` of one). Files are dealt round-robin to tasks, one a
    file, at most four a core; the executors' Python is checked first
    (:func:`~puffin.spark.preflight.python_tasks`)."""
    import pickle

    import pyarrow as pa

    from puffin.spark.preflight import python_tasks

    ref = TableRef.of(table, snapshot)
    tasks = max(1, min(len(planned), 4 * spark_cores(spark)))
    rows = pa.table({"planned": pa.array([pickle.dumps(p) for p in planned], pa.binary())})
    with python_tasks(spark):
        frame = spark.createDataFrame(rows).repartition(tasks)  # round-robin
        return frame.mapInArrow(_task(ref, make_job), schema)


def spark_cores(spark: SparkSession) -> int:
    """Spark's default parallelism where the session tells it (classic), else 2."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect has no SparkContext
        return 2


def _task(
    ref: TableRef, make_job: MakeJob
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: load the table, run the job over the task's files."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pickle

        job: FileJob | None = None
        for batch in batches:
            for raw in batch.column("planned").to_pylist():
                if job is None:
                    job = make_job(*ref.load())
                yield from job.read(pickle.loads(raw))
        if job is not None:
            yield from job.finish()

    return run
