"""The one commit loop: optimistic commits retried after lost races, cleaned up when they fail.

Every writer in :mod:`puffin.iceberg` (row deletes, DV commits, the upgrade to v3, statistics)
commits through :func:`with_retries`; an embedded catalog that another process keeps locked
is retried the same way, and ends in :class:`~puffin.errors.CatalogLockedError`.  An
attempt works on the table as it is now and lists the files it writes; when another writer
wins the race, those files are removed, the table is refreshed and the attempt runs again,
as often and as long as the table's ``commit.retry.*`` properties allow
(:mod:`.commit_retry`), with backoff.  A commit whose outcome the catalog cannot tell
(``CommitStateUnknownException``) keeps its files: the table may already reference them.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from puffin.errors import (
    CommitConflictError,
    InterruptedAfterCommit,
    StorageError,
    TableFileNotFoundError,
    UsageError,
)
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.catalog.sqlite import (
    is_locked,
    is_read_only_database,
    locked_error,
    require_writable_catalog,
)
from puffin.iceberg.metadata.commit_retry import NUM_RETRIES, CommitRetry
from puffin.iceberg.metadata.commit_turns import turn
from puffin.iceberg.metadata.manifests import remove_files
from puffin.iceberg.metadata.presence import committing, file_gone, missing_location, vanished
from puffin.io.stores import first_line, store_failed

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = [
    "COMMITS_PER_ATTEMPT",
    "REBASE_BACKOFF_S",
    "Redos",
    "backoff",
    "committed_or_interrupted",
    "is_conflict",
    "main_branch_requirements",
    "require_writable_location",
    "snapshot_updates",
    "with_retries",
]

#: The first backoff in seconds of a wait that is not a commit's (:func:`backoff`); it
#: doubles with each attempt, with jitter, up to the last.
BACKOFF_S = 0.05
MAX_BACKOFF_S = 2.0
#: A job whose work outlives a lost race (committed again on the refreshed table, not done
#: again) commits up to this many times per attempt its caller allows: a commit alone is
#: cheap, and a busy writer wins many races against a job that does a second's work.
COMMITS_PER_ATTEMPT = 3
#: Such a job's longest backoff: its commit is cheap, and waiting lets a busy writer in.
REBASE_BACKOFF_S = 0.25
_T = TypeVar("_T")


def with_retries(
    table: Table,
    attempt: Callable[[Table, int, list[str]], _T],
    max_attempts: int | None = None,
    *,
    kept: Sequence[str] = (),
    present: Sequence[str] = (),
    max_backoff: float | None = None,
    first_turn: bool = True,
) -> _T:
    """``attempt(table, number, written)`` until it commits, as often and as long as the
    table's ``commit.retry.*`` properties allow (:class:`.CommitRetry`; ``max_attempts``
    overrides the number).

    Each attempt works on the table as refreshed after the last lost race and lists the
    files it writes in ``written``; when it fails they are removed.  ``kept`` are files
    written once for every attempt (a statistics file), removed only when the loop ends in
    failure.  A lost race, or a file of the table found missing (an orphan cleanup sets
    files aside for a moment), is retried after a backoff up to the last attempt, which ends
    in :class:`CommitConflictError` (:class:`TableFileNotFoundError`); a file this write
    produced found gone ends it in :class:`WrittenFileGoneError`; any other error ends the
    loop as it is.  Nothing is removed when the commit state is unknown.  Before the catalog
    swap, the files written, ``kept`` and ``present`` (files the commit registers but did not
    write) must all exist (:mod:`.presence`). ``max_backoff`` caps each wait below the
    table's ``commit.retry.max-wait-ms``. Each attempt holds the table's turn
    (:mod:`.commit_turns`: this library's writers wait for each other rather than lose),
    the first only with ``first_turn`` (a job whose first attempt is long work passes False).
    """
    try:
        policy = CommitRetry.of(table)
    except UsageError as exc:  # a property Java could not read: nothing is committed
        _discard(table, kept, exc)
        raise
    attempts = policy.attempts if max_attempts is None else max_attempts
    if attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {attempts}")
    require_writable_location(table)
    started = time.monotonic()
    for number in range(1, attempts + 1):
        written: list[str] = []
        try:
            with _turn(table, number > 1 or first_turn) as waited:
                if number > 1 or waited:  # another commit may have landed meanwhile
                    table = table.refresh()  # may find the catalog locked: retried alike
                with committing(written, kept, present):
                    return attempt(table, number, written)
        except InterruptedAfterCommit:
            raise  # the table references every file written: none is removed
        except BaseException as exc:
            if is_read_only_database(exc):  # made read-only after the check above
                _discard(table, [*written, *kept], exc)
                raise _read_only_catalog_error(table) from exc
            gone = vanished(exc, [*written, *kept])
            retry = gone is None and (is_conflict(exc) or _table_file_missing(table, exc))
            wait = policy.wait_s(number, max_backoff)
            spent = time.monotonic() - started
            late = spent + wait > policy.total_timeout_ms / 1000
            last = number == attempts or not retry or late
            _discard(table, [*written, *(kept if last else ())], exc)
            if gone is not None:  # a cleanup beside the writer took it: nothing committed
                raise file_gone(gone) from exc
            if not retry and store_failed(exc):
                raise _store_failure(table, exc) from exc
            if not retry:
                raise
            if last:
                raise _gave_up(table, exc, (number, spent), policy) from exc
        time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def _turn(table: Table, take: bool) -> contextlib.AbstractContextManager[bool]:
    return turn(table) if take else contextlib.nullcontext(False)


class Redos:
    """How often a job's work had to be done again because a concurrent commit conflicted
    with it; past ``limit`` times, :class:`CommitConflictError` (nothing committed)."""

    def __init__(self, limit: int, job: str) -> None:
        self.limit, self.job, self.count = limit, job, 0

    def again(self, why: str) -> None:
        """Note one more start over, ``why`` naming the conflict; raise past the limit."""
        self.count += 1
        if self.count >= self.limit:
            raise CommitConflictError(
                f"concurrent commits conflicted with the {self.job} {self.count} times (last: "
                f"{why}); nothing was committed and the files written for it were removed"
            )


def committed_or_interrupted(commit: Callable[[], Table]) -> Table:
    """``commit()`` (the catalog's commit) with Ctrl-C and SIGTERM held off until its outcome
    is known (:mod:`puffin.support.interrupts`): a signal that came during a commit that
    landed raises :class:`InterruptedAfterCommit` with the snapshot; during one that failed,
    a ``KeyboardInterrupt`` instead of a retry."""
    from puffin.support.interrupts import record_commit, shielded

    with shielded() as shield:
        try:
            committed = commit()
        except BaseException as exc:
            if shield.pending is not None and is_conflict(exc):
                raise KeyboardInterrupt from exc  # not retried: the user asked to stop
            raise
    snapshot = committed.current_snapshot()
    snapshot_id = snapshot.snapshot_id if snapshot else None
    record_commit(snapshot_id)
    if shield.pending is not None:
        raise InterruptedAfterCommit(snapshot_id, committed)
    return committed


def require_writable_location(table: Table, *, catalog: bool = True) -> None:
    """Refuse, before any work, to write where it cannot go right: a table folder that is
    read-only to this process (a read-only mount or folder), an embedded catalog database
    it cannot write (``catalog``: the job commits), or a location pyiceberg's file IO would
    cut short (a ``#`` or ``?``, :func:`puffin.io.locations.cut_by_pyiceberg`: its files would
    land elsewhere).  A :class:`UsageError` naming the location either way."""
    from puffin.io.locations import cut_by_pyiceberg, local_path

    properties = table.properties
    for name, location in (
        ("location", table.location()),
        ("write.data.path", properties.get("write.data.path", "")),
        ("write.metadata.path", properties.get("write.metadata.path", "")),
    ):
        local = local_path(location) if location else None
        if local is not None and _read_only(local):
            raise UsageError(
                f"the table's {name} {local} is read-only (a read-only mount or folder): "
                "nothing was written; reading commands (verify, scan, stats show) work, "
                "writing ones need write access"
            )
        mark = cut_by_pyiceberg(location)
        if mark is not None:
            raise UsageError(
                f"the table's {name} {location!r} contains {mark!r}, where pyiceberg's file "
                "IO cuts a location short, so its files would be written outside the "
                "table: nothing was written; move the table to a location without '#' or '?'"
            )
    if catalog:
        require_writable_catalog(table.catalog)


def _read_only(path: str) -> bool:
    """Whether the nearest existing folder of ``path`` refuses writes to this process."""
    import os

    while path and not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return bool(path) and not os.access(path, os.W_OK)


def _read_only_catalog_error(table: Table) -> UsageError:
    from puffin.iceberg.catalog.sqlite import database_of, read_only_catalog

    found = database_of(table.catalog)
    return read_only_catalog(found[0] if found else "of the catalog")


def _table_file_missing(table: Table, exc: BaseException) -> bool:
    """Whether ``exc`` says a file under the table's locations is missing: the table moved
    on meanwhile, or an orphan cleanup has set the file aside for a moment (it puts back
    what a table references), so the attempt is worth repeating on the refreshed table."""
    from puffin.iceberg.metadata.table_locations import TableLocations

    location = missing_location(exc)
    return location is not None and TableLocations.of(table).owns(location)


def _gave_up(
    table: Table, exc: BaseException, tried: tuple[int, float], policy: CommitRetry
) -> Exception:
    """Why the loop ends after ``tried`` (attempts, seconds spent) lost attempts."""
    attempts, spent = tried
    if is_locked(exc):
        return locked_error(table.catalog, attempts)
    location = missing_location(exc)
    if location is not None:
        return TableFileNotFoundError(
            f"{location}, a file of the table, is missing ({attempts} attempts): nothing was "
            "committed and the files written for it were removed; "
            f"{table_command(table, 'verify')} lists every missing file"
        )
    raise_it = table_command(table, "alter", "--set-property",
                             f"{NUM_RETRIES}={2 * policy.num_retries + 1}")  # fmt: skip
    return CommitConflictError(
        f"the commit lost to concurrent commits {attempts} times in {spent:.1f} s "
        f"({policy.describe()}; last: {first_line(exc)}); nothing was committed and the "
        f"files written for it were removed. Run it again, or let commits retry longer: "
        f"{raise_it}"
    )


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is worth a retry: a lost race (a requirement failed), or an embedded
    catalog another process kept locked for longer than the connection's wait."""
    from pyiceberg.exceptions import CommitFailedException

    return isinstance(exc, CommitFailedException) or is_locked(exc)


def backoff(attempt: int, cap: float = MAX_BACKOFF_S) -> float:
    """Seconds to wait after losing ``attempt``: exponential up to ``cap``, with jitter
    against herds."""
    wait = BACKOFF_S * (2 ** min(attempt - 1, 16))
    return float(min(wait, cap) * (1 + random.random()))


def _store_failure(table: Table, exc: BaseException) -> StorageError:
    """The object store failed the write (after its client's own retries): said so, with
    what it means for the table."""
    return StorageError(
        f"the object store failed a request of this write after its client's retries "
        f"({first_line(exc)}); nothing was committed and the files written for it were "
        f"removed where the store allowed "
        f"({table_command(table, 'remove-orphans', '--delete')} removes any left); run it "
        "again, or give the client more retries (pyiceberg's s3.retry-strategy-impl, "
        "botocore's AWS_MAX_ATTEMPTS)"
    )


def _discard(table: Table, locations: Sequence[str], exc: BaseException) -> None:
    """Remove what a failed commit wrote, unless the catalog cannot tell whether the
    commit went through (``CommitStateUnknownException``): then the table may already
    reference the files, and removing them would break it."""
    from pyiceberg.exceptions import CommitStateUnknownException

    if not isinstance(exc, CommitStateUnknownException):
        remove_files(table, locations)


def main_branch_requirements(table: Table, snapshot: Snapshot | None) -> list[Any]:
    """Requirements of a commit based on ``snapshot``: same table, ``main`` not moved."""
    from pyiceberg.table.refs import MAIN_BRANCH
    from pyiceberg.table.update import AssertRefSnapshotId, AssertTableUUID

    return [
        AssertTableUUID(uuid=table.metadata.table_uuid),
        AssertRefSnapshotId.model_validate(
            {"ref": MAIN_BRANCH, "snapshot-id": None if snapshot is None else snapshot.snapshot_id}
        ),
    ]


def snapshot_updates(table: Table, snapshot: Snapshot) -> tuple[list[Any], list[Any]]:
    """(requirements, updates) adding ``snapshot`` as ``main``, if ``main`` has not moved."""
    from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
    from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate

    ref = {"ref-name": MAIN_BRANCH, "snapshot-id": snapshot.snapshot_id}
    ref_update = SetSnapshotRefUpdate.model_validate({"type": SnapshotRefType.BRANCH, **ref})
    return (
        main_branch_requirements(table, table.current_snapshot()),
        [AddSnapshotUpdate(snapshot=snapshot), ref_update],
    )
