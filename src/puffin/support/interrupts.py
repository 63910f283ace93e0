"""Ctrl-C and SIGTERM held off while a commit is in the catalog's hands.

An interrupt that lands inside ``Catalog.commit_table`` leaves nobody knowing whether the
table moved: the SQL transaction may have committed just before the ``KeyboardInterrupt``
surfaced, and a writer that then removed "its" files would break the table, while one that
said "failed" would make the user run the job twice.  :func:`shielded` records SIGINT and
SIGTERM for the few milliseconds of the commit and hands them back after it, when the
outcome is known (the caller raises :class:`puffin.errors.InterruptedAfterCommit` or a
plain ``KeyboardInterrupt``).  Signals can only be caught in the main thread; elsewhere the
block runs as it is.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["Shield", "forget_commits", "last_commit", "record_commit", "shielded"]

_commits = threading.local()


@dataclass
class Shield:
    """What :func:`shielded` saw: ``pending`` is the signal number held off, or None."""

    pending: int | None = None


@contextmanager
def shielded() -> Iterator[Shield]:
    """Hold SIGINT and SIGTERM until the block ends; ``shield.pending`` says if one came."""
    shield = Shield()
    if threading.current_thread() is not threading.main_thread():
        yield shield
        return

    def hold(signum: int, frame: Any) -> None:
        shield.pending = signum

    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, hold)
        except (ValueError, OSError):  # pragma: no cover - an embedded interpreter
            continue
    try:
        yield shield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def record_commit(snapshot_id: int | None) -> None:
    """Note that this thread's command committed ``snapshot_id`` (called by the one commit
    path), so that an interrupt arriving after the library returned is still reported as
    one after a commit (:func:`last_commit`)."""
    _commits.last = snapshot_id
    _commits.any = True


def last_commit() -> tuple[bool, int | None]:
    """(whether this thread committed since :func:`forget_commits`, the last snapshot)."""
    return bool(getattr(_commits, "any", False)), getattr(_commits, "last", None)


def forget_commits() -> None:
    """Start a new command: nothing committed yet."""
    _commits.any = False
    _commits.last = None
