"""A snapshot's plan: its live data files, the deletes that apply to each, and which rows survive.

pyiceberg plans the snapshot; :class:`puffin.iceberg.metadata.delete_files.DeleteIndex`
answers "which positions of this data file are deleted", and :func:`keep_mask` turns those
into a row mask for one slice of the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from puffin.errors import UnsupportedTableError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import DataScan, Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["PlannedFile", "keep_mask", "plan_files", "planned_from_tasks"]


@dataclass
class PlannedFile:
    """A live data file of the snapshot and the delete files that apply to it."""

    data_file: DataFile
    delete_files: list[DataFile] = field(default_factory=list)

    @property
    def path(self) -> str:
        return str(self.data_file.file_path)

    @property
    def record_count(self) -> int:
        return int(self.data_file.record_count)


def plan_files(table: Table, snapshot: Snapshot) -> list[PlannedFile]:
    """pyiceberg's plan of the snapshot: data files with the deletes that apply to each."""
    return planned_from_tasks(table.scan(snapshot_id=snapshot.snapshot_id))


def planned_from_tasks(scan: DataScan) -> list[PlannedFile]:
    """The files pyiceberg's ``scan`` plans (pruned by its filter), sorted by path;
    :class:`UnsupportedTableError` naming the file for an equality delete."""
    from pyiceberg.manifest import DataFileContent

    try:
        tasks = list(scan.plan_files())
    except ValueError as exc:
        if "equality delete" in str(exc).lower():
            named = ", ".join(_equality_delete_files(scan)[:3]) or "(not found)"
            raise UnsupportedTableError(
                f"the snapshot has equality delete files ({named}), which neither "
                "pyiceberg nor this library applies; read or compute statistics on Spark, "
                "or after a compaction that applies them"
            ) from exc
        raise
    planned = []
    for task in tasks:
        deletes = sorted(task.delete_files, key=lambda d: str(d.file_path))
        for d in deletes:
            if d.content == DataFileContent.EQUALITY_DELETES:
                raise UnsupportedTableError(
                    f"equality delete file {d.file_path} applies to {task.file.file_path}; "
                    "equality deletes are not supported"
                )
        planned.append(PlannedFile(task.file, deletes))
    planned.sort(key=lambda p: p.path)
    return planned


def _equality_delete_files(scan: DataScan) -> list[str]:
    """The equality delete files of the scan's snapshot, for the error that refuses them."""
    from pyiceberg.manifest import DataFileContent, ManifestContent

    from puffin.iceberg.metadata.manifests import read_manifest_entries

    snapshot = scan.snapshot()
    if snapshot is None:
        return []
    return [
        str(e.data_file.file_path)
        for m in snapshot.manifests(scan.io)
        if m.content == ManifestContent.DELETES
        for e in read_manifest_entries(scan.io, m)
        if e.data_file.content == DataFileContent.EQUALITY_DELETES
    ]


def keep_mask(
    positions: npt.NDArray[np.int64] | None, start: int, count: int
) -> npt.NDArray[np.bool_] | None:
    """Rows ``start .. start+count`` of a file that survive ``positions``; None if all do."""
    import numpy as np

    if positions is None or not len(positions):
        return None
    lo, hi = np.searchsorted(positions, [start, start + count])
    if lo == hi:
        return None
    mask = np.ones(count, dtype=bool)
    mask[positions[lo:hi] - start] = False
    return mask
