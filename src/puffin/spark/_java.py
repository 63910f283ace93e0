"""Starting Spark on this machine: the Java check, quiet logs and :func:`local_session`.

A missing or old Java is the one thing a fresh machine usually lacks, so it is checked first
and reported in one line (:class:`~puffin.errors.JavaNotFoundError`) instead of Py4J's long
error.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from puffin.errors import JavaNotFoundError, UsageError

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyspark.sql import SparkSession

__all__ = ["MIN_JAVA", "check_java", "jvm_output_to", "local_session", "log_directory"]

#: Spark 4 runs on Java 17 or newer.
MIN_JAVA = 17

_INSTALL_HINT = (
    "install Java 17 or newer (e.g. `apt-get install openjdk-17-jre-headless`) "
    "or set JAVA_HOME to one"
)


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

    Returns the major version.  Raises :class:`~puffin.errors.JavaNotFoundError` with a
    one-line message saying what to install, instead of the long Py4J error Spark would give.
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


def log_directory() -> str:
    """This user's folder for Spark's configuration and log (created if missing)."""
    directory = os.path.join(tempfile.gettempdir(), f"puffin-spark-{os.getuid()}")
    os.makedirs(directory, exist_ok=True)
    return directory


def _log4j2_file() -> str:
    """A per-user copy of :data:`_LOG4J2`, rewritten atomically only when it differs."""
    directory = log_directory()
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
        from pyspark.logger import PySparkLogger
    except ImportError:  # pragma: no cover - pyspark < 4
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


@contextlib.contextmanager
def jvm_output_to(log_file: str | None) -> Iterator[None]:
    """While the JVM starts, this process's stdout and stderr are ``log_file``.

    The JVM (and the Python workers it starts later) inherit them as their own, so Spark's
    start-up lines and log go to the file for good, while this process gets its terminal
    back as soon as the block ends.  ``None`` changes nothing.
    """
    if log_file is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    try:
        with open(log_file, "wb") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def local_session(
    master: str = "local[2]",
    *,
    app_name: str = "puffin",
    memory: str = "1g",
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
    quiet: bool = True,
    log_file: str | None = None,
    ship_environment: bool = False,
) -> SparkSession:
    """A Spark session for this machine, set up for small jobs (or Spark Connect).

        ``master`` is ``local[N]``, ``local[*]``, a cluster URL, or ``sc://host:port`` for Spark
        Connect (no local Java needed then; ``SPARK_REMOTE`` works too).  A new local session
        gets ``memory`` for the driver, no web UI, ``shuffle_partitions`` (default: twice the
        cores), Arrow enabled, UTC session time, (for ``local`` masters) the executors' Python
        set to this one, and (with ``quiet``) only error-level logs.  ``conf`` adds or overrides
        settings.  If a session is already running in this process it is returned as it is.
    With ``log_file``, a new local JVM writes everything it prints (start-up lines, its log)
    to that file instead of this process's terminal.  With ``ship_environment``, executors
    of a cluster master run this library from the driver's environment, packed once and
    sent along (:mod:`puffin.spark.shipping`; the Connect server's own configuration decides
    its executors' Python, so it is refused there).

        Raises :class:`~puffin.errors.JavaNotFoundError` when a local JVM is needed and Java is
        missing or old.
    """
    from pyspark.sql import SparkSession

    if quiet:
        _quiet_python_warnings()
    remote = master if master.startswith("sc://") else os.environ.get("SPARK_REMOTE")
    if remote and ship_environment:
        raise UsageError(
            "--ship-environment needs a classic session: a Spark Connect server's own "
            "configuration (spark.pyspark.python, spark.files) decides its executors' Python"
        )
    if remote:
        builder = SparkSession.builder.remote(remote).appName(app_name)
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    check_java()
    settings = _local_settings(master, memory, shuffle_partitions, quiet)
    if ship_environment and not master.strip().startswith("local"):
        from puffin.spark.shipping import environment_conf

        settings.update(environment_conf())
    settings.update(conf or {})
    if "spark.pyspark.python" in settings:
        # PySpark gives the executors the Python of PYSPARK_PYTHON, whatever the conf says.
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with jvm_output_to(log_file):
        session = builder.getOrCreate()
    if quiet:
        session.sparkContext.setLogLevel("ERROR")
    return session


def _local_settings(
    master: str, memory: str, shuffle_partitions: int | None, quiet: bool
) -> dict[str, str]:
    """The settings :func:`local_session` gives a new session (before the caller's ``conf``)."""
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
    return settings


def _cores(master: str) -> int:
    match = re.fullmatch(r"local\[(\d+|\*)(?:,\d+)?\]", master.strip())
    if master.strip() == "local":
        return 1
    if match is None or match.group(1) == "*":
        return os.cpu_count() or 1
    return int(match.group(1))
