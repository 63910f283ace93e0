"""Files in a table's folders that no snapshot references (their removal is maintenance's).

A deletion-vector job that was never committed, a write killed before its commit, a commit
whose outcome was unknown, a statistics file replaced by a newer one: each leaves a file
that no reader will ever open and that nothing removes.  :func:`find_orphans` lists every
such file under the table's location, of every kind (data and delete files, manifests,
manifest lists, metadata files, statistics): a file counts as referenced when any snapshot
still in the metadata reaches it, when it is a statistics or partition-statistics file, or
when it is the current or a logged metadata file.  Hidden files (``.``/``_`` names, such
as Hadoop's ``.crc`` side files) and ``version-hint.text`` are never listed, as in Iceberg
Java's ``DeleteOrphanFiles``.  :func:`puffin.iceberg.maintenance.orphans.remove_orphan_files`
removes those older than a threshold (default age 3 days, so that a commit still in flight
keeps the files it just wrote).
"""

from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.errors import UsageError
from puffin.iceberg.metadata.manifests import read_manifest_entries, read_manifest_list
from puffin.io.locations import local_path, location_key

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadata

__all__ = [
    "DEFAULT_OLDER_THAN",
    "Orphan",
    "find_orphans",
    "kind_of",
    "parse_age",
    "reachable_files",
    "referenced_files",
]

#: Orphans younger than this are left alone: a concurrent commit may be about to add them.
DEFAULT_OLDER_THAN = datetime.timedelta(days=3)
_HIDDEN = (".", "_")
_VERSION_HINT = "version-hint.text"
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class Orphan:
    """A file under the table's location that nothing in its metadata references."""

    path: str
    size: int
    modified: datetime.datetime
    kind: str = "data"


def parse_age(text: str) -> datetime.timedelta:
    """``"3d"``, ``"12h"``, ``"30m"``, ``"90s"``, ``"2w"`` as a duration."""
    match = _AGE.match(text)
    if match is None:
        raise UsageError(f"{text!r} is not an age such as 3d, 12h, 30m or 90s")
    return datetime.timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def referenced_files(table: Table) -> set[str]:
    """Every file the table metadata references, in any snapshot, as :func:`location_key`
    keys: metadata files, manifest lists, manifests, data and delete files, statistics."""
    found = {table.metadata_location, *(e.metadata_file for e in table.metadata.metadata_log)}
    return {location_key(p) for p in found | reachable_files(table)}


def reachable_files(
    table: Table, metadata: TableMetadata | None = None, *, live_only: bool = False
) -> set[str]:
    """Every file the snapshots of ``metadata`` (default: the table's) reach, as written:
    manifest lists, manifests, data and delete files, statistics and partition-statistics
    files. ``live_only``: a content file counts only through a live entry (a file a kept
    snapshot deleted is reached by nothing, as Java's ``all_files`` sees it)."""
    meta = metadata if metadata is not None else table.metadata
    found: set[str] = {s.statistics_path for s in meta.statistics}
    found.update(p.statistics_path for p in meta.partition_statistics)
    manifests: set[str] = set()
    for snapshot in meta.snapshots:
        found.add(snapshot.manifest_list)
        for manifest in read_manifest_list(table.io, snapshot.manifest_list):
            if manifest.manifest_path in manifests:
                continue
            manifests.add(manifest.manifest_path)
            for entry in read_manifest_entries(table.io, manifest, include_deleted=not live_only):
                found.add(str(entry.data_file.file_path))
    return found | manifests


def kind_of(path: str) -> str:
    """What a file under a table's folder is, by its name: ``data``, ``delete`` (a DV or
    position delete file), ``manifest``, ``manifest-list``, ``metadata``, ``statistics``."""
    name = os.path.basename(path)
    if name.endswith(".metadata.json"):
        return "metadata"
    if name.endswith(".stats") or (name.endswith(".puffin") and "deletes" not in name):
        return "statistics"
    if name.endswith(".puffin") or "-deletes" in name:
        return "delete"
    if name.endswith(".avro"):
        return "manifest-list" if name.startswith("snap-") else "manifest"
    return "data"


def find_orphans(table: Table, referenced: set[str] | None = None) -> list[Orphan]:
    """Files under the table's location that nothing references, oldest first (``referenced``:
    :func:`referenced_files` of the table, when the caller has read it).  Tables outside the
    local file system are not listed (their FileIO cannot list); they give an empty list."""
    root = local_path(table.location())
    if root is None or not os.path.isdir(root):
        return []
    if referenced is None:
        referenced = referenced_files(table)
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(_HIDDEN)]
        for name in names:
            path = os.path.join(folder, name)
            hidden = name.startswith(_HIDDEN) or name == _VERSION_HINT
            if hidden or os.path.normpath(path) in referenced:
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:  # removed while we looked
                continue
            when = datetime.datetime.fromtimestamp(st.st_mtime, tz=datetime.timezone.utc)
            out.append(Orphan(path, st.st_size, when, kind_of(path)))
    return sorted(out, key=lambda o: (o.modified, o.path))
