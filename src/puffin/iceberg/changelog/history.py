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
            assert first is not None
            raise SnapshotRangeError(_no_path(table, first, current, last))
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


def _no_path(table: Table, first: Snapshot, root: Snapshot, last: Snapshot) -> str:
    """Why ``end``'s ancestry stops at ``root`` before reaching ``first``: the snapshots in
    between were expired (an expiry clears the parent id of the oldest snapshot it keeps),
    named from the metadata files the table logs, or ``first`` is on another line."""
    cut = (root.sequence_number or 0) > max(first.sequence_number or 0, 1)
    expired = _expired_between(table, first, root) if cut else None
    if expired:
        names = ", ".join(str(s) for s in expired)
        return (
            f"the snapshots between start snapshot {first.snapshot_id} and snapshot "
            f"{root.snapshot_id} were expired ({names}): their changes cannot be read; "
            f"start at {root.snapshot_id} or later"
        )
    if cut and expired is None:
        return (
            f"the history before snapshot {root.snapshot_id} was expired (its sequence "
            f"number is {root.sequence_number}, start snapshot {first.snapshot_id}'s "
            f"{first.sequence_number}), and the table's metadata files no longer tell which "
            f"snapshots it held: the changes before {root.snapshot_id} cannot be read; "
            f"start at {root.snapshot_id} or later"
        )
    return (
        f"start snapshot {first.snapshot_id} is not an ancestor of end snapshot "
        f"{last.snapshot_id}: a changelog follows one line of history (a branch's own commits)"
    )


def _expired_between(table: Table, first: Snapshot, root: Snapshot) -> list[int] | None:
    """The ids of the snapshots after ``first`` up to ``root``'s parent, oldest first, as the
    metadata files the table logs still know them (newest first, read until they tell);
    ``[]`` when they show ``first`` is not an ancestor; ``None`` when they do not tell."""
    from pyiceberg.serializers import FromInputFile

    known: dict[int, Snapshot] = {}  # as the logged files say, a parent id kept if any did
    for entry in reversed(table.metadata.metadata_log):
        try:
            old = FromInputFile.table_metadata(table.io.new_input(entry.metadata_file))
        except Exception:  # removed (write.metadata.previous-versions-max) or unreadable
            continue
        for s in old.snapshots:
            seen = known.get(s.snapshot_id)
            if seen is None or seen.parent_snapshot_id is None:
                known[s.snapshot_id] = s
        chain: list[int] = []
        at = known.get(root.snapshot_id)
        while at is not None and at.parent_snapshot_id is not None:
            parent = at.parent_snapshot_id
            if parent == first.snapshot_id:
                return chain[::-1]
            if parent in chain:
                break
            chain.append(parent)
            at = known.get(parent)
        if at is not None and at.parent_snapshot_id is None and (at.sequence_number or 0) <= 1:
            return []  # the line goes back to the table's first commit, without ``first``
    return None


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
