"""pyiceberg's metadata builders on v3 tables: :func:`transaction`.

pyiceberg 0.12 builds schema, partition-spec, sort-order, property and snapshot-reference
changes for a v3 table as for any other, then cannot write the v3 metadata they produce
(``NotImplementedError: Writing V3 is not yet supported``). :func:`transaction` hands out
pyiceberg's own ``Transaction`` (no global change to pyiceberg) and commits what its builders
staged through this library's v3 commit, with the retries and clean-up of every other commit
here, after checking the v3 rules pyiceberg does not know.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from puffin.errors import CommitConflictError, UsageError
from puffin.iceberg.metadata.commits import with_retries
from puffin.iceberg.metadata.v3 import commit
from puffin.iceberg.scan.lineage import LINEAGE_COLUMNS

if TYPE_CHECKING:
    from pyiceberg.table import Table, Transaction

__all__ = ["RESERVED_FIELD_IDS", "check_changes", "transaction"]

#: Field ids Iceberg reserves for metadata columns (``Integer.MAX_VALUE - 200`` and up).
RESERVED_FIELD_IDS = 2**31 - 1 - 200


@contextmanager
def transaction(table: Table, *, max_attempts: int | None = None) -> Iterator[Transaction]:
    """A pyiceberg ``Transaction`` on ``table``, committed when the block ends without error.

    Its builders are pyiceberg's own: ``update_schema()``, ``update_spec()``,
    ``update_sort_order()``, ``set_properties()``, ``remove_properties()``, and
    ``manage_snapshots()`` for tags and branches (``create_tag``, ``create_branch``,
    ``remove_tag``, ``remove_branch``, ``set_current_snapshot``, ...). On exit the staged
    changes are committed once, through the v3 commit on a v3 table; ``table`` then holds
    the committed metadata, as after pyiceberg's own ``commit_transaction``. A concurrent
    commit is retried while every requirement the builders recorded still holds (the schema,
    spec or reference they started from); otherwise :class:`CommitConflictError`. An error
    in the block commits nothing.

    On a v3 table a new schema may not use the field ids reserved for metadata columns or
    the row-lineage column names (``_row_id``, ``_last_updated_sequence_number``):
    :class:`UsageError` naming the rule. No change here rewrites data, so row ids and
    ``next-row-id`` stay as they are.

    Example::

        from puffin.iceberg import load_table, transaction
        from pyiceberg.types import StringType

        table = load_table("db.events")
        with transaction(table) as tx:
            with tx.update_schema() as update:
                update.add_column("note", StringType())
                update.rename_column("amount", "total")
            tx.set_properties({"owner": "data-eng"})
            tx.manage_snapshots().create_tag(table.current_snapshot().snapshot_id, "v1").commit()
    """
    tx = _transaction(table)
    yield tx
    updates, requirements = tuple(tx._updates), tuple(tx._requirements)
    if not updates:
        return
    check_changes(table, updates)
    check_v3_rules(table, updates)

    def attempt(current: Table, number: int, written: list[str]) -> Table:
        if number > 1:
            _still_holds(current, requirements)
        return commit(current, requirements, updates)

    committed = with_retries(table, attempt, max_attempts)
    table.metadata = committed.metadata
    table.metadata_location = committed.metadata_location


def _transaction(table: Table) -> Transaction:
    """pyiceberg's ``Transaction`` with ``manage_snapshots()`` (which pyiceberg offers only on
    a table, where it commits at once), refs and properties checked by Java's rules."""
    from pyiceberg.table import Transaction
    from pyiceberg.table.update.snapshot import ManageSnapshots

    from puffin.iceberg.metadata.properties import check_property_changes
    from puffin.iceberg.writes.refs import CheckedRefs

    class _Transaction(Transaction):
        def manage_snapshots(self) -> ManageSnapshots:
            """Tags and branches, staged in this transaction (``.commit()`` stages them);
            what Iceberg Java refuses is refused (:class:`~.refs.CheckedRefs`)."""
            return CheckedRefs(transaction=self)

        def set_properties(
            self, properties: dict[str, Any] | None = None, /, **kwargs: Any
        ) -> Transaction:
            """pyiceberg's, each value checked as Iceberg's writers will read it."""
            check_property_changes(self.table_metadata, properties or kwargs, table=self._table)
            return super().set_properties(properties or {}, **kwargs)

        def remove_properties(self, *removals: str) -> Transaction:
            """pyiceberg's; a key that is not set is no change (as in Java), not an error."""
            check_property_changes(self.table_metadata, {}, removals)
            present = [key for key in removals if key in self.table_metadata.properties]
            return super().remove_properties(*present) if present else self

    return _Transaction(table, autocommit=False)


def check_changes(table: Table, updates: Sequence[Any]) -> None:
    """What a transaction staged, checked once more whatever staged it (a builder of
    pyiceberg's own, say): ``main`` is never removed, properties pass Java's rules."""
    from pyiceberg.table.update import RemoveSnapshotRefUpdate, SetPropertiesUpdate

    from puffin.iceberg.metadata.properties import check_property_changes
    from puffin.iceberg.writes.refs import MAIN

    for update in updates:
        if isinstance(update, RemoveSnapshotRefUpdate) and update.ref_name == MAIN:
            raise UsageError("cannot remove the main branch; nothing was committed")
        if isinstance(update, SetPropertiesUpdate):
            check_property_changes(table.metadata, update.updates, table=table)


def check_v3_rules(table: Table, updates: Sequence[Any]) -> None:
    """The v3 rules pyiceberg's builders do not check: :class:`UsageError` naming the rule."""
    from pyiceberg.schema import index_by_id
    from pyiceberg.table.update import AddSchemaUpdate

    if table.metadata.format_version < 3:
        return
    for update in updates:
        if not isinstance(update, AddSchemaUpdate):
            continue
        for field_id, field in index_by_id(update.schema_).items():
            name = update.schema_.find_column_name(field_id)
            if field_id >= RESERVED_FIELD_IDS:
                raise UsageError(
                    f"column {name!r} has field id {field_id}: ids from {RESERVED_FIELD_IDS} "
                    "up are reserved for Iceberg's metadata columns"
                )
            if field.name in LINEAGE_COLUMNS:
                raise UsageError(
                    f"column {name!r}: {field.name} is the name of a row-lineage metadata "
                    "column on format version 3 tables; choose another name"
                )


def _still_holds(table: Table, requirements: Sequence[Any]) -> None:
    """Retrying after a lost race is right only if what the changes were built on is still
    there; otherwise the caller must build them again on the table as it now is."""
    from pyiceberg.exceptions import CommitFailedException

    for requirement in requirements:
        try:
            requirement.validate(table.metadata)
        except CommitFailedException as exc:
            raise CommitConflictError(
                f"table {'.'.join(table.name())} changed underneath the transaction ({exc}); "
                "nothing was committed: load the table again and redo the changes"
            ) from None
