"""A compaction's commit beside other writers: the files written once, committed on the table
as it is when the commit lands, unless a concurrent commit touched what they replace.

Iceberg Java's ``RewriteFiles`` keeps its new files when it loses a race and commits them on
the refreshed table after ``validateNoNewDeletesForDataFiles`` and the check that every file
it replaces is still there ("Missing required files to delete"). The same rules here
(:func:`conflict`), read from the concurrent commits' own manifests
(:mod:`puffin.iceberg.metadata.concurrent`):

* every data file it rewrote is still live (another compaction or an overwrite took none);
* no concurrent delete touched one: no new vector or position-delete file for it (a vector
  rewritten with the same rows, by a delete-file rewrite, is no change), no position-delete
  file without a named data file in its partition, no equality delete file in its partition
  or a global one. Java ignores equality deletes here because its new files keep the
  starting snapshot's sequence number, which ours do not yet. On a v3 table a new vector
  of a rewritten file is no conflict: its rows are found in the new files by row id and
  deleted there in the same commit (:mod:`.carried_deletes`), where Java gives up;
* when it drops equality delete files, no concurrent commit added data files old enough
  for them.

A conflict discards the new files and rewrites on the table as it then is (the caller's
next attempt); a lost race alone costs only the commit again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.iceberg.maintenance.carried_deletes import carried_vectors
from puffin.iceberg.maintenance.file_groups import Choice
from puffin.iceberg.metadata.concurrent import (
    Since,
    commits_since,
    partition_of,
    partitions_of,
    referenced_file,
)
from puffin.iceberg.metadata.delete_files import deletion_vector_refs, is_equality_delete
from puffin.iceberg.metadata.manifests import remove_files
from puffin.iceberg.metadata.snapshot_manifests import ManifestReuse
from puffin.iceberg.metadata.snapshots import commit_snapshot
from puffin.iceberg.scan.lineage import file_lineage
from puffin.iceberg.writes.rewrite import scoped_position_deletes

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["Rebase", "Rewritten", "commit_rewritten", "rebase"]


@dataclass(frozen=True)
class Rewritten:
    """A compaction's work, done once: the files it read and wrote, and from what state."""

    start: Snapshot
    choice: Choice
    added: list[DataFile]
    #: equality delete files no data file left needs (removed with the rewrite)
    dropped: frozenset[tuple[str, None]]
    #: each rewritten file's deletion vector cardinality when it was read
    vectors: dict[str, int]
    #: the manifests its snapshot wrote, kept across lost races under one snapshot id
    manifests: ManifestReuse

    @property
    def removed(self) -> set[str]:
        return {p.path for files in self.choice.groups.values() for p in files}

    @classmethod
    def of(
        cls,
        table: Table,
        start: Snapshot,
        choice: Choice,
        added: list[DataFile],
        dropped: frozenset[tuple[str, None]],
        kept: list[str],
    ) -> Rewritten:
        """The work of a rewrite of ``choice`` read at ``start``; its manifests are listed
        in ``kept`` (the files a lost race keeps, with the data files)."""
        chosen = {p.path for files in choice.groups.values() for p in files}
        vectors = {
            r.referenced_data_file: r.record_count
            for r in deletion_vector_refs(table, start)
            if r.referenced_data_file in chosen
        }
        reuse = ManifestReuse(table.metadata.new_snapshot_id(), files=kept)
        return cls(start, choice, added, dropped, vectors, reuse)


@dataclass(frozen=True)
class Rebase:
    """What committing a rewrite on the table as it now is takes: why it may not (a
    conflict), or the vectors carrying the rows concurrent deletes removed meanwhile."""

    conflict: str | None = None
    carried: tuple[DataFile, ...] = ()
    #: the commits since the rewrite started, as read this time (the next check reads on)
    since: Since | None = None


def rebase(
    table: Table, work: Rewritten, written: list[str], known: Since | None = None
) -> Rebase:
    """Check ``work`` against the commits since it started (the module's rules; ``known``:
    those an earlier check read); on a v3 table the rows concurrent vectors deleted from its
    files are carried to the new files (:mod:`.carried_deletes`; the Puffin file written
    goes into ``written``)."""
    since = commits_since(table, work.start, known)
    if since is None:
        return Rebase("main no longer descends from the snapshot the compaction read")
    checked = _checked(table, work, since, written)
    return dataclasses.replace(checked, since=since)


def _checked(table: Table, work: Rewritten, since: Since, written: list[str]) -> Rebase:
    if since.empty:
        return Rebase()
    removed = work.removed
    lost = removed & since.removed_data
    if lost:
        return Rebase(f"a concurrent commit removed {len(lost)} of the files it rewrote")
    chosen = [p.data_file for files in work.choice.groups.values() for p in files]
    partitions = partitions_of(chosen)
    touched: dict[str, DataFile] = {}
    for d in since.added_deletes:
        why = _touches(d, removed, partitions, work.vectors)
        if why is None:
            continue
        ref = referenced_file(d)
        if table.metadata.format_version < 3 or not _is_vector(d) or ref is None:
            return Rebase(why)
        touched[ref] = d  # the newest vector of the file holds all its deleted rows
    if work.dropped and since.added_older_data:
        return Rebase("a concurrent commit added data files old enough for the equality "
                      "deletes it drops")  # fmt: skip
    if not touched:
        return Rebase()
    lineage = file_lineage(table, work.start)
    carried = carried_vectors(table, touched, lineage, work.added, written)
    if carried is None:
        return Rebase("a concurrent commit deleted rows it rewrote, whose row ids are unknown")
    return Rebase(carried=tuple(carried))


def _is_vector(d: DataFile) -> bool:
    from pyiceberg.manifest import FileFormat

    return bool(d.file_format == FileFormat.PUFFIN)


def _touches(
    d: DataFile,
    removed: set[str],
    partitions: set[tuple[int, tuple[object, ...]]],
    vectors: dict[str, int],
) -> str | None:
    """Why the concurrently added delete file ``d`` may delete rows the rewrite carried."""
    ref = referenced_file(d)
    where = partition_of(d)
    if is_equality_delete(d):
        if not where[1] or where in partitions:
            return f"a concurrent commit added equality deletes ({d.file_path}) it would miss"
        return None
    if ref is None:
        if where in partitions:
            return f"a concurrent commit added position deletes ({d.file_path}) in its partition"
        return None
    if ref not in removed:
        return None
    if _is_vector(d) and vectors.get(ref) == int(d.record_count):
        return None  # the same vector, rewritten into another Puffin file
    return f"a concurrent commit deleted rows of {ref}, which it rewrote"


def commit_rewritten(
    table: Table, work: Rewritten, written: list[str], carried: Sequence[DataFile] = ()
) -> tuple[Table, Snapshot, int]:
    """One ``replace`` snapshot on ``table`` as it is: the rewritten files and their
    vectors out, ``work.added`` in with the ``carried`` vectors, the dropped equality
    deletes out; the committed table, the snapshot and the number of vectors (and scoped
    position-delete files) removed."""
    chosen = [p for files in work.choice.groups.values() for p in files]
    removed = work.removed
    superseded: set[tuple[str, str | None]] = {
        (r.path, r.referenced_data_file)
        for r in deletion_vector_refs(table, table.current_snapshot())
        if r.referenced_data_file in removed
    }
    superseded |= scoped_position_deletes(chosen)
    committed, new = commit_snapshot(
        table,
        written,
        deletes=carried,
        added_data=work.added,
        removed_data=removed,
        superseded=superseded | work.dropped,
        operation="replace",
        reuse=work.manifests,
    )
    listed = {m.manifest_path for m in new.manifests(committed.io)}
    unused = [p for p in work.manifests.files if p.endswith(".avro") and p not in listed]
    remove_files(table, unused)  # written for an attempt that lost, or merged into another
    return committed, new, len(superseded)
