"""Overwrites and registered files on v3 tables: one snapshot each, with row lineage.

:func:`overwrite` deletes the rows ``where`` matches with deletion vectors (merge-on-read,
the one DV merge) and appends ``data``, in one ``overwrite`` snapshot: a reader never sees
the table with the old rows gone and the new ones missing.  :func:`add_files` registers
existing Parquet files without rewriting them, as pyiceberg's ``add_files`` does (files
without field ids, read through the table's name mapping, which is set when missing).  On
v1/v2 tables both go to pyiceberg, whose ``overwrite`` is copy-on-write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.deletes.merge import merge_deletes
from puffin.iceberg.deletes.vectors import write_vectors
from puffin.iceberg.metadata.commits import MAX_ATTEMPTS, with_retries
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.scan.row_filter import bind_where, check_where, matching_by_file

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

__all__ = ["add_files", "overwrite"]


def overwrite(
    table: Table,
    data: pa.Table | pa.RecordBatchReader,
    where: BooleanExpression | str,
    *,
    statistics: str = "update",
    max_attempts: int = MAX_ATTEMPTS,
) -> Table:
    """Delete the rows matching ``where`` and append ``data``, in one ``overwrite`` snapshot.

    ``where`` is bound strictly, as :func:`puffin.iceberg.delete_rows` binds it; ``data``
    and ``statistics`` as :func:`puffin.iceberg.append` takes them (statistics carried
    over an overwrite are an upper bound, and say so).  Returns the table as committed.
    """
    from puffin.iceberg.writes.append import (
        check_schema,
        follow_statistics,
        has_statistics,
        write_data_files,
    )

    if statistics not in ("update", "none"):
        raise UsageError(f"statistics must be 'update' or 'none', got {statistics!r}")
    follow = statistics == "update" and has_statistics(table)
    if table.metadata.format_version < 3:  # pyiceberg: copy-on-write, the filter checked
        table.overwrite(data, overwrite_filter=check_where(table, where))
        return follow_statistics(table, follow)
    bound = bind_where(table, where)
    check_schema(table, data.schema)
    files = write_data_files(table, data)

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        snapshot = current.current_snapshot()
        planned = plan_files(current, snapshot) if snapshot is not None else []
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

    kept = [str(f.file_path) for f in files]
    committed = with_retries(table, attempt, max_attempts, kept=kept)
    return follow_statistics(committed, follow)


def add_files(
    table: Table, paths: Sequence[str], *, max_attempts: int = MAX_ATTEMPTS
) -> Table:
    """Register existing Parquet files as data files of ``table``, without rewriting them.

    As pyiceberg's ``add_files``: the paths must be unique and not yet in the table, the
    files must have no field ids (their columns are matched by name through the table's
    name mapping, set when missing), and their statistics come from their Parquet footers.
    Returns the table as committed.
    """
    from pyiceberg.io.pyarrow import parquet_files_to_data_files

    paths = [str(p) for p in paths]
    if len(paths) != len(set(paths)):
        raise UsageError("each file may be added once")
    if table.metadata.format_version < 3:
        table.add_files(paths)
        return table

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        snapshot = current.current_snapshot()
        live = {p.path for p in plan_files(current, snapshot)} if snapshot else set()
        again = sorted(set(paths) & live)
        if again:
            raise UsageError(f"files already in the table: {', '.join(again[:5])}")
        files = list(parquet_files_to_data_files(current.io, current.metadata, iter(paths)))
        committed, _ = commit_snapshot(
            current, written, added_data=files, operation="append",
            first_updates=_name_mapping(current),
        )
        return committed

    return with_retries(table, attempt, max_attempts)


def _name_mapping(table: Table) -> list[Any]:
    """The update that sets the table's name mapping, when it has none (files without field
    ids are read by name through it), as pyiceberg's ``add_files`` sets it."""
    from pyiceberg.table import TableProperties
    from pyiceberg.table.update import SetPropertiesUpdate

    if table.metadata.name_mapping() is not None:
        return []
    mapping = table.schema().name_mapping.model_dump_json()
    return [SetPropertiesUpdate(updates={TableProperties.DEFAULT_NAME_MAPPING: mapping})]
