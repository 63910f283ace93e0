"""Tags and branches changed by Iceberg Java's rules: :class:`CheckedRefs`.

pyiceberg 0.12's ``ManageSnapshots`` stages whatever it is asked: ``remove_branch("main")``
(the table then reads as empty, and an expiry deletes every data file), ``create_tag`` over an
existing branch (its head left to expiry), a ref at a snapshot the table does not have.
Iceberg Java's ``UpdateSnapshotReferencesOperation`` refuses each of these; so does
:class:`CheckedRefs`, with :class:`~puffin.errors.UsageError` (exit 2) before anything is
staged. It follows the changes it stages, so a sequence is checked as Java checks it: a ref
created earlier in the same transaction exists, one removed does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyiceberg.table.update.snapshot import ManageSnapshots

from puffin.errors import UsageError
from puffin.iceberg.catalog.advice import table_command

if TYPE_CHECKING:
    from pyiceberg.table import Transaction

__all__ = ["MAIN", "CheckedRefs", "check_ref_name"]

MAIN = "main"


def check_ref_name(name: Any) -> str:
    """``name`` if it can name a ref: a non-empty string without surrounding blanks."""
    if not isinstance(name, str) or not name or name != name.strip():
        raise UsageError(f"{name!r} cannot name a tag or branch: give a non-empty name")
    return name


class CheckedRefs(ManageSnapshots):
    """pyiceberg's ``ManageSnapshots`` staged in a transaction, refusing what Java refuses:
    removing ``main``, creating a ref whose name exists, removing a ref that does not exist
    or is of the other kind, and a ref at a snapshot the table does not have."""

    def __init__(self, transaction: Transaction) -> None:
        super().__init__(transaction)
        metadata = transaction.table_metadata
        self._table = transaction._table  # pyiceberg's own attribute: what advice names
        #: name -> "tag" or "branch", as the staged changes leave them
        self._kinds = {name: ref.snapshot_ref_type.value for name, ref in metadata.refs.items()}
        self._known = [s.snapshot_id for s in metadata.snapshots]

    def create_tag(
        self, snapshot_id: int, tag_name: str, max_ref_age_ms: int | None = None
    ) -> ManageSnapshots:
        """Tag ``snapshot_id`` as ``tag_name``, a name no ref has yet."""
        self._creating(tag_name, snapshot_id, "tag")
        return super().create_tag(snapshot_id, tag_name, max_ref_age_ms)

    def create_branch(
        self,
        snapshot_id: int,
        branch_name: str,
        max_ref_age_ms: int | None = None,
        max_snapshot_age_ms: int | None = None,
        min_snapshots_to_keep: int | None = None,
    ) -> ManageSnapshots:
        """Branch ``branch_name`` at ``snapshot_id``, a name no ref has yet."""
        self._creating(branch_name, snapshot_id, "branch")
        return super().create_branch(
            snapshot_id, branch_name, max_ref_age_ms, max_snapshot_age_ms, min_snapshots_to_keep
        )

    def remove_tag(self, tag_name: str) -> ManageSnapshots:
        """Remove the tag ``tag_name``."""
        self._removing(tag_name, "tag")
        return super().remove_tag(tag_name)

    def remove_branch(self, branch_name: str) -> ManageSnapshots:
        """Remove the branch ``branch_name`` (never ``main``)."""
        if branch_name == MAIN:
            raise UsageError(
                "cannot remove the main branch: it holds the table's current state and every "
                "reader's view of it (Iceberg Java refuses too); nothing was committed"
            )
        self._removing(branch_name, "branch")
        return super().remove_branch(branch_name)

    def _creating(self, name: str, snapshot_id: int, kind: str) -> None:
        check_ref_name(name)
        existing = self._kinds.get(name)
        if existing is not None:
            drop = table_command(self._table, "alter", f"--drop-{existing}", name)
            raise UsageError(
                f"a {existing} named {name!r} exists already: drop it first ({drop}) or "
                "choose another name; nothing was committed"
            )
        if snapshot_id not in self._known:
            latest = ", ".join(str(s) for s in self._known[-5:]) or "none"
            raise UsageError(
                f"the table has no snapshot {snapshot_id} to {kind} as {name!r} (its latest "
                f"snapshots: {latest}); nothing was committed"
            )
        self._kinds[name] = kind

    def _removing(self, name: str, kind: str) -> None:
        existing = self._kinds.get(name)
        if existing != kind:
            found = f"{name!r} is a {existing}" if existing else f"there is no ref {name!r}"
            known = ", ".join(f"{k} {n}" for n, k in sorted(self._kinds.items())) or "none"
            raise UsageError(
                f"cannot remove {kind} {name!r}: {found} (the table's refs: {known}); "
                "nothing was committed"
            )
        del self._kinds[name]
