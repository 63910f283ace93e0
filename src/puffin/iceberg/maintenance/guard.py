"""The one guard every maintenance delete goes through: a file is deleted only if it lies
under a location the table owns.

Which files expire is decided by table metadata, which any writer of the catalog shapes: a
snapshot whose manifest lists another table's data file, or ``/home/...``, would make its
expiry a delete of someone else's data (Iceberg Java deletes it). Here a location is owned
when, normalised, it lies under the table's ``location`` or the ``write.data.path`` /
``write.metadata.path`` it declares, or under a prefix the caller allows:

* local files (``file:`` or a bare path) by their real path: ``..``, duplicate slashes and
  symlinks (of the file and its folders) resolved, as the file system will;
* object stores by scheme (``s3a``/``s3n`` are ``s3``), bucket and key, with ``..`` and
  duplicate slashes collapsed and percent-escapes decoded, so ``%2e%2e`` cannot climb.

Anything else is skipped and reported, never deleted.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from puffin.io.locations import local_path

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["Deletions", "TableLocations", "normalise"]

_SAME_SCHEME = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs"}


def normalise(location: str) -> str:
    """``location`` in the one form ownership is compared in (see the module docstring)."""
    local = local_path(location)
    if local is not None:
        return "file://" + os.path.realpath(local)
    parts = urlsplit(location)
    scheme = _SAME_SCHEME.get(parts.scheme.lower(), parts.scheme.lower())
    path = posixpath.normpath("/" + unquote(parts.path).lstrip("/"))
    return f"{scheme}://{parts.netloc.lower()}{'' if path == '/' else path}"


@dataclass(frozen=True)
class TableLocations:
    """The normalised roots a table owns (plus allowed prefixes)."""

    roots: tuple[str, ...]

    @classmethod
    def of(cls, table: Table, allow: Iterable[str] = ()) -> TableLocations:
        properties = table.metadata.properties
        declared = [
            table.metadata.location,
            properties.get("write.data.path"),
            properties.get("write.metadata.path"),
            *allow,
        ]
        return cls(tuple(normalise(p) for p in declared if p))

    def owns(self, location: str) -> bool:
        """Whether ``location`` lies under one of the roots."""
        target = normalise(location)
        return any(target == r or target.startswith(r.rstrip("/") + "/") for r in self.roots)


@dataclass
class Deletions:
    """Deletes through the guard; what was deleted and skipped, by kind, with bytes."""

    table: Table
    locations: TableLocations
    deleted: dict[str, list[int]] = field(default_factory=dict)  # kind -> [files, bytes]
    skipped_outside_table: list[str] = field(default_factory=list)

    def delete(self, location: str, kind: str) -> None:
        """Delete ``location`` if the table owns it; skip (and note) it otherwise. A file
        already gone counts as nothing."""
        if not self.locations.owns(location):
            self.skipped_outside_table.append(location)
            return
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
            return
        tally = self.deleted.setdefault(kind, [0, 0])
        tally[0] += 1
        tally[1] += size
