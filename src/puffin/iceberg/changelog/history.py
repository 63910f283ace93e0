"""The snapshots a changelog reads: ``start`` and ``end`` (a snapshot id, a tag or a branch)
resolved, and the one line of ancestry between them, oldest first.

As Iceberg Java's incremental scans take them: ``start`` is exclusive, ``end`` inclusive, and
``start`` must be an ancestor of ``end``. Every snapshot in between must still be in the
table's metadata: the changes of an expired snapshot cannot be read, and skipping it would
report its rows as never changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from puffin.errors import SnapshotRangeError

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["SnapshotRef", "changelog_range", "resolve_ref"]

#: A snapshot as a changelog takes it: its id, or the name of a tag or branch.
SnapshotRef = int | str


def resolve_ref(table: Table, ref: SnapshotRef, role: str) -> Snapshot:
    """The snapshot ``ref`` names: a snapshot id, a tag or branch name, or an id written as
    text (as the command line passes it); :class:`SnapshotRangeError` naming ``role``
    (``start``/``end``) and what the table has otherwise."""
    if isinstance(ref, str):
        named = table.metadata.refs.get(ref)
        if named is not None:
            ref = named.snapshot_id
        elif ref.strip().lstrip("-").isdigit():
            ref = int(ref)
        else:
            known = ", ".join(sorted(table.metadata.refs)) or "none"
            raise SnapshotRangeError(
                f"{role} {ref!r} is neither a snapshot id nor a tag or branch "
                f"(tags and branches: {known})"
            )
    if isinstance(ref, bool) or not isinstance(ref, int):
        raise SnapshotRangeError(f"{role} must be a snapshot id, tag or branch; got {ref!r}")
    snapshot = table.snapshot_by_id(ref)
    if snapshot is None:
        logged = any(entry.snapshot_id == ref for entry in table.metadata.snapshot_log)
        why = "it was expired" if logged else "the table has no such snapshot (any more)"
        raise SnapshotRangeError(f"{role} snapshot {ref} cannot be read: {why}")
    return snapshot


def changelog_range(
    table: Table, start: SnapshotRef | None, end: SnapshotRef | None
) -> tuple[Snapshot | None, list[Snapshot]]:
    """``(start snapshot, [the snapshots after it up to end, oldest first])``. ``start``
    None: from the table's first snapshot (all of ``end``'s ancestry); ``end`` None: the
    current snapshot. An empty list when ``start`` is ``end`` or the table has no snapshot."""
    first = None if start is None else resolve_ref(table, start, "start")
    if end is None:
        last = table.current_snapshot()
        if last is None:
            if first is not None:
                raise SnapshotRangeError("the table has no current snapshot to end at")
            return None, []
    else:
        last = resolve_ref(table, end, "end")
    stop = None if first is None else first.snapshot_id
    chain: list[Snapshot] = []
    current = last
    while current.snapshot_id != stop:
        chain.append(current)
        parent = current.parent_snapshot_id
        if parent is None:
            if stop is None:
                _check_first(current)
                break
            raise SnapshotRangeError(
                f"start snapshot {stop} is not an ancestor of end snapshot {last.snapshot_id}: "
                "a changelog follows one line of history (a branch's own commits)"
            )
        found = table.snapshot_by_id(parent)
        if found is None:
            raise SnapshotRangeError(
                f"snapshot {parent}, the parent of {current.snapshot_id}, was expired: the "
                f"changes before {current.snapshot_id} cannot be read; start at "
                f"{current.snapshot_id} or later"
            )
        current = found
    chain.reverse()
    return first, chain


def _check_first(root: Snapshot) -> None:
    """``root`` (an ancestry without parent) is the table's first commit, unless its sequence
    number says commits came before it: pyiceberg's expiry clears the parent id of the
    oldest snapshot it keeps (Iceberg Java's keeps it, and the expired parent is named)."""
    sequence = root.sequence_number or 0
    if sequence > 1:
        raise SnapshotRangeError(
            f"the history before snapshot {root.snapshot_id} was expired (its sequence number "
            f"is {sequence}): the changes before it cannot be read; start at "
            f"{root.snapshot_id} or later"
        )
