"""Terminal colours and small output helpers for the command line.

Colour follows the usual conventions: only when the stream is a terminal, never when
``NO_COLOR`` is set to a non-empty value (https://no-color.org) or ``TERM=dumb``, and as
``--color always|never`` forces.
"""

from __future__ import annotations

import os
from typing import TextIO

__all__ = ["Colours", "colours_for"]


class Colours:
    """ANSI styling functions that return the text unchanged when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


def colours_for(stream: TextIO, mode: str = "auto") -> Colours:
    """Colours for ``stream`` under ``--color MODE`` (auto, always or never)."""
    if mode == "always":
        return Colours(True)
    if mode == "never":
        return Colours(False)
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return Colours(False)
    try:
        return Colours(stream.isatty())
    except (AttributeError, ValueError):  # closed or unusual streams
        return Colours(False)
