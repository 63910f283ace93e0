"""Spark <-> Iceberg types: which Iceberg type a Spark column is sketched as, and back.

Both directions are needed because Spark has no type for some Iceberg types (``uuid``,
``fixed``, ``time``, the nanosecond timestamps): such columns are read from Parquet in a
Spark type that keeps their exact values (binary or long) and sketched as the Iceberg type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyiceberg.types import PrimitiveType
    from pyspark.sql.types import DataType

    from puffin.blobs.single_value import IcebergType

__all__ = ["iceberg_type_of", "spark_read_type"]


def iceberg_type_of(spark_type: DataType) -> str:
    """The Iceberg type (JSON spelling) a Spark column of ``spark_type`` is sketched as.

    Spark's byte, short and int are Iceberg ``int``; ``timestamp`` (with local time zone) is
    ``timestamptz`` and ``timestamp_ntz`` is ``timestamp``.  Iceberg ``uuid``, ``fixed``,
    ``time`` and the nanosecond timestamps have no Spark type: give them in ``iceberg_types``
    (for binary, string or long columns).  Other Spark types raise ``TypeError``.
    """
    from pyspark.sql import types as T

    simple: list[tuple[type[DataType], str]] = [
        (T.BooleanType, "boolean"),
        (T.ByteType, "int"),
        (T.ShortType, "int"),
        (T.IntegerType, "int"),
        (T.LongType, "long"),
        (T.FloatType, "float"),
        (T.DoubleType, "double"),
        (T.DateType, "date"),
        (T.TimestampNTZType, "timestamp"),
        (T.TimestampType, "timestamptz"),
        (T.StringType, "string"),
        (T.CharType, "string"),
        (T.VarcharType, "string"),
        (T.BinaryType, "binary"),
    ]
    for cls, name in simple:
        if isinstance(spark_type, cls):
            return name
    if isinstance(spark_type, T.DecimalType):
        return f"decimal({spark_type.precision},{spark_type.scale})"
    raise TypeError(
        f"Spark type {spark_type.simpleString()} has no Iceberg primitive type to sketch it as"
    )


def spark_read_type(iceberg_type: str | IcebergType | PrimitiveType) -> DataType:
    """The Spark type to read an Iceberg column of ``iceberg_type`` from Parquet as.

    ``uuid`` and ``fixed`` come back as binary, ``time`` and the nanosecond timestamps as
    long (micro- or nanoseconds), so the sketches see the exact values Iceberg hashes.
    """
    from pyspark.sql import types as T

    from puffin.blobs.single_value import parse_type

    t = parse_type(iceberg_type)
    table: dict[str, DataType] = {
        "boolean": T.BooleanType(),
        "int": T.IntegerType(),
        "long": T.LongType(),
        "float": T.FloatType(),
        "double": T.DoubleType(),
        "date": T.DateType(),
        "time": T.LongType(),
        "timestamp": T.TimestampNTZType(),
        "timestamptz": T.TimestampType(),
        "timestamp_ns": T.LongType(),
        "timestamptz_ns": T.LongType(),
        "string": T.StringType(),
        "uuid": T.BinaryType(),
        "fixed": T.BinaryType(),
        "binary": T.BinaryType(),
    }
    if t.name == "decimal":
        assert t.precision is not None and t.scale is not None
        return T.DecimalType(t.precision, t.scale)
    return table[t.name]
