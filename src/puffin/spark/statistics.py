"""An Iceberg table's NDV statistics file computed on Spark (:func:`compute_table_statistics`).

Planning and writing are shared with the single-process job in :mod:`puffin.iceberg`; only
the sketching runs on Spark, so both jobs write the same file for the same snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from puffin.spark._frames import FIELD_ID_CONF, check_parquet, column_ref, live_rows, session_conf
from puffin.spark.ndv import compute_ndv_sketches

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyiceberg.table import Table
    from pyiceberg.table.statistics import StatisticsFile
    from pyspark.sql import SparkSession

    from puffin.blobs.theta.files import ThetaSketch

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

    Plans the snapshot with pyiceberg, reads the chosen columns of its Parquet data files
    with Spark (matched by field id, so renamed columns read right), removes rows deleted
    by position-delete files or deletion vectors, sketches each column on the executors
    (:func:`~puffin.spark.compute_ndv_sketches`), writes ``<snapshot-id>-<uuid>.stats``
    under the table's metadata folder through its FileIO, and (with ``commit``) registers it
    as the snapshot's statistics file.  The file is the one the single-process job writes
    for the same snapshot, sketch for sketch.  Returns the pyiceberg ``StatisticsFile``.

    Equality deletes, non-Parquet data files and Parquet files without field ids are not
    supported (``UnsupportedTableError``, or Spark's error for missing field ids).
    """
    from puffin.blobs.theta.files import ThetaSketch
    from puffin.iceberg.scan.columns import snapshot_schema
    from puffin.iceberg.statistics.compute import plan_statistics
    from puffin.iceberg.statistics.files import write_statistics_file

    snapshot, scan_columns, planned = plan_statistics(table, snapshot_id, columns)
    schema = snapshot_schema(table, snapshot.schema_id)
    check_parquet(planned)

    sketches: list[ThetaSketch]
    if planned:
        top_ids = {c.path[0] for c in scan_columns}
        with session_conf(spark, FIELD_ID_CONF):
            live = live_rows(spark, table, snapshot, schema, planned, top_ids)
            frame = live.select(
                *[column_ref(schema, c.path).alias(f"f{c.field_id}") for c in scan_columns]
            )
            by_name = compute_ndv_sketches(
                frame,
                [f"f{c.field_id}" for c in scan_columns],
                iceberg_types={f"f{c.field_id}": str(c.iceberg_type) for c in scan_columns},
                lg_k=lg_k,
                engine=engine,
            )
        sketches = [by_name[f"f{c.field_id}"] for c in scan_columns]
    else:
        sketches = [ThetaSketch() for _ in scan_columns]

    sequence_number = snapshot.sequence_number if snapshot.sequence_number is not None else 0
    return write_statistics_file(
        table,
        [(c.field_id, s) for c, s in zip(scan_columns, sketches, strict=True)],
        snapshot_id=snapshot.snapshot_id,
        sequence_number=sequence_number,
        commit=commit,
    )
