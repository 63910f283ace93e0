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

from puffin.errors import InterruptedAfterCommit, UsageError
from puffin.iceberg.deletes.merge import merge_deletes
from puffin.iceberg.deletes.vectors import write_vectors
from puffin.iceberg.metadata.commits import MAX_ATTEMPTS, with_retries
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.scan.row_filter import bind_where, check_where, matching_by_file
from puffin.locations import location_key

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

__all__ = ["add_files", "data_file_location", "overwrite"]


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
        after_commit,
        check_schema,
        has_statistics,
        statistics_left,
        write_data_files,
    )

    if statistics not in ("update", "none"):
        raise UsageError(f"statistics must be 'update' or 'none', got {statistics!r}")
    follow = statistics == "update" and has_statistics(table)
    if table.metadata.format_version < 3:  # pyiceberg: copy-on-write, the filter checked
        table.overwrite(data, overwrite_filter=check_where(table, where))
        return after_commit(table, follow)
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
    try:
        committed = with_retries(table, attempt, max_attempts, kept=kept)
    except InterruptedAfterCommit as exc:
        exc.remaining = statistics_left(table) if follow else None
        raise
    return after_commit(committed, follow)


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

    paths = [data_file_location(str(p)) for p in paths]
    keys = [location_key(p) for p in paths]
    if len(keys) != len(set(keys)):
        raise UsageError("each file may be added once (two of the paths name the same file)")
    if table.metadata.format_version < 3:
        _refuse_live(table, keys)
        table.add_files(paths)
        return table

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        _refuse_live(current, keys)
        files = list(parquet_files_to_data_files(current.io, current.metadata, iter(paths)))
        committed, _ = commit_snapshot(
            current, written, added_data=files, operation="append",
            first_updates=_name_mapping(current),
        )
        return committed

    return with_retries(table, attempt, max_attempts)


def data_file_location(path: str) -> str:
    """Where a data file given on the command line or to :func:`add_files` is registered:
    a local path made absolute, as a ``file:`` URL like the table's own files (unescaped,
    as pyiceberg and Java read it); any other URL as it is."""
    from puffin.locations import cut_by_pyiceberg, is_url, local_path

    local = local_path(path)
    if local is None:
        return path
    mark = cut_by_pyiceberg(local)
    if mark is not None:
        raise UsageError(
            f"{path}: the path contains {mark!r}, where pyiceberg's file IO cuts a location "
            "short (it would read another file): rename the file or its folder"
        )
    return f"file://{local}" if not is_url(path) or path.startswith("file:") else path


def _refuse_live(table: Table, keys: Sequence[str]) -> None:
    """Refuse files the current snapshot already has (their rows would count twice)."""
    snapshot = table.current_snapshot()
    live = {location_key(p.path) for p in plan_files(table, snapshot)} if snapshot else set()
    again = sorted(set(keys) & live)
    if again:
        raise UsageError(
            f"already in the table (adding them again would count their rows twice): "
            f"{', '.join(again[:5])}"
        )


def _name_mapping(table: Table) -> list[Any]:
    """The update that sets the table's name mapping, when it has none (files without field
    ids are read by name through it), as pyiceberg's ``add_files`` sets it."""
    from pyiceberg.table import TableProperties
    from pyiceberg.table.update import SetPropertiesUpdate

    if table.metadata.name_mapping() is not None:
        return []
    mapping = table.schema().name_mapping.model_dump_json()
    return [SetPropertiesUpdate(updates={TableProperties.DEFAULT_NAME_MAPPING: mapping})]
