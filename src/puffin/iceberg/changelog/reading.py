"""Reading a changelog's tasks: each task's changed rows, through the one row reader.

The reader applies no delete: each task says which rows it wants. An added file's rows live
in the commit's snapshot, a removed file's rows live in the parent, and for a file whose
deletes changed, the positions deleted in the commit's snapshot but not in the parent (read
from the row groups holding them only). The deletes of both kinds are resolved as each
snapshot holds them: a :class:`~puffin.iceberg.scan.delete_filter.DeleteFilter` per snapshot,
the last few kept (the newest equality delete of a key is that snapshot's newest).

A file that several commits of the range delete from (50 commits each deleting 0.1 % of a
table touch every file 50 times) is read once, for all those positions, before the first of
them is written: the positions are found first (:meth:`TaskReader.prepare`, deletion vectors
only), and the rows held until their commit's turn.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from puffin.iceberg.changelog.images import CHANGE_COLUMNS, DELETE, INSERT
from puffin.iceberg.changelog.plan import ADDED_ROWS, DELETED_ROWS, ChangeTask, Commit, delete_keys
from puffin.iceberg.scan.delete_filter import DeleteFilter
from puffin.iceberg.scan.lineage import FileLineage, file_lineage, lineage_column
from puffin.iceberg.scan.rows import POSITION, RowReader

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["FILE", "TaskReader"]

#: The data file a changed row is (or was) in, as Iceberg Java's ``_file`` metadata column.
FILE = "_file"
#: Deleted positions of planned files kept for reuse (a commit's "after" is the next one's
#: "before"), least recently used dropped first.
_KEPT_POSITIONS = 256


@dataclass
class _Shared:
    """A file several commits delete from: the union of their positions, read once."""

    positions: list[npt.NDArray[np.int64]] = field(default_factory=list)
    left: int = 0
    rows: pa.Table | None = None
    at: npt.NDArray[np.int64] | None = None  # the rows' positions


class TaskReader:
    """Reads the tasks of one changelog, commit after commit (see the module docstring)."""

    def __init__(
        self,
        table: Table,
        projection: Schema,
        row_filter: BooleanExpression,
        case_sensitive: bool,
        lineage: list[str],
        data_columns: Sequence[str],
    ) -> None:
        self.table, self.lineage, self.data_columns = table, lineage, list(data_columns)
        # The lineage columns come as stored: each task fills them as its snapshot says.
        self.reader = RowReader(
            table, projection, row_filter, case_sensitive, None, lineage, None, positions=True
        )
        self._snapshots: OrderedDict[int, DeleteFilter] = OrderedDict()
        self._lineage: OrderedDict[int, dict[str, FileLineage]] = OrderedDict()
        self._known: dict[str, tuple[int, FileLineage]] = {}  # by path: (from sequence, ...)
        self._positions: OrderedDict[Any, npt.NDArray[np.int64]] = OrderedDict()
        self._changed: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
        self._shared: dict[str, _Shared] = {}

    def prepare(self, commits: Sequence[Commit]) -> None:
        """Find the positions each ``deleted-rows`` task wants, and which files several
        commits delete from (those are read once)."""
        import numpy as np

        for commit in commits:
            for task in commit.tasks:
                if task.kind != DELETED_ROWS:
                    continue
                assert task.after is not None
                was = self.deleted(task.file, commit.parent)
                now = self.deleted(task.after, commit.snapshot)
                gone = np.setdiff1d(now, was, assume_unique=True)
                back = np.setdiff1d(was, now, assume_unique=True)  # a delete the commit removed
                self._changed[id(task)] = (gone, back)
                if len(gone):
                    shared = self._shared.setdefault(task.path, _Shared())
                    shared.positions.append(gone)
                    shared.left += 1
        self._shared = {k: s for k, s in self._shared.items() if s.left > 1}

    def task_batches(self, commit: Commit, task: ChangeTask) -> Iterator[pa.RecordBatch]:
        """The changed rows of ``task``, with the change columns, ``_file`` and ``_pos``."""
        snapshot, parent = commit.snapshot, commit.parent
        if task.kind == ADDED_ROWS:
            deleted = self.deleted(task.file, snapshot)
            for b in self.reader.file_batches(task.file, deleted):
                yield self._labelled(b, INSERT, task, snapshot)
            return
        if task.kind != DELETED_ROWS:  # the file was removed: its live rows are gone
            for b in self.reader.file_batches(task.file, self.deleted(task.file, parent)):
                yield self._labelled(b, DELETE, task, parent)
            return
        assert task.after is not None
        gone, back = self._changed.pop(id(task))
        if len(gone):
            for b in self._rows_at(task, gone):
                yield self._labelled(b, DELETE, task, parent)
        if len(back):
            for b in self.reader.file_batches(task.after, only=back):
                yield self._labelled(b, INSERT, task, snapshot)

    def deleted(self, planned: PlannedFile, snapshot: Snapshot | None) -> npt.NDArray[np.int64]:
        """Every position of ``planned`` (as ``snapshot`` plans it) that its deletes of both
        kinds remove, sorted."""
        import numpy as np

        key = (planned.path, delete_keys(planned))
        found = self._positions.get(key)
        if found is not None:
            self._positions.move_to_end(key)
            return found
        positions = None
        if snapshot is not None:
            positions = self._deletes_of(snapshot).deleted_positions(planned)
        found = np.empty(0, dtype=np.int64) if positions is None else positions
        self._positions[key] = found
        if len(self._positions) > _KEPT_POSITIONS:
            self._positions.popitem(last=False)
        return found

    def _rows_at(self, task: ChangeTask, gone: npt.NDArray[np.int64]) -> Iterator[pa.RecordBatch]:
        """The rows of ``task``'s file at ``gone``: read now, or taken from the rows read
        once for every commit that deletes from the file."""
        import numpy as np
        import pyarrow as pa

        shared = self._shared.get(task.path)
        if shared is None:
            yield from self.reader.file_batches(task.file, only=gone)
            return
        shared.left -= 1
        if shared.left == 0:
            del self._shared[task.path]
        if shared.positions:
            union = np.unique(np.concatenate(shared.positions))
            shared.positions = []
            batches = list(self.reader.file_batches(task.file, only=union))
            if batches:
                shared.rows = pa.Table.from_batches(batches)
                shared.at = shared.rows.column(POSITION).to_numpy()
        rows, at = shared.rows, shared.at
        if rows is not None and at is not None:
            # In file order, as the positions are: those the filter kept, found by search.
            where = np.minimum(np.searchsorted(at, gone), len(at) - 1)
            yield from rows.take(pa.array(where[at[where] == gone])).to_batches()

    def _deletes_of(self, snapshot: Snapshot) -> DeleteFilter:
        """``snapshot``'s deletes of both kinds, each vector read by its own entry."""
        found = self._snapshots.get(snapshot.snapshot_id)
        if found is None:
            found = DeleteFilter(self.table, snapshot, by_entry=True)
            self._snapshots[snapshot.snapshot_id] = found
            if len(self._snapshots) > 3:
                self._snapshots.popitem(last=False)
        return found

    def _lineage_of(self, snapshot: Snapshot | None, path: str) -> FileLineage:
        """What the rows of data file ``path`` inherit in ``snapshot``. A file's
        ``first_row_id``, once given, never changes, so a file known to have one in a
        snapshot has it in every later one: a snapshot's manifests are read only for a file
        not seen with one yet (a new file, or one from before an upgrade to v3)."""
        if snapshot is None:
            return FileLineage(None, None)
        sequence = snapshot.sequence_number or 0
        known = self._known.get(path)
        if known is not None and sequence >= known[0]:
            return known[1]
        found = self._lineage.get(snapshot.snapshot_id)
        if found is None:
            found = self._lineage[snapshot.snapshot_id] = file_lineage(self.table, snapshot)
            if len(self._lineage) > 3:
                self._lineage.popitem(last=False)
            for other, lineage in found.items():
                if lineage.first_row_id is not None and other not in self._known:
                    self._known[other] = (sequence, lineage)
        return found.get(path, FileLineage(None, None))

    def _labelled(
        self, batch: pa.RecordBatch, kind: str, task: ChangeTask, snapshot: Snapshot | None
    ) -> pa.RecordBatch:
        """``batch`` (data columns, lineage as stored, ``_pos``) in the changelog's column
        order, its lineage filled as ``snapshot`` gives it (Java's rules: stored values,
        else the file's ``first_row_id`` + position and data sequence number)."""
        import pyarrow as pa

        n = batch.num_rows
        positions = batch.column(POSITION)
        lineage = []
        if self.lineage:
            inherit = self._lineage_of(snapshot, task.path)
            at = positions.to_numpy()
            lineage = [lineage_column(c, batch.column(c), at, inherit) for c in self.lineage]
        columns = [
            *(batch.column(c) for c in self.data_columns),
            pa.array([kind] * n, pa.string()),
            pa.array([task.change_ordinal] * n, pa.int32()),
            pa.array([task.commit_snapshot_id] * n, pa.int64()),
            *lineage,
            pa.array([task.path] * n, pa.string()),
            positions,
        ]
        names = [*self.data_columns, *CHANGE_COLUMNS, *self.lineage, FILE, POSITION]
        return pa.RecordBatch.from_arrays(columns, names=names)
