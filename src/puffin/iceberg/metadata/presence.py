"""Before the catalog swap: every file a commit adds still exists.

A writer's files are orphans until its commit lands, and an orphan cleanup run beside it
with a short grace period may delete them; a commit that then swaps the catalog's pointer
leaves a table that names missing files. So every commit of this library, once its metadata
file is written (from then on a cleanup sees the commit in flight and keeps its files, see
:mod:`puffin.iceberg.maintenance.orphans`) and before the swap, checks that the files it
adds are all there: the new snapshots' manifest lists, the manifests they added, the data
and delete files those add, new statistics files and the metadata file itself. A missing
one fails the commit with :class:`~puffin.errors.WrittenFileGoneError`, so nothing is
committed and the writer removes what it wrote.

Inside the commit loop (:func:`~puffin.iceberg.metadata.commits.with_retries`) the files
are the ones the attempt lists as written, plus those the caller names (data files written
once, files registered by ``add_files``): a ``stat`` each. A commit outside the loop has its
new snapshots' manifests read instead. On an object store, where a cleanup cannot rename
and a request per file would cost every commit, the commit reads the marks a cleanup
leaves of what it deletes (:mod:`puffin.iceberg.metadata.cleanup_marks`: one listing
request) and asks only for the files they name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from puffin.errors import WrittenFileGoneError
from puffin.io.locations import local_path

if TYPE_CHECKING:
    from pyiceberg.io import FileIO
    from pyiceberg.table.metadata import TableMetadata

__all__ = [
    "added_files",
    "committing",
    "file_gone",
    "missing_location",
    "require_added_files",
    "vanished",
]

# Existence requests a commit on an object store has in flight at once.
_CHECKS_AT_ONCE = 16
# The files of the commit attempt in progress, as lists that grow while it writes.
_COMMITTING: ContextVar[tuple[Sequence[str], ...] | None] = ContextVar(
    "puffin_committing", default=None
)


@contextmanager
def committing(*files: Sequence[str]) -> Iterator[None]:
    """While a commit attempt runs: ``files`` (lists it may still extend) are what it adds,
    checked by :func:`require_added_files` instead of reading its manifests back."""
    token = _COMMITTING.set(files)
    try:
        yield
    finally:
        _COMMITTING.reset(token)


def added_files(base: TableMetadata, metadata: TableMetadata, io: FileIO) -> list[str]:
    """The files ``metadata`` references that ``base`` did not, as far as a commit adds
    them: manifest lists, manifests and content files of the new snapshots, statistics."""
    from pyiceberg.manifest import ManifestEntryStatus

    from puffin.iceberg.metadata.manifests import read_manifest_entries, read_manifest_list

    known = {s.snapshot_id for s in base.snapshots}
    found: list[str] = []
    for snapshot in metadata.snapshots:
        if snapshot.snapshot_id in known:
            continue
        found.append(snapshot.manifest_list)
        for manifest in read_manifest_list(io, snapshot.manifest_list):
            if manifest.added_snapshot_id != snapshot.snapshot_id:
                continue
            found.append(manifest.manifest_path)
            # cached: the plan after the commit reads it from there (a unique path)
            for entry in read_manifest_entries(io, manifest, cached=True):
                if entry.status == ManifestEntryStatus.ADDED:
                    found.append(str(entry.data_file.file_path))
    before = {s.statistics_path for s in base.statistics}
    before.update(p.statistics_path for p in base.partition_statistics)
    found += [s.statistics_path for s in metadata.statistics if s.statistics_path not in before]
    found += [
        p.statistics_path
        for p in metadata.partition_statistics
        if p.statistics_path not in before
    ]
    return found


def require_added_files(
    base: TableMetadata, metadata: TableMetadata, io: FileIO, metadata_path: str
) -> None:
    """Raise :class:`WrittenFileGoneError` when a local file the commit adds (or its metadata
    file at ``metadata_path``) is gone."""
    known = _COMMITTING.get()
    adds = added_files(base, metadata, io) if known is None else [p for f in known for p in f]
    remote = []
    for location in [metadata_path, *adds]:
        local = local_path(location)
        if local is None:
            remote.append(location)
        elif not os.path.exists(local):
            raise file_gone(location)
    if remote and local_path(metadata.location) is None:
        _check_on_store(metadata.location, io, remote)


def _check_on_store(root: str, io: FileIO, locations: list[str]) -> None:
    """The object-store form of the check: the files a cleanup's mark names, asked for once
    its delete is over (:mod:`puffin.iceberg.metadata.cleanup_marks`); every file, when the
    marks cannot be listed."""
    from puffin.iceberg.metadata.cleanup_marks import marked_by, settled
    from puffin.io.listing import CannotListError, object_store

    try:
        store = object_store(root, io)
    except (CannotListError, OSError, ValueError):  # no client that lists (hdfs without
        asked = locations  # libhdfs, a FileIO of its own): every file asked for instead
    else:
        named = marked_by(store, root, locations)
        for mark in {m.location: m for m in named.values()}.values():
            settled(store, mark)
        asked = list(named)
    if asked:
        _ask(io, asked)


def _ask(io: FileIO, locations: list[str]) -> None:
    """Raise :class:`WrittenFileGoneError` for the first of ``locations`` that is gone (up to
    :data:`_CHECKS_AT_ONCE` requests at a time)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=_CHECKS_AT_ONCE) as pool:
        found = list(pool.map(lambda loc: io.new_input(loc).exists(), locations))
    for location, there in zip(locations, found, strict=True):
        if not there:
            raise file_gone(location)


def file_gone(location: str) -> WrittenFileGoneError:
    """The error of a write whose file at ``location`` was deleted before its commit."""
    return WrittenFileGoneError(
        f"{location}, which this write produced, was deleted before the commit (an orphan "
        "cleanup run beside this writer with too short a grace period?): nothing was "
        "committed and the files written for it were removed; run the write again"
    )


def missing_location(exc: BaseException) -> str | None:
    """The location a ``FileNotFoundError`` names (Python's, pyarrow's or pyiceberg's)."""
    if not isinstance(exc, FileNotFoundError):
        return None
    if exc.filename:
        return str(exc.filename)
    match = re.search(r"'([^']+)'|not found: (\S+)", str(exc))
    return None if match is None else (match.group(1) or match.group(2))


def vanished(exc: BaseException, locations: Iterable[str]) -> str | None:
    """The one of ``locations`` (files a write produced) that ``exc``, a
    ``FileNotFoundError`` from the write or its commit, says is gone; else ``None``."""
    from puffin.io.locations import location_key

    missing = missing_location(exc)
    if missing is None:
        return None
    key = location_key(missing)
    return next((loc for loc in locations if location_key(loc) == key), None)
