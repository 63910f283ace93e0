"""Turning a table's equality deletes into position deletes: :func:`convert_equality_deletes`.

Streaming writers (Flink, Kafka Connect, Debezium sinks, iceberg-rust) delete by key: an
equality delete file says "every row with ``id = 7`` written before me is gone", and every
reader must then compare the keys of every older data file of its partition with every such
file, at every read. Many engines refuse such tables. This job does the comparison once: for
each live data file an equality delete applies to, the rows it removes
(:class:`~puffin.iceberg.scan.delete_filter.DeleteFilter`: the file's key columns matched in
Arrow) are merged with the file's deletion vector and position deletes into one vector
(:func:`~puffin.iceberg.deletes.merge.merge_deletes`, the one merge), and one ``replace``
snapshot adds those vectors and removes every equality delete file with the vectors they
supersede. Every reader's rows stay the same and no row id changes. The commit is retried on
the table as it is then if another writer committed meanwhile (an append or delete that
landed keeps its effect: the conversion is done again over it). A v2 table, which has no
deletion vectors, gets Parquet position-delete files instead (one per data file, or per
partition: :mod:`~puffin.iceberg.deletes.position_files`), holding the rows its equality
deletes remove that no position delete removes already.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.iceberg.deletes.merge import merge_deletes
from puffin.iceberg.deletes.position_files import write_position_deletes
from puffin.iceberg.deletes.rows import require_v2_or_v3
from puffin.iceberg.deletes.vectors import write_vectors
from puffin.iceberg.metadata.commits import with_retries
from puffin.iceberg.metadata.delete_files import is_equality_delete, live_delete_files
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.delete_filter import DeleteFilter
from puffin.iceberg.scan.plan import plan_files
from puffin.support.progress import Progress

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["ConvertResult", "Matcher", "convert_equality_deletes"]

#: What finds the rows: ``(table, planned files, progress) -> {data file path: positions its
#: equality deletes remove}``; :func:`convert_equality_deletes` matches in this process,
#: ``puffin.spark.convert_equality_deletes`` on Spark's executors.
Matcher = Callable[
    ["Table", "list[PlannedFile]", "bool | None"], "Mapping[str, npt.NDArray[np.int64]]"
]


@dataclass(frozen=True)
class ConvertResult:
    """What :func:`convert_equality_deletes` did (``snapshot_id`` ``None``: no equality
    delete file was live, nothing committed)."""

    table: Table
    snapshot_id: int | None
    #: equality delete files removed (those that matched no row included)
    equality_files: int
    #: data files whose rows the equality deletes removed, each given one vector
    data_files: int
    #: rows the equality deletes removed that no other delete had: now in the vectors
    converted_rows: int
    attempts: int = 1


def convert_equality_deletes(
    table: Table,
    *,
    max_attempts: int | None = None,
    progress: bool | None = False,
    match: Matcher | None = None,
) -> ConvertResult:
    """Replace the current snapshot's equality delete files by deletion vectors (on v2,
    position-delete files), in one ``replace`` snapshot (see the module docstring).
    ``progress``: a bar over the rows of the data files whose keys are read. ``match``
    finds the deleted rows instead of this process (:data:`Matcher`).

    Example::

        result = convert_equality_deletes(table)
        print(result.equality_files, "equality delete files ->", result.data_files, "vectors")
    """
    require_v2_or_v3(table, "convert_equality_deletes")

    def attempt(table: Table, number: int, written: list[str]) -> ConvertResult:
        snapshot = table.current_snapshot()
        live = {} if snapshot is None else live_delete_files(table, snapshot)
        equality = {key for key, d in live.items() if is_equality_delete(d)}
        if snapshot is None or not equality:
            return ConvertResult(table, None, 0, 0, 0, number)
        planned = plan_files(table, snapshot, equality=True)
        deletes = DeleteFilter(table, snapshot)
        if match is None:
            matched: Mapping[str, npt.NDArray[np.int64]] = _matched(deletes, planned, progress)
        else:
            matched = match(table, planned, progress)
        # Merged with the position deletes only: the equality deletes are what is converted.
        positional = [p.positional() for p in planned]
        v2 = table.metadata.format_version < 3
        merged = merge_deletes(table, snapshot, positional, matched, index=deletes, keep_added=v2)
        files: list[DataFile] = []
        superseded = merged.superseded | equality
        if v2:  # the rows each file loses, in Parquet
            files = write_position_deletes(table, positional, merged.added, written)
            superseded = frozenset(equality)
        elif merged.positions:
            entries, files = write_vectors(table, positional, merged.positions)
            written.append(str(entries[0].path))
        committed, new = commit_snapshot(
            table, written, deletes=files, superseded=superseded, operation="replace"
        )
        counts = (len(equality), len(merged.positions), merged.newly_deleted)
        return ConvertResult(committed, new.snapshot_id, *counts, attempts=number)

    # The first attempt reads the data files the keys may match: no turn held meanwhile.
    return with_retries(table, attempt, max_attempts, first_turn=False)


def _matched(
    deletes: DeleteFilter, planned: list[PlannedFile], progress: bool | None
) -> dict[str, npt.NDArray[np.int64]]:
    """``{data file: positions its equality deletes remove}``, files without a match out."""
    touched = [p for p in planned if p.equality_deletes]
    out: dict[str, npt.NDArray[np.int64]] = {}
    total = sum(p.record_count for p in touched)
    with Progress(total, label="convert ", enabled=progress) as bar:
        for p in touched:
            found = deletes.equality_positions(p)
            if len(found):
                out[p.path] = found
            bar.update(p.record_count)
    return out
