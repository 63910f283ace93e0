"""Row-level deletes committed into Iceberg v3 tables as deletion vectors (merge-on-read).

:func:`delete_rows` finds the rows a filter matches in each live data file, merges them with
the file's live deletion vector and position deletes, writes one Puffin file and commits one
``delete`` snapshot whose v3 delete manifest points at the new vectors and drops the ones they
supersede: no data file is rewritten.  :func:`commit_deletion_vectors` does the same for
positions computed elsewhere (Spark).  :func:`upgrade_to_v3` moves a v1/v2 table to format
version 3, turning its position-delete files into deletion vectors in the same commit.

Commits are optimistic: when another writer wins, the table is refreshed, the vectors are
merged again with what is live now and the commit is retried (bounded, with backoff); files
written for a failed attempt are removed.  pyiceberg 0.12 cannot write v3 metadata; the
module :mod:`puffin.iceberg._v3` does, for SQL (SQLite, in-memory) and REST catalogs.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from puffin.errors import CommitConflictError, UnsupportedTableError
from puffin.iceberg._row_filter import bind_where, matching_positions
from puffin.iceberg.deletes import remove_files

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.blobs.deletion_vector import DeletionVectorEntry
    from puffin.iceberg._plan import PlannedFile

__all__ = ["DeleteResult", "commit_deletion_vectors", "delete_rows", "upgrade_to_v3"]

#: Attempts before a commit that keeps losing to concurrent commits gives up.
MAX_ATTEMPTS = 5
_T = TypeVar("_T")
_BACKOFF_S = 0.05

Positions = dict[str, "npt.NDArray[np.int64]"]


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

    @property
    def puffin_path(self) -> str | None:
        """The Puffin file holding the new vectors (``None`` when nothing was committed)."""
        return self.vectors[0].path if self.vectors else None


def require_v3(table: Table, action: str) -> None:
    """Refuse row deletes on a v1/v2 table, naming the way out (also used by puffin.spark)."""
    version = table.metadata.format_version
    if version < 3:
        raise UnsupportedTableError(
            f"{action} needs an Iceberg v3 table (deletion vectors); this table is format "
            f"version {version}: upgrade it first with puffin.iceberg.upgrade_to_v3(table) "
            "(or `puffin table upgrade`)"
        )


def delete_rows(
    table: Table, where: BooleanExpression | str, *, max_attempts: int = MAX_ATTEMPTS
) -> DeleteResult:
    """Delete the rows matching ``where`` with deletion vectors, in one ``delete`` snapshot.

    ``where`` is a pyiceberg ``BooleanExpression`` or a row-filter string (``"id < 3"``),
    bound to the table's current schema.  Deleting nothing commits nothing.

    Raises:
        UnsupportedTableError: the table is not v3 (see :func:`upgrade_to_v3`), has equality
            deletes or non-Parquet data files, or its catalog cannot take v3 commits.
        ColumnNotFoundError: ``where`` names a column the table does not have.
        UsageError: ``where`` is a string pyiceberg's row-filter parser rejects.
        CommitConflictError: concurrent commits won ``max_attempts`` times.
    """
    require_v3(table, "delete_rows")
    bound = bind_where(table, where)

    def matching(t: Table, planned: Sequence[PlannedFile]) -> Positions:
        out: Positions = {}
        for p in planned:
            found = matching_positions(t, p, bound)
            if len(found):
                out[p.path] = found
        return out

    return _commit_loop(table, matching, max_attempts=max_attempts)


def commit_deletion_vectors(
    table: Table, vectors: Mapping[Any, Any], *, max_attempts: int = MAX_ATTEMPTS
) -> DeleteResult:
    """Commit deleted positions computed elsewhere (``{data file: positions}``), merged.

    A data file is its path or a pyiceberg ``DataFile``; positions are anything
    :class:`puffin.DeletionVector` accepts.  Each is merged with the file's live vector and
    position deletes, as in :func:`delete_rows`.  A data file that is not live (any more) or
    a position past its end raises ``ValueError``; the other errors are those of
    :func:`delete_rows`.
    """
    from puffin.blobs.deletion_vector import DeletionVector
    from puffin.iceberg.deletes import _as_path

    require_v3(table, "commit_deletion_vectors")
    wanted: Positions = {}
    for key, positions in vectors.items():
        dv = positions if isinstance(positions, DeletionVector) else DeletionVector(positions)
        wanted[_as_path(key)] = dv.to_numpy()

    def given(t: Table, planned: Sequence[PlannedFile]) -> Positions:
        counts = {p.path: p.record_count for p in planned}
        for path, positions in wanted.items():
            if path not in counts:
                raise ValueError(f"{path} is not a live data file of the table's current snapshot")
            if len(positions) and int(positions[-1]) >= counts[path]:
                raise ValueError(
                    f"position {int(positions[-1])} is past the end of {path}, which has "
                    f"{counts[path]} rows"
                )
        return {path: p for path, p in wanted.items() if len(p)}

    return _commit_loop(table, given, max_attempts=max_attempts)


def upgrade_to_v3(
    table: Table,
    *,
    max_attempts: int = MAX_ATTEMPTS,
    positions: Mapping[str, Any] | None = None,
) -> Table:
    """The table at format version 3, with its position deletes turned into deletion vectors.

    Sets ``format-version`` 3 and ``next-row-id``; if the live snapshot has Parquet
    position-delete files, the same commit adds a ``replace`` snapshot in which every data
    file they apply to has one deletion vector holding its deleted positions, and the
    position-delete files are removed.  A v3 table is returned as it is.  ``positions``
    (``{data file: positions}``, computed elsewhere from those files: Spark) is used for
    the first attempt instead of reading the delete files here; a retry after a concurrent
    commit reads them again.  It must hold every deleted position of those files, keyed by
    the data files' paths as the manifests write them: a data file missing from it keeps no
    deletes (its position-delete files are removed all the same).  A position past a data
    file's end is a ``ValueError``.
    """
    from pyiceberg.table.update import UpgradeFormatVersionUpdate

    from puffin.iceberg import _v3
    from puffin.iceberg._plan import plan_files

    def attempt(table: Table, number: int, written: list[str]) -> Table:
        if table.metadata.format_version >= 3:  # already, or upgraded by the winner
            return table
        snapshot = table.current_snapshot()
        planned = plan_files(table, snapshot) if snapshot is not None else []
        merged, removed = _position_deletes(table, planned, positions if number == 1 else None)
        upgrade = UpgradeFormatVersionUpdate.model_validate({"format-version": 3})
        if not removed:
            return _v3.commit(table, _ref_requirement(table, snapshot), [upgrade])
        entries, files = _write_vectors(table, planned, merged) if merged else ([], [])
        written.extend(str(e.path) for e in entries[:1])
        staged = _v3.write_delete_snapshot(table, files, removed, operation="replace")
        written.extend(staged.written)
        requirements, more = snapshot_updates(table, staged.snapshot)
        return _v3.commit(table, requirements, [upgrade, *more])

    return _with_retries(table, attempt, max_attempts)


def _position_deletes(
    table: Table, planned: Sequence[PlannedFile], given: Mapping[str, Any] | None
) -> tuple[Positions, set[tuple[str, str | None]]]:
    """Each data file's positions deleted by Parquet position deletes, and those files."""
    import numpy as np
    from pyiceberg.manifest import FileFormat

    from puffin.blobs.deletion_vector import DeletionVector
    from puffin.iceberg._plan import DeleteIndex

    index = DeleteIndex(table.io)
    merged: Positions = {}
    removed: set[tuple[str, str | None]] = set()
    for p in planned:
        parquet = [d for d in p.delete_files if d.file_format == FileFormat.PARQUET]
        removed.update((str(d.file_path), None) for d in parquet)
        if given is None:
            found = index.positions(p.path, p.delete_files)
            if found is not None:
                found = found[found < p.record_count]  # a stray position deletes nothing
        elif p.path in given:
            dv = given[p.path]
            found = (dv if isinstance(dv, DeletionVector) else DeletionVector(dv)).to_numpy()
            if len(found) and int(found.max()) >= p.record_count:
                raise ValueError(
                    f"positions for {p.path} go up to {int(found.max())}, past its "
                    f"{p.record_count} rows"
                )
        else:
            found = None
        if found is not None and len(found):
            merged[p.path] = np.asarray(found, dtype=np.int64)
    return merged, removed


# --- the commit loop ---------------------------------------------------------------------------


def _commit_loop(
    table: Table,
    positions_for: Callable[[Table, Sequence[PlannedFile]], Positions],
    *,
    max_attempts: int,
) -> DeleteResult:
    """Plan, merge with what is live, write, commit; on a lost race refresh and do it again."""
    from puffin.iceberg import _v3
    from puffin.iceberg._plan import plan_files

    def attempt(table: Table, number: int, written: list[str]) -> DeleteResult:
        snapshot = table.current_snapshot()
        if snapshot is None:
            return DeleteResult(0, (), None, table, number)
        planned = plan_files(table, snapshot)
        merged, removed, newly = _merge(table, snapshot, planned, positions_for(table, planned))
        if not merged:
            return DeleteResult(0, (), None, table, number)
        entries, files = _write_vectors(table, planned, merged)
        written.append(str(entries[0].path))
        staged = _v3.write_delete_snapshot(table, files, removed)
        written.extend(staged.written)
        requirements, updates = snapshot_updates(table, staged.snapshot)
        committed = _v3.commit(table, requirements, updates)
        return DeleteResult(newly, tuple(entries), staged.snapshot.snapshot_id, committed, number)

    return _with_retries(table, attempt, max_attempts)


def _with_retries(
    table: Table, attempt: Callable[[Table, int, list[str]], _T], max_attempts: int
) -> _T:
    """``attempt(table, number, written)`` until it commits, at most ``max_attempts`` times.

    Each attempt works on the table as refreshed after the last lost race and lists the
    files it writes in ``written``; when it fails they are removed (unless the commit state
    is unknown), and a lost race is retried after a backoff, up to the last attempt, which
    ends in :class:`CommitConflictError`.  Any other error ends the loop as it is.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    for number in range(1, max_attempts + 1):
        written: list[str] = []
        try:
            return attempt(table, number, written)
        except BaseException as exc:
            _discard(table, written, exc)
            if not _is_conflict(exc):
                raise
            if number == max_attempts:
                raise _conflict(exc, number) from exc
        time.sleep(_backoff(number))
        table = table.refresh()
    raise AssertionError("unreachable")  # pragma: no cover


def _merge(
    table: Table, snapshot: Snapshot, planned: Sequence[PlannedFile], new: Positions
) -> tuple[Positions, set[tuple[str, str | None]], int]:
    """Per data file with new deletes: all its deleted positions; DVs superseded; rows added."""
    import numpy as np

    from puffin.iceberg._plan import DeleteIndex
    from puffin.iceberg.deletes import deletion_vector_refs

    index = DeleteIndex(table.io)
    by_path = {p.path: p for p in planned}
    merged: Positions = {}
    newly = 0
    for path, positions in new.items():
        live = index.positions(path, by_path[path].delete_files)
        union = positions if live is None else np.union1d(live, positions)
        added = len(union) - (0 if live is None else len(live))
        if added:
            merged[path] = union.astype(np.int64, copy=False)
            newly += added
    removed: set[tuple[str, str | None]] = {
        (r.path, r.referenced_data_file)
        for r in deletion_vector_refs(table, snapshot)
        if r.referenced_data_file in merged
    }
    return merged, removed, newly


def _write_vectors(
    table: Table, planned: Sequence[PlannedFile], merged: Positions
) -> tuple[list[DeletionVectorEntry], list[DataFile]]:
    """One Puffin file with a vector per data file, and its v3 delete-file records."""
    from puffin.iceberg.deletes import deletion_vector_data_files, write_table_deletion_vectors

    entries = write_table_deletion_vectors(table, merged, validate=False)
    data_files = {p.path: p.data_file for p in planned}
    return entries, deletion_vector_data_files(table, entries, data_files=data_files)


def _is_conflict(exc: BaseException) -> bool:
    from pyiceberg.exceptions import CommitFailedException

    return isinstance(exc, CommitFailedException)


def _conflict(exc: BaseException, attempts: int) -> CommitConflictError:
    return CommitConflictError(
        f"the commit lost to concurrent commits {attempts} times ({exc}); nothing was "
        "committed and the files written for it were removed"
    )


def _backoff(attempt: int) -> float:
    return float(_BACKOFF_S * (2 ** (attempt - 1)) * (1 + random.random()))


def _discard(table: Table, locations: Sequence[str], exc: BaseException) -> None:
    """Remove what a failed commit wrote, unless the catalog cannot tell whether the
    commit went through (``CommitStateUnknownException``): then the table may already
    reference the files, and removing them would break it."""
    from pyiceberg.exceptions import CommitStateUnknownException

    if not isinstance(exc, CommitStateUnknownException):
        remove_files(table, locations)


def _ref_requirement(table: Table, snapshot: Snapshot | None) -> list[Any]:
    from pyiceberg.table.refs import MAIN_BRANCH
    from pyiceberg.table.update import AssertRefSnapshotId, AssertTableUUID

    return [
        AssertTableUUID(uuid=table.metadata.table_uuid),
        AssertRefSnapshotId.model_validate(
            {"ref": MAIN_BRANCH, "snapshot-id": None if snapshot is None else snapshot.snapshot_id}
        ),
    ]


def snapshot_summary(
    table: Table, parent: Snapshot, added: Sequence[DataFile], removed: Sequence[DataFile]
) -> dict[str, str]:
    """Snapshot summary by pyiceberg's collector; a DV counts its blob, as in Java."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.table.snapshots import (
        Operation,
        SnapshotSummaryCollector,
        Summary,
        update_snapshot_summaries,
    )

    from puffin.iceberg.deletes import CONTENT_SIZE

    def view(df: DataFile) -> DataFile:
        dv = df.file_format == FileFormat.PUFFIN and len(df) > CONTENT_SIZE
        return DataFile.from_args(
            content=DataFileContent.POSITION_DELETES,
            file_path=df.file_path,
            file_format=df.file_format,
            partition=df.partition,
            record_count=df.record_count,
            file_size_in_bytes=df[CONTENT_SIZE] if dv else df.file_size_in_bytes,
        )

    collector = SnapshotSummaryCollector()
    for df in added:
        collector.add_file(view(df), table.schema())
    for df in removed:
        collector.remove_file(view(df), table.schema())
    props = collector.build()
    for side, files in (("added", added), ("removed", removed)):
        # Java counts a DV as a delete file and a DV, not as a position-delete file.
        dvs = sum(1 for df in files if df.file_format == FileFormat.PUFFIN)
        files_key = f"{side}-position-delete-files"
        left = int(props.pop(files_key, 0)) - dvs
        if left:
            props[files_key] = str(left)
        if dvs:
            props[f"{side}-dvs"] = str(dvs)
    previous = dict(parent.summary.additional_properties) if parent.summary else None
    summary = update_snapshot_summaries(Summary(Operation.DELETE, **props), previous)
    return dict(summary.additional_properties)


def snapshot_updates(table: Table, snapshot: Snapshot) -> tuple[list[Any], list[Any]]:
    """(requirements, updates) adding ``snapshot`` as ``main``, if ``main`` has not moved."""
    from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
    from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate

    ref = {"ref-name": MAIN_BRANCH, "snapshot-id": snapshot.snapshot_id}
    ref_update = SetSnapshotRefUpdate.model_validate({"type": SnapshotRefType.BRANCH, **ref})
    return (
        _ref_requirement(table, table.current_snapshot()),
        [AddSnapshotUpdate(snapshot=snapshot), ref_update],
    )
