"""Compaction on Spark executors: :func:`rewrite_data_files`.

The driver plans as the single-process compaction does
(:func:`puffin.iceberg.maintenance.compact.compact`: the same options, the same files chosen,
the same ``replace`` commit, retried the same way). The chosen files of each partition are
packed into bins of about the target size by their bytes
(:func:`~puffin.iceberg.maintenance.file_groups.pack`), and each bin is
written again on an executor by the same code as in one process
(:func:`~puffin.iceberg.writes.rewrite.rewrite_files`: the one row reader, every delete
applied, ``_row_id`` and ``_last_updated_sequence_number`` kept); the driver sends each bin's
files and their row lineage, and gets the new files' records back, pickled.

No attempt's files outlive the job unless committed. Each task attempt names its files by a
uuid made from the job's, the bin and the attempt (:func:`attempt_uuid`); a task that fails
removes what it wrote, and once the job ends the driver removes the files of every attempt
whose result it did not take (a killed task, a speculative copy, a job that failed), found by
their names where the table's location provider puts them, without listing a folder, once
no task of the job runs any more (:mod:`puffin.spark.settle`: a task of a failed job writes
on until Spark kills its Python worker). A job that fails commits nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from puffin.iceberg.maintenance.compact import (
    DEFAULT_MIN_DELETED_FRACTION,
    DEFAULT_MIN_INPUT_FILES,
    CompactOptions,
    CompactResult,
    compact,
)
from puffin.iceberg.maintenance.file_groups import FileGroup, pack

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyspark.sql import SparkSession

    from puffin.iceberg.metadata.delete_files import DeleteIndex
    from puffin.iceberg.scan.lineage import FileLineage
    from puffin.iceberg.scan.plan import PlannedFile
    from puffin.iceberg.writes.rewrite import Groups
    from puffin.spark.file_tasks import TableRef

__all__ = ["attempt_uuid", "remove_untaken_attempts", "rewrite_data_files"]

#: What a task sends back: one row per new data file, pickled, with the attempt that wrote it.
RESULT_SCHEMA = "bin int, attempt int, data_file binary"
#: A bin's files are written into one file, rolled only past this many times the target (as
#: Java's ``max-file-size-bytes`` default): the lineage columns a v3 rewrite adds would
#: otherwise leave a small tail file after each bin.
MAX_OF_TARGET = 1.8


def rewrite_data_files(
    spark: SparkSession,
    table: Table,
    *,
    where: str | BooleanExpression | None = None,
    min_deleted_fraction: float = DEFAULT_MIN_DELETED_FRACTION,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    target_file_size_bytes: int | None = None,
    statistics: str = "update",
    max_attempts: int | None = None,
    progress: bool | None = False,
    partial_progress_commits: int | None = None,
) -> CompactResult:
    """:func:`puffin.iceberg.rewrite_data_files` with the files written on Spark's executors:
    the same options, files chosen, rows, row ids and commit (see the module docstring).

    Each file group (a bin of about ``target_file_size_bytes`` of input) is one task, so a
    table smaller than the target is one task: a smaller target spreads it over more cores,
    as it would give Java's ``rewrite_data_files`` more output files to write at once. With
    ``partial_progress_commits`` each batch of groups is a Spark job of its own, committed
    once written.

    Example::

        from puffin.spark import local_session, rewrite_data_files

        result = rewrite_data_files(local_session(), table, min_deleted_fraction=0.1)
        print(result.rewritten_files, "files ->", result.added_files)
    """
    options = CompactOptions(
        where, min_deleted_fraction, min_input_files, target_file_size_bytes, statistics,
        max_attempts, progress, partial_progress_commits,
    )  # fmt: skip
    return compact(table, _SparkRewriter(spark), options)


def attempt_uuid(job: uuid.UUID, bin_number: int, attempt: int) -> uuid.UUID:
    """The uuid that names the files one task attempt writes for one bin (the job's one
    stage has no shuffle before it, so it is never retried: a task's attempt number says
    which attempt it is)."""
    return uuid.uuid5(job, f"{bin_number}.{attempt}")


class _SparkRewriter:
    """A :data:`~puffin.iceberg.maintenance.compact.Rewriter` whose bins are Spark tasks."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def __call__(
        self, table: Table, snapshot: Snapshot, deletes: DeleteIndex, groups: Groups,
        target: int, written: list[str],
    ) -> list[DataFile]:  # fmt: skip
        import pickle

        from puffin.spark.file_tasks import TableRef
        from puffin.spark.preflight import python_tasks
        from puffin.spark.settle import tracked_job

        bins = pack(groups, target)
        job = uuid.uuid4()
        # No shuffle: a retried stage would run a bin's attempt 0 again beside its first,
        # writing the same names. Spark slices the bins over its cores, in order.
        frame = self.spark.createDataFrame(_bin_rows(table, snapshot, bins))
        task = _task(TableRef.of(table, snapshot), job, int(target * MAX_OF_TARGET))
        attempts = _attempts(self.spark)
        with tracked_job(self.spark) as settle:
            try:
                with python_tasks(self.spark):
                    rows = frame.mapInArrow(task, RESULT_SCHEMA).collect()
            except BaseException:
                settle()  # a task of the failed job may still be writing
                remove_untaken_attempts(table, job, len(bins), {}, attempts)
                raise
            if _speculative(self.spark):
                settle()  # a copy that lost the race may still be writing
        taken = {row["bin"]: row["attempt"] for row in rows}
        added = [pickle.loads(row["data_file"]) for row in rows]
        written.extend(str(f.file_path) for f in added)
        remove_untaken_attempts(table, job, len(bins), taken, attempts)
        return added


def _bin_rows(table: Table, snapshot: Snapshot, bins: Sequence[FileGroup]) -> pa.Table:
    """A row per bin: its number and, pickled, its key, files and their row lineage (read
    once here: a task then reads no manifest)."""
    import pickle

    import pyarrow as pa

    from puffin.iceberg.scan.lineage import file_lineage

    lineage = file_lineage(table, snapshot) if table.metadata.format_version >= 3 else None
    payloads = [
        pickle.dumps((key, files, _lineage_of(lineage, files)))
        for key, files in bins
    ]
    return pa.table({
        "bin": pa.array(range(len(bins)), pa.int32()),
        "payload": pa.array(payloads, pa.binary()),
    })  # fmt: skip


def _lineage_of(
    lineage: dict[str, FileLineage] | None, files: Sequence[PlannedFile]
) -> dict[str, FileLineage] | None:
    return None if lineage is None else {p.path: lineage[p.path] for p in files}


def _task(
    ref: TableRef, job: uuid.UUID, roll: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: each bin of the task written again, its files named by
    the attempt; what the attempt wrote is removed if it fails."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pickle

        import pyarrow as pa
        from pyspark import TaskContext

        from puffin.iceberg.metadata.manifests import remove_files
        from puffin.iceberg.scan.delete_filter import DeleteFilter
        from puffin.iceberg.writes.rewrite import rewrite_files

        context = TaskContext.get()
        attempt = 0 if context is None else context.attemptNumber()
        table, snapshot = ref.load()
        deletes = DeleteFilter(table, snapshot, by_entry=True)
        written: list[str] = []
        try:
            for batch in batches:
                numbers, payloads = batch.column("bin"), batch.column("payload")
                for number, payload in zip(numbers.to_pylist(), payloads.to_pylist(), strict=True):
                    key, files, lineage = pickle.loads(payload)
                    name = attempt_uuid(job, number, attempt)
                    new = rewrite_files(
                        table, snapshot, deletes, {key: files}, roll, written,
                        lineage=lineage, write_uuid=name,
                    )  # fmt: skip
                    yield pa.RecordBatch.from_pydict(
                        {
                            "bin": pa.array([number] * len(new), pa.int32()),
                            "attempt": pa.array([attempt] * len(new), pa.int32()),
                            "data_file": pa.array([pickle.dumps(f) for f in new], pa.binary()),
                        }
                    )
        except BaseException:
            remove_files(table, written)
            raise

    return run


def _attempts(spark: SparkSession) -> int:
    """How many attempts of a task may have written files: Spark's ``spark.task.maxFailures``
    (``local[N, F]``: F; ``local[N]``: 1), and two more for speculative copies."""
    conf = spark.conf
    master = str(conf.get("spark.master", "local[*]") or "")
    if master == "local" or master.startswith("local["):  # not local-cluster[...]
        inside = master.partition("[")[2].rstrip("]")
        failures = int(inside.split(",")[1]) if "," in inside else 1
    else:
        failures = int(conf.get("spark.task.maxFailures", "4") or 4)
    return failures + (2 if _speculative(spark) else 0)


def _speculative(spark: SparkSession) -> bool:
    return str(spark.conf.get("spark.speculation", "false")).lower() == "true"


def remove_untaken_attempts(
    table: Table, job: uuid.UUID, bins: int, taken: dict[int, int], attempts: int
) -> None:
    """The files of every attempt of the job's ``bins`` but the one ``taken`` of each
    (``{bin: attempt}``; a bin missing took none), for ``attempts`` attempts a bin or up to
    the one taken: found by their names where the table's location provider puts them."""
    from pyiceberg.table.locations import load_location_provider

    from puffin.iceberg.metadata.manifests import remove_files
    from puffin.iceberg.writes._streaming import data_file_location

    locations = load_location_provider(table.metadata.location, table.metadata.properties)
    stale = []
    for number in range(bins):
        kept = taken.get(number)
        for attempt in range(max(attempts, (kept or 0) + 1)):
            if attempt == kept:
                continue
            name = attempt_uuid(job, number, attempt)
            n = 0
            while table.io.new_input(path := data_file_location(locations, name, n)).exists():
                stale.append(path)
                n += 1
    remove_files(table, stale)
