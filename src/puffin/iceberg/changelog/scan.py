"""What changed between two snapshots, row by row: :func:`changes`.

Iceberg Java's changelog scan refuses any snapshot with delete files, iceberg-go's is
file-level, pyiceberg's incremental scan reads appends only. This one follows every kind of
delete: a row a deletion vector, a position delete or an equality delete removed in the
range is a ``DELETE`` with the values it had, read from its data file at the positions the
new deletes added (:mod:`puffin.iceberg.changelog.plan` finds them without opening any other
file). Rows are read by the one row reader (:class:`~puffin.iceberg.scan.rows.RowReader`)
with no delete applied: each task says which positions it wants.

Columns: the selected data columns, then Java's ``_change_type``, ``_change_ordinal`` and
``_commit_snapshot_id``, on a v3 table ``_row_id`` and ``_last_updated_sequence_number``,
and last ``_file`` and ``_pos``: where the row is (or was), which identifies rows that have
no ``_row_id`` (files from before an upgrade to v3 that no commit has given ids yet).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from puffin.errors import ColumnNotFoundError, UsageError
from puffin.iceberg.changelog.history import SnapshotRef, changelog_range
from puffin.iceberg.changelog.images import (
    CHANGE_ORDINAL,
    CHANGE_TYPE,
    COMMIT_SNAPSHOT_ID,
    drop_carryovers,
    net_changes,
    pair_updates,
)
from puffin.iceberg.changelog.plan import ADDED_ROWS, ChangeTask, Commit, plan_commits
from puffin.iceberg.changelog.reading import FILE, TaskReader
from puffin.iceberg.scan.arrow import conform_batch
from puffin.iceberg.scan.lineage import LINEAGE_COLUMNS, require_lineage
from puffin.iceberg.scan.rows import POSITION

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table


__all__ = ["FILE", "ChangelogScan", "changes"]


def changes(
    table: Table,
    start: SnapshotRef | None,
    end: SnapshotRef | None = None,
    row_filter: str | BooleanExpression | None = None,
    selected_fields: Sequence[str] = ("*",),
    *,
    compute_updates: bool = False,
    identifier_columns: Sequence[str] | None = None,
    net_changes: bool = False,
    case_sensitive: bool = True,
) -> ChangelogScan:
    """The rows that changed after snapshot ``start`` up to ``end`` (inclusive; default the
    current snapshot): ``.to_arrow()``, ``.to_arrow_batch_reader()``, ``.plan_files()``.

    ``start`` and ``end`` are snapshot ids, tags or branches; ``start`` None reads from the
    table's first snapshot. Each row has ``_change_type`` (``INSERT``/``DELETE``),
    ``_change_ordinal`` (the commit's place in the range, ``replace`` commits not counted)
    and ``_commit_snapshot_id``. Rows a commit deleted and inserted unchanged (a rewritten
    file's other rows) are left out, as Iceberg Java's changelog view leaves them out.

    ``compute_updates``: a row deleted and inserted by one commit with the same key becomes
    ``UPDATE_BEFORE``/``UPDATE_AFTER``; the key is ``identifier_columns``, by default the
    ``_row_id`` on a v3 table and the schema's identifier fields on v2. ``net_changes``: each
    row once, as it was at ``start`` and as it is at ``end`` (a row inserted and deleted in
    the range is left out). ``row_filter`` and ``selected_fields`` as :func:`scan_table`.

    Example::

        from puffin.iceberg import changes, load_table
        table = load_table("db.events")
        rows = changes(table, start=table.snapshots()[-3].snapshot_id).to_arrow()
        print(rows.group_by("_change_type").aggregate([("_change_type", "count")]))

    Errors: :class:`~puffin.errors.SnapshotRangeError` (a snapshot of the range expired,
    ``start`` not an ancestor of ``end``), :class:`~puffin.errors.UsageError`,
    :class:`~puffin.errors.ColumnNotFoundError`.
    """
    return ChangelogScan(
        table, start, end, row_filter, tuple(selected_fields), compute_updates,
        identifier_columns, net_changes, case_sensitive,
    )  # fmt: skip


class ChangelogScan:
    """One planned changelog (see :func:`changes`); each read method reads the files again."""

    def __init__(
        self,
        table: Table,
        start: SnapshotRef | None,
        end: SnapshotRef | None,
        row_filter: str | BooleanExpression | None,
        selected_fields: tuple[str, ...],
        compute_updates: bool,
        identifier_columns: Sequence[str] | None,
        net: bool,
        case_sensitive: bool,
    ) -> None:
        from pyiceberg.expressions import AlwaysTrue

        from puffin.iceberg.scan.row_filter import check_where

        self.table, self.net, self.case_sensitive = table, net, case_sensitive
        self.start, self.snapshots = changelog_range(table, start, end)
        self.row_filter = AlwaysTrue() if row_filter is None else check_where(table, row_filter)
        self.v3 = table.metadata.format_version >= 3
        self.lineage = list(LINEAGE_COLUMNS) if self.v3 else []
        require_lineage(table, [f for f in selected_fields if f in LINEAGE_COLUMNS])
        # The changelog's own columns come with every row: naming them selects nothing more.
        fields = tuple(f for f in selected_fields if f not in (*LINEAGE_COLUMNS, FILE, POSITION))
        try:
            self.projection: Schema = table.scan(
                selected_fields=fields or ("*",), case_sensitive=case_sensitive
            ).projection()
        except ValueError as exc:
            raise ColumnNotFoundError(f"cannot select {list(fields)}: {exc}") from None
        self.data_columns = [f.name for f in self.projection.fields]
        self.update_keys = _update_keys(table, compute_updates, identifier_columns, self.v3)
        missing = [k for k in self.update_keys if k not in (*self.data_columns, *self.lineage)]
        if missing:
            raise ColumnNotFoundError(
                f"identifier column {', '.join(missing)} is not among the columns read "
                f"({', '.join(self.data_columns)}): name a column of the table, and select it"
            )
        self._commits: list[Commit] | None = None

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows returned."""
        import pyarrow as pa
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        base = schema_to_pyarrow(self.projection, include_field_ids=False)
        extra = [
            pa.field(CHANGE_TYPE, pa.string(), nullable=False),
            pa.field(CHANGE_ORDINAL, pa.int32(), nullable=False),
            pa.field(COMMIT_SNAPSHOT_ID, pa.int64(), nullable=False),
            *(pa.field(n, pa.int64()) for n in self.lineage),
            pa.field(FILE, pa.string(), nullable=False),
            pa.field(POSITION, pa.int64(), nullable=False),
        ]
        return pa.schema([*base, *extra])

    def commits(self) -> list[Commit]:
        """The commits of the range that change rows (not ``replace``), with their tasks."""
        if self._commits is None:
            self._commits = list(
                plan_commits(self.table, self.start, self.snapshots, self.row_filter)
            )
        return self._commits

    def plan_files(self) -> list[ChangeTask]:
        """Every task of the range, commit by commit: the data files whose rows changed."""
        return [task for commit in self.commits() for task in commit.tasks]

    def to_arrow_batch_reader(self, *, progress: bool | None = False) -> pa.RecordBatchReader:
        """The changes as a stream of batches, commit by commit. Memory: a file's batch at a
        time for a commit that only inserts or only deletes; one commit's changed rows for
        a commit that does both (its carry-overs and updates are found among them); the
        rows several commits delete from one file, until the last of them; the whole
        range's with ``net_changes``. ``progress``: a bar on stderr (None: on a terminal)."""
        import pyarrow as pa

        schema = self.schema
        if self.net:
            return pa.RecordBatchReader.from_batches(schema, iter(self.to_arrow().to_batches()))
        batches = (conform_batch(b, schema) for b in self._batches(progress))
        return pa.RecordBatchReader.from_batches(schema, batches)

    def to_arrow(self) -> pa.Table:
        """Every change as one Arrow table (:attr:`schema`)."""
        import pyarrow as pa

        schema = self.schema
        batches = [conform_batch(b, schema) for b in self._batches(False)]
        rows = pa.Table.from_batches(batches, schema)
        if not self.net:
            return rows
        identity = "_row_id" if self.v3 else None
        net = net_changes(rows, self.data_columns, identity, bool(self.update_keys))
        return net.cast(schema)

    def _batches(self, progress: bool | None) -> Iterator[pa.RecordBatch]:
        from puffin.support.progress import Progress

        commits = self.commits()
        total = sum(t.file.record_count for c in commits for t in c.tasks)
        reading = TaskReader(
            self.table, self.projection, self.row_filter, self.case_sensitive, self.lineage,
            self.data_columns,
        )  # fmt: skip
        reading.prepare(commits)
        with Progress(total, label="changes ", enabled=progress, transient=True) as bar:
            for commit in commits:
                yield from self._commit_batches(commit, reading, bar)

    def _commit_batches(
        self, commit: Commit, reading: TaskReader, bar: Any
    ) -> Iterator[pa.RecordBatch]:
        """One commit's changes: streamed when it only inserts or only deletes, else
        gathered to drop its carry-overs and pair its updates."""
        import pyarrow as pa

        both = len({t.kind == ADDED_ROWS for t in commit.tasks}) > 1
        gathered = []
        for task in commit.tasks:
            for batch in reading.task_batches(commit, task):
                if both:
                    gathered.append(batch)
                else:
                    yield batch
            bar.update(task.file.record_count, note=f"commit {commit.ordinal + 1}")
        if not gathered:
            return
        schema = self.schema
        rows = pa.Table.from_batches([conform_batch(b, schema) for b in gathered], schema)
        rows = drop_carryovers(rows, [*self.data_columns, *self.lineage[:1]])
        if self.update_keys and not self.net:
            rows = pair_updates(rows, self.update_keys, _described(self.update_keys))
        yield from rows.to_batches()


def _update_keys(
    table: Table, compute: bool, identifier_columns: Sequence[str] | None, v3: bool
) -> list[str]:
    """The columns that pair an update's two images, [] when updates are not asked for."""
    if not compute:
        if identifier_columns is not None:
            raise UsageError("identifier_columns pair updates: pass compute_updates=True too")
        return []
    if identifier_columns is not None:
        keys = list(identifier_columns)
        if not keys:
            raise UsageError("identifier_columns is empty: name the columns that identify a row")
        return keys
    if v3:
        return ["_row_id"]
    schema = table.schema()
    keys = [schema.find_column_name(i) or str(i) for i in schema.identifier_field_ids]
    if not keys:
        raise UsageError(
            "compute_updates on a v2 table needs identifier columns: pass identifier_columns "
            "(--identifier-columns), or set the schema's identifier fields"
        )
    return keys


def _described(keys: list[str]) -> str:
    return "row id" if keys == ["_row_id"] else "identifier columns " + ", ".join(keys)
