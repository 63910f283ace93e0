"""Appends to Iceberg tables, v3 included, with the spec's row lineage.

pyiceberg 0.12 refuses to write a manifest for a v3 table (``Cannot write manifest for table
version: 3``), so once a table is upgraded for deletion vectors a Python pipeline could no
longer load data into it.  :func:`append` writes the data files with pyiceberg's own Parquet
writer (field ids, column metrics, target file size, partitions as pyiceberg computes them)
and commits one ``append`` snapshot through the v3 metadata writer: one new data manifest,
whose ``first_row_id`` the manifest list assigns from the table's ``next-row-id``; the
snapshot's ``first-row-id`` and ``added-rows`` advance ``next-row-id``.  v1 and v2 tables
go to pyiceberg's ``Table.append``, so a caller need not look at the format version.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.metadata.commits import MAX_ATTEMPTS, with_retries
from puffin.iceberg.metadata.snapshots import commit_snapshot

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

__all__ = [
    "append",
    "check_schema",
    "follow_statistics",
    "has_statistics",
    "write_data_files",
]


def append(
    table: Table,
    data: pa.Table | pa.RecordBatchReader,
    *,
    statistics: str = "update",
    max_attempts: int = MAX_ATTEMPTS,
) -> Table:
    """Append ``data`` to ``table`` in one ``append`` snapshot; returns the table as committed.

    With ``statistics="update"`` (the default), when the current snapshot or an ancestor has
    a statistics file, the rows added since are sketched and unioned into it, and the new
    snapshot gets its own statistics file (:func:`update_table_statistics`: byte for byte
    a full computation after appends only, an upper bound flagged in each blob after a
    delete); ``statistics="none"`` leaves statistics as they are.

    ``data`` is a pyarrow ``Table`` or a ``RecordBatchReader`` (streamed into files of the
    table's ``write.target-file-size-bytes``, on unpartitioned tables; pyiceberg does not
    stream into partitions yet).  Its schema must be compatible with the table's, as
    pyiceberg checks it (a ``ValueError`` from pyiceberg names the mismatching fields).
    The data files are written once; a commit that loses to a concurrent one is retried on
    the refreshed table (new row ids), and a commit that finally fails removes them.
    """
    import pyarrow as pa

    if not isinstance(data, (pa.Table, pa.RecordBatchReader)):
        raise UsageError(f"data must be a pyarrow Table or RecordBatchReader, not {type(data)}")
    if statistics not in ("update", "none"):
        raise UsageError(f"statistics must be 'update' or 'none', got {statistics!r}")
    follow = statistics == "update" and has_statistics(table)
    if table.metadata.format_version < 3:
        table.append(data)  # pyiceberg streams readers too
        return follow_statistics(table, follow)
    check_schema(table, data.schema)
    files = write_data_files(table, data)
    if not files:
        return table

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        return commit_snapshot(current, written, added_data=files, operation="append")[0]

    committed = with_retries(table, attempt, max_attempts, kept=[str(f.file_path) for f in files])
    return follow_statistics(committed, follow)


def has_statistics(table: Table) -> bool:
    """Whether the current snapshot or an ancestor has a statistics file (then appends
    keep the statistics current)."""
    from puffin.iceberg.statistics.update import base_statistics

    snapshot = table.current_snapshot()
    return snapshot is not None and base_statistics(table, snapshot)[0] is not None


def follow_statistics(table: Table, follow: bool) -> Table:
    """The new snapshot's statistics, unioned from the parent's, when it had some."""
    if follow:
        from puffin.iceberg.statistics.update import update_table_statistics

        update_table_statistics(table, progress=False)
    return table


def check_schema(table: Table, schema: pa.Schema) -> None:
    """pyiceberg's own compatibility check (names, types, promotions, required fields)."""
    from pyiceberg.io.pyarrow import _check_pyarrow_schema_compatible

    _check_pyarrow_schema_compatible(
        table.schema(), provided_schema=schema, format_version=table.metadata.format_version
    )


def write_data_files(table: Table, data: Any) -> list[DataFile]:
    """Parquet data files as pyiceberg writes them, and their records."""
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    return list(
        _dataframe_to_data_files(
            table_metadata=table.metadata, df=data, io=table.io, write_uuid=uuid.uuid4()
        )
    )
