"""Every row a snapshot's deletes remove from one data file, as positions: both kinds of delete.

:class:`~puffin.iceberg.metadata.delete_files.DeleteIndex` reads position deletes (deletion
vectors and position-delete files). :class:`DeleteFilter` adds equality deletes: the row
reader (:meth:`~puffin.iceberg.scan.rows.RowReader.equality_positions`) reads the data file's
key columns (only those, by field id), matches them in Arrow against the keys of the equality
delete files that apply (:mod:`puffin.iceberg.scan.equality`, each delete file read once per
job) and turns the matches into positions. Jobs that work with positions (statistics,
``delete_rows``' merge with the live deletes, compaction's choice, the conversion of equality
deletes to deletion vectors) thereby apply equality deletes the way they apply the others;
``scan_table`` matches the keys in the batches it reads anyway.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.rows import RowReader

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

    def __init__(self, table: Table, snapshot: Snapshot | None, *, by_entry: bool = False) -> None:
        from pyiceberg.expressions import AlwaysTrue

        super().__init__(table, snapshot, by_entry=by_entry)
        # Rows read for their keys only: no filter, no delete applied.
        self._rows = RowReader(table, table.schema(), AlwaysTrue(), True, None, [], {})
        self._matched: dict[str, npt.NDArray[np.int64]] = {}
        self._match_lock = threading.Lock()

    def deleted_positions(self, planned: PlannedFile) -> npt.NDArray[np.int64] | None:
        """The sorted positions of ``planned`` that a position or equality delete removes;
        None when every row is live."""
        import numpy as np

        positions = self.planned_positions(planned)
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
        """The data file's key columns read by the row reader and matched."""
        return self._rows.equality_positions(planned)
