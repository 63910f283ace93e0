"""Equality deletes turned into deletion vectors with the keys matched on Spark's executors.

:func:`convert_equality_deletes` is :func:`puffin.iceberg.convert_equality_deletes` (one
``replace`` snapshot, retried over a commit that lands meanwhile, through the maintenance
guard) whose rows are found by Spark: the executors join each equality delete file's keys
with the rows of the data files it applies to
(:func:`puffin.spark._frames.equality_deleted_rows`) and build one serialized vector per
data file; the driver merges them with each file's vector and commits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from puffin.iceberg.metadata.commits import MAX_ATTEMPTS

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

    from puffin.iceberg.maintenance.convert_equality import ConvertResult
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["convert_equality_deletes"]


def convert_equality_deletes(
    spark: SparkSession, table: Table, *, max_attempts: int = MAX_ATTEMPTS
) -> ConvertResult:
    """Replace the table's equality delete files by deletion vectors, keys matched on Spark.

    Data files must be Parquet, and keys not floating-point (Spark's join takes -0.0 for
    0.0): :class:`~puffin.errors.UnsupportedTableError` otherwise, naming the Python job
    that converts them. On a v2 table the rows become position-delete files, as in the
    Python job.

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
    from pyspark.sql import functions as F

    from puffin.iceberg.scan.columns import snapshot_schema
    from puffin.spark._frames import (
        FIELD_ID_CONF,
        check_parquet,
        equality_deleted_rows,
        path_key,
        session_conf,
    )
    from puffin.spark.deletes import collect_vectors

    touched = [p for p in planned if p.equality_deletes]
    snapshot = table.current_snapshot()
    if not touched or snapshot is None:
        return {}
    check_parquet(touched)
    schema = snapshot_schema(table, snapshot.schema_id)
    with session_conf(spark, FIELD_ID_CONF):
        rows = equality_deleted_rows(spark, schema, touched)
        if rows is None:
            return {}
        found = collect_vectors(rows.select(F.col("k").alias("file_path"), F.col("pos")))
    # Reported by path key (path_key again would unquote a '%' in a location twice).
    by_key = {path_key(p.path): p for p in touched}
    out: dict[str, npt.NDArray[np.int64]] = {}
    for key, (dv, last) in found.items():
        target = by_key.get(key)
        if target is None or last >= target.record_count:
            raise RuntimeError(f"Spark matched row {last} of {key!r}, not a row of the plan")
        out[target.path] = dv.to_numpy()
    return out
