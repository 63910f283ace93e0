"""Row-level deletes: deletion vectors on v3, and on v2 what ``write.delete.mode`` says.

:func:`delete_rows` finds the rows a filter matches in each live data file and merges them with
the file's live deletes. On a v3 table it writes one Puffin file and commits one ``delete``
snapshot whose delete manifest points at the new vectors and drops the ones they supersede: no
data file is rewritten. On a v2 table, ``merge-on-read`` writes Parquet position-delete files of
the rows not deleted yet (:mod:`.position_files`), and ``copy-on-write`` (the default, as in
Iceberg Java) writes each touched data file again without its deleted rows
(:mod:`puffin.iceberg.writes.rewrite`) in one ``overwrite`` snapshot.
:func:`commit_deletion_vectors` does the same for positions computed elsewhere (Spark).

Commits go through :func:`puffin.iceberg.metadata.commits.with_retries`: when another writer
wins, the table is refreshed, the deletes are merged again (:mod:`.merge`) with what is live
now and the commit is retried; files written for a failed attempt are removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.errors import UnsupportedTableError, UsageError
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.deletes.merge import MergedDeletes, Positions, live_rows, merge_deletes
from puffin.iceberg.deletes.position_files import delete_granularity, write_position_deletes
from puffin.iceberg.deletes.vectors import data_file_path, write_vectors
from puffin.iceberg.metadata.commits import with_retries
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.delete_filter import DeleteFilter
from puffin.iceberg.scan.matching import matching_by_file
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.scan.row_filter import bind_checked, check_where
from puffin.iceberg.writes.rewrite import (
    rewrite_files,
    scoped_position_deletes,
    target_file_size,
)
from puffin.io.stores import says_store_failures
from puffin.support.progress import Progress

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.blobs.dv.files import DeletionVectorEntry
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = [
    "DeleteResult",
    "commit_deletion_vectors",
    "delete_mode",
    "delete_rows",
    "require_v2_or_v3",
]

DELETE_MODE = "write.delete.mode"


@dataclass(frozen=True)
class DeleteResult:
    """What a delete committed: rows newly deleted, the vectors written, the new snapshot.

    ``deleted_rows`` counts rows that were live before (rows deleted already are not counted
    again); ``snapshot_id`` is ``None`` when nothing matched and nothing was committed.
    """

    deleted_rows: int
    vectors: tuple[DeletionVectorEntry, ...]
    snapshot_id: int | None
    table: Table
    attempts: int = 1
    #: on a v2 table: the Parquet position-delete files written (merge-on-read), or the
    #: data files rewritten without the deleted rows and the files written (copy-on-write)
    position_delete_files: tuple[str, ...] = ()
    rewritten_files: tuple[str, ...] = ()
    added_files: tuple[str, ...] = ()

    @property
    def puffin_path(self) -> str | None:
        """The Puffin file holding the new vectors (``None`` when nothing was committed)."""
        return self.vectors[0].path if self.vectors else None


def delete_mode(table: Table) -> str:
    """How deletes are written: ``"dv"`` on v3; on v2 the table's ``write.delete.mode``,
    ``"merge-on-read"`` (position-delete files) or ``"copy-on-write"`` (Java's default)."""
    if table.metadata.format_version >= 3:
        return "dv"
    mode = table.metadata.properties.get(DELETE_MODE, "copy-on-write").strip().lower()
    if mode not in ("merge-on-read", "copy-on-write"):
        fix = table_command(table, "alter", "--set-property", DELETE_MODE, "merge-on-read")
        raise UsageError(
            f"table property {DELETE_MODE}={mode!r} is neither 'merge-on-read' nor "
            f"'copy-on-write': set it to one of them ({fix}, or copy-on-write)"
        )
    return mode


def require_v2_or_v3(table: Table, action: str) -> None:
    """Refuse ``action`` on a v1 table (no delete files; its snapshots are not written here)."""
    if table.metadata.format_version < 2:
        raise UnsupportedTableError(
            f"{action} needs an Iceberg v2 or v3 table; this table is format version 1: "
            f"upgrade it first ({table_command(table, 'upgrade')}, puffin.iceberg.upgrade_to_v3)"
        )


@says_store_failures("delete_rows")
def delete_rows(
    table: Table,
    where: BooleanExpression | str,
    *,
    max_attempts: int | None = None,
    allow_all_rows: bool = True,
    progress: bool | None = False,
) -> DeleteResult:
    """Delete the rows matching ``where`` with deletion vectors, in one ``delete`` snapshot.

    ``where`` is a pyiceberg ``BooleanExpression`` or a row-filter string (``"id < 3"``),
    bound strictly to the table's current schema.  Deleting nothing commits nothing.  With
    ``allow_all_rows=False`` (the CLI's default) a delete that would leave the table without
    a live row is refused before anything is written.  ``progress``: a progress line on
    stderr for the rows read (and written again, copy-on-write); None: on a terminal.

    Raises:
        UnsupportedTableError: the table is not v3 (see :func:`upgrade_to_v3`), has
            non-Parquet data files, or its catalog cannot take v3 commits.
        ColumnNotFoundError: ``where`` names a column the table does not have.
        UsageError: ``where`` does not parse, or compares a column with a literal that is
            not a value of its type; or it matches every row and ``allow_all_rows`` is off.
        CommitConflictError: concurrent commits won every attempt the table's
            ``commit.retry.*`` properties allow (``max_attempts``: that many).
    """
    require_v2_or_v3(table, "delete_rows")
    checked = check_where(table, where)
    bound = bind_checked(table, checked, where)

    def matching(t: Table, planned: Sequence[PlannedFile]) -> Positions:
        rows = sum(p.record_count for p in planned)
        with Progress(rows, label="delete ", enabled=progress, delay=1.0) as bar:
            return matching_by_file(t, planned, bound, progress=bar)

    # Only files that may hold a match are planned (pyiceberg prunes by partition and
    # metrics, as matching_by_file would), unless every live row must be counted.
    prune = checked if allow_all_rows else None
    return _commit_loop(
        table, matching, max_attempts=max_attempts, allow_all_rows=allow_all_rows, prune=prune,
        progress=progress,
    )  # fmt: skip


def commit_deletion_vectors(
    table: Table,
    vectors: Mapping[Any, Any],
    *,
    max_attempts: int | None = None,
    allow_all_rows: bool = True,
) -> DeleteResult:
    """Commit deleted positions computed elsewhere (``{data file: positions}``), merged.

    A data file is its path or a pyiceberg ``DataFile``; positions are anything
    :class:`puffin.DeletionVector` accepts.  Each is merged with the file's live vector and
    position deletes, as in :func:`delete_rows`.  A data file that is not live (any more) or
    a position past its end raises ``ValueError``; the other errors are those of
    :func:`delete_rows`.
    """
    from puffin.blobs.dv.files import DeletionVector

    require_v2_or_v3(table, "commit_deletion_vectors")
    wanted: Positions = {}
    for key, positions in vectors.items():
        dv = positions if isinstance(positions, DeletionVector) else DeletionVector(positions)
        wanted[data_file_path(key)] = dv.to_numpy()

    def given(t: Table, planned: Sequence[PlannedFile]) -> Positions:
        return {path: p for path, p in wanted.items() if len(p)}

    return _commit_loop(table, given, max_attempts=max_attempts, allow_all_rows=allow_all_rows)


def _commit_loop(
    table: Table,
    positions_for: Callable[[Table, Sequence[PlannedFile]], Positions],
    *,
    max_attempts: int | None,
    allow_all_rows: bool,
    prune: BooleanExpression | None = None,
    progress: bool | None = False,
) -> DeleteResult:
    """Plan (only the files ``prune`` may match, if given), merge with what is live, write,
    commit; on a lost race refresh and do it again."""
    mode = delete_mode(table)
    if mode == "merge-on-read":
        delete_granularity(table)  # a property that says nothing Java reads: refused now

    def attempt(table: Table, number: int, written: list[str]) -> DeleteResult:
        snapshot = table.current_snapshot()
        if snapshot is None:
            return DeleteResult(0, (), None, table, number)
        planned = plan_files(table, snapshot, prune, equality=True)
        index = DeleteFilter(table, snapshot)  # each delete file loaded once for the attempt
        new = positions_for(table, planned)
        on_v2 = mode == "merge-on-read"  # only the rows not deleted yet are written
        merged = merge_deletes(table, snapshot, planned, new, index=index, keep_added=on_v2)
        if not merged.positions:
            return DeleteResult(0, (), None, table, number)
        if not allow_all_rows and merged.newly_deleted >= live_rows(index, planned):
            raise UsageError(
                f"the condition matches every live row of the table ({merged.newly_deleted}): "
                "nothing was deleted; to empty the table, say so (allow_all_rows=True, or "
                "--all-rows on the command line)"
            )
        if mode == "copy-on-write":
            return _copy_on_write(
                table, snapshot, planned, merged, index, written, number, progress
            )
        if mode == "merge-on-read":
            files = write_position_deletes(table, planned, merged.added, written)
            committed, made = commit_snapshot(table, written, deletes=files)
            paths = tuple(str(f.file_path) for f in files)
            return DeleteResult(
                merged.newly_deleted, (), made.snapshot_id, committed, number, paths
            )
        entries, files = write_vectors(table, planned, merged.positions)
        written.append(str(entries[0].path))
        committed, made = commit_snapshot(
            table, written, deletes=files, superseded=merged.superseded
        )
        return DeleteResult(
            merged.newly_deleted, tuple(entries), made.snapshot_id, committed, number
        )

    return with_retries(table, attempt, max_attempts)


def _copy_on_write(
    table: Table,
    snapshot: Snapshot,
    planned: Sequence[PlannedFile],
    merged: MergedDeletes,
    index: DeleteFilter,
    written: list[str],
    number: int,
    progress: bool | None,
) -> DeleteResult:
    """The data files with deleted rows written again without them, in one ``overwrite``
    snapshot (``delete`` when no row is left to write) that also drops the position-delete
    files scoped to the files it removes."""

    groups: dict[tuple[int, Any], list[PlannedFile]] = {}
    for p in planned:
        if p.path in merged.positions:
            groups.setdefault((p.data_file.spec_id, p.data_file.partition), []).append(p)
    added = rewrite_files(
        table,
        snapshot,
        index,
        groups,
        target_file_size(table),
        written,
        deleted=merged.positions,
        progress=progress,
        label="rewrite ",
    )
    removed = set(merged.positions)
    scoped = scoped_position_deletes(p for files in groups.values() for p in files)
    committed, made = commit_snapshot(
        table,
        written,
        added_data=added,
        removed_data=removed,
        superseded=frozenset(scoped),
        operation="overwrite" if added else "delete",
    )
    return DeleteResult(
        merged.newly_deleted,
        (),
        made.snapshot_id,
        committed,
        number,
        rewritten_files=tuple(sorted(removed)),
        added_files=tuple(str(f.file_path) for f in added),
    )
