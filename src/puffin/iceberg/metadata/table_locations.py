"""The locations a table owns, compared in one normalised form: the ground of the guard
every maintenance delete goes through (:mod:`puffin.iceberg.maintenance.guard`) and of
``verify_table``'s warning about files outside the table.

A location is owned when, normalised, it lies under the table's ``location`` or the
``write.data.path`` / ``write.metadata.path`` it declares, or under a prefix the caller
allows:

* local files (``file:`` or a bare path) by their real path: ``..``, duplicate slashes and
  symlinks (of the file and its folders) resolved, as the file system will;
* object stores by scheme (``s3a``/``s3n`` are ``s3``), bucket and key, with ``..`` and
  duplicate slashes collapsed and percent-escapes decoded, so ``%2e%2e`` cannot climb.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from puffin.io.locations import SAME_SCHEME, local_path

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["TableLocations", "normalise"]


def normalise(location: str) -> str:
    """``location`` in the one form ownership is compared in (see the module docstring)."""
    local = local_path(location)
    if local is not None:
        return "file://" + os.path.realpath(local)
    parts = urlsplit(location)
    scheme = SAME_SCHEME.get(parts.scheme.lower(), parts.scheme.lower())
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
