"""Overwrites on v3 tables: one snapshot, with row lineage.

:func:`overwrite` deletes the rows ``where`` matches with deletion vectors (merge-on-read,
the one DV merge) and appends ``data``, in one ``overwrite`` snapshot: a reader never sees
the table with the old rows gone and the new ones missing.  On v1/v2 tables it goes to
pyiceberg, whose ``overwrite`` is copy-on-write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.deletes.merge import merge_deletes
from puffin.iceberg.deletes.vectors import write_vectors
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.matching import matching_by_file
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.scan.row_filter import bind_where, check_where
from puffin.iceberg.writes.schema import conform

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

__all__ = ["overwrite"]


def overwrite(
    table: Table,
    data: pa.Table | pa.RecordBatchReader,
    where: BooleanExpression | str,
    *,
    statistics: str = "update",
    max_attempts: int | None = None,
) -> Table:
    """Delete the rows matching ``where`` and append ``data``, in one ``overwrite`` snapshot.

    ``where`` is bound strictly, as :func:`puffin.iceberg.delete_rows` binds it; ``data``
    and ``statistics`` as :func:`puffin.iceberg.append` takes them (statistics carried
    over an overwrite are an upper bound, and say so).  Returns the table as committed.
    """
    from puffin.iceberg.writes.append import (
        after_commit,
        commit_written,
        has_statistics,
        write_data_files,
    )

    if statistics not in ("update", "none"):
        raise UsageError(f"statistics must be 'update' or 'none', got {statistics!r}")
    follow = statistics == "update" and has_statistics(table)
    if table.metadata.format_version < 3:  # pyiceberg: copy-on-write, the filter checked
        table.overwrite(data, overwrite_filter=check_where(table, where))
        return after_commit(table, follow)
    bound = bind_where(table, where)
    data = conform(table, data)
    files = write_data_files(table, data)

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        snapshot = current.current_snapshot()
        planned = plan_files(current, snapshot, equality=True) if snapshot is not None else []
        new = matching_by_file(current, planned, bound)
        dv_files: list[DataFile] = []
        superseded: frozenset[Any] = frozenset()
        if snapshot is not None and new:
            merged = merge_deletes(current, snapshot, planned, new)
            if merged.positions:
                entries, dv_files = write_vectors(current, planned, merged.positions)
                written.append(str(entries[0].path))
                superseded = merged.superseded
        committed, _ = commit_snapshot(
            current,
            written,
            deletes=dv_files,
            superseded=superseded,
            added_data=files,
            operation="overwrite",
        )
        return committed

    return commit_written(table, attempt, files, follow=follow, max_attempts=max_attempts)
