"""Before the first Python task: can the executors' Python run this library's code?

A cluster whose nodes were not prepared fails a Python task with ``ModuleNotFoundError: No
module named 'puffin'`` deep in an executor's log, after the job has started work; Py4J's
error on the driver says only "An exception was thrown from the Python worker".  One task of
one row asks the executors' Python first: where it is, which version of this library it
imports (with the compiled dependencies the jobs use), or why it cannot.  The probe travels
by value (its module is not importable), so it runs on a Python that lacks this library.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from puffin.errors import PythonWorkerError, SetupError
from puffin.version import __version__

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyspark.sql import SparkSession

__all__ = [
    "ExecutorPython", "check_executors", "python_tasks", "require_executors", "worker_errors",
]

# Compiled into a module of its own that nobody can import: cloudpickle then sends the
# function's code, not a reference to a module the executors may not have.
_PROBE = '''
def probe(_):
    import json, sys
    found = {"python": sys.executable, "python_version": sys.version.split()[0],
             "puffin": None, "error": None}
    try:
        import puffin
        found["puffin"] = puffin.__version__
        import numpy, pyarrow, pyroaring  # what the Python tasks import
        import puffin.blobs.dv.format, puffin.blobs.theta.sketch
    except BaseException as exc:
        found["error"] = f"{type(exc).__name__}: {exc}"
    return json.dumps(found)
'''

_CHECKED: weakref.WeakKeyDictionary[Any, ExecutorPython] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class ExecutorPython:
    """What one executor's Python reported: its path and version, and this library's."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.python: str = str(report.get("python") or "?")
        self.python_version: str = str(report.get("python_version") or "?")
        self.puffin: str | None = report.get("puffin")
        self.error: str | None = report.get("error")

    def __repr__(self) -> str:
        return f"<ExecutorPython {self.python} puffin={self.puffin} error={self.error}>"


def _probe() -> Any:
    namespace: dict[str, Any] = {"__name__": "puffin_executor_probe"}
    exec(compile(_PROBE, "<puffin executor probe>", "exec"), namespace)
    return namespace["probe"]


def check_executors(spark: SparkSession) -> ExecutorPython:
    """Run the probe as one task (classic sessions and Spark Connect alike) and return what
    the executor's Python reported; :class:`SetupError` if the task itself fails."""
    from pyspark.sql.functions import col, udf

    task = udf(_probe(), "string", useArrow=False)
    try:
        row = spark.range(1, numPartitions=1).select(task(col("id")).alias("r")).first()
    except Exception as exc:  # the Python worker did not even start
        raise SetupError(
            f"the executors cannot run a Python task: {_last_line(exc)}; {_REMEDIES}"
        ) from None
    if row is None:  # pragma: no cover - one row in, one row out
        raise SetupError("the executors' Python returned nothing to the preflight task")
    return ExecutorPython(json.loads(row["r"]))


def require_executors(spark: SparkSession) -> ExecutorPython:
    """:func:`check_executors` once per session, and a :class:`SetupError` naming the
    executors' Python, what it lacks and the remedies unless it imports this version."""
    with _LOCK:
        known = _CHECKED.get(spark)
    if known is not None:
        return known
    found = check_executors(spark)
    if found.error is not None:
        raise SetupError(
            f"the executors' Python ({found.python}, Python {found.python_version}) cannot "
            f"run this library: {found.error}; {_REMEDIES}"
        )
    if found.puffin != __version__:
        raise SetupError(
            f"the executors' Python ({found.python}) has iceberg-puffin {found.puffin}, the "
            f"driver {__version__}: install the same version on every node, or {_SHIP}"
        )
    with _LOCK:
        _CHECKED[spark] = found
    return found


_SHIP = "ship the driver's environment with --ship-environment (docs/spark.md)"
_REMEDIES = (
    f"install iceberg-puffin {__version__} on every node, set spark.pyspark.python to a "
    f"Python that has it, or {_SHIP}"
)


@contextlib.contextmanager
def python_tasks(spark: SparkSession) -> Iterator[None]:
    """Around a job with Python tasks: the executors checked first (:func:`require_executors`,
    so a bare node stops the job before it starts), their errors named after
    (:func:`worker_errors`)."""
    require_executors(spark)
    with worker_errors():
        yield


@contextlib.contextmanager
def worker_errors() -> Iterator[None]:
    """A Python worker's exception as :class:`PythonWorkerError` naming its type and
    message, instead of Py4J's first line ("An exception was thrown from the Python
    worker:") with the cause at the end of a Java stack trace."""
    try:
        yield
    except Exception as exc:
        text = str(exc)
        if "Python worker" not in text and "PythonException" not in type(exc).__name__:
            raise
        raise PythonWorkerError(
            f"a Python task failed on the executors: {_last_line(exc)}"
        ) from exc


# A Python exception line: an optionally qualified class name ending in Error, Exception, ...
_RAISED = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)(?::\s|$)"
)


def _last_line(exc: BaseException) -> str:
    """The useful line of a Py4J or Spark error: the exception line of the Python worker's
    last traceback when there is one, else the error's first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent")]
    if starts:
        raised = [line for line in lines[starts[-1] + 1 :] if _RAISED.match(line)]
        if raised:
            return raised[0]
    return lines[0] if lines else type(exc).__name__
