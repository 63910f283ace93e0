"""The one guard every maintenance delete goes through: a file is deleted only if it lies
under a location the table owns (:mod:`puffin.iceberg.metadata.table_locations`).

Which files expire is decided by table metadata, which any writer of the catalog shapes: a
snapshot whose manifest lists another table's data file, or ``/home/...``, would make its
expiry a delete of someone else's data (Iceberg Java deletes it). Anything outside the
table's locations is skipped and reported, never deleted.

A delete that must be undoable (orphan cleanup beside running writers) goes in two steps: the
file is first *set aside*, renamed to a hidden sibling ``.<name>.puffin-orphan`` (one atomic
rename, on local files), and deleted only once the table's references have been read again
without it; a file that became referenced meanwhile is put back. A cleanup killed between
the steps leaves the set-aside files, which the next cleanup puts back before it starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from puffin.iceberg.metadata.table_locations import TableLocations, normalise
from puffin.iceberg.verify.orphans import SET_ASIDE_SUFFIX, set_aside_files
from puffin.io.locations import local_path

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["Deletions", "TableLocations", "normalise", "set_aside_files"]


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
        self.count(kind, size)
        return True

    def set_aside(self, location: str) -> str | None:
        """Rename the local file ``location`` to its hidden set-aside name if the table owns
        it; the set-aside path, or ``None`` (outside the table: noted; or already gone)."""
        if not self.locations.owns(location):
            self.skipped_outside_table.append(location)
            return None
        local = local_path(location)
        if local is None:
            raise ValueError(f"only local files are set aside, not {location}")
        real = os.path.realpath(local)  # what owns() checked, not a symlink's target
        aside = os.path.join(os.path.dirname(real), f".{os.path.basename(real)}{SET_ASIDE_SUFFIX}")
        try:
            os.rename(real, aside)
        except FileNotFoundError:
            return None
        return aside

    def finish(self, aside: str, kind: str) -> bool:
        """Delete a set-aside file for good (counted as ``kind``); False if it is gone."""
        try:
            size = os.stat(aside).st_size
            os.remove(aside)
        except FileNotFoundError:
            return False
        self.count(kind, size)
        return True

    @staticmethod
    def restore(aside: str, original: str) -> None:
        """Put a set-aside file back; when a file of that name exists again, it stays and
        the set-aside copy goes (it is the older one)."""
        try:
            os.link(aside, original)  # never over a file of that name
        except FileExistsError:
            pass
        os.remove(aside)

    def add(self, other: Deletions) -> None:
        """What ``other`` deleted and skipped, counted here too (the deletes a Spark task
        made through its own guard)."""
        for kind, (files, size) in other.deleted.items():
            tally = self.deleted.setdefault(kind, [0, 0])
            tally[0] += files
            tally[1] += size
        self.skipped_outside_table.extend(other.skipped_outside_table)

    def count(self, kind: str, size: int) -> None:
        """Count a file of ``kind`` and ``size`` bytes as deleted."""
        tally = self.deleted.setdefault(kind, [0, 0])
        tally[0] += 1
        tally[1] += size
