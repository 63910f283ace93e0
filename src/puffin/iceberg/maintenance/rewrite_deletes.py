"""Rewriting a table's position deletes: :func:`rewrite_position_delete_files`.

Each ``delete_rows`` writes delete files of its own, so after many deletes a snapshot's
deleted positions sit in many files, each opened by every reader. As Iceberg Java's
``rewrite_position_delete_files`` does, this writes every live deleted position again and
commits one ``replace`` snapshot that swaps the new files for every live position delete:

* on v3, one deletion vector per data file, in as few Puffin files as the size target allows;
  Parquet position-delete files become vectors;
* on v2, Parquet position-delete files as the table's ``write.delete.granularity`` groups
  them (one per data file, or one per partition), each holding that file's or partition's
  positions once, sorted.

Deletes of data files that are no longer live are dropped (dangling). Equality delete files
are left as they are (:func:`~puffin.iceberg.convert_equality_deletes` converts them). No data
file changes and no row id changes; the replaced files stay referenced by older snapshots
until :func:`~puffin.iceberg.expire_snapshots` removes them.
:func:`rewrite_deletion_vectors` is this job's earlier name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.iceberg.deletes.merge import live_positions
from puffin.iceberg.deletes.position_files import delete_granularity, write_position_deletes
from puffin.iceberg.deletes.rows import require_v2_or_v3
from puffin.iceberg.deletes.vectors import write_vectors
from puffin.iceberg.metadata.commit_retry import commit_attempts
from puffin.iceberg.metadata.commits import (
    COMMITS_PER_ATTEMPT,
    REBASE_BACKOFF_S,
    Redos,
    with_retries,
)
from puffin.iceberg.metadata.delete_files import (
    DeleteIndex,
    is_equality_delete,
    live_delete_files,
)
from puffin.iceberg.metadata.manifests import DeleteFileKey, remove_files
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.delete_file_index import partition_key
from puffin.iceberg.scan.plan import plan_files

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.blobs.dv.format import DeletionVector
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = [
    "PositionReader",
    "RewriteDeletesResult",
    "positions_here",
    "rewrite_deletion_vectors",
    "rewrite_position_delete_files",
]

#: What reads every live data file's deleted positions from its vectors and position-delete
#: files: ``(table, snapshot, planned) -> {data file path: sorted positions}``, files
#: without any left out (:func:`positions_here`; Spark's executors for
#: :func:`puffin.spark.rewrite_position_delete_files`).
PositionReader = Callable[
    ["Table", "Snapshot", "list[PlannedFile]"], "dict[str, npt.NDArray[np.int64]]"
]


def positions_here(
    table: Table, snapshot: Snapshot, planned: list[PlannedFile]
) -> dict[str, npt.NDArray[np.int64]]:
    """:data:`PositionReader` in this process."""
    index = DeleteIndex(table, snapshot)
    positions = {}
    for p in planned:
        if p.delete_files:
            found = live_positions(index, p, positions_only=True)
            if len(found):
                positions[p.path] = found
    return positions

#: Java's table property and default for the size of a delete file (64 MB).
TARGET_SIZE_PROPERTY = "write.delete.target-file-size-bytes"
DEFAULT_TARGET_SIZE = 64 * 1024 * 1024


@dataclass(frozen=True)
class RewriteDeletesResult:
    """What :func:`rewrite_deletion_vectors` did (``snapshot_id`` ``None``: nothing to do)."""

    table: Table
    snapshot_id: int | None
    #: live delete files before and after (Puffin files and Parquet position-delete files)
    files_before: int
    files_after: int
    #: data files with deleted rows: one vector each (v3), or their positions rewritten (v2)
    vectors: int
    #: vectors and position-delete files that only deleted rows of data files no longer live
    dropped_dangling: int
    #: deleted rows, the same before and after
    deleted_rows: int
    attempts: int = 1


@dataclass(frozen=True)
class _Plan:
    positions: dict[str, npt.NDArray[np.int64]]  # every deleted position, by data file path
    vectors: dict[str, DeletionVector]  # v3: those positions as vectors, built once
    groups: list[list[str]]  # v3: the vectors of each Puffin file
    live: dict[DeleteFileKey, DataFile]
    dangling: int
    after: int  # the delete files the rewrite would leave


def rewrite_position_delete_files(
    table: Table,
    *,
    target_file_size_bytes: int | None = None,
    max_attempts: int | None = None,
    progress: Callable[[str], None] | None = None,
    positions: PositionReader = positions_here,
) -> RewriteDeletesResult:
    """Rewrite the current snapshot's live position deletes into as few files as fit.

    On v3 every data file with deleted rows gets one vector holding all of them (from its
    DV and any Parquet position-delete files), in Puffin files filled up to
    ``target_file_size_bytes`` (default: the table's
    ``write.delete.target-file-size-bytes``, else 64 MiB); on v2 the positions go into
    Parquet position-delete files grouped as ``write.delete.granularity`` says. The commit
    is one ``replace`` snapshot; when another writer commits first, the new files are
    committed on the table as it then is (a data file that commit gave a new vector keeps
    it), and written again only when it removed a file they replace. A
    table whose deletes already sit in that few files, with nothing to convert and no
    delete of a removed data file, is left as it is. ``positions`` reads the deleted
    positions (in this process by default).

    Example::

        result = rewrite_position_delete_files(table)
        print(result.files_before, "->", result.files_after)
    """
    require_v2_or_v3(table, "rewrite_position_delete_files")
    target = _target_size(table, target_file_size_bytes)
    attempts = commit_attempts(table, max_attempts)
    job = _Job(target, progress or (lambda message: None), positions, attempts)
    commits = attempts * COMMITS_PER_ATTEMPT
    return with_retries(
        table, job.attempt, commits, kept=job.files, max_backoff=REBASE_BACKOFF_S, first_turn=False
    )


class _Job:
    """One rewrite: its delete files written once and committed on the table as it is,
    written again only when a concurrent commit conflicts with them (:func:`_rebased`)."""

    def __init__(
        self, target: int, say: Callable[[str], None], positions: PositionReader, attempts: int
    ) -> None:
        self.target, self.say, self.positions = target, say, positions
        self.work: _Rewrite | None = None
        self.files: list[str] = []  # the new delete files: kept across lost races
        self.redos = Redos(attempts, "delete-file rewrite")

    def attempt(self, table: Table, number: int, written: list[str]) -> RewriteDeletesResult:
        added = self._rebase(table)
        snapshot = table.current_snapshot()
        if self.work is None:
            if snapshot is None:
                return RewriteDeletesResult(table, None, 0, 0, 0, 0, 0, number)
            unchanged = self._start(table, snapshot, number)
            if unchanged is not None:
                return unchanged
        assert self.work is not None
        plan = self.work.plan
        added = self.work.added if added is None else added
        live = live_delete_files(table, snapshot) if snapshot is not None else {}
        if not added and not set(plan.live) & set(live):
            return RewriteDeletesResult(table, None, 0, 0, 0, 0, 0, number)  # done meanwhile
        committed, new = commit_snapshot(
            table, written, deletes=added, superseded=set(plan.live), operation="replace"
        )
        counts = (
            len({key[0] for key in plan.live}),
            len({str(f.file_path) for f in added}),
            len(plan.positions),
            plan.dangling,
            sum(len(p) for p in plan.positions.values()),
        )
        return RewriteDeletesResult(committed, new.snapshot_id, *counts, attempts=number)

    def _rebase(self, table: Table) -> list[DataFile] | None:
        """The files to commit after a lost race (``None`` before the first commit, or when
        the work is to be done again: then it is dropped here)."""
        if self.work is None:
            return None
        added = _rebased(table, self.work, self.files)
        if added is None:  # a concurrent commit removed what it replaces: again
            self.redos.again("a concurrent commit removed or added delete files it replaces")
            remove_files(table, self.files)
            self.files.clear()
            self.work = None
        return added

    def _start(
        self, table: Table, snapshot: Snapshot, number: int
    ) -> RewriteDeletesResult | None:
        """The work done on ``snapshot``; what to return instead when not worth it."""
        planned = plan_files(table, snapshot, equality=True)  # equality deletes stay
        positions = self.positions(table, snapshot, planned)
        plan = _plan(table, snapshot, planned, self.target, positions)
        if not _worth_it(plan):
            before = len({key[0] for key in plan.live})
            deleted = sum(len(p) for p in plan.positions.values())
            return RewriteDeletesResult(table, None, before, before, 0, 0, deleted, number)
        added = _write(table, planned, plan, self.files, self.say)
        self.work = _Rewrite(snapshot, plan, added)
        return None


@dataclass(frozen=True)
class _Rewrite:
    """A rewrite's work, done once: the plan read at ``start`` and the delete files written."""

    start: Snapshot
    plan: _Plan
    added: list[DataFile]


def _rebased(table: Table, work: _Rewrite, files: list[str]) -> list[DataFile] | None:
    """The new delete files to commit on ``table`` as it now is, after the commits since the
    rewrite read the table; ``None`` when one of those conflicts with it (then it is done
    again). On v3 a data file that a concurrent commit removed, or gave a new vector (merged
    from the one it replaces, so newer and complete), keeps what that commit left: its
    vector here is dropped, and a Puffin file left with none is removed from ``files`` (a
    Parquet position-delete file added meanwhile was merged with nothing: a conflict). On
    v2 position-delete files only add up, so a concurrent one stands beside the new ones;
    but a file the rewrite replaces, or a data file it writes positions of, must not have
    been removed meanwhile."""
    from pyiceberg.manifest import FileFormat

    from puffin.iceberg.metadata.concurrent import commits_since, referenced_file

    since = commits_since(table, work.start)
    if since is None:
        return None
    if table.metadata.format_version < 3:
        if since.removed_deletes & set(work.plan.live):
            return None
        return None if since.removed_data & set(work.plan.positions) else work.added
    skip = set(since.removed_data)
    for d in since.added_deletes:
        if is_equality_delete(d):
            continue
        ref = referenced_file(d)
        if d.file_format != FileFormat.PUFFIN and (ref is None or ref in work.plan.positions):
            return None  # Parquet positions not merged with what this replaces
        if ref is not None:
            skip.add(ref)
    kept = [d for d in work.added if referenced_file(d) not in skip]
    used = {str(d.file_path) for d in kept}
    unused = [path for path in files if path not in used]
    remove_files(table, unused)
    files[:] = [path for path in files if path in used]
    return kept


def rewrite_deletion_vectors(
    table: Table,
    *,
    target_file_size_bytes: int | None = None,
    max_attempts: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> RewriteDeletesResult:
    """:func:`rewrite_position_delete_files`, by the name it had when it served v3 only."""
    return rewrite_position_delete_files(
        table,
        target_file_size_bytes=target_file_size_bytes,
        max_attempts=max_attempts,
        progress=progress,
    )


def _write(
    table: Table,
    planned: list[PlannedFile],
    plan: _Plan,
    written: list[str],
    say: Callable[[str], None],
) -> list[DataFile]:
    """The new delete files: Puffin files of vectors (v3), or position-delete files (v2)."""
    if table.metadata.format_version < 3:
        say(f"writing the positions of {len(plan.positions)} data file(s)")
        return write_position_deletes(table, planned, plan.positions, written)
    say(f"writing {len(plan.positions)} vectors into {len(plan.groups)} Puffin file(s)")
    added: list[DataFile] = []
    for group in plan.groups:
        entries, files = write_vectors(table, planned, {p: plan.vectors[p] for p in group})
        written.append(str(entries[0].path))
        added.extend(files)
    return added


def _target_size(table: Table, given: int | None) -> int:
    from puffin.errors import UsageError

    size = (
        given
        if given is not None
        else int(table.metadata.properties.get(TARGET_SIZE_PROPERTY, DEFAULT_TARGET_SIZE))
    )
    if size < 1:
        raise UsageError(f"the target file size must be a positive number of bytes: {size}")
    return size


def _plan(
    table: Table,
    snapshot: Snapshot,
    planned: list[PlannedFile],
    target: int,
    positions: dict[str, npt.NDArray[np.int64]],
) -> _Plan:
    """Every live data file's deleted ``positions`` (on v3 as one vector each, grouped into
    Puffin files of about ``target`` bytes: a vector's blob is sized by serializing it), the
    live position delete files, and how many are dangling."""
    from puffin.blobs.dv.format import DeletionVector

    vectors: dict[str, DeletionVector] = {}
    groups: list[list[str]] = []
    if table.metadata.format_version >= 3:
        vectors = {path: DeletionVector(found) for path, found in positions.items()}
        groups = _grouped(vectors, target)
    live = {
        k: d for k, d in live_delete_files(table, snapshot).items() if not is_equality_delete(d)
    }
    used = {str(d.file_path) for p in planned for d in p.delete_files}
    dangling = sum(
        1
        for (path, ref), df in live.items()
        if (ref is not None and ref not in positions) or (ref is None and path not in used)
    )
    v3 = table.metadata.format_version >= 3
    after = len(groups) if v3 else _files_after(table, planned, positions)
    return _Plan(positions, vectors, groups, live, dangling, after)


def _grouped(vectors: dict[str, DeletionVector], target: int) -> list[list[str]]:
    groups: list[list[str]] = []
    size = target
    for path, dv in vectors.items():
        blob = len(dv.serialize())
        if size + blob > target and (not groups or groups[-1]):
            groups.append([])
            size = 0
        groups[-1].append(path)
        size += blob
    return groups


def _files_after(
    table: Table, planned: list[PlannedFile], positions: dict[str, npt.NDArray[np.int64]]
) -> int:
    """The position-delete files a v2 rewrite writes: one per data file or per partition."""
    if delete_granularity(table) == "file":
        return len(positions)
    parts = {partition_key(p.data_file) for p in planned if p.path in positions}
    return len(parts)


def _worth_it(plan: _Plan) -> bool:
    """Whether a rewrite changes anything: fewer delete files, Parquet position deletes to
    turn into vectors (v3), or deletes of removed data files to drop."""
    from pyiceberg.manifest import FileFormat

    if plan.dangling:
        return True
    if plan.vectors and any(df.file_format != FileFormat.PUFFIN for df in plan.live.values()):
        return True
    return len({key[0] for key in plan.live}) > plan.after
