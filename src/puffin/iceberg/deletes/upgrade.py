"""The upgrade of a v1/v2 table to format version 3, position deletes turned into DVs.

Iceberg v3 readers still apply Parquet position-delete files, but v3 writers may not add
them and the spec wants one deletion vector per data file, so the upgrade converts them in
the same commit that sets ``format-version`` 3, as a ``replace`` snapshot: the table never
shows a state with both. Equality delete files stay as they are (v3 keeps them; see
:func:`~puffin.iceberg.convert_equality_deletes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from puffin.iceberg.deletes.merge import merge_deletes
from puffin.iceberg.deletes.vectors import write_vectors
from puffin.iceberg.metadata import v3
from puffin.iceberg.metadata.commits import main_branch_requirements, with_retries
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.plan import PlannedFile, plan_files

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["upgrade_to_v3"]


def upgrade_to_v3(
    table: Table,
    *,
    max_attempts: int | None = None,
    positions: Mapping[str, Any] | None = None,
) -> Table:
    """The table at format version 3, with its position deletes turned into deletion vectors.

    Sets ``format-version`` 3 and ``next-row-id``; if the live snapshot has Parquet
    position-delete files, the same commit adds a ``replace`` snapshot in which every data
    file they apply to has one deletion vector holding its deleted positions, and the
    position-delete files are removed.  A v3 table is returned as it is.  ``positions``
    (``{data file: positions}``, computed elsewhere from those files: Spark) is used while
    the table is the version given, instead of reading the delete files here; an attempt
    after a concurrent commit reads them again.  It must hold every deleted position of
    those files, keyed by the data files' paths as the manifests write them: a data file
    missing from it keeps no deletes (its position-delete files are removed all the same).
    A key that is not a live data file, or a position past a data file's end, is a
    ``ValueError``.
    """
    from pyiceberg.table.update import UpgradeFormatVersionUpdate

    given_for = table.metadata_location  # ``positions`` describe this version of the table

    def attempt(table: Table, number: int, written: list[str]) -> Table:
        if table.metadata.format_version >= 3:  # already, or upgraded by the winner
            return table
        snapshot = table.current_snapshot()
        upgrade = UpgradeFormatVersionUpdate.model_validate({"format-version": 3})
        # Equality deletes stay as they are (v3 keeps them): the vectors hold positions only.
        planned = [] if snapshot is None else _positional(table, snapshot)
        given = positions if table.metadata_location == given_for else None
        if snapshot is None:
            return v3.commit(table, main_branch_requirements(table, snapshot), [upgrade])
        merged = merge_deletes(
            table,
            snapshot,
            planned,
            _as_arrays(given) if given is not None else {},
            read_live=given is None,
            replace_position_deletes=True,
        )
        if not merged.superseded:
            return v3.commit(table, main_branch_requirements(table, snapshot), [upgrade])
        entries, files = ([], []) if not merged.positions else write_vectors(
            table, planned, merged.positions
        )
        written.extend(str(e.path) for e in entries[:1])
        committed, _ = commit_snapshot(
            table,
            written,
            deletes=files,
            superseded=merged.superseded,
            operation="replace",
            first_updates=[upgrade],
        )
        return committed

    return with_retries(table, attempt, max_attempts)


def _as_arrays(given: Mapping[str, Any]) -> dict[str, Any]:
    """Positions given in any form :class:`puffin.DeletionVector` accepts, as arrays."""
    from puffin.blobs.dv.files import DeletionVector

    return {
        path: (dv if isinstance(dv, DeletionVector) else DeletionVector(dv)).to_numpy()
        for path, dv in given.items()
    }


def _positional(table: Table, snapshot: Snapshot) -> list[PlannedFile]:
    """The snapshot's plan without the equality deletes of each file."""
    return [p.positional() for p in plan_files(table, snapshot, equality=True)]
