"""Statistics that keep up with appends: sketch only what was added, union with the last file.

Theta sketches union: the sketch of a table after appends is the union of the last
statistics file's sketch and the sketches of the data files added since, and with the
canonical union (the ``k`` smallest distinct hashes below the smallest theta) the result is
byte for byte the sketch a full :func:`compute_table_statistics` would build.  Deletes and
overwrites cannot be taken back out of a sketch: when a snapshot since the last statistics
file removed rows (a ``replace``, such as a compaction or an upgrade, removes none), the
union still counts their values, so its ``ndv`` is an upper bound, as in Trino.  Each such
blob carries :data:`~puffin.iceberg.statistics.files.NDV_UPPER_BOUND` (``"true"``) until a
full computation replaces it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from puffin.iceberg.catalog.catalogs import resolve_snapshot
from puffin.iceberg.metadata.manifests import read_manifest_entries
from puffin.iceberg.scan.columns import resolve_columns, snapshot_schema
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.statistics.compute import compute_table_statistics, sketch_files, sketchable
from puffin.iceberg.statistics.files import (
    NDV_UPPER_BOUND,
    read_table_statistics,
    write_statistics_file,
)
from puffin.io.stores import says_store_failures
from puffin.support.progress import Progress

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.table.statistics import StatisticsFile

__all__ = ["base_statistics", "removes_rows", "update_table_statistics"]


@says_store_failures("update_table_statistics")
def update_table_statistics(
    table: Table,
    *,
    full: bool = False,
    lg_k: int = 12,
    progress: bool | None = None,
    max_attempts: int | None = None,
) -> StatisticsFile:
    """Bring the table's statistics to its current snapshot and commit them.

    Incrementally by default: the nearest ancestor with a statistics file is the base, the
    data files added since are sketched and each column's sketch is unioned with the base's
    (byte for byte a full computation when only appends came since).  When a snapshot since
    the base deleted or replaced rows, the sketches are an upper bound and say so
    (:data:`NDV_UPPER_BOUND`).  With ``full``, or without any base, everything is sketched
    again (:func:`compute_table_statistics`).  A snapshot that has statistics already
    gets them again only with ``full``.
    """
    snapshot = resolve_snapshot(table, None)
    base, since = base_statistics(table, snapshot)
    if full or base is None:
        return compute_table_statistics(
            table, lg_k=lg_k, progress=progress, max_attempts=max_attempts
        )
    previous = read_table_statistics(table, snapshot_id=base.snapshot_id)
    if base.snapshot_id == snapshot.snapshot_id:
        return previous.statistics_file
    upper = any(removes_rows(s) for s in since) or any(
        c.blob.properties.get(NDV_UPPER_BOUND) == "true" for c in previous.columns
    )
    # A replace (compaction) wrote rows the base counted already: nothing new to sketch.
    added = _added_data_files(table, {s.snapshot_id for s in since if _operation(s) != "replace"})
    schema = snapshot_schema(table, snapshot.schema_id)
    ids = [c.field_id for c in previous.columns]
    scan_columns, _ = resolve_columns(schema, ids, supported=sketchable)
    planned = [p for p in plan_files(table, snapshot, equality=True) if p.path in added]
    total = sum(p.record_count for p in planned)
    with Progress(total, label="statistics ", enabled=progress) as bar:
        fresh = sketch_files(table, snapshot, planned, scan_columns, lg_k, bar) if planned else {}
    sketches = []
    for column in scan_columns:
        old = next(c.sketch for c in previous.columns if c.field_id == column.field_id)
        new = fresh.get(column.field_id)
        merged = old if new is None else type(old).union(old, new, lg_k=lg_k)
        sketches.append((column.field_id, merged))
    return write_statistics_file(
        table,
        sketches,
        snapshot_id=snapshot.snapshot_id,
        sequence_number=snapshot.sequence_number or 0,
        max_attempts=max_attempts,
        blob_properties={NDV_UPPER_BOUND: "true"} if upper else None,
    )


def base_statistics(table: Table, snapshot: Snapshot) -> tuple[Snapshot | None, list[Snapshot]]:
    """The nearest ancestor (or the snapshot itself) with a statistics file, and the
    snapshots after it up to ``snapshot``."""
    with_stats = {s.snapshot_id for s in table.metadata.statistics}
    since: list[Snapshot] = []
    current: Snapshot | None = snapshot
    while current is not None:
        if current.snapshot_id in with_stats:
            return current, since
        since.append(current)
        parent = current.parent_snapshot_id
        current = None if parent is None else table.snapshot_by_id(parent)
    return None, since


def removes_rows(snapshot: Snapshot) -> bool:
    """Whether the snapshot may have removed rows: anything but an append or a replace
    (which, by the spec, rewrites files "without changing table data")."""
    return _operation(snapshot) not in ("append", "replace")


def _operation(snapshot: Snapshot) -> str:
    return snapshot.summary.operation.value if snapshot.summary else "overwrite"


def _added_data_files(table: Table, snapshot_ids: set[int]) -> set[str]:
    """Paths of the data files the given snapshots added."""
    from pyiceberg.manifest import DataFileContent, ManifestContent, ManifestEntryStatus

    found: set[str] = set()
    current = table.current_snapshot()
    if current is None:
        return found
    for manifest in current.manifests(table.io):
        if manifest.content != ManifestContent.DATA:
            continue
        if manifest.added_snapshot_id not in snapshot_ids:
            continue
        for entry in read_manifest_entries(table.io, manifest, cached=True):
            if (
                entry.status == ManifestEntryStatus.ADDED
                and entry.snapshot_id in snapshot_ids
                and entry.data_file.content == DataFileContent.DATA
            ):
                found.add(str(entry.data_file.file_path))
    return found
