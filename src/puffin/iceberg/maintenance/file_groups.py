"""Which data files a compaction rewrites, and in which groups.

The files chosen (:func:`choose_files`): in each partition, the heavily deleted ones, and the
small ones when there are enough of them. The file groups (:func:`pack`): each partition's
chosen files dealt into bins of about the target size, each written again on its own (one
Spark task each; the unit a compaction with partial progress commits), as Iceberg Java's
bin-packing rewriter groups them."""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.iceberg.deletes.merge import live_positions
from puffin.iceberg.metadata.delete_files import DeleteIndex, is_equality_delete, live_delete_files
from puffin.iceberg.scan.plan import PlannedFile, plan_files, planned_from_tasks

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = [
    "Choice",
    "FileGroup",
    "choose_files",
    "pack",
    "planned_files",
    "unapplied_equality_deletes",
]

#: Java's ``min-file-size-bytes`` default: a file under 75 % of the target size is small.
MIN_SIZE_OF_TARGET = 0.75

#: A file group: a partition's key and the files written again together, in path order.
FileGroup = tuple[tuple[int, Any], list["PlannedFile"]]


@dataclass(frozen=True)
class Choice:
    """The files a compaction rewrites, by partition, and each one's deleted rows."""

    groups: dict[tuple[int, Any], list[PlannedFile]]
    deleted: dict[str, int]

    def among(self, paths: frozenset[str]) -> Choice:
        """Only the chosen files at ``paths`` (a batch of file groups)."""
        groups = {key: [p for p in files if p.path in paths] for key, files in self.groups.items()}
        kept = {key: files for key, files in groups.items() if files}
        deleted = {path: n for path, n in self.deleted.items() if path in paths}
        return Choice(kept, deleted)


def planned_files(table: Table, row_filter: BooleanExpression | None) -> list[PlannedFile]:
    """The current snapshot's data files that ``row_filter`` may match, equality deletes
    included."""
    from pyiceberg.expressions import AlwaysTrue

    scan = table.scan(row_filter=row_filter if row_filter is not None else AlwaysTrue())
    return planned_from_tasks(scan, equality=True)


def unapplied_equality_deletes(
    table: Table, snapshot: Snapshot, choice: Choice, planned: list[PlannedFile] | None
) -> frozenset[tuple[str, None]]:
    """The snapshot's equality delete files that apply to no data file left after the
    rewrite (the new files, of a later sequence number, are not theirs to delete from), as
    Java 1.10.2's compaction drops them. ``planned``: the snapshot's whole plan, if made."""
    every = [key for key, d in live_delete_files(table, snapshot).items() if is_equality_delete(d)]
    if not every:
        return frozenset()
    chosen = {p.path for files in choice.groups.values() for p in files}
    kept = planned if planned is not None else plan_files(table, snapshot, equality=True)
    applying = {str(d.file_path) for p in kept if p.path not in chosen for d in p.equality_deletes}
    return frozenset((path, None) for path, _ in every if path not in applying)


def choose_files(
    index: DeleteIndex,
    planned: list[PlannedFile],
    min_fraction: float,
    min_inputs: int,
    target: int,
) -> Choice:
    """The files to rewrite, by partition: heavily deleted ones, and small ones when a
    partition has enough of them or is rewritten anyway."""
    min_size = int(target * MIN_SIZE_OF_TARGET)
    by_partition: dict[tuple[int, Any], list[PlannedFile]] = {}
    for p in planned:
        by_partition.setdefault((p.data_file.spec_id, p.data_file.partition), []).append(p)
    groups: dict[tuple[int, Any], list[PlannedFile]] = {}
    deleted: dict[str, int] = {}
    for key, files in by_partition.items():
        counts = {p.path: len(live_positions(index, p)) for p in files}
        heavy = [
            p for p in files if counts[p.path] and counts[p.path] >= min_fraction * p.record_count
        ]
        small = [p for p in files if p not in heavy and p.data_file.file_size_in_bytes < min_size]
        chosen = heavy + (small if len(small) >= min_inputs or (heavy and small) else [])
        if chosen:
            groups[key] = sorted(chosen, key=lambda p: p.path)
            deleted.update((p.path, counts[p.path]) for p in chosen)
    return Choice(groups, deleted)


def pack(groups: Mapping[tuple[int, Any], Sequence[PlannedFile]], target: int) -> list[FileGroup]:
    """Each partition's files dealt into ``ceil(bytes / target)`` groups of about equal
    bytes (the largest file first into the lightest group), each group's files in path
    order; a group never holds more files than it could be split into."""
    packed: list[FileGroup] = []
    for key, files in groups.items():
        total = sum(int(p.data_file.file_size_in_bytes) for p in files)
        count = max(1, min(len(files), math.ceil(total / target)))
        heap = [(0, i) for i in range(count)]
        chosen: list[list[PlannedFile]] = [[] for _ in range(count)]
        for p in sorted(files, key=lambda p: -int(p.data_file.file_size_in_bytes)):
            size, i = heapq.heappop(heap)
            chosen[i].append(p)
            heapq.heappush(heap, (size + int(p.data_file.file_size_in_bytes), i))
        packed.extend((key, sorted(c, key=lambda p: p.path)) for c in chosen if c)
    return packed
