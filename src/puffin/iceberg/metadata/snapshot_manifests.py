"""The new manifests of a snapshot written here, and their reuse across a job's lost races.

A snapshot's own manifests are the ones it adds data or delete files to, and the ones that
held files it removes, written again with those entries ``DELETED``. A job that loses its
race keeps them and commits them again under the same snapshot id, as Iceberg Java's
``SnapshotProducer`` does, when the manifests they replace are still the table's and what
they add is the same (:class:`ManifestReuse`): then a lost race costs a manifest list and a
metadata file, not the rewrite of every manifest that held a removed file.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from puffin.iceberg.metadata.manifest_merge import (
    entries_to_rewrite,
    manifest_entry,
    write_manifest,
)
from puffin.iceberg.metadata.manifests import DeleteFileKey, delete_file_key
from puffin.iceberg.metadata.v3 import to_v3_data_file

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile, ManifestFile
    from pyiceberg.table import Table

__all__ = ["Gone", "ManifestReuse", "data_manifests", "rewritten_manifests"]


@dataclass(frozen=True)
class Gone:
    """The data and delete files a snapshot's rewritten manifests mark ``DELETED``."""

    data: list[DataFile]
    deletes: list[DataFile]


@dataclass
class ManifestReuse:
    """The manifests one job wrote for snapshot ``snapshot_id``, kept across its lost races
    (listed in ``files``, which the job removes when it fails, and, once it commits, the
    ones its snapshot does not list)."""

    snapshot_id: int
    files: list[str] = field(default_factory=list)
    data: list[ManifestFile] | None = None
    rewritten: dict[Any, list[ManifestFile]] = field(default_factory=dict)


def rewritten_manifests(
    table: Table,
    manifests: Sequence[ManifestFile],
    change: tuple[Sequence[DataFile], Set[DeleteFileKey], Set[str]],
    snapshot_id: int,
    written: list[str],
    reuse: ManifestReuse | None = None,
) -> tuple[list[ManifestFile], list[ManifestFile], list[ManifestFile], Gone]:
    """Manifests carried as they are; data manifests that held removed data files and
    delete manifests that held removed delete files, rewritten with those entries
    ``DELETED`` (one manifest per spec, new delete files added to it); what was removed.
    ``change``: the delete files added, the delete files and data files removed. With
    ``reuse``, the manifests written for the same manifests and added files are reused."""
    from pyiceberg.manifest import ManifestContent
    from pyiceberg.manifest import ManifestEntryStatus as S

    added, removed, removed_data = change
    carried: list[ManifestFile] = []
    gone = Gone([], [])
    data: dict[int, list[Any]] = {}
    deletes: dict[int, list[Any]] = {}
    for df in added:
        deletes.setdefault(df.spec_id, []).append(manifest_entry(S.ADDED, snapshot_id, None, df))
    hits: dict[bool, list[str]] = {True: [], False: []}  # by "is data": the manifests hit
    for manifest in manifests:
        is_data = manifest.content == ManifestContent.DATA
        if is_data and not removed_data:
            carried.append(manifest)
            continue
        entries = entries_to_rewrite(table, manifest)  # kept data files keep their row ids
        keys = [_removal_key(e.data_file, is_data) for e in entries]
        hit = [k in (removed_data if is_data else removed) for k in keys]
        if not any(hit):
            carried.append(manifest)
            continue
        hits[is_data].append(manifest.manifest_path)
        (gone.data if is_data else gone.deletes).extend(
            e.data_file for e, h in zip(entries, hit, strict=True) if h
        )
        group = (data if is_data else deletes).setdefault(manifest.partition_spec_id, [])
        for e, h in zip(entries, hit, strict=True):
            status, who = (S.DELETED, snapshot_id) if h else (S.EXISTING, e.snapshot_id)
            group.append(manifest_entry(status, who or snapshot_id, e, e.data_file))
    # What each side's new manifests are made of: the same makes the same manifests.
    data_key = ("data", frozenset(hits[True]))
    deletes_key = ("deletes", frozenset(hits[False]), tuple(delete_file_key(d) for d in added))
    target = (snapshot_id, written)
    new_data = _written(table, data, ManifestContent.DATA, target, reuse, data_key)
    new_deletes = _written(table, deletes, ManifestContent.DELETES, target, reuse, deletes_key)
    return carried, new_data, new_deletes, gone


def _written(
    table: Table,
    groups: dict[int, list[Any]],
    content: Any,
    target: tuple[int, list[str]],
    reuse: ManifestReuse | None,
    key: Any,
) -> list[ManifestFile]:
    """The manifests of ``groups`` (``target``: the snapshot id, and where a commit lists
    what it writes), or the ones ``reuse`` holds for ``key``: made of the same manifests."""
    snapshot_id, written = target
    if reuse is not None and key in reuse.rewritten:
        return list(reuse.rewritten[key])
    out = written if reuse is None else reuse.files
    manifests = _write_groups(table, groups, content, snapshot_id, out)
    if reuse is not None:
        reuse.rewritten[key] = manifests
    return list(manifests)


def _removal_key(data_file: DataFile, is_data: bool) -> Any:
    return str(data_file.file_path) if is_data else delete_file_key(data_file)


def _write_groups(
    table: Table, groups: dict[int, list[Any]], content: Any, snapshot_id: int, written: list[str]
) -> list[ManifestFile]:
    """One v3 manifest per partition spec of the entries grouped by spec."""
    return [
        write_manifest(table, spec_id, content, entries, snapshot_id, written)
        for spec_id, entries in sorted(groups.items())
    ]


def data_manifests(
    table: Table,
    added: Sequence[DataFile],
    snapshot_id: int,
    written: list[str],
    reuse: ManifestReuse | None = None,
) -> list[ManifestFile]:
    """The data manifests of the added data files (ADDED entries; v3 records on a v3 table):
    one per partition spec the files were written in (the default, unless a file says);
    with ``reuse``, the ones written for this job before."""
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

    if reuse is not None and reuse.data is not None:
        return list(reuse.data)
    by_spec: dict[int, list[DataFile]] = {}
    for df in added:
        spec_id = getattr(df, "spec_id", None)
        by_spec.setdefault(table.spec().spec_id if spec_id is None else spec_id, []).append(df)
    v3_records = table.metadata.format_version >= 3
    manifests = []
    out = written if reuse is None else reuse.files
    for spec_id, files in sorted(by_spec.items()):
        entries = [
            manifest_entry(
                ManifestEntryStatus.ADDED,
                snapshot_id,
                None,
                to_v3_data_file(df, spec_id) if v3_records else df,
            )
            for df in files
        ]
        manifests.append(
            write_manifest(table, spec_id, ManifestContent.DATA, entries, snapshot_id, out)
        )
    if reuse is not None:
        reuse.data = manifests
    return list(manifests)
