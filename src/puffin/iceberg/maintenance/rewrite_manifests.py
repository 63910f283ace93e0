"""Regrouping a table's data manifests (v2 or v3): :func:`rewrite_manifests`.

As Iceberg Java's ``RewriteManifests``: every live data-file entry of the current snapshot
is written again, clustered by partition, into manifests of
``commit.manifest.target-size-bytes`` (8 MB), as ``EXISTING`` entries that keep their
snapshot id and sequence numbers, in one ``replace`` snapshot; delete manifests are carried
as they are. Unlike Java 1.10.2, whose rewrite on a v3 table gives every row a new
``_row_id``, each entry's ``first_row_id`` is written out, so no row id changes (a v2 table
has none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from puffin.iceberg.deletes.rows import require_v2_or_v3
from puffin.iceberg.metadata.commit_retry import commit_attempts
from puffin.iceberg.metadata.commits import (
    COMMITS_PER_ATTEMPT,
    REBASE_BACKOFF_S,
    Redos,
    with_retries,
)
from puffin.iceberg.metadata.manifest_merge import (
    MergePolicy,
    entries_to_rewrite,
    manifest_entry,
    write_manifest,
)
from puffin.iceberg.metadata.snapshot_manifests import ManifestReuse
from puffin.iceberg.metadata.snapshots import commit_snapshot

if TYPE_CHECKING:
    from pyiceberg.manifest import ManifestFile
    from pyiceberg.table import Table

__all__ = ["RewriteManifestsResult", "rewrite_manifests"]


@dataclass(frozen=True)
class RewriteManifestsResult:
    """What :func:`rewrite_manifests` did (``snapshot_id`` ``None``: nothing to do)."""

    table: Table
    snapshot_id: int | None
    #: data manifests before and after
    manifests_before: int
    manifests_after: int
    #: live data-file entries written again
    entries: int
    attempts: int = 1


def rewrite_manifests(
    table: Table, *, target_size_bytes: int | None = None, max_attempts: int | None = None
) -> RewriteManifestsResult:
    """Rewrite the current snapshot's data manifests, clustered by partition, into manifests
    of about ``target_size_bytes`` (default the table's ``commit.manifest.target-size-bytes``,
    else 8 MiB), in one ``replace`` snapshot; no row and no row id changes. A snapshot with
    at most one data manifest is left as it is. A lost race keeps the new manifests: they
    are committed on the table as it then is, with the manifests other commits added since
    carried as they are, unless one of those commits replaced a manifest this rewrite
    replaces (then it is done again).

    Example::

        result = rewrite_manifests(table)
        print(result.manifests_before, "->", result.manifests_after)
    """
    from pyiceberg.manifest import ManifestContent

    from puffin.errors import UsageError

    require_v2_or_v3(table, "rewrite_manifests")
    target = target_size_bytes or MergePolicy.of(table).target_size
    if target < 1:
        raise UsageError(f"the target manifest size must be positive: {target}")

    work = _Work()
    attempts = commit_attempts(table, max_attempts)
    redos = Redos(attempts, "manifest rewrite")

    def attempt(table: Table, number: int, written: list[str]) -> RewriteManifestsResult:
        snapshot = table.current_snapshot()
        data = [] if snapshot is None else [
            m for m in snapshot.manifests(table.io) if m.content == ManifestContent.DATA
        ]
        if work.replaced and not work.replaced <= {m.manifest_path for m in data}:
            redos.again("a concurrent commit replaced a manifest it replaces")
            work.discard(table)  # done again on the table as it now is
        if not work.replaced and len(data) <= 1:
            return RewriteManifestsResult(table, None, len(data), len(data), 0, number)

        def regroup(t: Table, manifests: list[Any], snapshot_id: int, out: list[str]) -> Any:
            if not work.replaced:
                work.new = _regrouped(t, manifests, target, snapshot_id, work.files, work.counts)
                work.replaced = {m.manifest_path for m in manifests}
            since = [m for m in manifests if m.manifest_path not in work.replaced]
            return [*work.new, *since]  # what came since is carried as it is, as in Java

        if work.snapshot_id is None:
            work.snapshot_id = table.metadata.new_snapshot_id()
        reuse = ManifestReuse(work.snapshot_id)  # its own manifests: kept by ``work``
        committed, new = commit_snapshot(
            table, written, operation="replace", regroup=regroup, reuse=reuse
        )
        before, after = len(work.replaced), work.counts[1] + len(data) - len(work.replaced)
        return RewriteManifestsResult(committed, new.snapshot_id, before, after,
                                      work.counts[0], number)  # fmt: skip

    commits = attempts * COMMITS_PER_ATTEMPT
    return with_retries(
        table, attempt, commits, kept=work.files, max_backoff=REBASE_BACKOFF_S, first_turn=False
    )


@dataclass
class _Work:
    """The manifests a rewrite wrote, kept across lost races under one snapshot id (Java's
    ``BaseRewriteManifests`` keeps them too), and the manifests they replace."""

    files: list[str] = field(default_factory=list)
    new: list[ManifestFile] = field(default_factory=list)
    replaced: set[str] = field(default_factory=set)
    snapshot_id: int | None = None
    counts: list[int] = field(default_factory=lambda: [0, 0])

    def discard(self, table: Table) -> None:
        from puffin.iceberg.metadata.manifests import remove_files

        remove_files(table, self.files)
        self.files.clear()
        self.new, self.replaced, self.snapshot_id = [], set(), None


def _regrouped(
    table: Table,
    manifests: list[ManifestFile],
    target: int,
    snapshot_id: int,
    written: list[str],
    counts: list[int],
) -> list[ManifestFile]:
    """The live entries of ``manifests`` as ``EXISTING``, ``first_row_id`` written out,
    clustered by (spec, partition) and cut into manifests of about ``target`` bytes (the
    size per entry taken from the manifests read)."""
    from pyiceberg.manifest import ManifestContent
    from pyiceberg.manifest import ManifestEntryStatus as S

    groups: dict[tuple[int, Any], list[Any]] = {}
    total_bytes = entries = 0
    for manifest in manifests:
        live = entries_to_rewrite(table, manifest)
        total_bytes += manifest.manifest_length
        entries += len(live)
        for e in live:
            key = (manifest.partition_spec_id, e.data_file.partition)
            entry = manifest_entry(S.EXISTING, e.snapshot_id, e, e.data_file)
            groups.setdefault(key, []).append(entry)
    per_manifest = max(1, int(target // max(1.0, total_bytes / max(1, entries))))
    out: list[ManifestFile] = []
    by_spec: dict[int, list[Any]] = {}
    for (spec_id, _), group in groups.items():  # partitions stay together, in order
        by_spec.setdefault(spec_id, []).extend(group)
    for spec_id, spec_entries in sorted(by_spec.items(), reverse=True):
        for start in range(0, len(spec_entries), per_manifest):
            chunk = spec_entries[start : start + per_manifest]
            out.append(
                write_manifest(table, spec_id, ManifestContent.DATA, chunk, snapshot_id, written)
            )
    counts[:] = [entries, len(out)]
    return out
