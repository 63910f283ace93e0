"""How often, and how long, a commit that lost a race is tried again: Iceberg's
``commit.retry.*`` table properties, read as Iceberg Java reads them.

=================================  ===========  ==========================================
property                           Java default what it bounds
=================================  ===========  ==========================================
``commit.retry.num-retries``       4            attempts after the first (5 in all)
``commit.retry.min-wait-ms``       100          the wait after the first lost race
``commit.retry.max-wait-ms``       60000        any one wait (the wait doubles up to it)
``commit.retry.total-timeout-ms``  1800000      all attempts and waits together
=================================  ===========  ==========================================

Java adds up to a tenth to each wait; here each wait is drawn between the doubled wait and
twice it (still at most ``max-wait-ms``), so that writers that lost the same race spread out
rather than meet again (docs/interop.md). A value Java could not parse fails the commit
before its first attempt, naming the property (the files written for it are removed), as
Java's ``NumberFormatException`` would fail it less clearly.

Example::

    from puffin.iceberg.metadata.commit_retry import CommitRetry

    retry = CommitRetry.of(table)
    print(retry.attempts, "attempts, the first wait", retry.min_wait_ms, "ms")
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.errors import UsageError
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.metadata.properties import RULES

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["CommitRetry", "commit_attempts"]

NUM_RETRIES = "commit.retry.num-retries"
MIN_WAIT_MS = "commit.retry.min-wait-ms"
MAX_WAIT_MS = "commit.retry.max-wait-ms"
TOTAL_TIMEOUT_MS = "commit.retry.total-timeout-ms"


@dataclass(frozen=True)
class CommitRetry:
    """A table's commit retry policy (Java's defaults where a property is not set)."""

    num_retries: int = 4
    min_wait_ms: int = 100
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 1_800_000

    @classmethod
    def of(cls, table: Table) -> CommitRetry:
        """The policy the table's properties set; :class:`UsageError` for a value Java could
        not read."""
        properties = table.properties
        default = cls()
        return cls(
            num_retries=_read(table, properties, NUM_RETRIES, default.num_retries),
            min_wait_ms=_read(table, properties, MIN_WAIT_MS, default.min_wait_ms),
            max_wait_ms=_read(table, properties, MAX_WAIT_MS, default.max_wait_ms),
            total_timeout_ms=_read(table, properties, TOTAL_TIMEOUT_MS, default.total_timeout_ms),
        )

    @property
    def attempts(self) -> int:
        """Attempts in all: the first and its retries."""
        return self.num_retries + 1

    def wait_s(self, lost: int, cap_s: float | None = None) -> float:
        """Seconds to wait after losing attempt ``lost`` (1 for the first): ``min-wait-ms``
        doubled for each attempt lost before, drawn up to twice that, at most ``max-wait-ms``
        and ``cap_s``."""
        wait = self.min_wait_ms * (2 ** min(lost - 1, 30)) * (1 + random.random()) / 1000
        longest = self.max_wait_ms / 1000 if cap_s is None else min(self.max_wait_ms / 1000, cap_s)
        return float(min(wait, longest))

    def describe(self) -> str:
        """The policy as the properties that set it."""
        return (
            f"{NUM_RETRIES}={self.num_retries}, {MIN_WAIT_MS}={self.min_wait_ms}, "
            f"{MAX_WAIT_MS}={self.max_wait_ms}, {TOTAL_TIMEOUT_MS}={self.total_timeout_ms}"
        )


def commit_attempts(table: Table, max_attempts: int | None) -> int:
    """``max_attempts`` when given, else the attempts the table's properties allow."""
    return CommitRetry.of(table).attempts if max_attempts is None else max_attempts


def _read(table: Table, properties: dict[str, str], key: str, default: int) -> int:
    value = properties.get(key)
    if value is None:
        return default
    wanted = RULES[key](value)
    if wanted is not None:
        change = table_command(table, "alter", "--set-property", f"{key}={default}")
        raise UsageError(
            f"the table's property {key}={value!r} is not {wanted} (Iceberg Java's commits "
            f"fail on it too); nothing was committed: set Java's default with {change}"
        )
    return int(value)
