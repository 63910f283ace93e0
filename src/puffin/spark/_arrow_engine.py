"""The ``arrow`` sketch engine: Spark streams Arrow batches into the NDV engine on the executors.

Each partition yields one small row per column (its serialized sketch); the driver unions
them.  Works on every Spark 4 and for every Iceberg type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from puffin.blobs.theta.files import ThetaSketch

__all__ = ["arrow_sketches"]

#: Rows gathered from Spark's Arrow batches before one builder update (fewer, larger steps).
_GATHER_ROWS = 1 << 18

_Partition = Callable[["Iterator[pa.RecordBatch]"], "Iterator[pa.RecordBatch]"]


def _sketch_partition(types: list[str], lg_k: int) -> _Partition:
    """The ``mapInArrow`` function: one row (column index, serialized sketch) per column."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from puffin.ndv.engine import ColumnSketch

        builders = [ColumnSketch(t, lg_k=lg_k) for t in types]
        pending: list[pa.RecordBatch] = []
        rows = 0

        def flush() -> None:
            nonlocal pending, rows
            if not pending:
                return
            table = pa.Table.from_batches(pending)
            for i, builder in enumerate(builders):
                builder.add(table.column(i).combine_chunks())
            pending, rows = [], 0

        for batch in batches:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            rows += batch.num_rows
            if rows >= _GATHER_ROWS:
                flush()
        flush()
        sketches = [b.result().serialize() for b in builders]
        yield pa.RecordBatch.from_arrays(
            [pa.array(range(len(types)), pa.int32()), pa.array(sketches, pa.binary())],
            names=["column", "sketch"],
        )

    return run


def arrow_sketches(df: DataFrame, types: list[str], lg_k: int) -> list[ThetaSketch]:
    """Sketch every column of ``df`` with our builder on the executors; union on the driver."""
    from puffin.blobs.theta.files import ThetaSketch
    from puffin.spark.preflight import python_tasks

    with python_tasks(df.sparkSession):
        rows = df.mapInArrow(_sketch_partition(types, lg_k), "column int, sketch binary").collect()
    parts: list[list[bytes]] = [[] for _ in types]
    for row in rows:
        parts[row["column"]].append(bytes(row["sketch"]))
    return [ThetaSketch.union(ThetaSketch(), *p, lg_k=lg_k) for p in parts]
