"""Appends to Iceberg tables, v3 included, with the spec's row lineage.

pyiceberg 0.12 refuses to write a manifest for a v3 table (``Cannot write manifest for table
version: 3``), so once a table is upgraded for deletion vectors a Python pipeline could no
longer load data into it.  :func:`append` writes the data files itself (pyiceberg's writer
settings, names and metrics; a reader streamed with bounded memory, :mod:`._streaming`),
removes them when the write or the commit fails or is interrupted, and commits one
``append`` snapshot: on v3 through the v3 metadata writer, one new data manifest whose
``first_row_id`` the manifest list assigns from the table's ``next-row-id`` (the snapshot's
``first-row-id`` and ``added-rows`` advance it); on v1/v2 as pyiceberg's own append
snapshot, so a caller need not look at the format version.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from puffin.errors import InterruptedAfterCommit, UsageError
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.metadata.commits import (
    committed_or_interrupted,
    with_retries,
)
from puffin.iceberg.metadata.manifests import remove_files
from puffin.iceberg.metadata.presence import file_gone, missing_location
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.writes.schema import conform
from puffin.io.stores import says_store_failures

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

    from puffin.iceberg.writes._streaming import FileTarget

__all__ = [
    "after_commit",
    "append",
    "commit_v2",
    "commit_written",
    "has_statistics",
    "statistics_left",
    "write_data_files",
]


@says_store_failures("append")
def append(
    table: Table,
    data: pa.Table | pa.RecordBatchReader,
    *,
    statistics: str = "update",
    max_attempts: int | None = None,
) -> Table:
    """Append ``data`` to ``table`` in one ``append`` snapshot; returns the table as committed
    (its current snapshot is the one this call committed, whatever came after).

    With ``statistics="update"`` (the default), when the current snapshot or an ancestor has
    a statistics file, the rows added since are sketched and unioned into it, and the new
    snapshot gets its own statistics file (:func:`update_table_statistics`: byte for byte
    a full computation after appends only, an upper bound flagged in each blob after a
    delete); ``statistics="none"`` leaves statistics as they are.

    ``data`` is a pyarrow ``Table`` or a ``RecordBatchReader`` (streamed into files of the
    table's ``write.target-file-size-bytes``, on unpartitioned tables; pyiceberg does not
    stream into partitions yet).  Its schema must be compatible with the table's
    (:func:`~puffin.iceberg.writes.schema.conform`: a :class:`UsageError` names the
    mismatch; nullable fields of required columns are accepted when they hold no null).
    No rows, no commit: the table is returned as it was. The data files are written once; a
    commit that loses to a concurrent one is retried on the refreshed table (new row ids),
    and a commit that finally fails, or Ctrl-C before the commit, removes every file written
    for it. Ctrl-C or SIGTERM after the commit raises
    :class:`~puffin.errors.InterruptedAfterCommit`, naming the snapshot and what was left
    undone.
    """
    import pyarrow as pa

    if not isinstance(data, (pa.Table, pa.RecordBatchReader)):
        raise UsageError(f"data must be a pyarrow Table or RecordBatchReader, not {type(data)}")
    if statistics not in ("update", "none"):
        raise UsageError(f"statistics must be 'update' or 'none', got {statistics!r}")
    follow = statistics == "update" and has_statistics(table)
    data = conform(table, data)
    if isinstance(data, pa.Table) and data.num_rows == 0:
        return table
    files = write_data_files(table, data)
    if not files:
        return table
    v3 = table.metadata.format_version >= 3

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        if v3:
            return commit_snapshot(current, written, added_data=files, operation="append")[0]
        return commit_v2(current, files, written)

    return commit_written(table, attempt, files, follow=follow, max_attempts=max_attempts)


def commit_written(
    table: Table,
    attempt: Callable[[Table, int, list[str]], Table],
    files: Sequence[DataFile],
    *,
    follow: bool,
    max_attempts: int | None,
) -> Table:
    """The commit loop for data files written once (removed if it finally fails), then the
    statistics that follow; an interrupt after the commit names them when they did not."""
    kept = [str(f.file_path) for f in files]
    try:
        committed = with_retries(table, attempt, max_attempts, kept=kept)
    except InterruptedAfterCommit as exc:
        exc.remaining = statistics_left(table) if follow else None
        raise
    return after_commit(committed, follow)


def commit_v2(
    table: Table, files: Sequence[DataFile], written: list[str], updates: Sequence[Any] = ()
) -> Table:
    """pyiceberg's own append snapshot of ``files`` on a v1/v2 table (fast or merging, as
    its properties say), after ``updates`` (a property), committed with interrupts held
    off; the manifests it wrote go into ``written`` so that a failed commit leaves none."""
    from pyiceberg.table.refs import MAIN_BRANCH

    tx = table.transaction()
    if updates:
        tx._apply(tuple(updates))
    producer = tx._append_snapshot_producer({}, branch=MAIN_BRANCH)
    try:
        with producer:
            for f in files:
                producer.append_data_file(f)
    finally:  # the paths it named, written or half-written, even when interrupted
        written.extend([*producer._written_manifests, *producer._written_manifest_lists])

    def commit() -> Table:
        from pyiceberg.catalog.sql import SqlCatalog

        from puffin.iceberg.metadata.sql_commit import staged_for

        if not isinstance(table.catalog, SqlCatalog):
            tx.commit_transaction()
            return table
        with staged_for(table, written):  # its files checked before the swap, as on v3
            tx.commit_transaction()
        return table

    return committed_or_interrupted(commit)


def after_commit(committed: Table, follow: bool) -> Table:
    """The statistics of the snapshot just committed, when they are kept current; returns
    the table with the snapshot just committed as current (with its statistics, or, when
    another writer committed since, as it was committed).  Ctrl-C during the statistics
    raises :class:`InterruptedAfterCommit` saying they were not updated."""
    from puffin.iceberg.statistics.update import update_table_statistics

    result = _detached(committed)
    snapshot = result.current_snapshot()
    snapshot_id = snapshot.snapshot_id if snapshot is not None else None
    if not follow:
        return result
    try:
        update_table_statistics(_detached(committed), progress=False)
        latest = _detached(committed).refresh()
    except InterruptedAfterCommit as exc:  # the statistics landed too
        raise InterruptedAfterCommit(snapshot_id, result) from exc
    except KeyboardInterrupt as exc:
        raise InterruptedAfterCommit(snapshot_id, result, statistics_left(result)) from exc
    current = latest.current_snapshot()
    # With its statistics, unless another writer's snapshot is current by now.
    return latest if current is not None and current.snapshot_id == snapshot_id else result


def statistics_left(table: Table) -> str:
    """What an interrupt after the commit left undone, with the command that does it."""
    return (
        f"its statistics were not brought up to date: {table_command(table, 'stats update')} "
        "(update_table_statistics in Python) does it"
    )


def _detached(table: Table) -> Table:
    """A new ``Table`` object on the same metadata: pyiceberg's transactions update the
    object they run on, so a later commit through it would change what it says."""
    from pyiceberg.table import Table as PyTable

    return PyTable(table.name(), table.metadata, table.metadata_location, table.io, table.catalog)


def has_statistics(table: Table) -> bool:
    """Whether the current snapshot or an ancestor has a statistics file (then appends
    keep the statistics current)."""
    from puffin.iceberg.statistics.update import base_statistics

    snapshot = table.current_snapshot()
    return snapshot is not None and base_statistics(table, snapshot)[0] is not None


def write_data_files(
    table: Table, data: Any, *, into: FileTarget | None = None, write_uuid: uuid.UUID | None = None
) -> list[DataFile]:
    """Parquet data files as pyiceberg writes them, and their records; files without a row
    are removed, and a failure or Ctrl-C while writing removes every file written so far
    (the one being written included); they are named ``00000-<n>-<write uuid>.parquet``,
    ``n`` counting from 0 (``write_uuid``: a new one by default).  A ``RecordBatchReader``
    for an unpartitioned table, or with ``into`` (a partition, schema or size of the
    caller's), is streamed a row group at a time (:mod:`._streaming`: bounded memory, files
    rolled at the target size on disk); anything else goes through pyiceberg's own
    writer."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    from puffin.iceberg.metadata.commits import require_writable_location
    from puffin.iceberg.writes._streaming import can_stream, stream_data_files

    require_writable_location(table)
    write_uuid = write_uuid or uuid.uuid4()
    files: list[DataFile] = []
    written: Iterable[DataFile]
    try:
        if isinstance(data, pa.RecordBatchReader) and (into or can_stream(table.metadata)):
            written = stream_data_files(table.metadata, data, table.io, write_uuid, into=into)
        else:
            written = _dataframe_to_data_files(
                table_metadata=table.metadata, df=data, io=table.io, write_uuid=write_uuid
            )
        for f in written:
            files.append(f)
    except BaseException as exc:
        _release_writers(exc)
        mine = [str(f.file_path) for f in files] + _named(table, str(write_uuid))
        remove_files(table, mine)
        gone = missing_location(exc)
        if gone is not None and str(write_uuid) in gone:  # taken by a cleanup beside us
            raise file_gone(gone) from exc
        raise
    empty = [str(f.file_path) for f in files if f.record_count == 0]
    remove_files(table, empty)
    return [f for f in files if f.record_count > 0]


def _release_writers(exc: BaseException) -> None:
    """Close what the interrupted write left open, now and quietly: the Parquet writer in
    the traceback's frames would otherwise be collected at exit, after its file is gone,
    and print a pyarrow traceback under the one-line message."""
    import gc
    import traceback

    hook = sys.unraisablehook
    sys.unraisablehook = lambda _: None
    try:
        traceback.clear_frames(exc.__traceback__)
        gc.collect()
    finally:
        sys.unraisablehook = hook


def _named(table: Table, token: str) -> list[str]:
    """Files under a local table's folders whose name holds ``token`` (a write's uuid: what
    pyiceberg names the data files of one write by, the one being written included)."""
    from puffin.io.locations import local_path

    roots = {
        local_path(location)
        for location in (
            table.location(),
            table.properties.get("write.data.path", ""),
            table.properties.get("write.metadata.path", ""),
        )
        if location
    }
    found: list[str] = []
    for root in sorted(r for r in roots if r and os.path.isdir(r)):
        for folder, _, names in os.walk(root):
            found.extend(os.path.join(folder, n) for n in names if token in n)
    return found
