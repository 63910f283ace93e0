"""Manifest merging on commit, as Iceberg Java's ``ManifestMergeManager`` does it.

Every append writes a manifest; without merging, a table that takes a small append a minute
plans over a thousand manifests by the end of the day, and every commit and scan slows with
its age. Java merges on each commit (``commit.manifest-merge.enabled``, default true): a
snapshot's manifests of one partition spec are packed from the end into bins of
``commit.manifest.target-size-bytes`` (8 MB); a bin of one manifest stays; the bin holding
the commit's first (new) manifest is merged only once it has
``commit.manifest.min-count-to-merge`` (100) manifests; any other bin of several is merged.
Data and delete manifests merge separately, by the same rule.

A merged manifest keeps each entry: files added by this commit stay ``ADDED`` (their
sequence numbers and row ids still to be inherited), files deleted by this commit stay
``DELETED``, deletes of earlier snapshots are dropped, and everything else becomes
``EXISTING`` with its snapshot id, sequence numbers and (v3) its ``first_row_id`` written
out, so no row id changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.iceberg.metadata.manifest_writers import DataManifestWriter, DeleteManifestWriter
from puffin.iceberg.metadata.manifests import FIRST_ROW_ID, read_manifest_entries
from puffin.iceberg.metadata.v3 import inherited_first_row_ids

if TYPE_CHECKING:
    from pyiceberg.manifest import ManifestEntry, ManifestFile
    from pyiceberg.table import Table

__all__ = [
    "MergePolicy",
    "entries_to_rewrite",
    "manifest_entry",
    "merge_manifests",
    "pack_end",
    "write_manifest",
]

ENABLED = "commit.manifest-merge.enabled"
MIN_COUNT = "commit.manifest.min-count-to-merge"
TARGET_SIZE = "commit.manifest.target-size-bytes"


@dataclass(frozen=True)
class MergePolicy:
    """The table's manifest-merge properties, with Java's defaults."""

    enabled: bool = True
    min_count: int = 100
    target_size: int = 8 * 1024 * 1024

    @classmethod
    def of(cls, table: Table) -> MergePolicy:
        props = table.metadata.properties
        return cls(
            enabled=str(props.get(ENABLED, "true")).lower() == "true",
            min_count=int(props.get(MIN_COUNT, 100)),
            target_size=int(props.get(TARGET_SIZE, 8 * 1024 * 1024)),
        )


def pack_end(items: Sequence[Any], target: int, weight: Any) -> list[list[Any]]:
    """Java's ``ListPacker(target, lookback 1).packEnd``: bins filled from the end of the
    list, in order, so that the under-filled bin is the first (merged next time)."""
    bins: list[list[Any]] = []
    size = 0
    for item in reversed(items):
        w = int(weight(item))
        if bins and size + w <= target:
            bins[-1].append(item)
            size += w
        else:
            bins.append([item])
            size = w
    return [list(reversed(b)) for b in reversed(bins)]


def merge_manifests(
    table: Table,
    manifests: Sequence[ManifestFile],
    snapshot_id: int,
    written: list[str],
    policy: MergePolicy,
) -> list[ManifestFile]:
    """``manifests`` (one content type; the commit's new ones first) merged by the policy."""
    if not policy.enabled or not manifests:
        return list(manifests)
    first = manifests[0]
    groups: dict[int, list[ManifestFile]] = {}
    for m in manifests:
        groups.setdefault(m.partition_spec_id, []).append(m)
    out: list[ManifestFile] = []
    for spec_id in sorted(groups, reverse=True):  # Java's order: highest spec id first
        for group in pack_end(groups[spec_id], policy.target_size, lambda m: m.manifest_length):
            if len(group) == 1:
                out.extend(group)
            elif any(m is first for m in group) and len(group) < policy.min_count:
                out.extend(group)
            else:
                out.append(_merged(table, spec_id, group, snapshot_id, written))
    return out


def entries_to_rewrite(
    table: Table, manifest: ManifestFile, *, include_deleted: bool = False
) -> list[ManifestEntry]:
    """A manifest's entries (live ones, or all), read to be written into another manifest:
    each live data file's ``first_row_id`` written out as Java's ``idAssigner`` gives it,
    since the new manifest gets a ``first_row_id`` of its own and no row id may change."""
    from pyiceberg.manifest import ManifestContent
    from pyiceberg.manifest import ManifestEntryStatus as S

    read = read_manifest_entries(table.io, manifest, include_deleted=include_deleted, cached=True)
    if manifest.content != ManifestContent.DATA:
        return read
    live = [e for e in read if e.status != S.DELETED]
    firsts = dict(zip(map(id, live), inherited_first_row_ids(manifest, live), strict=True))
    return [_with_first_row_id(e, firsts.get(id(e))) for e in read]


def _with_first_row_id(entry: ManifestEntry, first: int | None) -> ManifestEntry:
    """``entry`` with its data file's ``first_row_id`` written out: a copy (the entries
    read are the process's cached ones, shared)."""
    from pyiceberg.manifest import DataFile, ManifestEntry

    if first is None or entry.data_file[FIRST_ROW_ID] == first:
        return entry
    data_file = DataFile(*(entry.data_file[i] for i in range(len(entry.data_file))))
    data_file[FIRST_ROW_ID] = first
    copy = ManifestEntry(*(entry[i] for i in range(len(entry))))
    copy.data_file = data_file
    return copy


def _merged(
    table: Table, spec_id: int, group: list[ManifestFile], snapshot_id: int, written: list[str]
) -> ManifestFile:
    from pyiceberg.manifest import ManifestEntryStatus as S

    entries: list[ManifestEntry] = []
    for manifest in group:
        for e in entries_to_rewrite(table, manifest, include_deleted=True):
            ours = e.snapshot_id == snapshot_id
            if e.status == S.DELETED:
                if ours:  # deletes of earlier snapshots are dropped, as in Java
                    entries.append(manifest_entry(S.DELETED, e.snapshot_id, e, e.data_file))
            elif e.status == S.ADDED and ours:
                entries.append(manifest_entry(S.ADDED, snapshot_id, None, e.data_file))
            else:
                entries.append(manifest_entry(S.EXISTING, e.snapshot_id, e, e.data_file))
    return write_manifest(table, spec_id, group[0].content, entries, snapshot_id, written)


def manifest_entry(
    status: Any, snapshot_id: int | None, entry: ManifestEntry | None, data_file: Any
) -> Any:
    """A manifest entry of ``data_file`` with ``status``; sequence numbers copied from
    ``entry`` (``None``: inherited, for files this commit adds)."""
    from pyiceberg.manifest import ManifestEntry

    # The spec: "Snapshot id where the file was added, or deleted if status is 2": callers
    # pass the entry's own id for EXISTING entries and the new snapshot's otherwise.
    return ManifestEntry.from_args(
        status=status,
        snapshot_id=snapshot_id,
        sequence_number=None if entry is None else entry.sequence_number,
        file_sequence_number=None if entry is None else entry.file_sequence_number,
        data_file=data_file,
    )


def write_manifest(
    table: Table,
    spec_id: int,
    content: Any,
    entries: Sequence[Any],
    snapshot_id: int,
    written: list[str],
) -> ManifestFile:
    """One manifest of ``entries`` (data or deletes) of spec ``spec_id``, at the table's
    format version, listed in ``written`` before it is written (a partial manifest is
    cleaned up too)."""
    from pyiceberg.manifest import ManifestContent

    name = f"{uuid.uuid4()}-m{spec_id}.avro"
    path = str(table.location_provider().new_metadata_location(name))
    written.append(path)
    writer_class = DataManifestWriter if content == ManifestContent.DATA else DeleteManifestWriter
    spec = table.specs()[spec_id]
    output = table.io.new_output(path)
    version = max(2, table.metadata.format_version)  # a v1 table's manifests are not written here
    with writer_class(spec, table.schema(), output, snapshot_id, format_version=version) as w:
        for e in entries:
            w.add_entry(e)
    return w.to_manifest_file()
