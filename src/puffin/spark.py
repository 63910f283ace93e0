"""Spark pipeline: Iceberg NDV sketches and deletion vectors computed where the data is.

Nothing here assumes that the driver and the executors share a disk: the executors read the
data files and send back small serialized sketches and deletion vectors; the driver merges
them and writes the Puffin file through the table's FileIO (or fsspec).  The executors need
this library installed (``pip install iceberg-puffin`` on the cluster, or ship it with
``spark.submit.pyFiles``); in ``local[N]`` mode they already have it.

Importing this module is light: pyspark and pyarrow are imported inside the functions.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyspark.sql import SparkSession

__all__ = [
    "ENGINES",
    "JavaNotFoundError",
    "SparkSetupError",
    "check_java",
    "compute_ndv_sketches",
    "compute_table_statistics",
    "deletion_vectors_for",
    "iceberg_type_of",
    "local_session",
    "position_deletes_to_deletion_vectors",
    "register_cli",
    "spark_read_type",
]

#: Spark 4 runs on Java 17 or newer.
MIN_JAVA = 17

_INSTALL_HINT = (
    "install Java 17 or newer (e.g. `apt-get install openjdk-17-jre-headless`) "
    "or set JAVA_HOME to one"
)


class SparkSetupError(RuntimeError):
    """Spark cannot start on this machine (the message says what to install or set)."""


class JavaNotFoundError(SparkSetupError):
    """Java is missing or older than Spark 4 needs."""


def _java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def _java_major(version_text: str) -> int | None:
    """The major version in ``java -version`` output (``1.8.0_x`` is 8, ``17.0.2`` is 17)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:
        major = int(match.group(2))
    return major


def check_java(min_version: int = MIN_JAVA) -> int:
    """Check that ``java`` (``$JAVA_HOME/bin/java``, else on ``PATH``) is at least ``min_version``.

    Returns the major version.  Raises :class:`JavaNotFoundError` with a one-line message
    saying what to install, instead of the long Py4J error Spark would give.
    """
    exe = _java_executable()
    if exe is None:
        raise JavaNotFoundError(f"Spark needs Java but `java` was not found: {_INSTALL_HINT}")
    try:
        done = subprocess.run(
            [exe, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise JavaNotFoundError(
            f"Spark needs Java but `{exe} -version` failed ({exc}): {_INSTALL_HINT}"
        ) from exc
    major = _java_major(done.stderr + done.stdout)
    if major is None:
        raise JavaNotFoundError(
            f"Spark needs Java but `{exe} -version` printed no version: {_INSTALL_HINT}"
        )
    if major < min_version:
        raise JavaNotFoundError(
            f"Spark needs Java {min_version} or newer but {exe} is Java {major}: {_INSTALL_HINT}"
        )
    return major


# Spark logs INFO and WARN lines at start-up (host name, native Hadoop, ...); we keep errors.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _log4j2_file() -> str:
    directory = os.path.join(tempfile.gettempdir(), f"puffin-spark-{os.getuid()}")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "log4j2.properties")
    try:
        with open(path, encoding="utf-8") as existing:
            if existing.read() == _LOG4J2:
                return path
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(_LOG4J2)
    os.replace(tmp, path)
    return path


def _quiet_python_warnings() -> None:
    # pyspark warns on every pandas-using call when pandas >= 3; we do not use pandas.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    # pyspark also logs every analysis error as a JSON record with the JVM stack trace on
    # stderr before raising it; the exception itself carries the message.
    try:
        import logging

        from pyspark.logger import PySparkLogger
    except ImportError:  # pragma: no cover - pyspark < 4
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def local_session(
    master: str = "local[2]",
    *,
    app_name: str = "puffin",
    memory: str = "1g",
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
    quiet: bool = True,
) -> SparkSession:
    """A Spark session for this machine, set up for small jobs (or Spark Connect).

    ``master`` is ``local[N]``, ``local[*]``, a cluster URL, or ``sc://host:port`` for Spark
    Connect (no local Java needed then; ``SPARK_REMOTE`` works too).  A new local session
    gets ``memory`` for the driver, no web UI, ``shuffle_partitions`` (default: twice the
    cores), Arrow enabled, UTC session time, (for ``local`` masters) the executors' Python
    set to this one, and (with ``quiet``) only error-level logs.  ``conf`` adds or overrides
    settings.  If a session is already running in this process it is returned as it is.

    Raises :class:`JavaNotFoundError` when a local JVM is needed and Java is missing or old.
    """
    from pyspark.sql import SparkSession

    if quiet:
        _quiet_python_warnings()
    remote = master if master.startswith("sc://") else os.environ.get("SPARK_REMOTE")
    if remote:
        builder = SparkSession.builder.remote(remote).appName(app_name)
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    check_java()
    local = master.strip().startswith("local")
    if local:  # the executors are processes of this machine: use this Python
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = _cores(master)
    settings: dict[str, str] = {
        "spark.driver.memory": memory,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions or max(2, 2 * cores)),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": os.path.join(tempfile.gettempdir(), "puffin-spark-warehouse"),
    }
    if local:
        settings["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    if quiet:
        settings["spark.driver.extraJavaOptions"] = (
            f"-Dlog4j2.configurationFile=file:{_log4j2_file()}"
        )
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if quiet:
        session.sparkContext.setLogLevel("ERROR")
    return session


def _cores(master: str) -> int:
    match = re.fullmatch(r"local\[(\d+|\*)(?:,\d+)?\]", master.strip())
    if master.strip() == "local":
        return 1
    if match is None or match.group(1) == "*":
        return os.cpu_count() or 1
    return int(match.group(1))


# -------------------------------------------------------------------------------------------
# Types: Spark <-> Iceberg
# -------------------------------------------------------------------------------------------


def iceberg_type_of(spark_type: Any) -> str:
    """The Iceberg type (JSON spelling) a Spark column of ``spark_type`` is sketched as.

    Spark's byte, short and int are Iceberg ``int``; ``timestamp`` (with local time zone) is
    ``timestamptz`` and ``timestamp_ntz`` is ``timestamp``.  Iceberg ``uuid``, ``fixed``,
    ``time`` and the nanosecond timestamps have no Spark type: give them in ``iceberg_types``
    (for binary, string or long columns).
    """
    from pyspark.sql import types as T

    simple: list[tuple[type[Any], str]] = [
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


def spark_read_type(iceberg_type: Any) -> Any:
    """The Spark type to read an Iceberg column of ``iceberg_type`` from Parquet as.

    ``uuid`` and ``fixed`` come back as binary, ``time`` and the nanosecond timestamps as
    long (micro- or nanoseconds), so the sketches see the exact values Iceberg hashes.
    """
    from pyspark.sql import types as T

    from puffin.blobs.single_value import parse_type

    t = parse_type(iceberg_type)
    table: dict[str, Any] = {
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


# -------------------------------------------------------------------------------------------
# NDV sketches of a DataFrame
# -------------------------------------------------------------------------------------------

#: Rows gathered from Spark's Arrow batches before one builder update (fewer, larger steps).
_GATHER_ROWS = 1 << 18


def _sketch_partition(types: list[str], lg_k: int) -> Any:
    """The ``mapInArrow`` function: one row (column index, serialized sketch) per column."""

    def run(batches: Any) -> Any:
        import pyarrow as pa

        from puffin.blobs.theta import ThetaSketchBuilder

        builders = [ThetaSketchBuilder(t, lg_k=lg_k, threads=1) for t in types]
        pending: list[Any] = []
        rows = 0

        def flush() -> None:
            nonlocal pending, rows
            if not pending:
                return
            table = pa.Table.from_batches(pending)
            for i, builder in enumerate(builders):
                builder.update(table.column(i).combine_chunks())
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


def _arrow_sketches(df: Any, types: list[str], lg_k: int) -> list[Any]:
    """Sketch every column of ``df`` with our builder on the executors; union on the driver."""
    from puffin.blobs.theta import ThetaSketch

    rows = df.mapInArrow(_sketch_partition(types, lg_k), "column int, sketch binary").collect()
    parts: list[list[bytes]] = [[] for _ in types]
    for row in rows:
        parts[row["column"]].append(bytes(row["sketch"]))
    return [ThetaSketch.union(ThetaSketch(), *p, lg_k=lg_k) for p in parts]


# Spark 4.1+ ships datasketches-java behind ``theta_sketch_agg``.  It hashes a BIGINT as its
# 8 little-endian bytes, a STRING (default collation) as its UTF-8 bytes, a BINARY as itself
# and an ARRAY<INT> of one element as that int's 4 little-endian bytes: exactly Iceberg's
# single-value bytes once the column is rewritten into one of those forms.  A DOUBLE is
# hashed as its bits too, except that datasketches folds -0.0 into 0.0, so zeros are tracked
# beside it.


def _jvm_available(spark: Any) -> bool:
    match = re.match(r"(\d+)\.(\d+)", str(spark.version))
    return match is not None and (int(match.group(1)), int(match.group(2))) >= (4, 1)


def _decimal_bytes(col: Any, precision: int, scale: int) -> Any:
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


_REDUNDANT_SIGN_BYTES = r"^(?:(?:00)*(?=[0-7])|(?:FF)*(?=[89A-F]))"


def _jvm_expression(col: Any, spark_type: Any, iceberg: Any) -> Any | None:
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
            iceberg.precision <= 18
        ):
            return _decimal_bytes(col, iceberg.precision, iceberg.scale)
        return None
    if name == "string" and isinstance(spark_type, T.StringType):
        if getattr(spark_type, "collation", "UTF8_BINARY") == "UTF8_BINARY":
            return col  # hashed as its UTF-8 bytes
        return col.cast(T.BinaryType())  # a collated string: its UTF-8 bytes, not a sort key
    if name == "string" and isinstance(spark_type, (T.CharType, T.VarcharType)):
        return col.cast(T.BinaryType())
    if name in ("uuid", "fixed") and isinstance(spark_type, T.BinaryType):
        width = 16 if name == "uuid" else iceberg.length
        # A value of the wrong width is an error in Iceberg; surface it like the Arrow path.
        return F.when(F.length(col) == width, col).when(
            col.isNotNull(), F.raise_error(F.lit(f"{iceberg} expects {width}-byte values"))
        )
    if name == "binary" and isinstance(spark_type, T.BinaryType):
        return col
    return None


def _zero_flags(col: Any) -> Any:
    """One aggregate: bit 1 set if a double column holds +0.0, bit 2 if it holds -0.0."""
    from pyspark.sql import functions as F

    sign = F.when(col.cast("string") == "-0.0", F.lit(2)).otherwise(F.lit(1))
    return F.bit_or(F.when(col == 0.0, sign))


def _jvm_sketches(df: Any, exprs: list[tuple[Any, Any | None]], lg_k: int) -> list[Any]:
    """Run ``theta_sketch_agg`` over rewritten columns and canonicalize with our union.

    ``exprs`` holds (rewritten column, the double column itself or ``None``): for doubles
    one more aggregate says whether +0.0 and -0.0 occur, and their hashes are added here.
    """
    import numpy as np
    from pyspark.sql import functions as F

    from puffin.blobs.theta import ThetaSketch

    aggs = []
    for i, (expr, double) in enumerate(exprs):
        aggs.append(F.theta_sketch_agg(expr, lg_k).alias(f"s{i}"))
        if double is not None:
            aggs.append(_zero_flags(double).alias(f"z{i}"))
    row = df.agg(*aggs).collect()[0]
    out = []
    for i, (_, double) in enumerate(exprs):
        parts: list[Any] = []
        if row[f"s{i}"] is not None:
            parts.append(ThetaSketch.deserialize(bytes(row[f"s{i}"])))
        if double is not None:
            bits = row[f"z{i}"] or 0
            zeros = [z for z, bit in ((0.0, 1), (-0.0, 2)) if bits & bit]
            if zeros:
                parts.append(ThetaSketch.from_values(np.array(zeros), "double", lg_k=lg_k))
        out.append(ThetaSketch.union(ThetaSketch(), *parts, lg_k=lg_k))
    return out


ENGINES = ("auto", "arrow", "jvm")


def compute_ndv_sketches(
    df: Any,
    columns: Sequence[str] | None = None,
    *,
    iceberg_types: Mapping[str, Any] | None = None,
    lg_k: int = 12,
    engine: str = "auto",
) -> dict[str, Any]:
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
      and raise ``ValueError``.
    * ``"auto"`` (default): ``"jvm"`` for the columns it can express when Spark has
      ``theta_sketch_agg``, ``"arrow"`` for the rest.
    """
    from puffin.blobs.single_value import parse_type

    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    _check_lg_k(lg_k)
    names = [f.name for f in df.schema.fields] if columns is None else list(columns)
    if isinstance(columns, str):
        raise TypeError("columns must be a sequence of names, not one string")
    if len(set(names)) != len(names):
        raise ValueError("columns must not repeat a name")
    given = dict(iceberg_types or {})
    unknown = set(given) - set(names)
    if unknown:
        raise ValueError(f"iceberg_types names columns not sketched: {sorted(unknown)}")
    from pyspark.sql import functions as F

    projected = df.select(*[F.col(n).alias(f"c{i}") for i, n in enumerate(names)])
    spark_types = [f.dataType for f in projected.schema.fields]
    types = [
        parse_type(given[n]) if n in given else parse_type(iceberg_type_of(st))
        for n, st in zip(names, spark_types, strict=True)
    ]
    use_jvm = engine != "arrow" and _jvm_available(df.sparkSession)
    if engine == "jvm" and not use_jvm:
        version = df.sparkSession.version
        raise ValueError(f"engine='jvm' needs Spark 4.1 or newer (this is {version})")

    jvm: list[tuple[int, Any, Any | None]] = []
    arrow: list[int] = []
    for i, (st, t) in enumerate(zip(spark_types, types, strict=True)):
        expr = _jvm_expression(F.col(f"c{i}"), st, t) if use_jvm else None
        if expr is not None:
            jvm.append((i, expr, F.col(f"c{i}") if t.name == "double" else None))
        elif engine == "jvm":
            raise ValueError(
                f"column {names[i]!r} ({st.simpleString()} as Iceberg {t}) cannot be "
                "sketched in the JVM; use engine='auto' or 'arrow'"
            )
        else:
            arrow.append(i)

    result: dict[int, Any] = {}
    if jvm:
        sketches = _jvm_sketches(projected, [(e, d) for _, e, d in jvm], lg_k)
        result.update(zip([i for i, _, _ in jvm], sketches, strict=True))
    if arrow:
        subset = projected.select(*[F.col(f"c{i}") for i in arrow])
        sketches = _arrow_sketches(subset, [str(types[i]) for i in arrow], lg_k)
        result.update(zip(arrow, sketches, strict=True))
    return {n: result[i] for i, n in enumerate(names)}


def _check_lg_k(lg_k: int) -> None:
    from puffin.blobs.theta import MAX_LG_K, MIN_LG_K

    if isinstance(lg_k, bool) or not isinstance(lg_k, int) or not MIN_LG_K <= lg_k <= MAX_LG_K:
        raise ValueError(f"lg_k must be an integer from {MIN_LG_K} to {MAX_LG_K}, got {lg_k!r}")


# -------------------------------------------------------------------------------------------
# Iceberg tables read by Spark
# -------------------------------------------------------------------------------------------

#: Spark reads Parquet columns by field id while these are set (restored afterwards).
_FIELD_ID_CONF = {"spark.sql.parquet.fieldId.read.enabled": "true"}


@contextlib.contextmanager
def _session_conf(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
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


def _path_key(path: str) -> str:
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


def _path_key_column(col: Any) -> Any:
    """:func:`_path_key` as a Spark column expression."""
    from pyspark.sql import functions as F

    text = F.url_decode(F.replace(col, F.lit("+"), F.lit("%2B")))
    text = F.regexp_replace(text, r"^/", "file:/")
    text = F.regexp_replace(text, r"^file:/+", "file:/")
    return F.regexp_replace(text, r"^s3[an]://", "s3://")


def _spark_field(field: Any) -> Any:
    """A Spark ``StructField`` for an Iceberg field, with its id for Parquet matching."""
    from pyiceberg.types import PrimitiveType, StructType
    from pyspark.sql import types as T

    ftype = field.field_type
    if isinstance(ftype, StructType):
        children = [_spark_field(f) for f in ftype.fields]
        spark_type: Any = T.StructType([c for c in children if c is not None])
    elif isinstance(ftype, PrimitiveType):
        try:
            spark_type = spark_read_type(ftype)
        except (TypeError, ValueError, KeyError):
            return None
    else:  # lists and maps: not needed for sketches, left out of the read schema
        return None
    return T.StructField(field.name, spark_type, True, {"parquet.field.id": field.field_id})


def _read_schema(schema: Any, field_ids: set[int] | None = None) -> Any:
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


def _column_ref(schema: Any, path: Sequence[int]) -> Any:
    """The Spark column for a field reached through structs by field ids ``path``."""
    from pyspark.sql import functions as F

    struct = schema.as_struct()
    col: Any = None
    for fid in path:
        field = next(f for f in struct.fields if f.field_id == fid)
        col = F.col(f"`{field.name.replace('`', '``')}`") if col is None else col[field.name]
        struct = field.field_type
    return col


def _check_parquet(planned: Sequence[Any]) -> None:
    from pyiceberg.manifest import FileFormat

    from puffin.iceberg import UnsupportedTableError

    for p in planned:
        if p.data_file.file_format != FileFormat.PARQUET:
            raise UnsupportedTableError(
                f"data file {p.path} is {p.data_file.file_format}; Spark reads row "
                "positions (_metadata.row_index) of Parquet files only"
            )


def _deleted_rows(spark: Any, table: Any, planned: Sequence[Any]) -> Any | None:
    """(key, pos) of every row the snapshot's deletes remove, or ``None`` if there are none.

    Parquet position-delete files are read by Spark; deletion vectors (Puffin) are read on
    the driver by their manifest ranges and sent along as a small DataFrame.
    """
    import pyarrow as pa
    from pyiceberg.manifest import FileFormat
    from pyspark.sql import functions as F

    from puffin.iceberg import UnsupportedTableError
    from puffin.iceberg._scan import DeleteIndex

    parquet: dict[str, None] = {}
    puffin_files: dict[str, Any] = {}
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
    frames = []
    if parquet:
        deletes = spark.read.schema("file_path string, pos long").parquet(*parquet)
        frames.append(deletes.select(_path_key_column(F.col("file_path")).alias("k"), "pos"))
    if puffin_files:
        index = DeleteIndex(table.io)
        paths: list[str] = []
        positions: list[Any] = []
        for data_path, files in puffin_files.items():
            found = index.positions(data_path, files)
            if found is not None and len(found):
                paths.append(data_path)
                positions.append(pa.array(found, pa.int64()))
        if paths:
            arrow = pa.table(
                {
                    "k": pa.array([_path_key(p) for p in paths]),
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


def _table_frame(
    spark: Any, schema: Any, planned: Sequence[Any], top_ids: set[int] | None, *, rows: bool
) -> Any:
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


def _live_rows(
    spark: Any, table: Any, schema: Any, planned: Sequence[Any], top_ids: set[int]
) -> Any:
    """The snapshot's live rows (deletes applied) of the top-level fields ``top_ids``."""
    deleted = _deleted_rows(spark, table, planned)
    if deleted is None:
        return _table_frame(spark, schema, planned, top_ids, rows=False)
    data = _table_frame(spark, schema, planned, top_ids, rows=True)
    live = data.join(
        deleted,
        (data["_k"] == deleted["k"]) & (data["_pos"] == deleted["pos"]),
        "left_anti",
    )
    return live.drop("_k", "_pos")


def compute_table_statistics(
    spark: Any,
    table: Any,
    *,
    columns: Sequence[str | int] | None = None,
    snapshot_id: int | None = None,
    lg_k: int = 12,
    commit: bool = True,
    engine: str = "auto",
) -> Any:
    """:func:`puffin.iceberg.compute_table_statistics` with Spark reading the data files.

    Plans the snapshot with pyiceberg, reads the chosen columns of its Parquet data files
    with Spark (matched by field id, so renamed columns read right), removes rows deleted
    by position-delete files or deletion vectors, sketches each column on the executors
    (:func:`compute_ndv_sketches`), writes ``<snapshot-id>-<uuid>.stats`` under the table's
    metadata folder through its FileIO, and (with ``commit``) registers it as the
    snapshot's statistics file.  The file is the one the single-process job writes for
    the same snapshot, sketch for sketch.  Returns the pyiceberg ``StatisticsFile``.

    Equality deletes, non-Parquet data files and Parquet files without field ids are not
    supported (``UnsupportedTableError``, or Spark's error for missing field ids).
    """
    from puffin.blobs.theta import ThetaSketch
    from puffin.iceberg.statistics import plan_statistics, snapshot_schema

    snapshot, scan_columns, planned = plan_statistics(table, snapshot_id, columns)
    schema = snapshot_schema(table, snapshot.schema_id)
    _check_parquet(planned)

    if planned:
        top_ids = {c.path[0] for c in scan_columns}
        with _session_conf(spark, _FIELD_ID_CONF):
            live = _live_rows(spark, table, schema, planned, top_ids)
            frame = live.select(
                *[_column_ref(schema, c.path).alias(f"f{c.field_id}") for c in scan_columns]
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
    from puffin.iceberg.statistics import write_statistics_file

    return write_statistics_file(
        table,
        [(c.field_id, s) for c, s in zip(scan_columns, sketches, strict=True)],
        snapshot_id=snapshot.snapshot_id,
        sequence_number=sequence_number,
        commit=commit,
    )


# -------------------------------------------------------------------------------------------
# Deletion vectors
# -------------------------------------------------------------------------------------------

_DV_SCHEMA = "file_path string, cardinality long, last long, dv binary"


def _dv_partition(batches: Any) -> Any:
    """``mapInArrow``: (file path, position) rows -> one serialized DV per file and partition.

    Rows stream in Arrow batches; each batch's positions are split by file and added to
    that file's bitmap, so memory follows the compressed bitmaps, not the row count.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from puffin.blobs.deletion_vector import DeletionVector

    vectors: dict[str, Any] = {}
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
        names=["file_path", "cardinality", "last", "dv"],
    )


def _collect_vectors(rows_df: Any) -> dict[str, tuple[Any, int]]:
    """Run the DV job; {reported file path: (DeletionVector, largest position)}.

    A file that spans several partitions comes back as several partial vectors, merged
    here; each payload's CRC and cardinality are checked as it is decoded.
    """
    from puffin.blobs.deletion_vector import DeletionVector

    merged: dict[str, tuple[Any, int]] = {}
    for row in rows_df.mapInArrow(_dv_partition, _DV_SCHEMA).collect():
        path = row["file_path"]
        dv = DeletionVector.deserialize(
            bytes(row["dv"]), expected_cardinality=row["cardinality"], location=path
        )
        if path in merged:
            old, last = merged[path]
            old.update(dv)
            merged[path] = (old, max(last, row["last"]))
        else:
            merged[path] = (dv, row["last"])
    return merged


def deletion_vectors_for(
    spark: Any,
    table: Any,
    condition: str,
    *,
    snapshot_id: int | None = None,
    merge_existing: bool = True,
    location: str | None = None,
) -> list[Any]:
    """Deletion vectors for the rows of ``table`` matching the Spark SQL ``condition``.

    Spark reads the snapshot's Parquet data files (columns by field id, so the condition
    uses the table's current names), keeps the matching rows' ``_metadata.file_path`` and
    ``_metadata.row_index``, and each partition builds and serializes one deletion vector
    per data file on the executor.  The driver collects those (a few bytes per run of
    positions), merges the pieces of files split over partitions, adds the positions the
    snapshot already deletes in those files (``merge_existing``: a v3 table keeps one
    vector per data file), and writes one Puffin file through the table's FileIO with
    :func:`puffin.iceberg.write_table_deletion_vectors` (``location``: default a new file
    in the table's data folder).

    Returns one :class:`puffin.DeletionVectorEntry` per data file with matching rows
    (``referenced_data_file``, ``content_offset``, ``content_size_in_bytes``,
    ``record_count``, the Puffin file's ``path`` and ``file_size_in_bytes``), sorted by
    data file; an empty list, and no file, when no row matches.  Nothing is committed:
    pyiceberg 0.12 cannot write v3 metadata (see ``deletion_vector_data_files``).
    """
    from pyspark.sql import functions as F

    from puffin.iceberg._catalog import resolve_snapshot
    from puffin.iceberg._scan import DeleteIndex, plan_files
    from puffin.iceberg.deletes import write_table_deletion_vectors
    from puffin.iceberg.statistics import snapshot_schema

    if not isinstance(condition, str) or not condition.strip():
        raise ValueError("condition must be a non-empty Spark SQL expression")
    snapshot = resolve_snapshot(table, snapshot_id)
    schema = snapshot_schema(table, snapshot.schema_id)
    planned = plan_files(table, snapshot)
    _check_parquet(planned)
    if not planned:
        return []
    by_key = {_path_key(p.path): p for p in planned}
    with _session_conf(spark, _FIELD_ID_CONF):
        data = _table_frame(spark, schema, planned, None, rows=False)
        matches = data.where(F.expr(condition)).select(
            F.col("_metadata.file_path"), F.col("_metadata.row_index")
        )
        found = _collect_vectors(matches)

    vectors: dict[str, Any] = {}
    existing = DeleteIndex(table.io) if merge_existing else None
    for reported, (dv, last) in found.items():
        target = by_key.get(_path_key(reported))
        if target is None:
            raise RuntimeError(f"Spark read {reported!r}, which is not a planned data file")
        if last >= target.record_count:
            raise RuntimeError(
                f"row position {last} is past the {target.record_count} rows of {target.path}"
            )
        if existing is not None and target.delete_files:
            old = existing.positions(target.path, target.delete_files)
            if old is not None and len(old):
                dv.update(old)
        vectors[target.path] = dv
    if not vectors:
        return []
    ordered = dict(sorted(vectors.items()))
    return list(write_table_deletion_vectors(table, ordered, validate=False, location=location))


def position_deletes_to_deletion_vectors(
    spark: Any,
    files: Any,
    *,
    table: Any = None,
    location: str | None = None,
) -> list[Any]:
    """Turn Iceberg v2 position-delete files into v3 deletion vectors, on Spark.

    ``files`` is a pyiceberg table (its current snapshot's Parquet position-delete files
    are converted, for its live data files only) or an iterable of position-delete file
    locations (or pyiceberg ``DataFile`` objects).  Spark reads their ``file_path`` and
    ``pos`` columns; every data file's positions, from however many delete files, become
    one deletion vector built on the executors.

    The Puffin file is written with the table's FileIO under its data folder when a table
    is given (``files`` itself or ``table=``), else to ``location`` (a local path or any
    URL fsspec can write).  Returns one :class:`puffin.DeletionVectorEntry` per data file,
    sorted by data file (empty, and no file written, when there is nothing to convert).
    """
    from pyiceberg.manifest import FileFormat

    if _is_table(files):
        if table is not None and table is not files:
            raise ValueError("give the table once: as files or as table=")
        table = files
        from puffin.iceberg._catalog import resolve_snapshot
        from puffin.iceberg._scan import plan_files

        planned = plan_files(table, resolve_snapshot(table, None))
        live = {p.path for p in planned}
        sources: dict[str, None] = {}
        for p in planned:
            for d in p.delete_files:
                if d.file_format == FileFormat.PARQUET:
                    sources[str(d.file_path)] = None
        paths = list(sources)
    else:
        if isinstance(files, (str, bytes)):
            raise TypeError("files must be a table or an iterable of locations, not one string")
        paths = [str(getattr(f, "file_path", f)) for f in files]
        live = None
    if table is None and location is None:
        raise ValueError("give a table or an output location")
    if not paths:
        return []
    rows = spark.read.schema("file_path string, pos long").parquet(*paths)
    found = _collect_vectors(rows.select("file_path", "pos"))
    vectors = {path: dv for path, (dv, _) in sorted(found.items()) if live is None or path in live}
    if not vectors:
        return []
    if table is not None:
        from puffin.iceberg.deletes import write_table_deletion_vectors

        return list(write_table_deletion_vectors(table, vectors, validate=False, location=location))
    assert location is not None
    return _write_vectors(location, vectors)


def _is_table(obj: Any) -> bool:
    return hasattr(obj, "metadata") and hasattr(obj, "io") and hasattr(obj, "scan")


def _write_vectors(location: str, vectors: Mapping[str, Any]) -> list[Any]:
    """Write DVs to a local path (atomically) or through fsspec."""
    from puffin.blobs.deletion_vector import write_deletion_vectors
    from puffin.iceberg._scan import local_path
    from puffin.iceberg.statistics import created_by

    local = local_path(location)
    if local is not None:
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        return list(write_deletion_vectors(local, vectors, created_by=created_by()))
    import dataclasses

    import fsspec

    with fsspec.open(location, "wb") as out:
        entries = write_deletion_vectors(out, vectors, created_by=created_by())
    return [dataclasses.replace(e, path=location) for e in entries]


# -------------------------------------------------------------------------------------------
# Command line: puffin spark stats|dv|migrate-deletes
# -------------------------------------------------------------------------------------------

_CLI_EPILOG = """\
examples:
  puffin spark stats db.events                       sketch every column, commit the file
  puffin spark stats db.events --columns id,user --no-commit --json
  puffin spark dv db.events --where "country = 'XX' AND ts < '2024-01-01'"
  puffin spark migrate-deletes db.events             v2 position deletes -> deletion vectors
  puffin spark stats prod.db.events --catalog prod --master spark://host:7077

The session is local[*] unless --master (or SPARK_REMOTE, for Spark Connect) says otherwise;
a local session needs Java 17+.  The catalog is --catalog NAME from pyiceberg's
configuration, or --warehouse DIR for the embedded SQLite catalog (default: pyiceberg's
default catalog if configured, else the embedded catalog in $PUFFIN_WAREHOUSE or ./warehouse).
"""


def register_cli(subparsers: Any) -> None:
    """Add ``puffin spark ...`` to the ``puffin`` command (the CLI's plugin hook)."""
    import argparse

    fmt = argparse.RawDescriptionHelpFormatter
    try:
        from puffin.cli import common_options

        common = [common_options()]
    except ImportError:  # pragma: no cover - the CLI is part of the library
        common = []
    shared = argparse.ArgumentParser(add_help=False)
    group = shared.add_argument_group("Spark and catalog")
    group.add_argument(
        "--master", default="local[*]", help="Spark master, or sc://host:port (default local[*])"
    )
    group.add_argument("--catalog", metavar="NAME", help="catalog from pyiceberg's configuration")
    group.add_argument("--warehouse", metavar="DIR", help="embedded SQLite catalog in DIR")
    group.add_argument("--snapshot-id", type=int, help="snapshot (default: current)")
    group.add_argument("--json", action="store_true", help="print the result as JSON")
    parents = [shared, *common]

    top = subparsers.add_parser(
        "spark",
        help="table statistics and deletion vectors computed on Spark (needs the spark extra)",
        description="Compute an Iceberg table's NDV statistics or deletion vectors on Spark.",
        epilog=_CLI_EPILOG,
        formatter_class=fmt,
    )
    top.set_defaults(func=lambda args: _cli_help(top))
    commands = top.add_subparsers(dest="spark_command", metavar="COMMAND")

    stats = commands.add_parser(
        "stats",
        help="compute NDV sketches of a snapshot on Spark and commit the statistics file",
        parents=parents,
        formatter_class=fmt,
    )
    stats.add_argument("table", help="table identifier, e.g. db.events")
    stats.add_argument("--columns", help="comma-separated columns (default: all primitive)")
    stats.add_argument("--engine", choices=ENGINES, default="auto", help="sketch engine")
    stats.add_argument("--no-commit", action="store_true", help="write the file, do not commit")
    stats.set_defaults(func=_cli_stats)

    dv = commands.add_parser(
        "dv",
        help="write deletion vectors for the rows matching a condition",
        parents=parents,
        formatter_class=fmt,
    )
    dv.add_argument("table", help="table identifier, e.g. db.events")
    dv.add_argument("--where", required=True, metavar="COND", help="Spark SQL condition")
    dv.add_argument(
        "--no-merge",
        action="store_true",
        help="leave out positions the snapshot already deletes in those files",
    )
    dv.add_argument("--output", metavar="LOCATION", help="Puffin file (default: data folder)")
    dv.set_defaults(func=_cli_dv)

    migrate = commands.add_parser(
        "migrate-deletes",
        help="turn the table's v2 position-delete files into deletion vectors",
        parents=parents,
        formatter_class=fmt,
    )
    migrate.add_argument("table", help="table identifier, e.g. db.events")
    migrate.add_argument("--output", metavar="LOCATION", help="Puffin file (default: data folder)")
    migrate.set_defaults(func=_cli_migrate)


def _cli_help(parser: Any) -> int:
    parser.print_help(sys.stderr)
    return 2


def _cli_input_error(message: str) -> Exception:
    from puffin.cli import InputError

    return InputError(message)


@contextlib.contextmanager
def _cli_errors() -> Iterator[None]:
    """Known failures become one-line input errors (exit status 1)."""
    try:
        yield
    except (SparkSetupError, LookupError, NotImplementedError, ValueError) as exc:
        from puffin.errors import PuffinError

        if isinstance(exc, PuffinError):
            raise
        raise _cli_input_error(str(exc).strip().splitlines()[0]) from None
    except ImportError as exc:
        raise _cli_input_error(
            f"{exc}; install the spark extra: pip install 'iceberg-puffin[spark,iceberg]'"
        ) from None
    except Exception as exc:
        if type(exc).__module__.startswith("pyspark.errors"):
            raise _cli_input_error(str(exc).strip().splitlines()[0]) from None
        raise


def _cli_open(args: Any) -> tuple[Any, Any]:
    from puffin.iceberg import load_catalog, load_table

    if not (args.master.startswith("sc://") or os.environ.get("SPARK_REMOTE")):
        check_java()  # before anything else: the one thing a fresh machine may lack
    catalog = load_catalog(args.catalog, warehouse=args.warehouse)
    table = load_table(catalog, args.table)
    spark = local_session(args.master)
    return spark, table


def _cli_stats(args: Any) -> int:
    import json

    with _cli_errors():
        spark, table = _cli_open(args)
        columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stats = compute_table_statistics(
                spark,
                table,
                columns=columns,
                snapshot_id=args.snapshot_id,
                commit=not args.no_commit,
                engine=args.engine,
            )
        for w in caught:
            if w.category.__name__ == "SkippedColumnWarning":
                sys.stderr.write(f"puffin spark stats: note: {w.message}\n")
    if args.json:
        doc = stats.model_dump(by_alias=True, exclude_none=True)
        doc["committed"] = not args.no_commit
        print(json.dumps(doc, indent=2))
        return 0
    names = {f.field_id: f.name for f in table.schema().fields}
    print(f"{'wrote' if args.no_commit else 'committed'} {stats.statistics_path}")
    print(
        f"  snapshot {stats.snapshot_id}, {stats.file_size_in_bytes} bytes, "
        f"footer {stats.file_footer_size_in_bytes} bytes"
    )
    for b in stats.blob_metadata:
        name = names.get(b.fields[0], f"field {b.fields[0]}")
        print(f"  {name:<20} ndv {(b.properties or {}).get('ndv', '?')}")
    return 0


def _print_entries(args: Any, entries: Sequence[Any]) -> int:
    import json

    if args.json:
        doc = {
            "path": entries[0].path if entries else None,
            "file_size_in_bytes": entries[0].file_size_in_bytes if entries else None,
            "deletion_vectors": [
                {
                    "referenced_data_file": e.referenced_data_file,
                    "content_offset": e.content_offset,
                    "content_size_in_bytes": e.content_size_in_bytes,
                    "record_count": e.record_count,
                }
                for e in entries
            ],
        }
        print(json.dumps(doc, indent=2))
        return 0
    if not entries:
        print("no rows to delete: nothing written")
        return 0
    total = sum(e.record_count for e in entries)
    print(f"wrote {entries[0].path} ({entries[0].file_size_in_bytes} bytes)")
    print(f"  {len(entries)} deletion vectors, {total} deleted rows")
    for e in entries:
        print(f"  {e.record_count:>10}  {e.referenced_data_file}")
    return 0


def _cli_dv(args: Any) -> int:
    with _cli_errors():
        spark, table = _cli_open(args)
        entries = deletion_vectors_for(
            spark,
            table,
            args.where,
            snapshot_id=args.snapshot_id,
            merge_existing=not args.no_merge,
            location=args.output,
        )
    return _print_entries(args, entries)


def _cli_migrate(args: Any) -> int:
    with _cli_errors():
        spark, table = _cli_open(args)
        if (
            args.snapshot_id is not None
            and args.snapshot_id != table.current_snapshot().snapshot_id
        ):
            raise _cli_input_error("migrate-deletes works on the current snapshot only")
        entries = position_deletes_to_deletion_vectors(spark, table, location=args.output)
    return _print_entries(args, entries)
