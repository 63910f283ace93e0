"""What a Spark job is doing, on the one progress display.

A ``puffin spark`` command spends its first seconds starting a JVM and planning, then runs
Spark stages.  :class:`JobProgress` names the phase (``starting Spark``, ``planning``) and
then counts the tasks of the stages Spark's status tracker reports, on
:class:`puffin.support.progress.Progress`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any, TextIO

from puffin.support.progress import Progress

__all__ = ["JobProgress"]

_POLL_SECONDS = 0.25


class JobProgress:
    """The phases of a Spark command, then its stages' tasks, on one progress line.

    ``enabled`` as for :class:`Progress` (None: when the stream is a terminal).  Use
    :meth:`phase` before Spark runs anything and :meth:`watching` around the Spark work.
    """

    def __init__(self, *, enabled: bool | None, stream: TextIO | None = None) -> None:
        # A total of 1 until the first stage shows up: 0 would draw as 100 %.
        self.bar = Progress(
            1, unit="tasks", label="spark: ", stream=stream, enabled=enabled, transient=True
        )
        self._lock = threading.Lock()
        self._stages: dict[int, tuple[int, int]] = {}  # stage id -> (tasks, completed)

    def phase(self, text: str) -> None:
        """Show what the command is doing before any task runs (``starting Spark``)."""
        with self._lock:
            self.bar.set_note(text)

    def record(self, infos: list[Any]) -> None:
        """Count the tasks of these stage infos (pyspark's ``SparkStageInfo``)."""
        with self._lock:
            for info in infos:
                self._stages[int(info.stageId)] = (int(info.numTasks), int(info.numCompletedTasks))
            if not self._stages:  # nothing has run yet: the phase stays on show
                return
            total = sum(tasks for tasks, _ in self._stages.values())
            done = sum(min(finished, tasks) for tasks, finished in self._stages.values())
            self.bar.total = max(1, total)
            running = [i for i in infos if i.numCompletedTasks < i.numTasks]
            count = len(self._stages)
            note = (
                f"stage {running[-1].stageId}"
                if running
                else f"{count} stage{'' if count == 1 else 's'} done"
            )
            self.bar.update(done - self.bar.done, note=note)

    @contextlib.contextmanager
    def watching(self, spark: Any) -> Iterator[None]:
        """Poll ``spark``'s status tracker while the block runs (nothing on Spark Connect,
        which has none)."""
        try:
            tracker = spark.sparkContext.statusTracker()
        except Exception:  # Spark Connect: no SparkContext in this process
            yield
            return
        if not self.bar.enabled:
            yield
            return
        stop = threading.Event()
        thread = threading.Thread(target=self._poll, args=(tracker, stop), daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _poll(self, tracker: Any, stop: threading.Event) -> None:
        while not stop.wait(_POLL_SECONDS):
            try:
                ids = set(tracker.getActiveStageIds()) | set(self._stages)
                infos = [info for info in map(tracker.getStageInfo, sorted(ids)) if info]
            except Exception:  # the session is shutting down: stop drawing
                return
            self.record(infos)

    def close(self) -> None:
        with self._lock:
            self.bar.close()

    def __enter__(self) -> JobProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
