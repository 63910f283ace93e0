"""An orphan cleanup's listing and bulk deletes on an object store, on Spark's executors.

The driver lists the first levels of the table's prefix (one delimited listing a folder)
until it has a few prefixes per core; each task lists one prefix in full through its own
:func:`~puffin.io.listing.object_store`, made from the table's FileIO properties. The
deletes stay marked and checked on the driver
(:mod:`puffin.iceberg.maintenance.orphans_store`); a batch of ``1,000 × cores`` orphans is
then deleted by the tasks, 1,000 keys a bulk request each, and each key the store refused
comes back to the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from puffin.iceberg.maintenance.orphans_store import StoreDeletes
from puffin.io.listing import BULK_DELETE_KEYS, Failed

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from puffin.iceberg.verify.orphans import Listed
    from puffin.io.listing import ObjectStore

__all__ = ["deletes_on_executors", "list_store_on_executors"]

#: A task's listing: one row per object.
LISTING_SCHEMA = "path string, size long, mtime double"
#: A task's deletes: one row per key the store did not delete.
FAILED_SCHEMA = "location string, reason string"


def list_store_on_executors(
    spark: SparkSession, root: str, properties: dict[str, str], wanted: int
) -> list[Listed]:
    """Every object under the URL ``root`` a cleanup may consider, the prefixes below the
    first ``wanted`` listed by Spark tasks."""
    import pyarrow as pa

    from puffin.iceberg.verify.orphans import visible
    from puffin.spark.preflight import python_tasks

    store = _store(root, properties)
    near: list[Listed] = []
    folders = [root.rstrip("/")]
    while folders and len(folders) < wanted:
        opened, folders = folders, []
        for folder in opened:
            files, below = store.level(folder)
            near += [(f.location, f.size, f.written) for f in files]
            folders += [b for b in below if visible(root, b)]
    if folders:
        rows = pa.table({"folder": folders})
        with python_tasks(spark):
            got = spark.createDataFrame(rows).mapInArrow(_walk(properties), LISTING_SCHEMA)
            near += [(r["path"], r["size"], r["mtime"]) for r in got.collect()]
    return [f for f in near if visible(root, f[0])]


def deletes_on_executors(spark: SparkSession, properties: dict[str, str]) -> StoreDeletes:
    """:class:`StoreDeletes` whose bulk requests run on the executors, a batch of
    ``1,000 × cores`` keys under one mark."""
    from puffin.spark.file_tasks import spark_cores

    def delete(store: ObjectStore, locations: Sequence[str]) -> list[Failed]:
        import pyarrow as pa

        from puffin.spark.preflight import python_tasks

        if not locations:
            return []
        rows = pa.table({"location": list(locations)})  # a task deletes its rows in bulk
        tasks = max(1, -(-len(locations) // BULK_DELETE_KEYS))
        frame = spark.createDataFrame(rows).repartition(tasks)
        with python_tasks(spark):
            got = frame.mapInArrow(_delete(properties), FAILED_SCHEMA).collect()
        return [Failed(r["location"], r["reason"]) for r in got]

    return StoreDeletes(delete, BULK_DELETE_KEYS * spark_cores(spark))


def _store(location: str, properties: dict[str, str]) -> ObjectStore:
    from pyiceberg.io import load_file_io

    from puffin.io.listing import object_store

    return object_store(location, load_file_io(properties, location))


def _walk(
    properties: dict[str, str],
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow``: every object under each prefix of the task."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = pa.schema([("path", pa.string()), ("size", pa.int64()), ("mtime", pa.float64())])
        for batch in batches:
            for folder in batch.column("folder").to_pylist():
                found = list(_store(folder, properties).walk(folder))
                if found:
                    yield pa.RecordBatch.from_pydict(
                        {"path": [f.location for f in found], "size": [f.size for f in found],
                         "mtime": [f.written for f in found]},
                        schema=schema,
                    )  # fmt: skip

    return run


def _delete(
    properties: dict[str, str],
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow``: the task's keys deleted in bulk; the ones the store refused."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        locations = [loc for b in batches for loc in b.column("location").to_pylist()]
        if not locations:
            return
        failed = _store(locations[0], properties).delete(locations)
        yield pa.RecordBatch.from_pydict(
            {"location": [f.location for f in failed], "reason": [f.reason for f in failed]},
            schema=pa.schema([("location", pa.string()), ("reason", pa.string())]),
        )

    return run
