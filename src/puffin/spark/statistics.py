"""An Iceberg table's NDV statistics file computed on Spark (:func:`compute_table_statistics`).

Planning and writing are shared with the single-process job in :mod:`puffin.iceberg`; only
the sketching runs on Spark, so both jobs write the same file for the same snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from puffin.spark._paths import check_parquet
from puffin.spark.ndv import compute_ndv_sketches

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.table.statistics import StatisticsFile
    from pyspark.sql import DataFrame, SparkSession

    from puffin.blobs.theta.files import ThetaSketch
    from puffin.iceberg.scan.columns import ScanColumn
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["compute_table_statistics"]


def compute_table_statistics(
    spark: SparkSession,
    table: Table,
    *,
    columns: Sequence[str | int] | None = None,
    snapshot_id: int | None = None,
    lg_k: int = 12,
    commit: bool = True,
    engine: str = "auto",
) -> StatisticsFile:
    """:func:`puffin.iceberg.compute_table_statistics` with Spark reading the data files.

    Plans the snapshot on the driver; Spark tasks read the chosen columns of its Parquet
    data files with the row reader of the Python job (by field id, so renamed columns read
    right; every delete applied, equality deletes too). ``engine`` ``"auto"`` or
    ``"arrow"``: each task sketches what it reads (the Python job's sketching) and the
    driver unions the tasks' sketches; ``"jvm"``: the rows go to Spark's
    ``theta_sketch_agg`` (:func:`~puffin.spark.compute_ndv_sketches`, Spark 4.1+). The
    driver writes ``<snapshot-id>-<uuid>.stats`` under the table's metadata folder through
    its FileIO, and (with ``commit``) registers it as the snapshot's statistics file. The
    file is the one the single-process job writes for the same snapshot, sketch for sketch.
    Returns the pyiceberg ``StatisticsFile``.

    Non-Parquet data files, and Parquet files without field ids in a table without a name
    mapping, are refused (:class:`~puffin.errors.UnsupportedTableError`).
    """
    from puffin.blobs.theta.files import ThetaSketch
    from puffin.iceberg.statistics.compute import plan_statistics
    from puffin.iceberg.statistics.files import write_statistics_file

    check_engine(engine)
    snapshot, scan_columns, planned = plan_statistics(table, snapshot_id, columns)
    check_parquet(planned)

    sketches: list[ThetaSketch]
    if not planned:
        sketches = [ThetaSketch() for _ in scan_columns]
    else:
        sketches = _sketches(spark, table, snapshot, planned, scan_columns, lg_k, engine)

    sequence_number = snapshot.sequence_number if snapshot.sequence_number is not None else 0
    return write_statistics_file(
        table,
        [(c.field_id, s) for c, s in zip(scan_columns, sketches, strict=True)],
        snapshot_id=snapshot.snapshot_id,
        sequence_number=sequence_number,
        commit=commit,
    )


def live_columns(
    spark: SparkSession,
    table: Table,
    snapshot: Snapshot,
    planned: Sequence[PlannedFile],
    columns: Sequence[ScanColumn],
) -> DataFrame:
    """The snapshot's live rows of ``columns`` (a column ``f<field id>`` each, in the Spark
    type that keeps its exact values), read on the executors by the row reader."""
    from functools import partial

    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    from puffin.spark.file_tasks import map_files
    from puffin.spark.row_jobs import ColumnsJob
    from puffin.spark.types import spark_read_type

    schema = T.StructType(
        [T.StructField(f"f{c.field_id}", spark_read_type(c.iceberg_type)) for c in columns]
    )
    job = partial(ColumnsJob, list(columns), to_arrow_schema(schema))
    return map_files(spark, table, snapshot, planned, job, schema.simpleString())


def _sketches(
    spark: SparkSession,
    table: Table,
    snapshot: Snapshot,
    planned: Sequence[PlannedFile],
    columns: Sequence[ScanColumn],
    lg_k: int,
    engine: str,
) -> list[ThetaSketch]:
    """Each column's sketch. ``"jvm"``: Spark's ``theta_sketch_agg`` over the rows the tasks
    read; otherwise every task reads and sketches its files
    (:class:`~puffin.spark.row_jobs.SketchJob`) and the tasks' sketches are unioned here."""
    from functools import partial

    from puffin.blobs.theta.files import ThetaSketch
    from puffin.spark.file_tasks import map_files
    from puffin.spark.preflight import python_tasks
    from puffin.spark.row_jobs import SKETCH_SCHEMA, SketchJob

    if engine == "jvm":
        frame = live_columns(spark, table, snapshot, planned, columns)
        names = [f"f{c.field_id}" for c in columns]
        types = {f"f{c.field_id}": str(c.iceberg_type) for c in columns}
        with python_tasks(spark):  # the rows come from Python tasks
            found = compute_ndv_sketches(frame, names, iceberg_types=types, lg_k=lg_k, engine="jvm")
        return [found[n] for n in names]
    job = partial(SketchJob, list(columns), lg_k)
    frame = map_files(spark, table, snapshot, planned, job, SKETCH_SCHEMA)
    with python_tasks(spark):
        rows = frame.collect()
    parts: list[list[bytes]] = [[] for _ in columns]
    for row in rows:
        parts[row["column"]].append(bytes(row["sketch"]))
    return [ThetaSketch.union(ThetaSketch(), *p, lg_k=lg_k) for p in parts]


def check_engine(engine: str) -> None:
    """A :class:`~puffin.errors.UsageError` for an engine :data:`ENGINES` does not name."""
    from puffin.errors import UsageError
    from puffin.spark.ndv import ENGINES

    if engine not in ENGINES:
        raise UsageError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
