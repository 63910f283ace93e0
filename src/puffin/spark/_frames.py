"""An Iceberg snapshot's data files as Spark DataFrames: read schema, path keys, live rows.

Spark reads the Parquet files pyiceberg planned, matching columns by field id (so renamed
columns read right), and removes the rows the snapshot's position deletes and deletion
vectors delete.  Spark and Iceberg spell file locations differently, so rows are matched to
delete entries by a path key both sides compute the same way.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from puffin.errors import UnsupportedTableError

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.types import NestedField
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructField, StructType

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = [
    "FIELD_ID_CONF",
    "check_parquet",
    "column_ref",
    "equality_deleted_rows",
    "live_rows",
    "path_key",
    "session_conf",
    "table_frame",
]

#: Spark reads Parquet columns by field id while these are set (restored afterwards).
FIELD_ID_CONF = {"spark.sql.parquet.fieldId.read.enabled": "true"}


@contextlib.contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Set SQL settings for the jobs run inside, then put the caller's values back."""
    saved: dict[str, str | None] = {}
    for key, value in settings.items():
        saved[key] = spark.conf.get(key, None)
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def path_key(path: str) -> str:
    """A comparable form of a file location, as Spark and Iceberg spell it.

    Spark reports ``file:/a/b%20c`` for the Iceberg location ``file:///a/b c`` or ``/a/b c``;
    both become ``file:/a/b c``.  ``s3a://`` and ``s3n://`` compare equal to ``s3://``.
    Mirrors :func:`_path_key_column`.
    """
    from urllib.parse import unquote

    text = unquote(path)
    if text.startswith("/"):
        text = "file:" + text
    text = re.sub(r"^file:/+", "file:/", text)
    return re.sub(r"^s3[an]://", "s3://", text)


def _path_key_column(col: Column) -> Column:
    """:func:`path_key` as a Spark column expression."""
    from pyspark.sql import functions as F

    text = F.url_decode(F.replace(col, F.lit("+"), F.lit("%2B")))
    text = F.regexp_replace(text, r"^/", "file:/")
    text = F.regexp_replace(text, r"^file:/+", "file:/")
    return F.regexp_replace(text, r"^s3[an]://", "s3://")


def _spark_field(field: NestedField) -> StructField | None:
    """A Spark ``StructField`` for an Iceberg field, with its id for Parquet matching."""
    from pyiceberg.types import PrimitiveType
    from pyiceberg.types import StructType as IcebergStruct
    from pyspark.sql import types as T

    from puffin.spark.types import spark_read_type

    ftype = field.field_type
    spark_type: T.DataType
    if isinstance(ftype, IcebergStruct):
        children = [_spark_field(f) for f in ftype.fields]
        spark_type = T.StructType([c for c in children if c is not None])
    elif isinstance(ftype, PrimitiveType):
        try:
            spark_type = spark_read_type(ftype)
        except (TypeError, ValueError, KeyError):
            return None
    else:  # lists and maps: not needed for sketches, left out of the read schema
        return None
    return T.StructField(field.name, spark_type, True, {"parquet.field.id": field.field_id})


def _read_schema(schema: Schema, field_ids: set[int] | None = None) -> StructType:
    """The Spark read schema for an Iceberg schema (top-level fields in ``field_ids``)."""
    from pyspark.sql import types as T

    fields = []
    for f in schema.fields:
        if field_ids is not None and f.field_id not in field_ids:
            continue
        spark_field = _spark_field(f)
        if spark_field is not None:
            fields.append(spark_field)
    return T.StructType(fields)


def column_ref(schema: Schema, path: Sequence[int]) -> Column:
    """The Spark column for a field reached through structs by field ids ``path``."""
    from pyiceberg.types import StructType as IcebergStruct
    from pyspark.sql import functions as F

    struct = schema.as_struct()
    col: Column | None = None
    for fid in path:
        field = next(f for f in struct.fields if f.field_id == fid)
        col = F.col(f"`{field.name.replace('`', '``')}`") if col is None else col[field.name]
        if isinstance(field.field_type, IcebergStruct):
            struct = field.field_type
    assert col is not None, "an empty field path"
    return col


def check_parquet(planned: Sequence[PlannedFile]) -> None:
    """Refuse data files Spark cannot give row positions for (anything but Parquet)."""
    from pyiceberg.manifest import FileFormat

    for p in planned:
        if p.data_file.file_format != FileFormat.PARQUET:
            raise UnsupportedTableError(
                f"data file {p.path} is {p.data_file.file_format}; Spark reads row "
                "positions (_metadata.row_index) of Parquet files only"
            )


def _split_deletes(
    planned: Sequence[PlannedFile],
) -> tuple[list[str], dict[str, list[DataFile]]]:
    """Parquet position-delete files, and the Puffin deletion vectors by data file."""
    from pyiceberg.manifest import FileFormat

    parquet: dict[str, None] = {}
    puffin_files: dict[str, list[DataFile]] = {}
    for p in planned:
        for d in p.delete_files:
            if d.file_format == FileFormat.PARQUET:
                parquet[str(d.file_path)] = None
            elif d.file_format == FileFormat.PUFFIN:
                puffin_files.setdefault(str(p.path), []).append(d)
            else:
                raise UnsupportedTableError(
                    f"position delete file {d.file_path} is {d.file_format}; "
                    "only Parquet and Puffin are read"
                )
    return list(parquet), puffin_files


def _deleted_rows(
    spark: SparkSession, table: Table, snapshot: Snapshot, planned: Sequence[PlannedFile]
) -> DataFrame | None:
    """(key, pos) of every row the snapshot's deletes remove, or ``None`` if there are none.

    Parquet position-delete files are read by Spark; deletion vectors (Puffin) are read on
    the driver by their manifest ranges and sent along as a small DataFrame.
    """
    import pyarrow as pa
    from pyspark.sql import functions as F

    from puffin.iceberg.metadata.delete_files import DeleteIndex

    parquet, puffin_files = _split_deletes(planned)
    frames = []
    if parquet:
        deletes = spark.read.schema("file_path string, pos long").parquet(*parquet)
        frames.append(deletes.select(_path_key_column(F.col("file_path")).alias("k"), "pos"))
    if puffin_files:
        index = DeleteIndex(table, snapshot)
        paths: list[str] = []
        positions = []
        for data_path, files in puffin_files.items():
            found = index.positions(data_path, files)
            if found is not None and len(found):
                paths.append(data_path)
                positions.append(pa.array(found, pa.int64()))
        if paths:
            arrow = pa.table(
                {
                    "k": pa.array([path_key(p) for p in paths]),
                    "pos": pa.array(positions, pa.list_(pa.int64())),
                }
            )
            frames.append(spark.createDataFrame(arrow).select("k", F.explode("pos").alias("pos")))
    if not frames:
        return None
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def table_frame(
    spark: SparkSession,
    schema: Schema,
    planned: Sequence[PlannedFile],
    top_ids: set[int] | None,
    *,
    rows: bool,
) -> DataFrame:
    """The planned data files as one DataFrame, columns matched by field id.

    With ``rows``, adds ``_k`` (the file's path key) and ``_pos`` (the row's position).
    """
    from pyspark.sql import functions as F

    paths = [p.path for p in planned]
    df = spark.read.schema(_read_schema(schema, top_ids)).parquet(*paths)
    if rows:
        df = df.select(
            "*",
            _path_key_column(F.col("_metadata.file_path")).alias("_k"),
            F.col("_metadata.row_index").alias("_pos"),
        )
    return df


def equality_deleted_rows(
    spark: SparkSession, schema: Schema, planned: Sequence[PlannedFile]
) -> DataFrame | None:
    """``(k, pos)`` of every row the plan's equality deletes remove (``None``: it has none),
    matched on the executors.

    For each set of equality field ids, the delete files' key rows are joined with the rows
    of the data files they apply to on null-safe equality of every key (a null key matches a
    null), and a match is kept only where the plan says that delete file applies to that
    data file (our index applied the partition and sequence-number rules). Floating-point
    keys are refused: Spark's join takes -0.0 for 0.0, which Iceberg's equality does not.
    """
    from pyspark.sql import functions as F

    groups: dict[tuple[int, ...], dict[str, list[str]]] = {}
    for p in planned:
        for d in p.equality_deletes:
            ids = tuple(sorted(int(i) for i in d.equality_ids or ()))
            groups.setdefault(ids, {}).setdefault(p.path, []).append(str(d.file_path))
    frames = []
    for ids, pairs in groups.items():
        paths = [_id_path(schema, fid) for fid in ids]
        top_ids = {path[0] for path in paths}
        data = table_frame(
            spark, schema, [p for p in planned if p.path in pairs], top_ids, rows=True
        ).select(*[column_ref(schema, path).alias(f"_e{i}") for i, path in enumerate(paths)],
                 F.col("_k"), F.col("_pos"))  # fmt: skip
        files = sorted({d for ds in pairs.values() for d in ds})
        keys = (
            spark.read.schema(_read_schema(schema, top_ids))
            .parquet(*files)
            .select(
                *[column_ref(schema, path).alias(f"_d{i}") for i, path in enumerate(paths)],
                _path_key_column(F.col("_metadata.file_path")).alias("_dk"),
            )
        )
        applies = spark.createDataFrame(
            [(path_key(k), path_key(d)) for k, ds in pairs.items() for d in ds],
            "_pk string, _pd string",
        )
        matched = keys.join(
            data, [data[f"_e{i}"].eqNullSafe(keys[f"_d{i}"]) for i in range(len(ids))]
        )
        same = (matched["_k"] == applies["_pk"]) & (matched["_dk"] == applies["_pd"])
        kept = matched.join(F.broadcast(applies), same, "left_semi")
        frames.append(kept.select(F.col("_k").alias("k"), F.col("_pos").alias("pos")))
    if not frames:
        return None
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out.distinct()


def _id_path(schema: Schema, fid: int) -> list[int]:
    """The field ids leading through structs to equality key ``fid`` of the table schema;
    :class:`UnsupportedTableError` for a key Spark cannot match as Iceberg does."""
    from pyiceberg.types import DoubleType, FloatType

    from puffin.iceberg.scan.equality import key_fields

    fields = key_fields(schema, fid, "the table schema")
    if fields is None:
        raise UnsupportedTableError(
            f"equality field {fid} is not a column of the table's schema; convert the "
            "equality deletes without Spark (puffin table convert-equality-deletes)"
        )
    if isinstance(fields[-1].field_type, (FloatType, DoubleType)):
        raise UnsupportedTableError(
            f"equality field {fid} is a floating-point column: Spark's join takes -0.0 for "
            "0.0, which Iceberg's equality does not; convert the equality deletes without "
            "Spark (puffin table convert-equality-deletes)"
        )
    return [f.field_id for f in fields]


def live_rows(
    spark: SparkSession,
    table: Table,
    snapshot: Snapshot,
    schema: Schema,
    planned: Sequence[PlannedFile],
    top_ids: set[int],
) -> DataFrame:
    """The snapshot's live rows (deletes applied, equality deletes too when the plan took
    them) of the top-level fields ``top_ids``."""
    deleted = _deleted_rows(spark, table, snapshot, planned)
    equality = equality_deleted_rows(spark, schema, planned)
    if equality is not None:
        deleted = equality if deleted is None else deleted.unionByName(equality)
    if deleted is None:
        return table_frame(spark, schema, planned, top_ids, rows=False)
    data = table_frame(spark, schema, planned, top_ids, rows=True)
    live = data.join(
        deleted,
        (data["_k"] == deleted["k"]) & (data["_pos"] == deleted["pos"]),
        "left_anti",
    )
    return live.drop("_k", "_pos")
