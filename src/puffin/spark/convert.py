"""Equality deletes turned into deletion vectors with the keys matched on Spark's executors.

:func:`convert_equality_deletes` is :func:`puffin.iceberg.convert_equality_deletes` (one
``replace`` snapshot, retried over a commit that lands meanwhile, through the maintenance
guard) whose rows are found on Spark's executors: each task matches the keys of the
equality deletes that apply to its data files with the row reader of the Python job
(:class:`puffin.spark.row_jobs.EqualityJob`) and sends one serialized vector per data file;
the driver merges them with each file's vector and commits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

    from puffin.iceberg.maintenance.convert_equality import ConvertResult
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["convert_equality_deletes"]


def convert_equality_deletes(
    spark: SparkSession, table: Table, *, max_attempts: int | None = None
) -> ConvertResult:
    """Replace the table's equality delete files by deletion vectors, keys matched on Spark.

    Data files must be Parquet (:class:`~puffin.errors.UnsupportedTableError` otherwise).
    Keys of every type match as in the Python job (floating-point keys as Iceberg compares
    them: ``-0.0`` is not ``0.0``). On a v2 table the rows become position-delete files,
    as in the Python job.

    Example::

        result = convert_equality_deletes(spark, table)
        print(result.equality_files, "equality delete files ->", result.data_files, "vectors")
    """
    from puffin.iceberg.maintenance.convert_equality import convert_equality_deletes as convert

    def match(
        table: Table, planned: list[PlannedFile], progress: bool | None
    ) -> dict[str, npt.NDArray[np.int64]]:
        return matched_on_spark(spark, table, planned)

    return convert(table, max_attempts=max_attempts, match=match)


def matched_on_spark(
    spark: SparkSession, table: Table, planned: list[PlannedFile]
) -> dict[str, npt.NDArray[np.int64]]:
    """``{data file path: positions its equality deletes remove}`` for the planned files of
    the table's current snapshot, found on the executors (files without a match left out)."""
    from puffin.spark._paths import check_parquet, path_key
    from puffin.spark.deletes import merge_vector_rows
    from puffin.spark.file_tasks import map_files
    from puffin.spark.preflight import python_tasks
    from puffin.spark.row_jobs import VECTOR_SCHEMA, EqualityJob

    touched = [p for p in planned if p.equality_deletes]
    snapshot = table.current_snapshot()
    if not touched or snapshot is None:
        return {}
    check_parquet(touched)
    frame = map_files(spark, table, snapshot, touched, EqualityJob, VECTOR_SCHEMA)
    with python_tasks(spark):
        found = merge_vector_rows(frame.collect())
    by_key = {path_key(p.path): p for p in touched}
    out: dict[str, npt.NDArray[np.int64]] = {}
    for path, (dv, last) in found.items():
        target = by_key.get(path_key(path))
        if target is None or last >= target.record_count:
            raise RuntimeError(f"Spark matched row {last} of {path!r}, not a row of the plan")
        out[target.path] = dv.to_numpy()
    return out
