"""One progress display for long jobs (``puffin ndv``, ``puffin table stats compute``).

``[#####.....]  45%  4.5M/10.0M rows  3.1M rows/s  file 3/8``, redrawn in place on stderr.
It draws only on a terminal (unless forced), at most ten times a second, and optionally only
once the job has run for ``delay`` seconds, so quick jobs, logs and pipes stay clean.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

__all__ = ["Progress"]


def _human(n: float) -> str:
    for unit in ("", "k", "M", "G"):
        if abs(n) < 1000:
            return f"{n:.0f}{unit}" if unit == "" else f"{n:.1f}{unit}"
        n /= 1000
    return f"{n:.1f}T"


class Progress:
    """A one-line progress bar; ``update(n)`` adds ``n`` units of work done.

    ``enabled`` None means "when the stream is a terminal".  ``delay`` holds the first draw
    back until the job has run that long.  ``transient`` erases the line on :meth:`close`
    (a command whose results follow on stdout); otherwise the final state is left on
    its own line.
    """

    def __init__(
        self,
        total: int,
        *,
        unit: str = "rows",
        label: str = "",
        stream: TextIO | None = None,
        enabled: bool | None = None,
        width: int = 30,
        delay: float = 0.0,
        transient: bool = False,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.total = max(0, total)
        self.unit = unit
        self.label = label
        self.width = width
        self.delay = delay
        self.transient = transient
        self.done = 0
        self.note = ""
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._drawn = False

    @property
    def shown(self) -> bool:
        """Whether anything has been drawn yet."""
        return self._drawn

    def update(self, n: int, *, note: str | None = None) -> None:
        """Count ``n`` more units done (and replace the note, if given)."""
        self.done += n
        if note is not None:
            self.note = note
        if self.enabled:
            now = time.perf_counter()
            if now - self._start >= self.delay and now - self._last_draw >= 0.1:
                self._last_draw = now
                self._draw()

    def set_note(self, note: str) -> None:
        """Replace the text after the counts (``file 3/8``)."""
        self.note = note
        if self.enabled and time.perf_counter() - self._start >= self.delay:
            self._draw()

    def _draw(self) -> None:
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        fraction = min(1.0, self.done / self.total) if self.total else 1.0
        filled = round(fraction * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        rate = self.done / elapsed
        text = (
            f"\r{self.label}[{bar}] {fraction * 100:3.0f}%  {_human(self.done)}/"
            f"{_human(self.total)} {self.unit}  {_human(rate)} {self.unit}/s"
        )
        if self.note:
            text += f"  {self.note}"
        self.stream.write(text + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Finish the line: erase it when ``transient``, else draw the final state."""
        if not self.enabled:
            return
        if self.transient:
            if self._drawn:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            return
        if self._drawn or time.perf_counter() - self._start >= self.delay:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
