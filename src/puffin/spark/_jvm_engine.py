"""The ``jvm`` sketch engine: Spark's own ``theta_sketch_agg`` (Spark 4.1+) on rewritten columns.

Spark 4.1+ ships datasketches-java behind ``theta_sketch_agg``.  It hashes a BIGINT as its
8 little-endian bytes, a STRING (default collation) as its UTF-8 bytes, a BINARY as itself
and an ARRAY<INT> of one element as that int's 4 little-endian bytes: exactly Iceberg's
single-value bytes once the column is rewritten into one of those forms.  A DOUBLE is
hashed as its bits too, except that datasketches folds -0.0 into 0.0, so zeros are tracked
beside it.  The partition sketches never leave the JVM; our union makes the result canonical.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

    from puffin.blobs.single_value import IcebergType
    from puffin.blobs.theta.files import ThetaSketch

__all__ = ["jvm_available", "jvm_expression", "jvm_sketches"]

_REDUNDANT_SIGN_BYTES = r"^(?:(?:00)*(?=[0-7])|(?:FF)*(?=[89A-F]))"


def jvm_available(spark: SparkSession) -> bool:
    """Whether this Spark has ``theta_sketch_agg`` (4.1 or newer)."""
    match = re.match(r"(\d+)\.(\d+)", str(spark.version))
    return match is not None and (int(match.group(1)), int(match.group(2))) >= (4, 1)


def _decimal_bytes(col: Column, scale: int) -> Column:
    """Minimal two's-complement big-endian bytes of the unscaled value (precision <= 18).

    The unscaled value's 8 bytes as 16 hex digits lose their leading ``00`` bytes (while
    the next byte is below 0x80) or ``FF`` bytes (while the next is 0x80 or more), at
    least one byte kept: Java's ``BigInteger.toByteArray``.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    factor = F.lit(10**scale).cast(T.DecimalType(min(38, scale + 1), 0))
    unscaled = (col * factor).cast(T.LongType())
    hex16 = F.lpad(F.hex(unscaled), 16, "0")
    return F.unhex(F.regexp_replace(hex16, _REDUNDANT_SIGN_BYTES, ""))


def jvm_expression(col: Column, spark_type: DataType, iceberg: IcebergType) -> Column | None:
    """A column whose ``theta_sketch_agg`` hashes exactly Iceberg's bytes, or ``None``.

    ``None`` means this (type, Spark type) pair is left to our Arrow builder: ``float``
    (Spark SQL has no deterministic way to get a float's bits), decimals wider than 18
    digits, UUIDs given as text, and any pairing other than the natural one.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    name = iceberg.name
    if name == "boolean" and isinstance(spark_type, T.BooleanType):
        return F.when(col, F.lit(b"\x01")).when(~col, F.lit(b"\x00"))
    if name == "int" and isinstance(spark_type, (T.ByteType, T.ShortType, T.IntegerType)):
        return F.when(col.isNotNull(), F.array(col.cast(T.IntegerType())))
    if name == "date" and isinstance(spark_type, T.DateType):
        return F.when(col.isNotNull(), F.array(F.unix_date(col)))
    if name in ("long", "time", "timestamp_ns", "timestamptz_ns") and isinstance(
        spark_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    ):
        return col.cast(T.LongType())
    if name == "timestamptz" and isinstance(spark_type, T.TimestampType):
        return F.unix_micros(col)
    if name == "timestamp" and isinstance(spark_type, T.TimestampNTZType):
        epoch = F.lit("1970-01-01 00:00:00").cast(T.TimestampNTZType())
        return F.timestamp_diff("MICROSECOND", epoch, col)
    if name == "double" and isinstance(spark_type, T.DoubleType):
        return F.when(col != 0.0, col)  # zeros are counted apart (see _zero_flags)
    if name == "decimal" and isinstance(spark_type, T.DecimalType):
        if (spark_type.precision, spark_type.scale) == (iceberg.precision, iceberg.scale) and (
            spark_type.precision <= 18
        ):
            return _decimal_bytes(col, spark_type.scale)
        return None
    return _bytes_expression(col, spark_type, iceberg)


def _bytes_expression(col: Column, spark_type: DataType, iceberg: IcebergType) -> Column | None:
    """:func:`jvm_expression` for the types Iceberg hashes as their bytes (string, binary)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    name = iceberg.name
    if name == "string" and isinstance(spark_type, T.StringType):
        if getattr(spark_type, "collation", "UTF8_BINARY") == "UTF8_BINARY":
            return col  # hashed as its UTF-8 bytes
        return col.cast(T.BinaryType())  # a collated string: its UTF-8 bytes, not a sort key
    if name == "string" and isinstance(spark_type, (T.CharType, T.VarcharType)):
        return col.cast(T.BinaryType())
    if name in ("uuid", "fixed") and isinstance(spark_type, T.BinaryType):
        width = 16 if name == "uuid" else iceberg.length
        assert width is not None, "a fixed type has a length"
        # A value of the wrong width is an error in Iceberg; surface it like the Arrow path.
        return F.when(F.length(col) == width, col).when(
            col.isNotNull(), F.raise_error(F.lit(f"{iceberg} expects {width}-byte values"))
        )
    if name == "binary" and isinstance(spark_type, T.BinaryType):
        return col
    return None


def _zero_flags(col: Column) -> Column:
    """One aggregate: bit 1 set if a double column holds +0.0, bit 2 if it holds -0.0."""
    from pyspark.sql import functions as F

    sign = F.when(col.cast("string") == "-0.0", F.lit(2)).otherwise(F.lit(1))
    return F.bit_or(F.when(col == 0.0, sign))


def jvm_sketches(
    df: DataFrame, exprs: list[tuple[Column, Column | None]], lg_k: int
) -> list[ThetaSketch]:
    """Run ``theta_sketch_agg`` over rewritten columns and canonicalize with our union.

    ``exprs`` holds (rewritten column, the double column itself or ``None``): for doubles
    one more aggregate says whether +0.0 and -0.0 occur, and their hashes are added here.
    """
    import numpy as np
    from pyspark.sql import functions as F

    from puffin.blobs.theta.files import ThetaSketch

    aggs = []
    for i, (expr, double) in enumerate(exprs):
        aggs.append(F.theta_sketch_agg(expr, lg_k).alias(f"s{i}"))
        if double is not None:
            aggs.append(_zero_flags(double).alias(f"z{i}"))
    row = df.agg(*aggs).collect()[0]
    out = []
    for i, (_, double) in enumerate(exprs):
        parts: list[ThetaSketch] = []
        if row[f"s{i}"] is not None:
            parts.append(ThetaSketch.deserialize(bytes(row[f"s{i}"])))
        if double is not None:
            bits = row[f"z{i}"] or 0
            zeros = [z for z, bit in ((0.0, 1), (-0.0, 2)) if bits & bit]
            if zeros:
                parts.append(ThetaSketch.from_values(np.array(zeros), "double", lg_k=lg_k))
        out.append(ThetaSketch.union(ThetaSketch(), *parts, lg_k=lg_k))
    return out
