"""Deletion vectors built on Spark: rows matching a condition, or v2 position-delete files.

The executors build and serialize one deletion vector per data file and partition; the
driver collects those (a few bytes per run of positions), merges pieces of files split over
partitions and writes one Puffin file through the table's FileIO (or fsspec).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard, cast

from puffin.errors import UsageError
from puffin.spark._paths import check_parquet, path_key
from puffin.spark.row_jobs import VECTOR_SCHEMA

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession

    from puffin.blobs.dv.files import DeletionVector, DeletionVectorEntry
    from puffin.iceberg.deletes.rows import DeleteResult
    from puffin.iceberg.metadata.delete_files import DeleteIndex
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = [
    "delete_rows",
    "deletion_vector_positions",
    "deletion_vectors_for",
    "position_deletes_to_deletion_vectors",
    "upgrade_to_v3",
]


def _dv_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: (file path, position) rows -> one serialized DV per file and partition.

    Rows stream in Arrow batches; each batch's positions are split by file and added to
    that file's bitmap, so memory follows the compressed bitmaps, not the row count.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from puffin.blobs.dv.files import DeletionVector

    vectors: dict[str, DeletionVector] = {}
    largest: dict[str, int] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        paths = batch.column(0)
        positions = batch.column(1)
        if paths.null_count or positions.null_count:
            raise ValueError("file path and position must not be null")
        encoded = pc.dictionary_encode(paths)
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        pos = positions.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        names = encoded.dictionary.to_pylist()
        for code, name in enumerate(names):
            chosen = pos if len(names) == 1 else pos[codes == code]
            if not len(chosen):
                continue
            vector = vectors.get(name)
            if vector is None:
                vectors[name] = DeletionVector(chosen)
            else:
                vector.update(chosen)
            largest[name] = max(largest.get(name, 0), int(chosen.max()))
    if not vectors:
        return
    items = list(vectors.items())
    yield pa.RecordBatch.from_arrays(
        [
            pa.array([name for name, _ in items], pa.string()),
            pa.array([dv.cardinality for _, dv in items], pa.int64()),
            pa.array([largest[name] for name, _ in items], pa.int64()),
            pa.array([dv.serialize() for _, dv in items], pa.binary()),
        ],
        names=["file_path", "record_count", "last", "dv"],
    )


def collect_vectors(rows_df: DataFrame) -> dict[str, tuple[DeletionVector, int]]:
    """Run the DV job; {reported file path: (DeletionVector, largest position)}.

    A file that spans several partitions comes back as several partial vectors, merged
    here; each payload's CRC and cardinality are checked as it is decoded.
    """
    from puffin.spark.preflight import python_tasks

    with python_tasks(rows_df.sparkSession):
        rows = rows_df.mapInArrow(_dv_partition, VECTOR_SCHEMA).collect()
    return merge_vector_rows(rows)


def merge_vector_rows(rows: Iterable[Any]) -> dict[str, tuple[DeletionVector, int]]:
    """Collected rows of :data:`~puffin.spark.row_jobs.VECTOR_SCHEMA` merged by file:
    {file path: (DeletionVector, largest position)}, each payload checked as decoded."""
    from puffin.blobs.dv.files import DeletionVector

    merged: dict[str, tuple[DeletionVector, int]] = {}
    for row in rows:
        path = row["file_path"]
        dv = DeletionVector.deserialize(
            bytes(row["dv"]), expected_cardinality=row["record_count"], location=path
        )
        if path in merged:
            old, last = merged[path]
            old.update(dv)
            merged[path] = (old, max(last, row["last"]))
        else:
            merged[path] = (dv, row["last"])
    return merged


def deletion_vector_positions(
    spark: SparkSession,
    table: Table,
    where: BooleanExpression | str,
    *,
    snapshot_id: int | None = None,
    merge_existing: bool = True,
) -> dict[str, DeletionVector]:
    """The deleted positions of each data file with rows matching ``where``; no file.

    ``where`` is what :func:`puffin.iceberg.delete_rows` takes: a pyiceberg row-filter
    string or ``BooleanExpression``, bound strictly to the table's current schema before
    Spark runs (a mistake is a :class:`~puffin.errors.UsageError` or
    :class:`~puffin.errors.ColumnNotFoundError`).  The driver plans the snapshot; each Spark
    task matches the condition in its share of the Parquet data files with the row reader
    of :func:`puffin.iceberg.delete_rows` (:class:`~puffin.spark.row_jobs.MatchJob`) and
    sends one serialized deletion vector per data file.  The driver checks them and, with
    ``merge_existing``, adds the positions the snapshot already deletes in those files
    (equality deletes included).  Returns ``{data file path: DeletionVector}`` sorted by
    path (empty when no row matches).
    """
    from functools import partial

    from puffin.iceberg.catalog.catalogs import resolve_snapshot
    from puffin.iceberg.scan.delete_filter import DeleteFilter
    from puffin.iceberg.scan.plan import plan_files
    from puffin.iceberg.scan.row_filter import bind_where
    from puffin.spark.file_tasks import map_files
    from puffin.spark.preflight import python_tasks
    from puffin.spark.row_jobs import MatchJob

    bound = bind_where(table, where)
    snapshot = resolve_snapshot(table, snapshot_id)
    planned = plan_files(table, snapshot, equality=True)
    check_parquet(planned)
    if not planned:
        return {}
    frame = map_files(spark, table, snapshot, planned, partial(MatchJob, bound), VECTOR_SCHEMA)
    with python_tasks(spark):
        found = merge_vector_rows(frame.collect())
    existing = DeleteFilter(table, snapshot) if merge_existing else None
    return dict(sorted(vectors_by_data_file(found, planned, existing).items()))


def deletion_vectors_for(
    spark: SparkSession,
    table: Table,
    where: BooleanExpression | str,
    *,
    snapshot_id: int | None = None,
    merge_existing: bool = True,
    location: str | None = None,
) -> list[DeletionVectorEntry]:
    """Deletion vectors for the rows of ``table`` matching ``where`` (a row filter).

    :func:`deletion_vector_positions` on Spark, then one Puffin file written through the
    table's FileIO with :func:`puffin.iceberg.write_table_deletion_vectors` at ``location``
    (default: a new file in a new temporary folder, not the table's data folder, where a
    file nothing references would stay for good).  ``merge_existing`` keeps one vector
    per data file for a v3 table.

    Returns one :class:`puffin.DeletionVectorEntry` per data file with matching rows,
    sorted by data file; an empty list, and no file, when no row matches.  Nothing is
    committed: :func:`delete_rows` writes and commits.
    """
    from puffin.iceberg.deletes.vectors import write_table_deletion_vectors

    vectors = deletion_vector_positions(
        spark, table, where, snapshot_id=snapshot_id, merge_existing=merge_existing
    )
    if not vectors:
        return []
    target = location if location is not None else scratch_location()
    return list(write_table_deletion_vectors(table, vectors, validate=False, location=target))


def scratch_location() -> str:
    """Where an uncommitted deletion-vector job writes by default: a new temporary folder."""
    import tempfile
    import uuid

    folder = tempfile.mkdtemp(prefix="puffin-dv-")
    return os.path.join(folder, f"{uuid.uuid4()}-deletes.puffin")


def delete_rows(
    spark: SparkSession,
    table: Table,
    where: BooleanExpression | str,
    *,
    allow_all_rows: bool = True,
) -> DeleteResult:
    """Delete the rows matching ``where`` (a row filter) from a v2 or v3 table, committed.

    The executors find the positions (:func:`deletion_vector_positions` on the current
    snapshot); the driver commits them with :func:`puffin.iceberg.commit_deletion_vectors`:
    on v3 merged with the live vectors into one Puffin file, on v2 as the table's
    ``write.delete.mode`` says (position-delete files, or the files written again without
    the rows), in one snapshot retried on concurrent commits.  A v1 table is refused with
    :class:`puffin.errors.UnsupportedTableError` before Spark runs.
    """
    from puffin.iceberg.deletes.rows import (
        commit_deletion_vectors,
        delete_mode,
        require_v2_or_v3,
    )

    require_v2_or_v3(table, "delete_rows")
    delete_mode(table)  # a bad write.delete.mode is refused before Spark runs
    vectors = deletion_vector_positions(spark, table, where, merge_existing=False)
    return commit_deletion_vectors(table, vectors, allow_all_rows=allow_all_rows)


def vectors_by_data_file(
    found: Mapping[str, tuple[DeletionVector, int]],
    planned: Iterable[PlannedFile],
    existing: DeleteIndex | None,
) -> dict[str, DeletionVector]:
    """The vectors Spark reported, keyed by Iceberg's data-file location and checked.

    With ``existing``, the positions the snapshot already deletes are added to each.
    """
    from puffin.blobs.dv.files import DeletionVector
    from puffin.iceberg.deletes.merge import union_with_live

    by_key = {path_key(p.path): p for p in planned}
    vectors: dict[str, DeletionVector] = {}
    for reported, (dv, last) in found.items():
        target = by_key.get(path_key(reported))
        if target is None:
            raise RuntimeError(f"Spark read {reported!r}, which is not a planned data file")
        if last >= target.record_count:
            raise RuntimeError(
                f"row position {last} is past the {target.record_count} rows of {target.path}"
            )
        if existing is not None and (target.delete_files or target.equality_deletes):
            dv = DeletionVector(union_with_live(existing, target, dv.to_numpy()))
        vectors[target.path] = dv
    return vectors


def position_deletes_to_deletion_vectors(
    spark: SparkSession,
    files: Table | Iterable[str | DataFile],
    *,
    table: Table | None = None,
    location: str | None = None,
) -> list[DeletionVectorEntry]:
    """Turn Iceberg v2 position-delete files into v3 deletion vectors, on Spark.

    ``files`` is a pyiceberg table (its current snapshot's Parquet position-delete files
    are converted, for its live data files only) or an iterable of position-delete file
    locations (or pyiceberg ``DataFile`` objects).  Spark reads their ``file_path`` and
    ``pos`` columns; every data file's positions, from however many delete files, become
    one deletion vector built on the executors.

    The Puffin file is written to ``location`` (a local path or any URL fsspec, or the
    table's FileIO when a table is given, can write), by default a new file in a new
    temporary folder: nothing is committed, so nothing goes into the table's folders.
    Returns one :class:`puffin.DeletionVectorEntry` per data file,
    sorted by data file (empty, and no file written, when there is nothing to convert).
    """
    live: set[str] | None = None
    if _is_table(files):
        if table is not None and table is not files:
            raise UsageError("give the table once: as files or as table=")
        table = files
        paths, live = _position_delete_files(table)
    else:
        if isinstance(files, (str, bytes)):
            raise TypeError("files must be a table or an iterable of locations, not one string")
        locations = cast("Iterable[str | DataFile]", files)  # not a table, see _is_table
        paths = [str(getattr(f, "file_path", f)) for f in locations]
    if not paths:
        return []
    rows = spark.read.schema("file_path string, pos long").parquet(*paths)
    found = collect_vectors(rows.select("file_path", "pos"))
    vectors = {path: dv for path, (dv, _) in sorted(found.items()) if live is None or path in live}
    if not vectors:
        return []
    target = location if location is not None else scratch_location()
    if table is not None:
        from puffin.iceberg.deletes.vectors import write_table_deletion_vectors

        return list(write_table_deletion_vectors(table, vectors, validate=False, location=target))
    return _write_vectors(target, vectors)


def upgrade_to_v3(spark: SparkSession, table: Table) -> Table:
    """The table at format version 3; its position deletes become DVs on the executors.

    Spark reads the current snapshot's Parquet position-delete files and builds one vector
    per live data file; the driver commits the upgrade with those vectors through
    :func:`puffin.iceberg.upgrade_to_v3` (same commit, position-delete files removed).  A
    v3 table is returned as it is.
    """
    from puffin.iceberg.deletes.upgrade import upgrade_to_v3 as upgrade

    if table.metadata.format_version >= 3:
        return table
    paths, live = _position_delete_files(table)
    if not paths:
        return upgrade(table)
    rows = spark.read.schema("file_path string, pos long").parquet(*paths)
    found = collect_vectors(rows.select("file_path", "pos"))
    by_key = {path_key(p): p for p in live}
    vectors = {by_key[path_key(f)]: dv for f, (dv, _) in found.items() if path_key(f) in by_key}
    return upgrade(table, positions=vectors)


def _position_delete_files(table: Table) -> tuple[list[str], set[str]]:
    """The current snapshot's Parquet position-delete files, and its live data files."""
    from pyiceberg.manifest import FileFormat

    from puffin.iceberg.catalog.catalogs import resolve_snapshot
    from puffin.iceberg.scan.plan import plan_files

    # Equality deletes stay as they are (the upgrade keeps them): only positions are read.
    planned = plan_files(table, resolve_snapshot(table, None), equality=True)
    sources: dict[str, None] = {}
    for p in planned:
        for d in p.delete_files:
            if d.file_format == FileFormat.PARQUET:
                sources[str(d.file_path)] = None
    return list(sources), {p.path for p in planned}


def _is_table(obj: object) -> TypeGuard[Table]:
    """Duck-typed: a pyiceberg ``Table`` (or a look-alike) rather than a list of files."""
    return hasattr(obj, "metadata") and hasattr(obj, "io") and hasattr(obj, "scan")


def _write_vectors(
    location: str, vectors: Mapping[str, DeletionVector]
) -> list[DeletionVectorEntry]:
    """Write DVs to a local path (atomically) or, for a URL, through fsspec."""
    import dataclasses

    from puffin.blobs.dv.files import write_deletion_vectors
    from puffin.io.locations import open_output
    from puffin.version import CREATED_BY

    with open_output(location) as target:
        entries = write_deletion_vectors(target, vectors, created_by=CREATED_BY)
    if isinstance(target, str):
        return list(entries)
    return [dataclasses.replace(e, path=location) for e in entries]
