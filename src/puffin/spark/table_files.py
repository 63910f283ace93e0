"""A maintenance job's file work spread over Spark's executors: the deletes of
:func:`expire_snapshots`, the folder listing and deletes of :func:`remove_orphan_files`.

The driver decides what to delete, as the single-process job does (for an expiry: the commit
first, then the files only the expired snapshots reached, read again after the commit). The
locations go to the executors in slices; each task loads the table's metadata once and
deletes its slice through its own :class:`~puffin.iceberg.maintenance.guard.Deletions` (the
one guard: a file outside the table's locations is skipped and reported, never deleted),
and sends back what it deleted by kind and what it skipped, which the driver adds up. A
warehouse of millions of files is then deleted at the speed of every executor's store
client at once, not one process's.

An orphan cleanup's listing: the driver lists the top of the table's folder until it has a
few folders per core, and each task walks one folder with the single-process job's rules
(:func:`~puffin.iceberg.verify.orphans.listed_files`: hidden names left out); the driver
then chooses, sets each orphan aside through the guard and reads the references again, as
the single-process job does, and the orphans still unreferenced are deleted on the
executors (which must see the same file system: a local or mounted folder). On an object
store the prefixes are listed and the orphans deleted in bulk by the tasks, each batch
marked and checked on the driver first (:mod:`puffin.spark.store_files`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from puffin.iceberg.maintenance.expire import ExpireResult
from puffin.iceberg.maintenance.expire import expire_snapshots as expire_here
from puffin.iceberg.maintenance.orphans import Finisher, OrphanResult
from puffin.iceberg.maintenance.orphans import remove_orphan_files as remove_here
from puffin.iceberg.verify.orphans import DEFAULT_OLDER_THAN, Listed

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow as pa
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

    from puffin.iceberg.maintenance.guard import Deletions
    from puffin.iceberg.metadata.retention import OlderThan
    from puffin.spark.file_tasks import TableRef

__all__ = [
    "delete_on_executors",
    "expire_snapshots",
    "finish_on_executors",
    "list_on_executors",
    "remove_orphan_files",
]

#: A task's report: a row per kind deleted, then one per location skipped (outside the
#: table) and one per location found gone.
RESULT_SCHEMA = "kind string, files long, bytes long, skipped string, gone string"


def expire_snapshots(
    spark: SparkSession,
    table: Table,
    *,
    older_than: OlderThan | None = None,
    retain_last: int | None = None,
    allow_prefixes: Iterable[str] = (),
) -> ExpireResult:
    """:func:`puffin.iceberg.expire_snapshots` with the files deleted on Spark's executors:
    the same snapshots expired, the same files deleted, the same guard.

    Example::

        from puffin.spark import expire_snapshots, local_session

        result = expire_snapshots(local_session(), table, older_than="7d")
        print(len(result.expired_snapshot_ids), result.deleted_files)
    """
    prefixes = tuple(allow_prefixes)
    return expire_here(
        table,
        older_than=older_than,
        retain_last=retain_last,
        allow_prefixes=prefixes,
        deleter=delete_on_executors(spark, prefixes),
    )


def remove_orphan_files(
    spark: SparkSession,
    table: Table,
    *,
    older_than: OlderThan = DEFAULT_OLDER_THAN,
    dry_run: bool = False,
    allow_prefixes: Iterable[str] = (),
    allow_short_grace_period: bool = False,
) -> OrphanResult:
    """:func:`puffin.iceberg.remove_orphan_files` with the table's folder listed and the
    orphans deleted on Spark's executors: the same grace period, guard, set-aside and
    second reading of the references, on the driver.

    Example::

        from puffin.spark import local_session, remove_orphan_files

        result = remove_orphan_files(local_session(), table, dry_run=True)
        print(len(result.orphans), "orphans")
    """
    from puffin.io.locations import local_path
    from puffin.spark.store_files import deletes_on_executors

    properties = dict(table.io.properties)
    on_store = local_path(table.location()) is None
    return remove_here(
        table,
        older_than=older_than,
        dry_run=dry_run,
        allow_prefixes=allow_prefixes,
        allow_short_grace_period=allow_short_grace_period,
        lister=list_on_executors(spark, properties=properties),
        finisher=finish_on_executors(spark),
        **({"store_deletes": deletes_on_executors(spark, properties)} if on_store else {}),
    )


def list_on_executors(
    spark: SparkSession, folders_per_core: int = 4, properties: dict[str, str] | None = None
) -> Callable[[str], list[Listed]]:
    """A :data:`~puffin.iceberg.verify.orphans.Lister` whose folders are walked by Spark
    tasks: the driver opens folders until it has ``folders_per_core`` a core. An object
    store's prefixes are listed alike (:mod:`puffin.spark.store_files`), through a FileIO
    made from ``properties`` (the table's)."""

    def lister(root: str) -> list[Listed]:
        import pyarrow as pa

        from puffin.io.locations import local_path
        from puffin.spark.file_tasks import spark_cores
        from puffin.spark.preflight import python_tasks
        from puffin.spark.store_files import list_store_on_executors

        wanted = folders_per_core * spark_cores(spark)
        if local_path(root) is None:
            return list_store_on_executors(spark, root, properties or {}, wanted)
        near, folders = _split(root, wanted)
        if not folders:
            return near
        rows = pa.table({"folder": folders})
        with python_tasks(spark):
            got = spark.createDataFrame(rows).mapInArrow(_walk, LISTING_SCHEMA).collect()
        return near + [(r["path"], r["size"], r["mtime"]) for r in got]

    return lister


#: A task's listing: one row per file.
LISTING_SCHEMA = "path string, size long, mtime double"


def _split(root: str, wanted: int) -> tuple[list[Listed], list[str]]:
    """The files near ``root``, listed here, and the folders below for the tasks: folders
    are opened breadth first until there are ``wanted`` of them (or none left)."""
    from puffin.iceberg.verify.orphans import list_folder

    near: list[Listed] = []
    folders = [root]
    while folders and len(folders) < wanted:
        opened, folders = folders, []
        for folder in opened:
            files, below = list_folder(folder)
            near.extend(files)
            folders.extend(below)
    return near, folders


def _walk(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: every file under each folder of the task, by the cleanup's rules."""
    import pyarrow as pa

    from puffin.iceberg.verify.orphans import listed_files as walk

    schema = pa.schema([("path", pa.string()), ("size", pa.int64()), ("mtime", pa.float64())])
    for batch in batches:
        for folder in batch.column("folder").to_pylist():
            found = list(walk(folder))
            if found:
                yield pa.RecordBatch.from_pydict(
                    {"path": [f[0] for f in found], "size": [f[1] for f in found],
                     "mtime": [f[2] for f in found]},
                    schema=schema,
                )  # fmt: skip


def delete_on_executors(
    spark: SparkSession, allow_prefixes: Sequence[str] = ()
) -> Callable[[Deletions, Sequence[tuple[str, str]]], None]:
    """A :data:`~puffin.iceberg.maintenance.expire.Deleter` whose deletes run on the
    executors, each through the guard of the table the driver's ``Deletions`` holds."""

    def deleter(deletions: Deletions, files: Sequence[tuple[str, str]]) -> None:
        _on_executors(spark, deletions, files, tuple(allow_prefixes), finish=False)

    return deleter


def finish_on_executors(spark: SparkSession) -> Finisher:
    """A :data:`~puffin.iceberg.maintenance.orphans.Finisher`: the set-aside orphans
    deleted for good on the executors."""

    def finisher(deletions: Deletions, files: Sequence[tuple[str, str]]) -> set[str]:
        return _on_executors(spark, deletions, files, (), finish=True)

    return finisher


def _on_executors(
    spark: SparkSession,
    deletions: Deletions,
    files: Sequence[tuple[str, str]],
    allow_prefixes: tuple[str, ...],
    *,
    finish: bool,
) -> set[str]:
    """``files`` (location, kind) deleted by Spark tasks (``finish``: set-aside files,
    :meth:`Deletions.finish`; else :meth:`Deletions.delete`), counted into ``deletions``;
    the locations found gone."""
    import pyarrow as pa

    from puffin.iceberg.maintenance.guard import Deletions as Guard
    from puffin.spark.file_tasks import TableRef
    from puffin.spark.preflight import python_tasks

    if not files:
        return set()
    table = deletions.table
    snapshot = table.current_snapshot()
    if snapshot is None:  # nothing to load the table by: here
        done = deletions.finish if finish else deletions.delete
        return {location for location, kind in files if not done(location, kind)}
    rows = pa.table({"location": [f for f, _ in files], "kind": [k for _, k in files]})
    task = _task(TableRef.of(table, snapshot), allow_prefixes, finish)
    with python_tasks(spark):
        got = spark.createDataFrame(rows).mapInArrow(task, RESULT_SCHEMA).collect()
    theirs = Guard(table, deletions.locations)
    gone: set[str] = set()
    for row in got:
        if row["gone"] is not None:
            gone.add(row["gone"])
        elif row["skipped"] is not None:
            theirs.skipped_outside_table.append(row["skipped"])
        else:
            tally = theirs.deleted.setdefault(row["kind"], [0, 0])
            tally[0] += row["files"]
            tally[1] += row["bytes"]
    deletions.add(theirs)
    return gone


def _task(
    ref: TableRef, allow_prefixes: tuple[str, ...], finish: bool
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: the task's locations deleted through the guard."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from puffin.iceberg.maintenance.guard import Deletions, TableLocations

        table, _ = ref.load()
        deletions = Deletions(table, TableLocations.of(table, allow_prefixes))
        done = deletions.finish if finish else deletions.delete
        gone: list[str] = []
        for batch in batches:
            locations = batch.column("location").to_pylist()
            kinds = batch.column("kind").to_pylist()
            for location, kind in zip(locations, kinds, strict=True):
                if not done(location, kind):
                    gone.append(location)
        counted = sorted(deletions.deleted.items())
        skipped = deletions.skipped_outside_table
        outside = set(skipped)  # delete() is False for these too
        gone = [g for g in gone if g not in outside]
        nulls = [None] * (len(skipped) + len(gone))
        yield pa.RecordBatch.from_pydict(
            {
                "kind": [k for k, _ in counted] + nulls,
                "files": [n for _, (n, _) in counted] + nulls,
                "bytes": [b for _, (_, b) in counted] + nulls,
                "skipped": [None] * len(counted) + list(skipped) + [None] * len(gone),
                "gone": [None] * (len(counted) + len(skipped)) + gone,
            },
            schema=pa.schema([("kind", pa.string()), ("files", pa.int64()),
                              ("bytes", pa.int64()), ("skipped", pa.string()),
                              ("gone", pa.string())]),
        )  # fmt: skip

    return run
