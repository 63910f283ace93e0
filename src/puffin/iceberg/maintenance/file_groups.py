"""File groups of a compaction: the chosen files of each partition dealt into bins of about
the target size, each written again on its own (one Spark task each; the unit a compaction
with partial progress commits), as Iceberg Java's bin-packing rewriter groups them."""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["FileGroup", "pack"]

#: A file group: a partition's key and the files written again together, in path order.
FileGroup = tuple[tuple[int, Any], list["PlannedFile"]]


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
