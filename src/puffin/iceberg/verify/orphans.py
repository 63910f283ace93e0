"""Puffin files in a table's folders that no snapshot references, and their cleanup.

A deletion-vector job that was never committed, a commit whose outcome was unknown, a
statistics file replaced by a newer one: each leaves a ``.puffin`` or ``.stats`` file that
no reader will ever open and that nothing removes.  :func:`find_orphans` lists them (every
snapshot still in the metadata counts as referencing its deletion vectors, and the
statistics and partition-statistics files are referenced); :func:`clean_orphans` removes
those older than a threshold, and only when asked, as Iceberg Java's
``DeleteOrphanFiles`` does (default age 3 days, so that a commit still in flight keeps the
file it just wrote).
"""

from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.errors import UsageError
from puffin.iceberg.metadata.manifests import read_manifest_entries, read_manifest_list
from puffin.locations import local_path

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["DEFAULT_OLDER_THAN", "Orphan", "clean_orphans", "find_orphans", "parse_age"]

#: Orphans younger than this are left alone: a concurrent commit may be about to add them.
DEFAULT_OLDER_THAN = datetime.timedelta(days=3)
_SUFFIXES = (".puffin", ".stats")
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class Orphan:
    """A Puffin file under the table's location that no snapshot or statistics references."""

    path: str
    size: int
    modified: datetime.datetime


def parse_age(text: str) -> datetime.timedelta:
    """``"3d"``, ``"12h"``, ``"30m"``, ``"90s"``, ``"2w"`` as a duration."""
    match = _AGE.match(text)
    if match is None:
        raise UsageError(f"{text!r} is not an age such as 3d, 12h, 30m or 90s")
    return datetime.timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def referenced_puffin_files(table: Table) -> set[str]:
    """Local paths of every Puffin file the table metadata references, in any snapshot."""
    found: set[str] = set()
    for stats in [*table.metadata.statistics, *table.metadata.partition_statistics]:
        found.add(stats.statistics_path)
    found.update(_delete_files_in_manifests(table))
    return {local_path(p) or p for p in found}


def _delete_files_in_manifests(table: Table) -> set[str]:
    """Every Puffin delete file a live entry of any snapshot's delete manifests names
    (each manifest read once; no rule is checked here, so a broken table still lists)."""
    from pyiceberg.manifest import FileFormat, ManifestContent

    seen: set[str] = set()
    found: set[str] = set()
    for snapshot in table.metadata.snapshots:
        for manifest in read_manifest_list(table.io, snapshot.manifest_list):
            if manifest.content != ManifestContent.DELETES or manifest.manifest_path in seen:
                continue
            seen.add(manifest.manifest_path)
            for entry in read_manifest_entries(table.io, manifest):
                if entry.data_file.file_format == FileFormat.PUFFIN:
                    found.add(str(entry.data_file.file_path))
    return found


def find_orphans(table: Table) -> list[Orphan]:
    """Puffin files (``.puffin``, ``.stats``) under the table's location that nothing
    references, oldest first.  Tables outside the local file system are not listed (their
    FileIO cannot list); they give an empty list."""
    root = local_path(table.location())
    if root is None or not os.path.isdir(root):
        return []
    referenced = referenced_puffin_files(table)
    out = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if not name.endswith(_SUFFIXES) or path in referenced:
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:  # removed while we looked
                continue
            when = datetime.datetime.fromtimestamp(st.st_mtime, tz=datetime.timezone.utc)
            out.append(Orphan(path, st.st_size, when))
    return sorted(out, key=lambda o: (o.modified, o.path))


def clean_orphans(
    table: Table,
    *,
    older_than: datetime.timedelta = DEFAULT_OLDER_THAN,
    dry_run: bool = True,
) -> list[Orphan]:
    """The orphans older than ``older_than``; removed unless ``dry_run`` (the default).

    The table is refreshed first and each file is checked against the references again,
    so a file a concurrent commit has just registered is never removed.
    """
    if older_than < datetime.timedelta(0):
        raise UsageError("older_than must not be negative")
    table = table.refresh()
    cutoff = datetime.datetime.now(datetime.timezone.utc) - older_than
    chosen = [o for o in find_orphans(table) if o.modified <= cutoff]
    if dry_run or not chosen:
        return chosen
    still = referenced_puffin_files(table.refresh())
    removed = []
    for orphan in chosen:
        if orphan.path in still:
            continue
        try:
            os.remove(orphan.path)
        except FileNotFoundError:
            continue
        removed.append(orphan)
    return removed
