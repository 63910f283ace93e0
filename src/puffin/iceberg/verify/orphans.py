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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.iceberg.metadata.manifests import read_manifest_entries, read_manifest_list
from puffin.io.locations import local_path, location_key

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadata

    from puffin.iceberg.metadata.versions import NewerMetadata
    from puffin.io.listing import ObjectStore

__all__ = [
    "DEFAULT_OLDER_THAN",
    "SET_ASIDE_SUFFIX",
    "Listed",
    "Lister",
    "Orphan",
    "find_orphans",
    "kind_of",
    "list_folder",
    "listed_files",
    "reachable_files",
    "referenced_files",
    "set_aside_files",
    "table_files",
    "visible",
]

#: Orphans younger than this are left alone: a concurrent commit may be about to add them.
DEFAULT_OLDER_THAN = datetime.timedelta(days=3)
_HIDDEN = (".", "_")
_VERSION_HINT = "version-hint.text"


@dataclass(frozen=True)
class Orphan:
    """A file under the table's location that nothing in its metadata references."""

    path: str
    size: int
    modified: datetime.datetime
    kind: str = "data"


def referenced_files(
    table: Table,
    newer: Sequence[NewerMetadata] = (),
    *,
    before_read: Callable[[str], None] | None = None,
) -> set[str]:
    """Every file the table metadata references, in any snapshot, as :func:`location_key`
    keys: metadata files, manifest lists, manifests, data and delete files, statistics.
    ``newer``: metadata files numbered at or above the current one
    (:func:`~puffin.iceberg.metadata.versions.newer_metadata`), which count as referenced
    with everything they reach. ``before_read`` is called with each manifest list and
    manifest before it is read (a cleanup puts back a file it had set aside)."""
    found = {table.metadata_location, *(e.metadata_file for e in table.metadata.metadata_log)}
    manifests: set[str] = set()
    reached = reachable_files(table, seen=manifests, before_read=before_read)
    for n in newer:
        found.add(n.path)
        if n.metadata is not None:
            found.update(e.metadata_file for e in n.metadata.metadata_log)
            reached |= reachable_files(table, n.metadata, seen=manifests, before_read=before_read)
    return {location_key(p) for p in found | reached}


def reachable_files(
    table: Table,
    metadata: TableMetadata | None = None,
    *,
    live_only: bool = False,
    seen: set[str] | None = None,
    before_read: Callable[[str], None] | None = None,
) -> set[str]:
    """Every file the snapshots of ``metadata`` (default: the table's) reach, as written:
    manifest lists, manifests, data and delete files, statistics and partition-statistics
    files. ``live_only``: a content file counts only through a live entry (a file a kept
    snapshot deleted is reached by nothing, as Java's ``all_files`` sees it). ``seen``:
    manifests a call before has read (their files are in its result), to skip; this call's
    are added. ``before_read``: see :func:`referenced_files`."""
    meta = metadata if metadata is not None else table.metadata
    found: set[str] = {s.statistics_path for s in meta.statistics}
    found.update(p.statistics_path for p in meta.partition_statistics)
    manifests: set[str] = set() if seen is None else seen
    for snapshot in meta.snapshots:
        found.add(snapshot.manifest_list)
        if before_read is not None:
            before_read(snapshot.manifest_list)
        for manifest in read_manifest_list(table.io, snapshot.manifest_list):
            if manifest.manifest_path in manifests:
                continue
            manifests.add(manifest.manifest_path)
            found.add(manifest.manifest_path)
            if before_read is not None:
                before_read(manifest.manifest_path)
            for entry in read_manifest_entries(table.io, manifest, include_deleted=not live_only):
                found.add(str(entry.data_file.file_path))
    return found


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


#: An orphan cleanup renames a file to ``.<name>`` plus this before it deletes it (hidden:
#: no listing counts it as an orphan).
SET_ASIDE_SUFFIX = ".puffin-orphan"


def set_aside_files(root: str) -> list[tuple[str, str]]:
    """``(set-aside path, original path)`` of every file an interrupted cleanup set aside
    under the local folder ``root``."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            if name.startswith(".") and name.endswith(SET_ASIDE_SUFFIX) and len(name) > 15:
                original = name[1 : -len(SET_ASIDE_SUFFIX)]
                found.append((os.path.join(folder, name), os.path.join(folder, original)))
    return sorted(found)


#: A listed file: ``(path, size in bytes, modification time in seconds since the epoch)``.
Listed = tuple[str, int, float]
#: What lists every file a cleanup may consider under a table's root, a local folder or a
#: URL (:func:`table_files`, or Spark's executors: :mod:`puffin.spark.table_files`).
Lister = Callable[[str], Iterable[Listed]]


def listed_files(root: str) -> Iterator[Listed]:
    """Every file under the local folder ``root`` a cleanup may consider: hidden folders and
    files (``.``/``_`` names) and ``version-hint.text`` left out, as Java leaves them."""
    folders = [root]
    while folders:
        files, below = list_folder(folders.pop())
        yield from files
        folders.extend(reversed(below))


def list_folder(folder: str) -> tuple[list[Listed], list[str]]:
    """The files directly in ``folder`` a cleanup may consider (see :func:`listed_files`),
    and its folders that are not hidden."""
    files: list[Listed] = []
    below: list[str] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except FileNotFoundError:  # removed while we looked
        return files, below
    for entry in entries:
        if entry.name.startswith(_HIDDEN):
            continue
        try:
            if entry.is_dir(follow_symlinks=True):
                if not entry.is_symlink():  # as os.walk: a linked folder is not entered
                    below.append(entry.path)
            elif entry.name != _VERSION_HINT:
                st = entry.stat(follow_symlinks=True)
                files.append((entry.path, st.st_size, st.st_mtime))
        except FileNotFoundError:  # removed while we looked
            continue
    return files, below


def find_orphans(
    table: Table, referenced: set[str] | None = None, *, lister: Lister | None = None
) -> list[Orphan]:
    """Files under the table's location that nothing references, oldest first (``referenced``:
    :func:`referenced_files` of the table, when the caller has read it; ``lister``: what
    lists the location, :func:`table_files` by default). An object store is listed through
    :func:`~puffin.io.listing.object_store`; one that cannot be listed is an error, never
    an empty list."""
    root = local_path(table.location())
    if root is not None and not os.path.isdir(root):
        return []
    if referenced is None:
        referenced = referenced_files(table)
    listing = table_files(table) if lister is None else lister(root or table.location())
    out = [
        Orphan(path, size, datetime.datetime.fromtimestamp(mtime, tz=datetime.timezone.utc),
               kind_of(path))
        for path, size, mtime in listing
        if location_key(path) not in referenced
    ]  # fmt: skip
    return sorted(out, key=lambda o: (o.modified, o.path))


def table_files(table: Table, store: ObjectStore | None = None) -> Iterator[Listed]:
    """Every file under the table's location a cleanup may consider: a local folder walked
    (:func:`listed_files`), an object store's prefix listed, hidden names left out alike.
    An object the store gives no time for counts as written now (never old enough:
    :attr:`~puffin.io.listing.Listed.written`); ``store``: the client to list with (made
    from the table's FileIO by default)."""
    root = local_path(table.location())
    if root is not None:
        yield from listed_files(root)
        return
    from puffin.io.listing import object_store

    base = table.location().rstrip("/")
    for entry in (store or object_store(base, table.io)).walk(base):
        if visible(base, entry.location):
            yield entry.location, entry.size, entry.written


def visible(root: str, location: str) -> bool:
    """Whether a cleanup may consider the object ``location`` listed under the URL ``root``:
    no hidden part (``.``/``_`` names) below the root, and not ``version-hint.text``."""
    parts = location[len(root.rstrip("/")) :].strip("/").split("/")
    return not any(p.startswith(_HIDDEN) for p in parts) and parts[-1] != _VERSION_HINT
