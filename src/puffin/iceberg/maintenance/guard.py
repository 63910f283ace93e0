"""The one guard every maintenance delete goes through: a file is deleted only if it lies
under a location the table owns (:mod:`puffin.iceberg.metadata.table_locations`).

Which files expire is decided by table metadata, which any writer of the catalog shapes: a
snapshot whose manifest lists another table's data file, or ``/home/...``, would make its
expiry a delete of someone else's data (Iceberg Java deletes it). Anything outside the
table's locations is skipped and reported, never deleted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from puffin.iceberg.metadata.table_locations import TableLocations, normalise
from puffin.io.locations import local_path

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["Deletions", "TableLocations", "normalise"]


@dataclass
class Deletions:
    """Deletes through the guard; what was deleted and skipped, by kind, with bytes."""

    table: Table
    locations: TableLocations
    deleted: dict[str, list[int]] = field(default_factory=dict)  # kind -> [files, bytes]
    skipped_outside_table: list[str] = field(default_factory=list)

    def delete(self, location: str, kind: str) -> bool:
        """Delete ``location`` if the table owns it (True); skip and note it otherwise. A
        file already gone counts as nothing (False)."""
        if not self.locations.owns(location):
            self.skipped_outside_table.append(location)
            return False
        local = local_path(location)
        try:
            if local is not None:
                real = os.path.realpath(local)  # what owns() checked, not a symlink's target
                size = os.stat(real).st_size
                os.remove(real)
            else:
                size = len(self.table.io.new_input(location))
                self.table.io.delete(location)
        except FileNotFoundError:
            return False
        tally = self.deleted.setdefault(kind, [0, 0])
        tally[0] += 1
        tally[1] += size
        return True
