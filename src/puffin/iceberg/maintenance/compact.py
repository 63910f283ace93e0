"""Compacting a table's data files (v2 or v3): :func:`rewrite_data_files`.

Data files that carry many deleted rows, and small files, are read (deletes applied, equality
deletes included, with each row's lineage as Iceberg Java reads it) and written again into files of
the target size, one partition at a time (:mod:`puffin.iceberg.writes.rewrite`); one ``replace``
snapshot swaps them in and drops the deletion vectors and position-delete files scoped to the files
it removed, and the equality delete files that no data file left is old enough for (Java 1.10.2's
compaction drops them too). On a v3 table row lineage is kept: each row's
``_row_id`` and ``_last_updated_sequence_number`` are written into the new files (field ids
2147483540 and 2147483539), which every v3 reader prefers to the ids a new file would inherit, so
Java reads the same ids before and after. (Java 1.10.2's ``rewrite_manifests`` renumbers them;
that is not copied.)

Statistics: a ``replace`` changes no row, so exact NDV sketches carry over to the new
snapshot as they are (:func:`~puffin.iceberg.update_table_statistics` treats a replace so).
Sketches that are upper bounds (rows were deleted since they were exact: a theta sketch
cannot take a value back out) are computed again from the live rows, which reads every
live row once and makes them exact.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.errors import InterruptedAfterCommit, UsageError
from puffin.iceberg.deletes.rows import require_v2_or_v3
from puffin.iceberg.maintenance.compact_commit import Rewritten, commit_rewritten, rebase
from puffin.iceberg.maintenance.file_groups import (
    Choice,
    FileGroup,
    choose_files,
    pack,
    planned_files,
    unapplied_equality_deletes,
)
from puffin.iceberg.metadata.commit_retry import commit_attempts
from puffin.iceberg.metadata.commits import (
    COMMITS_PER_ATTEMPT,
    REBASE_BACKOFF_S,
    Redos,
    with_retries,
)
from puffin.iceberg.metadata.concurrent import Since
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.metadata.manifests import remove_files
from puffin.iceberg.scan.delete_filter import DeleteFilter
from puffin.iceberg.scan.plan import PlannedFile
from puffin.iceberg.scan.row_filter import check_where
from puffin.iceberg.writes.append import statistics_left
from puffin.iceberg.writes.rewrite import Groups, rewrite_files, target_file_size
from puffin.io.stores import says_store_failures

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["CompactOptions", "CompactResult", "Rewriter", "compact", "rewrite_data_files"]

#: Java's ``rewrite_data_files`` defaults: ``delete-ratio-threshold`` (0.3) and
#: ``min-input-files`` (5).
DEFAULT_MIN_DELETED_FRACTION = 0.3
DEFAULT_MIN_INPUT_FILES = 5


@dataclass(frozen=True)
class CompactResult:
    """What :func:`rewrite_data_files` did (``snapshot_id`` ``None``: nothing to do)."""

    table: Table
    snapshot_id: int | None
    #: data files rewritten (removed) and written
    rewritten_files: int
    added_files: int
    #: live rows written again, and deleted rows dropped with their files
    rows: int
    dropped_deleted_rows: int
    #: deletion vectors (and position-delete files scoped to one file) removed with the
    #: data files they deleted rows of
    removed_vectors: int
    bytes_before: int
    bytes_after: int
    #: what became of the statistics: ``"none"`` (the table has none, or not asked),
    #: ``"carried"`` (unchanged rows: the parent's sketches), ``"exact"`` (computed again)
    statistics: str = "none"
    attempts: int = 1
    #: equality delete files removed: none of the files left is theirs to delete from
    removed_equality_deletes: int = 0
    #: snapshots committed (more than one with partial progress), and file groups whose
    #: batch failed (with partial progress; their files are left as they were)
    commits: int = 1
    failed_groups: int = 0
    #: the first failed batch's error, one line ("" if none failed)
    first_failure: str = ""

    @classmethod
    def nothing(cls, table: Table, attempts: int) -> CompactResult:
        """Nothing to rewrite: no snapshot, or no file the options choose."""
        return cls(table, None, 0, 0, 0, 0, 0, 0, 0, attempts=attempts)


#: What writes the chosen files again: ``(table, snapshot, deletes, groups, target size,
#: written) -> the new files' records``, each new file listed in ``written`` once written
#: (:func:`~puffin.iceberg.writes.rewrite.rewrite_files` in this process; Spark executors
#: for :func:`puffin.spark.rewrite_data_files`).
Rewriter = Callable[["Table", "Snapshot", DeleteIndex, Groups, int, list[str]], list["DataFile"]]


@dataclass(frozen=True)
class CompactOptions:
    """:func:`rewrite_data_files`'s options, checked (see there)."""

    where: str | BooleanExpression | None = None
    min_deleted_fraction: float = DEFAULT_MIN_DELETED_FRACTION
    min_input_files: int = DEFAULT_MIN_INPUT_FILES
    target_file_size_bytes: int | None = None
    statistics: str = "update"
    max_attempts: int | None = None
    progress: bool | None = False
    partial_progress_commits: int | None = None

    def __post_init__(self) -> None:
        _check(self.min_deleted_fraction, self.min_input_files, self.target_file_size_bytes,
               self.statistics)  # fmt: skip
        if self.partial_progress_commits is not None and self.partial_progress_commits < 1:
            raise UsageError(
                f"partial_progress_commits must be at least 1: {self.partial_progress_commits}"
            )


@says_store_failures("rewrite_data_files")
def rewrite_data_files(
    table: Table,
    *,
    where: str | BooleanExpression | None = None,
    min_deleted_fraction: float = DEFAULT_MIN_DELETED_FRACTION,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    target_file_size_bytes: int | None = None,
    statistics: str = "update",
    max_attempts: int | None = None,
    progress: bool | None = False,
    partial_progress_commits: int | None = None,
) -> CompactResult:
    """Rewrite the data files with deleted rows (and small files) without those rows.

    A live data file is rewritten when at least ``min_deleted_fraction`` of its rows are
    deleted; files smaller than 75 % of the target size (``target_file_size_bytes``, else
    the table's ``write.target-file-size-bytes``, else 512 MiB) are rewritten when a
    partition has ``min_input_files`` of them, or joins a rewrite of its partition anyway.
    ``where`` limits it to files that may hold matching rows. Rows keep their ``_row_id``
    and ``_last_updated_sequence_number``. One ``replace`` snapshot; when another writer
    commits first, the new files are committed on the table as it then is, unless that
    commit touched what they replace (:mod:`.compact_commit`; on v3 a new deletion vector of
    a rewritten file is carried into the new files); then the files are written again, as
    often as the table's ``commit.retry.*`` properties allow attempts (``max_attempts``:
    that many). ``statistics="update"`` keeps the table's statistics with the
    new snapshot (see the module docstring); ``"none"`` leaves them.

    ``partial_progress_commits=N`` commits the file groups (:mod:`.file_groups`) in up to N
    snapshots, each as soon as its files are written, as Java's ``partial-progress.enabled``
    with ``partial-progress.max-commits``: a failed batch leaves its files as they were and
    the others go on (``failed_groups``); if none commits, its error is raised.

    Example::

        result = rewrite_data_files(table, min_deleted_fraction=0.1)
        print(result.rewritten_files, "files ->", result.added_files)
    """
    options = CompactOptions(
        where, min_deleted_fraction, min_input_files, target_file_size_bytes, statistics,
        max_attempts, progress, partial_progress_commits,
    )  # fmt: skip

    def here(
        table: Table, snapshot: Snapshot, deletes: DeleteIndex, groups: Groups, target: int,
        written: list[str],
    ) -> list[DataFile]:  # fmt: skip
        return rewrite_files(table, snapshot, deletes, groups, target, written, progress=progress)

    return compact(table, here, options)


def compact(table: Table, rewriter: Rewriter, options: CompactOptions) -> CompactResult:
    """:func:`rewrite_data_files` with the files written by ``rewriter``: the files chosen
    and the commit are the same wherever they are written."""
    require_v2_or_v3(table, "rewrite_data_files")
    row_filter = None if options.where is None else check_where(table, options.where)
    target = options.target_file_size_bytes or target_file_size(table)

    def choose(table: Table, snapshot: Snapshot) -> tuple[DeleteFilter, list[PlannedFile], Choice]:
        index = DeleteFilter(table, snapshot)
        planned = planned_files(table, row_filter)
        fraction, inputs = options.min_deleted_fraction, options.min_input_files
        return index, planned, choose_files(index, planned, fraction, inputs, target)

    def attempt(table: Table, only: frozenset[str] | None = None) -> CompactResult:
        """One compaction (or one batch of one), its files written once and committed on
        the table as it is, written again only if a concurrent commit touched what they
        replace (:mod:`.compact_commit`)."""
        work: list[Rewritten] = []
        data_files: list[str] = []  # kept across lost races, removed if the job fails
        attempts = commit_attempts(table, options.max_attempts)
        redos = Redos(attempts, "compaction")
        known: list[Since | None] = [None]  # the commits since the work started, read once

        def once(table: Table, number: int, written: list[str]) -> CompactResult:
            carried: tuple[DataFile, ...] = ()
            if work:
                check = rebase(table, work[0], written, known[0])
                known[0] = check.since
                if check.conflict is not None:
                    known[0] = None
                    redos.again(check.conflict)
                    remove_files(table, data_files)  # rewritten on the table as it now is
                    data_files.clear()
                    work.clear()
                carried = check.carried
            snapshot = table.current_snapshot()
            if not work and snapshot is not None:
                index, planned, choice = choose(table, snapshot)
                choice = choice if only is None else choice.among(only)
                if choice.groups:
                    added = rewriter(table, snapshot, index, choice.groups, target, data_files)
                    whole = planned if row_filter is None else None  # ``where`` left some out
                    dropped = unapplied_equality_deletes(table, snapshot, choice, whole)
                    work.append(Rewritten.of(table, snapshot, choice, added, dropped, data_files))
            if not work:
                return CompactResult.nothing(table, number)
            return _commit(table, work[0], written, number, carried)

        commits = attempts * COMMITS_PER_ATTEMPT
        return with_retries(
            table, once, commits, kept=data_files, max_backoff=REBASE_BACKOFF_S, first_turn=False
        )

    snapshot = table.current_snapshot()
    if options.partial_progress_commits is None or snapshot is None:
        result = attempt(table)
    else:
        groups = pack(choose(table, snapshot)[2].groups, target)
        result = _in_batches(table, attempt, groups, options)
    if result.snapshot_id is None or options.statistics == "none":
        return result
    try:
        return _with_statistics(result, options.progress)
    except InterruptedAfterCommit as exc:  # the statistics' own commit landed
        raise InterruptedAfterCommit(result.snapshot_id, result.table) from exc
    except KeyboardInterrupt as exc:
        left = statistics_left(result.table)
        raise InterruptedAfterCommit(result.snapshot_id, result.table, left) from exc


def _in_batches(
    table: Table,
    attempt: Callable[..., CompactResult],
    groups: list[FileGroup],
    options: CompactOptions,
) -> CompactResult:
    """The file ``groups`` committed in up to ``partial_progress_commits`` batches, each an
    attempt of its own among its files (chosen again on the table as it then is)."""
    assert options.partial_progress_commits is not None
    size = math.ceil(len(groups) / options.partial_progress_commits) if groups else 1
    batches = [groups[i : i + size] for i in range(0, len(groups), size)]
    results: list[CompactResult] = []
    failed: list[tuple[int, BaseException]] = []
    committed = 0  # file groups in the batches committed
    for batch in batches:
        only = frozenset(p.path for _, files in batch for p in files)
        try:
            done = attempt(table, only)
        except InterruptedAfterCommit as exc:  # this batch's commit landed
            left = f"{len(groups) - committed - len(batch)} file groups not compacted"
            raise InterruptedAfterCommit(exc.snapshot_id, exc.table, left) from exc
        except KeyboardInterrupt as exc:
            if not results:
                raise
            left = f"{len(groups) - committed} file groups not compacted"
            raise InterruptedAfterCommit(results[-1].snapshot_id, results[-1].table,
                                         left) from exc  # fmt: skip
        except Exception as exc:  # Java's partial progress goes on with the other groups
            failed.append((len(batch), exc))
            continue
        if done.snapshot_id is not None:
            results.append(done)
            table = done.table
            committed += len(batch)
    if not results:
        if failed:
            raise failed[0][1]
        return dataclasses.replace(CompactResult.nothing(table, 1), commits=0)
    summed = _summed(results, sum(n for n, _ in failed))
    if not failed:
        return summed
    error = failed[0][1]
    line = (str(error).strip().splitlines() or [""])[0]
    return dataclasses.replace(summed, first_failure=f"{type(error).__name__}: {line}")


def _summed(results: list[CompactResult], failed_groups: int) -> CompactResult:
    """The batches' results as one: the last snapshot, the counts added up."""
    last = results[-1]
    counted = (
        "rewritten_files", "added_files", "rows", "dropped_deleted_rows", "removed_vectors",
        "bytes_before", "bytes_after", "removed_equality_deletes",
    )  # fmt: skip
    sums = {name: sum(getattr(r, name) for r in results) for name in counted}
    attempts = max(r.attempts for r in results)
    return dataclasses.replace(
        last, **sums, attempts=attempts, commits=len(results), failed_groups=failed_groups
    )


def _check(fraction: float, inputs: int, target: int | None, statistics: str) -> None:
    if not 0.0 <= fraction <= 1.0:
        raise UsageError(f"min_deleted_fraction must lie in [0, 1]: {fraction}")
    if inputs < 1:
        raise UsageError(f"min_input_files must be at least 1: {inputs}")
    if target is not None and target < 1:
        raise UsageError(f"the target file size must be positive: {target}")
    if statistics not in ("update", "none"):
        raise UsageError(f"statistics must be 'update' or 'none', got {statistics!r}")


def _commit(
    table: Table,
    work: Rewritten,
    written: list[str],
    number: int,
    carried: tuple[DataFile, ...] = (),
) -> CompactResult:
    """``work`` committed on ``table`` as it is (with the ``carried`` vectors), and what it
    did."""
    committed, new, vectors = commit_rewritten(table, work, written, carried)
    chosen = [p for files in work.choice.groups.values() for p in files]
    return CompactResult(
        committed,
        new.snapshot_id,
        len(chosen),
        len(work.added),
        sum(int(f.record_count) for f in work.added),
        sum(work.choice.deleted.values()),
        vectors,
        sum(p.data_file.file_size_in_bytes for p in chosen),
        sum(int(f.file_size_in_bytes) for f in work.added),
        attempts=number,
        removed_equality_deletes=len(work.dropped),
    )


def _with_statistics(result: CompactResult, progress: bool | None) -> CompactResult:
    """The new snapshot's statistics: the parent's sketches carried when they were exact
    (a replace changes no row), computed again from the live rows when they were upper
    bounds (a full computation applies every delete: exact)."""
    from puffin.iceberg.statistics.compute import compute_table_statistics
    from puffin.iceberg.statistics.files import NDV_UPPER_BOUND, read_table_statistics
    from puffin.iceberg.statistics.update import (
        base_statistics,
        removes_rows,
        update_table_statistics,
    )

    table = result.table
    snapshot = table.current_snapshot()
    if snapshot is None or snapshot.snapshot_id != result.snapshot_id:
        return result  # another writer's snapshot is current: its writer keeps statistics
    base, since = base_statistics(table, snapshot)
    if base is None:
        return result
    columns = read_table_statistics(table, snapshot_id=base.snapshot_id).columns
    upper = any(removes_rows(s) for s in since) or any(
        c.blob.properties.get(NDV_UPPER_BOUND) == "true" for c in columns
    )
    if upper:
        compute_table_statistics(table, progress=progress)
    else:
        update_table_statistics(table, progress=progress)
    return dataclasses.replace(
        result, table=table.refresh(), statistics="exact" if upper else "carried"
    )
