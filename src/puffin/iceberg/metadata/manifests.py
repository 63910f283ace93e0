"""Manifest lists and manifests read with the v3 schemas, and what identifies a delete file.

pyiceberg 0.12 reads manifests with the schema of the table's format version as it knows
it, which drops ``first_row_id`` from manifest lists and the deletion-vector fields
(``referenced_data_file``, ``content_offset``, ``content_size_in_bytes``) from data-file
records; these readers use the v3 schemas, which read every older file too.

Committed manifests never change, so planning and commits read them through a process-wide
cache of decoded entries (about :data:`ENTRY_CACHE_BYTES`, least recently used first out);
verification reads the files (:func:`read_from_disk`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from puffin.io.stores import gone_as_not_found

if TYPE_CHECKING:
    from pyiceberg.io import FileIO
    from pyiceberg.manifest import DataFile, ManifestEntry, ManifestEntryStatus, ManifestFile
    from pyiceberg.table import Table

__all__ = [
    "CONTENT_OFFSET",
    "CONTENT_SIZE",
    "FIRST_ROW_ID",
    "REFERENCED_DATA_FILE",
    "DeleteFileKey",
    "cache_in_use",
    "cached_view",
    "clear_entry_cache",
    "delete_file_key",
    "read_from_disk",
    "read_manifest_entries",
    "read_manifest_list",
    "remove_files",
]

# Positions of the v3-only data_file fields in pyiceberg's v3 DataFile struct.
FIRST_ROW_ID, REFERENCED_DATA_FILE, CONTENT_OFFSET, CONTENT_SIZE = 16, 17, 18, 19

#: A delete file's path, and for a deletion vector the data file it references.
DeleteFileKey = tuple[str, "str | None"]


def read_manifest_list(io: FileIO, manifest_list: str) -> list[ManifestFile]:
    """A manifest list read with the v3 schema: ``first_row_id`` survives (pyiceberg drops it).

    A list is written once under a name of its own and never changed, so the last
    :data:`LIST_CACHE_SIZE` read are kept (outside :func:`read_from_disk`): a job that loses
    race after race reads each new commit's list once. The records are shared: never change
    one (pyiceberg's own ``Snapshot.manifests`` shares them alike)."""
    if not _FROM_DISK.get():
        with _CACHE_LOCK:
            hit = _LISTS.get(manifest_list)
            if hit is not None:
                _LISTS.move_to_end(manifest_list)
                return list(hit)
    manifests = _read_list(io, manifest_list)
    if not _FROM_DISK.get():
        with _CACHE_LOCK:
            _LISTS[manifest_list] = manifests
            while len(_LISTS) > LIST_CACHE_SIZE:
                _LISTS.popitem(last=False)
    return list(manifests)


def _read_list(io: FileIO, manifest_list: str) -> list[ManifestFile]:
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.manifest import (
        MANIFEST_LIST_FILE_SCHEMAS,
        ManifestContent,
        ManifestFile,
        PartitionFieldSummary,
    )

    with (
        gone_as_not_found(manifest_list),
        AvroFile[ManifestFile](
            io.new_input(manifest_list),
            MANIFEST_LIST_FILE_SCHEMAS[3],
            read_types={-1: ManifestFile, 508: PartitionFieldSummary},
            read_enums={517: ManifestContent},
        ) as reader,
    ):
        return list(reader)


def read_manifest_entries(
    io: FileIO, manifest: ManifestFile, *, include_deleted: bool = False, cached: bool = False
) -> list[ManifestEntry]:
    """A manifest's live entries (``include_deleted``: all of them) as v3 records (keeps the
    DV fields), sequence numbers inherited.

    ``cached``: use and keep the process's decoded copy of a committed manifest (a commit
    or a plan reads the same manifests again and again; decoding was most of a commit's
    planning at 1,000 commits). Cached entries are shared: never change one (copy it, as
    :func:`puffin.iceberg.metadata.manifest_merge.entries_to_rewrite` does). Checks that
    must see the bytes on disk (verification) read without it.
    """
    from pyiceberg.manifest import ManifestEntryStatus

    if cached and not _FROM_DISK.get():
        record = _cached(io, manifest)
        return list(record.entries if include_deleted else record.live)
    entries = _read_entries(io, manifest)
    if include_deleted:
        return entries
    return [e for e in entries if e.status != ManifestEntryStatus.DELETED]


_T = TypeVar("_T")


def cached_view(
    io: FileIO, manifest: ManifestFile, name: str, build: Callable[[list[ManifestEntry]], _T]
) -> _T:
    """``build(live entries)`` of a committed manifest, made once and kept beside its cached
    entries (and dropped with them) under ``name``: a form a job reads many times, such as
    the plan's compact digest (:mod:`puffin.iceberg.scan.plan`). Built afresh each call for
    a manifest the cache does not keep, and inside :func:`read_from_disk`. ``build`` must
    not change the entries, and the caller must not change what it returns."""
    if _FROM_DISK.get():
        return build(read_manifest_entries(io, manifest))
    record = _cached(io, manifest)
    view = record.views.get(name)
    if view is None:
        view = record.views.setdefault(name, build(record.live))  # a race builds it twice
    return view  # type: ignore[no-any-return]


#: Memory the decoded entries the process keeps may take, over all tables, as estimated by
#: :func:`_estimate` (measured: 2.7 KB an entry of 4 columns with statistics, estimated at
#: 4 KB); least recently used manifests go first.
ENTRY_CACHE_BYTES = 64 << 20


@dataclass
class _Record:
    """A committed manifest's entries, its live entries (the list a plan reads: sorting the
    deleted out at every plan touched every entry once more), their estimated size, and the
    views callers derived from them (:func:`cached_view`)."""

    entries: list[ManifestEntry]
    live: list[ManifestEntry]
    size: int = 0
    views: dict[str, Any] = field(default_factory=dict)


_CACHE: OrderedDict[tuple[str, int, int, int | None], _Record] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_cached_bytes = 0
#: Manifest lists kept, the least recently read first out.
LIST_CACHE_SIZE = 256
_LISTS: OrderedDict[str, list[ManifestFile]] = OrderedDict()


def _estimate(entries: list[ManifestEntry]) -> int:
    """Bytes the decoded ``entries`` hold, about: a base and each column's statistics, the
    columns counted on the first entry (the entries of a manifest share a schema; counting
    each entry's built a dict of every one of them, 5 % of a cold plan)."""
    if not entries:
        return 0
    return len(entries) * (1024 + 768 * len(entries[0].data_file.value_counts or {}))


def _cached(io: FileIO, manifest: ManifestFile) -> _Record:
    """A committed manifest's entries and its live ones, from the cache or decoded into it
    (a record outside the cache for a manifest it does not keep)."""
    global _cached_bytes
    from pyiceberg.manifest import ManifestEntryStatus

    sequence = manifest.sequence_number
    if sequence is None or sequence < 0:  # not committed yet: its numbers are not final
        entries = _read_entries(io, manifest)
        return _Record(entries, [e for e in entries if e.status != ManifestEntryStatus.DELETED])
    # Committed manifests never change (a new one gets a new name); the length and the
    # numbers inherited from the list guard against a path reused for other bytes.
    key = (str(manifest.manifest_path), manifest.manifest_length, sequence,
           manifest.added_snapshot_id)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    entries = _read_entries(io, manifest)
    live = [e for e in entries if e.status != ManifestEntryStatus.DELETED]
    record = _Record(entries, live, _estimate(entries))
    if record.size > ENTRY_CACHE_BYTES // 4:
        return record  # one manifest may not take the cache over
    with _CACHE_LOCK:
        record = _CACHE.setdefault(key, record)
        if record.entries is entries:  # ours went in (another thread's may have first)
            _cached_bytes += record.size
        while _cached_bytes > ENTRY_CACHE_BYTES:
            _, dropped = _CACHE.popitem(last=False)
            _cached_bytes -= dropped.size
    return record


_FROM_DISK: ContextVar[bool] = ContextVar("puffin_manifests_from_disk", default=False)


@contextmanager
def read_from_disk() -> Iterator[None]:
    """Within it, every manifest is read from its file, not the cache: for checks that must
    see the bytes as they are now (``verify_table``)."""
    token = _FROM_DISK.set(True)
    try:
        yield
    finally:
        _FROM_DISK.reset(token)


def cache_in_use() -> bool:
    """False inside :func:`read_from_disk` (read it before handing work to other threads:
    they do not see the context)."""
    return not _FROM_DISK.get()


def clear_entry_cache() -> None:
    """Forget every cached manifest (tests; a process that wants the memory back)."""
    global _cached_bytes
    with _CACHE_LOCK:
        _CACHE.clear()
        _LISTS.clear()
        _cached_bytes = 0


def _read_entries(io: FileIO, manifest: ManifestFile) -> list[ManifestEntry]:
    """Every entry of ``manifest``, read with the v3 schema, sequence numbers inherited."""
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.manifest import (
        MANIFEST_ENTRY_SCHEMAS,
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestEntry,
        ManifestEntryStatus,
    )

    with (
        gone_as_not_found(manifest.manifest_path),
        AvroFile[ManifestEntry](
            io.new_input(manifest.manifest_path),
            MANIFEST_ENTRY_SCHEMAS[3],
            read_types={-1: ManifestEntry, 2: DataFile},
            read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
        ) as reader,
    ):
        return [_inherit(entry, manifest, ManifestEntryStatus.ADDED) for entry in reader]


def _inherit(
    entry: ManifestEntry, manifest: ManifestFile, added: ManifestEntryStatus
) -> ManifestEntry:
    """The spec's inheritance: a null snapshot id from the manifest's snapshot; null data and
    file sequence numbers from the manifest's for an ADDED entry (any entry of a v1
    manifest, whose number is 0); the partition spec id from the manifest."""
    if entry.snapshot_id is None and manifest.added_snapshot_id is not None:
        entry.snapshot_id = manifest.added_snapshot_id
    inherits = manifest.sequence_number == 0 or entry.status == added
    if entry.sequence_number is None and inherits:
        entry.sequence_number = manifest.sequence_number
    if entry.file_sequence_number is None and inherits:
        entry.file_sequence_number = manifest.sequence_number
    entry.data_file.spec_id = manifest.partition_spec_id
    return entry


def delete_file_key(data_file: DataFile) -> DeleteFileKey:
    """What identifies a delete file: its path, and for a DV the data file it references
    (one Puffin file holds many DVs).  A Parquet position-delete file is its path alone,
    even when it records ``referenced_data_file`` (Java does for file-scoped deletes)."""
    from pyiceberg.manifest import FileFormat

    if data_file.file_format != FileFormat.PUFFIN:
        return str(data_file.file_path), None
    referenced = data_file[REFERENCED_DATA_FILE] if len(data_file) > REFERENCED_DATA_FILE else None
    return str(data_file.file_path), None if referenced is None else str(referenced)


def remove_files(table: Table, locations: Iterable[str]) -> None:
    """Delete files written for a commit that did not happen (best effort: the commit's
    own error is what the caller reports).  Only files under the table's locations: what
    a writer wrote for the table lies there, and nothing else is ever deleted."""
    from puffin.iceberg.metadata.table_locations import TableLocations

    owned = TableLocations.of(table)
    for location in locations:
        if not owned.owns(location):
            continue
        try:
            table.io.delete(location)
        except OSError:  # pragma: no cover - the commit error is what matters
            pass
