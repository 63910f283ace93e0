"""After a job whose tasks write files: wait until none of its tasks runs any more.

When a job fails (or is cancelled, or ends with a speculative copy still running), Spark
returns to the driver at once, but a task that was running goes on: its Python worker is
only killed once ``spark.python.task.killTimeout`` (2 s by default) has passed, and until
then it works on, writing the files of its next file groups. A driver that removed the
job's files on its return would leave those behind. :func:`tracked_job` runs the job in a
job group of its own and gives a ``settle`` function that returns once no task of that
group runs: on Spark Classic by Spark's status tracker, on Spark Connect (which has none
on the client) by waiting out the kill timeout.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pyspark.sql import SparkSession

__all__ = ["SETTLE_TIMEOUT", "duration_seconds", "tracked_job"]

#: The longest wait for a job's tasks to end (Spark kills a task's Python worker 2 s after
#: the task is killed, by default).
SETTLE_TIMEOUT = 60.0
_GROUP = "spark.jobGroup.id"
_LOCAL = (_GROUP, "spark.job.description", "spark.job.interruptOnCancel")


@contextlib.contextmanager
def tracked_job(spark: SparkSession) -> Iterator[Callable[[], None]]:
    """Around the jobs of one step: yields ``settle()``, which returns once none of their
    tasks runs any more (at most :data:`SETTLE_TIMEOUT` seconds)."""
    try:
        context = spark.sparkContext
    except Exception:  # Spark Connect has no SparkContext
        yield lambda: time.sleep(_kill_timeout(spark) + 1.0)
        return
    group = f"puffin-{uuid.uuid4()}"
    before = {key: context.getLocalProperty(key) for key in _LOCAL}
    context.setJobGroup(group, "puffin: files written on the executors", True)
    try:
        yield lambda: _wait_for_tasks(context, group)
    finally:
        for key, value in before.items():
            context.setLocalProperty(key, value)  # type: ignore[arg-type]  # None unsets


def _wait_for_tasks(context: Any, group: str) -> None:
    """Until no stage of the group's jobs has a task running (or the timeout)."""
    tracker = context.statusTracker()
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        stages = [
            stage
            for job in tracker.getJobIdsForGroup(group)
            if (info := tracker.getJobInfo(job)) is not None
            for stage in info.stageIds
        ]
        infos = [tracker.getStageInfo(stage) for stage in stages]
        if all(info is None or info.numActiveTasks == 0 for info in infos):
            return
        time.sleep(0.05)


def _kill_timeout(spark: SparkSession) -> float:
    return duration_seconds(str(spark.conf.get("spark.python.task.killTimeout", "2s") or "2s"))


def duration_seconds(raw: str, default: float = 2.0) -> float:
    """A Spark duration (``"2s"``, ``"500ms"``, ``"1m"``) in seconds; ``default`` if it
    does not read as one."""
    text = raw.strip().lower()
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * scale
            except ValueError:
                return default
    return default
