"""Which snapshots are past the table's retention: the rule :func:`expire_snapshots` applies
and ``verify_table`` warns about (Iceberg Java's ``ExpireSnapshots`` defaults)."""

from __future__ import annotations

import datetime
import time
from typing import TYPE_CHECKING

from puffin.errors import UsageError

if TYPE_CHECKING:
    from pyiceberg.table.metadata import TableMetadata

__all__ = [
    "DEFAULT_MAX_AGE",
    "MAX_AGE_PROPERTY",
    "MIN_KEEP_PROPERTY",
    "cutoff_ms_of",
    "expired_snapshots",
]

#: Java's defaults: ``history.expire.max-snapshot-age-ms`` (5 days) and
#: ``history.expire.min-snapshots-to-keep`` (1).
MAX_AGE_PROPERTY = "history.expire.max-snapshot-age-ms"
MIN_KEEP_PROPERTY = "history.expire.min-snapshots-to-keep"
DEFAULT_MAX_AGE = datetime.timedelta(days=5)


def cutoff_ms_of(
    older_than: datetime.datetime | datetime.timedelta | None, configured: str | None
) -> int:
    """The cutoff in epoch milliseconds: a point in time, an age, or (``None``) the
    table's configured ``history.expire.max-snapshot-age-ms`` (else 5 days)."""
    now_ms = int(time.time() * 1000)
    if older_than is None:
        age = datetime.timedelta(milliseconds=int(configured)) if configured else DEFAULT_MAX_AGE
        return now_ms - int(age.total_seconds() * 1000)
    if isinstance(older_than, datetime.timedelta):
        if older_than < datetime.timedelta(0):
            raise UsageError("older_than must not be a negative age")
        return now_ms - int(older_than.total_seconds() * 1000)
    if older_than.tzinfo is None:
        raise UsageError("older_than must be a timezone-aware datetime (or a timedelta)")
    return int(older_than.timestamp() * 1000)


def expired_snapshots(metadata: TableMetadata, cutoff_ms: int, retain_last: int) -> set[int]:
    """The snapshots to remove: older than the cutoff, and neither a ref's snapshot nor one
    of the last ``retain_last`` ancestors of a branch."""
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    kept: set[int] = set()
    for ref in metadata.refs.values():
        kept.add(ref.snapshot_id)
        if ref.snapshot_ref_type != "branch":
            continue
        snapshot_id: int | None = ref.snapshot_id
        for _ in range(retain_last):
            snapshot = by_id.get(snapshot_id) if snapshot_id is not None else None
            if snapshot is None:
                break
            kept.add(snapshot.snapshot_id)
            snapshot_id = snapshot.parent_snapshot_id
    return {
        s.snapshot_id
        for s in metadata.snapshots
        if s.snapshot_id not in kept and s.timestamp_ms < cutoff_ms
    }
