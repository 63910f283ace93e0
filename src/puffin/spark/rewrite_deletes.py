"""A table's position deletes rewritten with the positions read on Spark's executors:
:func:`rewrite_position_delete_files`.

The driver plans and commits as :func:`puffin.iceberg.rewrite_position_delete_files` does.
What runs on the executors is the reading: each task reads the vectors and position-delete
files of its data files (each delete file by the range its own entry gives, so a task reads
no manifest) and sends one serialized vector per data file with every live deleted
position (:class:`~puffin.spark.row_jobs.PositionsJob`). The driver checks each vector as it
decodes it, groups the vectors into Puffin files (v3) or position-delete files (v2), and
commits one ``replace`` snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from puffin.iceberg.maintenance.rewrite_deletes import (
    PositionReader,
    RewriteDeletesResult,
)
from puffin.iceberg.maintenance.rewrite_deletes import (
    rewrite_position_delete_files as rewrite_here,
)

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyspark.sql import SparkSession

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["rewrite_position_delete_files"]


def rewrite_position_delete_files(
    spark: SparkSession,
    table: Table,
    *,
    target_file_size_bytes: int | None = None,
    max_attempts: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> RewriteDeletesResult:
    """:func:`puffin.iceberg.rewrite_position_delete_files` with the deleted positions read
    on Spark's executors: the same files written, the same commit.

    Example::

        from puffin.spark import local_session, rewrite_position_delete_files

        result = rewrite_position_delete_files(local_session(), table)
        print(result.files_before, "->", result.files_after)
    """
    return rewrite_here(
        table,
        target_file_size_bytes=target_file_size_bytes,
        max_attempts=max_attempts,
        progress=progress,
        positions=positions_on_executors(spark),
    )


def positions_on_executors(spark: SparkSession) -> PositionReader:
    """A :data:`~puffin.iceberg.maintenance.rewrite_deletes.PositionReader` whose files are
    read by Spark tasks."""

    def read(
        table: Table, snapshot: Snapshot, planned: list[PlannedFile]
    ) -> dict[str, npt.NDArray[np.int64]]:
        from puffin.spark.deletes import merge_vector_rows
        from puffin.spark.file_tasks import map_files
        from puffin.spark.preflight import python_tasks
        from puffin.spark.row_jobs import VECTOR_SCHEMA, PositionsJob

        chosen = [p for p in planned if p.delete_files]
        if not chosen:
            return {}
        frame = map_files(spark, table, snapshot, chosen, PositionsJob, VECTOR_SCHEMA)
        with python_tasks(spark):
            merged = merge_vector_rows(frame.collect())
        return {path: dv.to_numpy() for path, (dv, _) in merged.items()}

    return read
