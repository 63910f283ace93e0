"""Rewriting a v3 table's delete files: :func:`rewrite_deletion_vectors`.

Each ``delete_rows`` writes one Puffin file, so after many deletes the live deletion vectors
of a snapshot sit in many files, each opened by every reader. As Iceberg Java's
``rewrite_position_delete_files`` does on a v3 table, this writes every live deleted position
again, one vector per data file, into as few Puffin files as the size target allows, and
commits one ``replace`` snapshot that swaps them for every live delete file: deletion vectors,
Parquet position-delete files (turned into vectors), and vectors of data files that are no
longer live (dropped). Equality delete files are left as they are
(:func:`~puffin.iceberg.convert_equality_deletes` turns them into vectors). No data file
changes and no row id changes; the replaced files stay
referenced by older snapshots until :func:`~puffin.iceberg.expire_snapshots` removes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.iceberg.deletes.merge import live_positions
from puffin.iceberg.deletes.rows import require_v3
from puffin.iceberg.deletes.vectors import write_vectors
from puffin.iceberg.metadata.commits import MAX_ATTEMPTS, with_retries
from puffin.iceberg.metadata.delete_files import (
    DeleteIndex,
    is_equality_delete,
    live_delete_files,
)
from puffin.iceberg.metadata.manifests import DeleteFileKey
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.plan import plan_files

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.blobs.dv.format import DeletionVector
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["RewriteDeletesResult", "rewrite_deletion_vectors"]

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
    #: vectors written, one per data file with deleted rows
    vectors: int
    #: vectors and position-delete files that only deleted rows of data files no longer live
    dropped_dangling: int
    #: deleted rows, the same before and after
    deleted_rows: int
    attempts: int = 1


@dataclass(frozen=True)
class _Plan:
    vectors: dict[str, DeletionVector]  # by data file path: built once, sized and written
    groups: list[list[str]]
    live: dict[DeleteFileKey, DataFile]
    dangling: int


def rewrite_deletion_vectors(
    table: Table,
    *,
    target_file_size_bytes: int | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    progress: Callable[[str], None] | None = None,
) -> RewriteDeletesResult:
    """Rewrite the current snapshot's live deletes into as few Puffin files as fit the target.

    Every data file with deleted rows gets one vector holding all of them (from its DV and
    any Parquet position-delete files); files are filled up to ``target_file_size_bytes``
    (default: the table's ``write.delete.target-file-size-bytes``, else 64 MiB). The commit
    is one ``replace`` snapshot, retried on a lost race against the table as it is then.
    A table whose deletes already sit in that few files, with no position-delete file and
    no vector of a removed data file, is left as it is.

    Example::

        result = rewrite_deletion_vectors(table)
        print(result.files_before, "->", result.files_after)
    """
    require_v3(table, "rewrite_deletion_vectors")
    target = _target_size(table, target_file_size_bytes)
    say = progress or (lambda message: None)

    def attempt(table: Table, number: int, written: list[str]) -> RewriteDeletesResult:
        snapshot = table.current_snapshot()
        if snapshot is None:
            return RewriteDeletesResult(table, None, 0, 0, 0, 0, 0, number)
        planned = plan_files(table, snapshot, equality=True)  # equality deletes stay as they are
        plan = _plan(table, snapshot, planned, target)
        before = len({key[0] for key in plan.live})
        deleted = sum(len(dv) for dv in plan.vectors.values())
        unchanged = RewriteDeletesResult(table, None, before, before, 0, 0, deleted, number)
        if not _worth_it(plan):
            return unchanged
        say(f"writing {len(plan.vectors)} vectors into {len(plan.groups)} Puffin file(s)")
        added: list[DataFile] = []
        for group in plan.groups:
            entries, files = write_vectors(table, planned, {p: plan.vectors[p] for p in group})
            written.append(str(entries[0].path))
            added.extend(files)
        committed, new = commit_snapshot(
            table, written, deletes=added, superseded=set(plan.live), operation="replace"
        )
        return RewriteDeletesResult(
            committed,
            new.snapshot_id,
            before,
            len(plan.groups),
            len(plan.vectors),
            plan.dangling,
            deleted,
            number,
        )

    return with_retries(table, attempt, max_attempts)


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


def _plan(table: Table, snapshot: Snapshot, planned: list[PlannedFile], target: int) -> _Plan:
    """Every live data file's deleted positions as one vector, grouped into files of about
    ``target`` bytes (a vector's blob is sized by serializing it), and the live delete files."""
    from puffin.blobs.dv.format import DeletionVector

    index = DeleteIndex(table, snapshot)
    vectors: dict[str, DeletionVector] = {}
    for p in planned:
        if p.delete_files:
            found = live_positions(index, p, positions_only=True)
            if len(found):
                vectors[p.path] = DeletionVector(found)
    groups: list[list[str]] = []
    size = target
    for path, dv in vectors.items():
        blob = len(dv.serialize())
        if size + blob > target and (not groups or groups[-1]):
            groups.append([])
            size = 0
        groups[-1].append(path)
        size += blob
    live = {
        k: d for k, d in live_delete_files(table, snapshot).items() if not is_equality_delete(d)
    }
    used = {str(d.file_path) for p in planned for d in p.delete_files}
    dangling = sum(
        1
        for (path, ref), df in live.items()
        if (ref is not None and ref not in vectors) or (ref is None and path not in used)
    )
    return _Plan(vectors, groups, live, dangling)


def _worth_it(plan: _Plan) -> bool:
    """Whether a rewrite changes anything: fewer Puffin files, Parquet position deletes to
    turn into vectors, or vectors of removed data files to drop."""
    from pyiceberg.manifest import FileFormat

    if plan.dangling:
        return True
    if any(df.file_format != FileFormat.PUFFIN for df in plan.live.values()):
        return True
    return len({key[0] for key in plan.live}) > len(plan.groups)
