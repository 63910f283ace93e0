"""NDV sketches of a Spark DataFrame, one Iceberg theta sketch per column (:data:`ENGINES`).

Each column goes to the ``jvm`` engine (Spark's ``theta_sketch_agg``) when it can express
the column's Iceberg bytes and the caller allows it, else to the ``arrow`` engine (our
builder in ``mapInArrow``).  Either way the result is byte-identical to the single-machine
``ThetaSketch.from_values`` over the same values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from puffin.errors import UsageError
from puffin.spark._arrow_engine import arrow_sketches
from puffin.spark._jvm_engine import jvm_available, jvm_expression, jvm_sketches
from puffin.spark.types import iceberg_type_of

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyiceberg.types import PrimitiveType
    from pyspark.sql import Column, DataFrame

    from puffin.blobs.single_value import IcebergType
    from puffin.blobs.theta.files import ThetaSketch

__all__ = ["ENGINES", "compute_ndv_sketches"]

#: The sketch engines of :func:`compute_ndv_sketches`.
ENGINES = ("auto", "arrow", "jvm")


def compute_ndv_sketches(
    df: DataFrame,
    columns: Sequence[str] | None = None,
    *,
    iceberg_types: Mapping[str, str | IcebergType | PrimitiveType] | None = None,
    lg_k: int = 12,
    engine: str = "auto",
) -> dict[str, ThetaSketch]:
    """One Iceberg theta sketch per column of a Spark DataFrame, computed on the executors.

    ``columns`` are column names (default: every top-level column); ``iceberg_types`` maps
    a name to its Iceberg type when the Spark type alone does not say it (``uuid``,
    ``fixed[L]``, ``time``, ``timestamp_ns``; see :func:`iceberg_type_of`).  The result
    maps each name to a :class:`puffin.ThetaSketch` byte-identical to
    ``ThetaSketch.from_values(<all the column's values>, type, lg_k=lg_k)``, whatever the
    partitioning: each partition's sketch holds its k smallest hashes and their union
    keeps the k smallest overall.

    ``engine``:

    * ``"arrow"``: each partition streams its rows as Arrow batches (``mapInArrow``) into
      our vectorized builder; works on every Spark 4.
    * ``"jvm"``: Spark SQL rewrites each value into Iceberg's single-value bytes (as a
      BIGINT, STRING, BINARY or one-int ARRAY, which datasketches-java hashes byte for byte as
      Iceberg does) and Spark's own ``theta_sketch_agg`` (Spark 4.1+) builds the
      partition sketches without leaving the JVM; our union makes the result canonical.
      Float columns, decimals over 18 digits and UUIDs given as text are not expressible
      and raise :class:`~puffin.errors.UsageError`.
    * ``"auto"`` (default): ``"jvm"`` for the columns it can express when Spark has
      ``theta_sketch_agg``, ``"arrow"`` for the rest.

    Bad arguments raise :class:`~puffin.errors.UsageError` (a ``ValueError``); a column
    whose Spark type has no Iceberg primitive type raises ``TypeError``.
    """
    from pyspark.sql import functions as F

    from puffin.blobs.single_value import parse_type

    names = _check_arguments(df, columns, iceberg_types, lg_k, engine)
    given = dict(iceberg_types or {})
    projected = df.select(*[F.col(n).alias(f"c{i}") for i, n in enumerate(names)])
    spark_types = [f.dataType for f in projected.schema.fields]
    types = [
        parse_type(given[n]) if n in given else parse_type(iceberg_type_of(st))
        for n, st in zip(names, spark_types, strict=True)
    ]
    jvm, arrow = _split_by_engine(projected, names, types, engine)

    result: dict[int, ThetaSketch] = {}
    if jvm:
        sketches = jvm_sketches(projected, [(e, d) for _, e, d in jvm], lg_k)
        result.update(zip([i for i, _, _ in jvm], sketches, strict=True))
    if arrow:
        subset = projected.select(*[F.col(f"c{i}") for i in arrow])
        sketches = arrow_sketches(subset, [str(types[i]) for i in arrow], lg_k)
        result.update(zip(arrow, sketches, strict=True))
    return {n: result[i] for i, n in enumerate(names)}


def _check_arguments(
    df: DataFrame,
    columns: Sequence[str] | None,
    iceberg_types: Mapping[str, object] | None,
    lg_k: int,
    engine: str,
) -> list[str]:
    """The column names to sketch, after checking every argument before Spark runs a job."""
    from puffin.blobs.theta.files import check_lg_k

    if engine not in ENGINES:
        raise UsageError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    check_lg_k(lg_k)
    if isinstance(columns, str):
        raise TypeError("columns must be a sequence of names, not one string")
    names = [f.name for f in df.schema.fields] if columns is None else list(columns)
    if len(set(names)) != len(names):
        raise UsageError("columns must not repeat a name")
    unknown = set(iceberg_types or {}) - set(names)
    if unknown:
        raise UsageError(f"iceberg_types names columns not sketched: {sorted(unknown)}")
    return names


def _split_by_engine(
    projected: DataFrame, names: list[str], types: list[IcebergType], engine: str
) -> tuple[list[tuple[int, Column, Column | None]], list[int]]:
    """Which columns the JVM sketches (index, rewritten column, double column) and which Arrow.

    The columns of ``projected`` are ``c0``, ``c1``, ... for ``names``.
    """
    from pyspark.sql import functions as F

    use_jvm = engine != "arrow" and jvm_available(projected.sparkSession)
    if engine == "jvm" and not use_jvm:
        version = projected.sparkSession.version
        raise UsageError(f"engine='jvm' needs Spark 4.1 or newer (this is {version})")
    jvm: list[tuple[int, Column, Column | None]] = []
    arrow: list[int] = []
    for i, (field, t) in enumerate(zip(projected.schema.fields, types, strict=True)):
        expr = jvm_expression(F.col(f"c{i}"), field.dataType, t) if use_jvm else None
        if expr is not None:
            jvm.append((i, expr, F.col(f"c{i}") if t.name == "double" else None))
        elif engine == "jvm":
            raise UsageError(
                f"column {names[i]!r} ({field.dataType.simpleString()} as Iceberg {t}) cannot "
                "be sketched in the JVM; use engine='auto' or 'arrow'"
            )
        else:
            arrow.append(i)
    return jvm, arrow
