"""Every row a snapshot's deletes remove from one data file, as positions: both kinds of delete.

:class:`~puffin.iceberg.metadata.delete_files.DeleteIndex` reads position deletes (deletion
vectors and position-delete files). :class:`DeleteFilter` adds equality deletes: it reads the
data file's key columns (only those, by field id), matches them in Arrow against the keys of
the equality delete files that apply (:mod:`puffin.iceberg.scan.equality`, each delete file
read once per job) and turns the matches into positions. Jobs that work with positions (the
statistics reader, the matching of ``delete_rows`` and ``overwrite``, compaction's choice,
the conversion of equality deletes to deletion vectors) thereby apply equality deletes the
way they apply the others; ``scan_table``'s row reader matches the keys in the batches it
reads anyway (``scan/rows.py``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.equality import EqualityDeletes
from puffin.iceberg.scan.row_filter import FileSchemas

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["DeleteFilter"]


class DeleteFilter(DeleteIndex):
    """A snapshot's deletes of every kind, each delete file read once; thread-safe.

    Example::

        deletes = DeleteFilter(table, snapshot)
        for p in plan_files(table, snapshot, equality=True):
            gone = deletes.deleted_positions(p)  # None when every row is live
    """

    def __init__(self, table: Table, snapshot: Snapshot | None) -> None:
        super().__init__(table, snapshot)
        schemas = FileSchemas(
            table.metadata.name_mapping(), format_version=table.metadata.format_version
        )
        self.equality = EqualityDeletes(table, schemas)
        self._schemas = schemas
        self._matched: dict[str, npt.NDArray[np.int64]] = {}
        self._match_lock = threading.Lock()

    def deleted_positions(self, planned: PlannedFile) -> npt.NDArray[np.int64] | None:
        """The sorted positions of ``planned`` that a position or equality delete removes;
        None when every row is live."""
        import numpy as np

        positions = self.positions(planned.path, planned.delete_files)
        if not planned.equality_deletes:
            return positions
        matched = self.equality_positions(planned)
        if not len(matched):
            return positions
        if positions is None:
            return matched
        return np.union1d(positions, matched).astype(np.int64, copy=False)

    def equality_positions(self, planned: PlannedFile) -> npt.NDArray[np.int64]:
        """The sorted positions of ``planned`` its equality deletes remove (remembered for
        the job: ``delete_rows`` asks for a file to merge its vector and again to count the
        live rows)."""
        with self._match_lock:
            known = self._matched.get(planned.path)
        if known is None:
            known = self._match(planned)
            with self._match_lock:
                self._matched[planned.path] = known
        return known

    def _match(self, planned: PlannedFile) -> npt.NDArray[np.int64]:
        """The data file's key columns read a row group at a time and matched."""
        import numpy as np

        from puffin.iceberg.scan.parquet_files import open_data_file, parquet_file, row_groups

        parts, offset = [], 0
        with open_data_file(self._table.io, planned.path) as f:
            parquet = parquet_file(f, planned.path)
            _, schema = self._schemas.of(parquet.schema_arrow)
            keys = self.equality.for_file(planned, schema)
            if keys is None:
                return np.empty(0, dtype=np.int64)
            for group in row_groups(parquet, keys.columns):
                gone = keys.deleted(group)  # no column read: the rows are still counted
                parts.append(np.flatnonzero(gone).astype(np.int64) + offset)
                offset += group.num_rows
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

