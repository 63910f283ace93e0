"""A snapshot's plan: its live data files, the deletes that apply to each, and which rows survive.

pyiceberg plans the snapshot; :class:`DeleteIndex` loads each position-delete file (Parquet)
or deletion-vector file (Puffin) once and answers "which positions of this data file are
deleted", and :func:`keep_mask` turns those into a row mask for one slice of the file.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from puffin.errors import UnsupportedTableError
from puffin.io.locations import open_input

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.io import FileIO
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["DeleteIndex", "PlannedFile", "keep_mask", "plan_files"]

DELETE_FILE_PATH = "file_path"
DELETE_POS = "pos"


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
    from pyiceberg.manifest import DataFileContent

    try:
        tasks = list(table.scan(snapshot_id=snapshot.snapshot_id).plan_files())
    except ValueError as exc:
        if "equality delete" in str(exc).lower():
            raise UnsupportedTableError(
                "the snapshot has equality delete files, which neither pyiceberg nor this "
                "library applies; compute statistics on Spark or after compaction"
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


class DeleteIndex:
    """Deleted positions per data file, loaded once per delete file.

    Reads Parquet position-delete files (``file_path``, ``pos``) and deletion-vector Puffin
    files (each blob's ``referenced-data-file``).  Positions come back sorted and unique.
    """

    def __init__(self, io: FileIO) -> None:
        self._io = io
        self._loaded: dict[str, dict[str, npt.NDArray[np.int64]]] = {}
        self._lock = threading.Lock()

    def positions(
        self, data_path: str, delete_files: Iterable[DataFile]
    ) -> npt.NDArray[np.int64] | None:
        """The sorted deleted positions of ``data_path``; ``None`` when no row is deleted."""
        import numpy as np

        parts = []
        for d in delete_files:
            found = self._load(d).get(data_path)
            if found is not None and len(found):
                parts.append(found)
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return np.unique(np.concatenate(parts))

    def _load(self, delete_file: DataFile) -> dict[str, npt.NDArray[np.int64]]:
        from pyiceberg.manifest import FileFormat

        path = str(delete_file.file_path)
        with self._lock:
            cached = self._loaded.get(path)
        if cached is not None:
            return cached
        fmt = delete_file.file_format
        if fmt == FileFormat.PUFFIN:
            loaded = self._load_puffin(path)
        elif fmt == FileFormat.PARQUET:
            loaded = self._load_parquet(path)
        else:
            raise UnsupportedTableError(
                f"position delete file {path} is {fmt}; only Parquet and Puffin are read"
            )
        with self._lock:
            self._loaded[path] = loaded
        return loaded

    def _load_parquet(self, path: str) -> dict[str, npt.NDArray[np.int64]]:
        import numpy as np
        import pyarrow.parquet as pq

        with open_input(self._io, path) as f:
            table = pq.read_table(f, columns=[DELETE_FILE_PATH, DELETE_POS])
        if table.num_rows == 0:
            return {}
        encoded = table.column(DELETE_FILE_PATH).combine_chunks().dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        pos = table.column(DELETE_POS).to_numpy().astype(np.int64, copy=False)
        order = np.argsort(codes, kind="stable")
        codes, pos = codes[order], pos[order]
        names = encoded.dictionary.to_pylist()
        bounds = np.searchsorted(codes, np.arange(len(names) + 1))
        return {
            str(name): np.unique(pos[bounds[i] : bounds[i + 1]]) for i, name in enumerate(names)
        }

    def _load_puffin(self, path: str) -> dict[str, npt.NDArray[np.int64]]:
        from puffin.blobs.dv.files import read_deletion_vectors

        with open_input(self._io, path) as f:
            vectors = read_deletion_vectors(f)
        return {data_path: dv.to_numpy() for data_path, dv in vectors.items()}


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
