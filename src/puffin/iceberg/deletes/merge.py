"""The one deletion-vector merge: new positions + live DV + position-delete files → one DV.

The spec allows one deletion vector per data file, so a writer that deletes more rows of a
file must write a vector holding every deleted position of it (what is live now and what is
new) and drop the vector it supersedes, as Iceberg Java's ``BaseDVFileWriter`` does.  Every
writer here merges through :func:`merge_deletes` (``delete_rows``,
``commit_deletion_vectors``, ``upgrade_to_v3``) or :func:`union_with_live` (the Spark jobs,
which report vectors per data file before any commit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.iceberg.deletes.vectors import check_positions
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.metadata.manifests import DeleteFileKey
from puffin.iceberg.scan.delete_filter import DeleteFilter

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = [
    "MergedDeletes",
    "Positions",
    "live_positions",
    "live_rows",
    "merge_deletes",
    "union_with_live",
]

#: Deleted row positions per data file path, sorted and unique.
Positions = dict[str, "npt.NDArray[np.int64]"]


@dataclass(frozen=True)
class MergedDeletes:
    """What a commit writes: a full DV per data file, the delete files those supersede, and
    how many of the positions were live rows before (``newly_deleted``; with
    ``keep_added``, each file's in ``added``: what a position-delete file of a v2 table
    holds)."""

    positions: Positions
    superseded: frozenset[DeleteFileKey]
    newly_deleted: int
    added: Positions


def live_positions(
    index: DeleteIndex, planned: PlannedFile, *, positions_only: bool = False
) -> npt.NDArray[np.int64]:
    """The positions of the file its live delete files delete, sorted (a stray position
    past the file's end, which deletes nothing, is left out); equality deletes included when
    ``index`` is a :class:`~puffin.iceberg.scan.delete_filter.DeleteFilter`, unless
    ``positions_only`` (what the file's vectors and position-delete files delete)."""
    import numpy as np

    if positions_only:
        live = index.planned_positions(planned)
    else:
        live = index.deleted_positions(planned)
    if live is None:
        return np.empty(0, dtype=np.int64)
    return live[live < planned.record_count]


def union_with_live(
    index: DeleteIndex, planned: PlannedFile, positions: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """``positions`` with every position the file's live delete files delete."""
    import numpy as np

    live = live_positions(index, planned)
    if not len(live):
        return np.asarray(positions, dtype=np.int64)
    return np.union1d(live, positions).astype(np.int64, copy=False)


def merge_deletes(
    table: Table,
    snapshot: Snapshot,
    planned: Sequence[PlannedFile],
    new: Mapping[str, Any],
    *,
    read_live: bool = True,
    replace_position_deletes: bool = False,
    index: DeleteIndex | None = None,
    keep_added: bool = False,
) -> MergedDeletes:
    """Merge ``new`` deleted positions (``{data file path: positions}``) with the snapshot's.

    Every data file with positions not deleted yet gets a vector of all its deleted
    positions, and its live DV is superseded.  Without ``read_live``, ``new`` is taken as
    complete (Spark read the delete files already).  With ``replace_position_deletes`` (the
    upgrade to v3) every Parquet position-delete file of the snapshot is superseded, and
    every data file they delete rows of gets a vector.  ``index`` lends delete files
    already loaded.  ``keep_added``: also each file's positions not deleted before
    (``MergedDeletes.added``, what a v2 position-delete file holds; one more sort per file
    with live deletes, so only when asked).  ``ValueError`` for a data file that is not live
    or a position past its end.
    """
    import numpy as np
    from pyiceberg.manifest import FileFormat

    check_positions(planned, new)
    by_path = {p.path: p for p in planned}
    superseded: set[DeleteFileKey] = set()
    candidates = dict(new)
    if replace_position_deletes:
        for p in planned:
            parquet = [d for d in p.delete_files if d.file_format == FileFormat.PARQUET]
            superseded.update((str(d.file_path), None) for d in parquet)
            if parquet and read_live:
                candidates.setdefault(p.path, np.empty(0, dtype=np.int64))
    index = index if index is not None else DeleteFilter(table, snapshot)
    merged: Positions = {}
    added: Positions = {}
    newly = 0
    for path, positions in candidates.items():
        union = fresh = np.unique(np.asarray(positions, dtype=np.int64))
        count = len(union)
        if read_live:
            live = live_positions(index, by_path[path])
            if len(live):
                if keep_added:
                    fresh = np.setdiff1d(union, live, assume_unique=True)
                union = np.union1d(live, union).astype(np.int64, copy=False)
                count = len(union) - len(live)
        if count or (replace_position_deletes and len(union)):
            merged[path] = union
            newly += count
            if keep_added:
                added[path] = fresh
    superseded.update(
        (r.path, r.referenced_data_file)
        for r in index.refs()  # the delete manifests the index read already
        if r.referenced_data_file in merged
    )
    return MergedDeletes(merged, frozenset(superseded), newly, added)


def live_rows(index: DeleteIndex, planned: Sequence[PlannedFile]) -> int:
    """How many rows of the planned data files no delete file deletes."""
    return sum(p.record_count - len(live_positions(index, p)) for p in planned)
