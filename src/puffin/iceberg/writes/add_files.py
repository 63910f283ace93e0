"""Existing Parquet files registered as data files, on every format version.

:func:`add_files` registers files without rewriting them, as pyiceberg's ``add_files``
does (files without field ids, read through the table's name mapping, which is set when
missing; statistics from their footers), with what pyiceberg leaves to the user checked
first: a relative path is made absolute before anything compares it, a file already in
the table under any spelling of its location is refused (its rows would count twice), a
file that is not Parquet or does not fit the table is named in one line, a nullable
column the table requires is accepted when its null count is zero, and an empty file is
skipped.  The commit holds Ctrl-C and SIGTERM off until its outcome is known.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.metadata.commits import with_retries
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.plan import plan_files
from puffin.io.locations import location_key

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

__all__ = ["add_files", "data_file_location"]


def add_files(
    table: Table, paths: Sequence[str], *, max_attempts: int | None = None
) -> Table:
    """Register existing Parquet files as data files of ``table``, without rewriting them.

    As pyiceberg's ``add_files``: the paths must be unique and not yet in the table, the
    files must have no field ids (their columns are matched by name through the table's
    name mapping, set when missing), and their statistics come from their Parquet footers.
    Returns the table as committed.
    """
    paths = [data_file_location(str(p)) for p in paths]
    keys = [location_key(p) for p in paths]
    if len(keys) != len(set(keys)):
        raise UsageError("each file may be added once (two of the paths name the same file)")
    v3 = table.metadata.format_version >= 3

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        from puffin.iceberg.writes.append import commit_v2

        _refuse_live(current, keys)
        files = [f for f in (_data_file(current, path) for path in paths) if f is not None]
        if not files:
            return current  # only empty files: nothing to add
        if not v3:
            return commit_v2(current, files, written, _name_mapping(current))
        committed, _ = commit_snapshot(
            current, written, added_data=files, operation="append",
            first_updates=_name_mapping(current),
        )
        return committed

    return with_retries(table, attempt, max_attempts, present=paths)


def data_file_location(path: str) -> str:
    """Where a data file given on the command line or to :func:`add_files` is registered:
    a local path made absolute, as a ``file:`` URL like the table's own files (unescaped,
    as pyiceberg and Java read it); any other URL as it is."""
    from puffin.io.locations import cut_by_pyiceberg, is_url, local_path

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


def _data_file(table: Table, path: str) -> DataFile | None:
    """One existing Parquet file as a data file of the table, as pyiceberg's
    ``parquet_file_to_data_file`` reads it (footer statistics, the schema checked), or None
    when it holds no row; what is wrong with it, in one line naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    from puffin.iceberg.writes.schema import check_schema, required_as_declared

    input_file = table.io.new_input(path)
    try:
        with input_file.open() as stream:
            metadata = pq.read_metadata(stream)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise UsageError(f"{path} is not a Parquet file pyarrow can read: {exc}") from None
    if metadata.num_rows == 0:
        return None
    schema = table.schema()
    check_schema(table, required_as_declared(table, metadata, path), what=path)
    statistics = data_file_statistics_from_parquet_metadata(
        parquet_metadata=metadata,
        stats_columns=compute_statistics_plan(schema, table.metadata.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(schema),
    )
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=statistics.partition(table.metadata.spec(), schema),
        file_size_in_bytes=len(input_file),
        sort_order_id=None,
        spec_id=table.metadata.default_spec_id,
        equality_ids=None,
        key_metadata=None,
        **statistics.to_serialized_dict(),
    )


def _refuse_live(table: Table, keys: Sequence[str]) -> None:
    """Refuse files the current snapshot already has (their rows would count twice)."""
    snapshot = table.current_snapshot()
    planned = plan_files(table, snapshot, equality=True) if snapshot else []
    live = {location_key(p.path) for p in planned}
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
