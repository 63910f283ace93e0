"""A snapshot's plan: its live data files, the deletes that apply to each, and which rows survive.

pyiceberg's evaluators choose the files (over manifest entries read through the process's
cache, files ruled out by their integer bounds first: :mod:`puffin.iceberg.scan.bounds`), and
:class:`~puffin.iceberg.scan.delete_file_index.DeleteFileIndex` finds the deletes of each (by
the data file a vector names, or by partition and sequence number), so that planning grows
with data files plus delete files; :class:`puffin.iceberg.metadata.delete_files.DeleteIndex`
answers "which positions of this data file are deleted", and :func:`keep_mask` turns those
into a row mask for one slice of the file.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

from puffin.errors import UnsupportedTableError
from puffin.support.gc_pause import gc_paused

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile, ManifestEntry, ManifestFile
    from pyiceberg.table import DataScan, FileScanTask, Table
    from pyiceberg.table.metadata import TableMetadata
    from pyiceberg.table.snapshots import Snapshot

    from puffin.iceberg.scan.delete_file_index import DeleteEntry

__all__ = ["PlannedFile", "keep_mask", "pick_mask", "plan_files", "planned_from_tasks"]


class _NoSequences(Mapping[str, int]):
    """The empty mapping every planned file without equality deletes shares (a dict each
    was a tenth of a warm plan's time)."""

    __slots__ = ()
    __hash__ = object.__hash__  # immutable: a dataclass default

    def __getitem__(self, key: str) -> int:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


_NO_SEQUENCES = _NoSequences()


@dataclass(slots=True, frozen=True)
class PlannedFile:
    """A live data file of the snapshot and the delete files that apply to it: position
    deletes and vectors, and (in plans that take them) equality delete files.

    Read-only: plans share the one of a data file without deletes (it is made once per
    cached manifest), so a plan of 20,000 files allocates only for the files that have
    deletes; each new object would also be walked by the cyclic collector's next young
    collection, and freed with the plan."""

    data_file: DataFile
    delete_files: Sequence[DataFile] = ()
    equality_deletes: Sequence[DataFile] = ()
    #: the data file's data sequence number and its equality deletes', where the plan read
    #: them (a catalog's plan does not say): matching keys by the newest delete that holds
    #: them, and checking a vector is not older than its data file (verify_table)
    data_sequence: int | None = None
    equality_sequences: Mapping[str, int] = _NO_SEQUENCES

    @property
    def path(self) -> str:
        return str(self.data_file.file_path)

    @property
    def record_count(self) -> int:
        return int(self.data_file.record_count)

    def positional(self) -> PlannedFile:
        """This file with its position deletes only (what a job that converts or keeps the
        equality deletes merges vectors with)."""
        if not self.equality_deletes:
            return self
        return PlannedFile(self.data_file, self.delete_files)


_SET_FILE, _SET_DELETES, _SET_EQUALITY, _SET_SEQUENCE, _SET_SEQUENCES = (
    PlannedFile.__dict__[name].__set__ for name in PlannedFile.__slots__
)


def _with_deletes(
    data_file: DataFile, deletes: Sequence[DataFile], sequence: int
) -> PlannedFile:
    """``PlannedFile(data_file, deletes, (), sequence)``, made through its slots (plans make
    one per file with deletes, digests one per data file): a frozen dataclass's
    ``__init__`` (``object.__setattr__`` by name, a field at a time) took a quarter of a
    warm plan of 20,000 files with 5,000 vectors."""
    planned = object.__new__(PlannedFile)
    _SET_FILE(planned, data_file)
    _SET_DELETES(planned, deletes)
    _SET_EQUALITY(planned, ())
    _SET_SEQUENCE(planned, sequence)
    _SET_SEQUENCES(planned, _NO_SEQUENCES)
    return planned


def plan_files(
    table: Table,
    snapshot: Snapshot,
    row_filter: BooleanExpression | None = None,
    *,
    equality: bool = False,
) -> list[PlannedFile]:
    """pyiceberg's plan of the snapshot: data files with the deletes that apply to each;
    with ``row_filter`` (unbound, as :func:`~puffin.iceberg.scan.row_filter.check_where`
    gives it), only the files whose partition and column metrics may hold a match."""
    if row_filter is None:
        return planned_from_tasks(table.scan(snapshot_id=snapshot.snapshot_id), equality=equality)
    scan = table.scan(snapshot_id=snapshot.snapshot_id, row_filter=row_filter)
    return planned_from_tasks(scan, equality=equality)


def planned_from_tasks(scan: DataScan, *, equality: bool = False) -> list[PlannedFile]:
    """The files pyiceberg's ``scan`` plans (pruned by its filter), sorted by path;
    :class:`UnsupportedTableError` naming the file for an equality delete."""
    try:
        return _plan(scan, equality)
    except ValueError as exc:
        if "equality delete" in str(exc).lower():
            named = ", ".join(_equality_delete_files(scan)[:3]) or "(not found)"
            raise UnsupportedTableError(
                f"the snapshot has equality delete files ({named}), which this job does not "
                "apply yet; convert them to deletion vectors first (`puffin table "
                "convert-equality-deletes TABLE`, puffin.iceberg.convert_equality_deletes; "
                "a v2 table after `puffin table upgrade`)"
            ) from exc
        raise


def _plan(scan: DataScan, equality: bool = False) -> list[PlannedFile]:
    """pyiceberg's plan of ``scan`` (its evaluators and sequence-number rules), sorted by
    path, with the manifests read through the process's cache of committed manifests (a
    table that takes one commit after another plans each over the same manifests) as
    digests (:class:`_Digest`), and the deletes of each data file found through our
    delete-file index."""
    if scan._should_use_server_side_planning():
        planned = [_from_task(task, equality) for task in scan.plan_files()]
        planned.sort(key=attrgetter("path"))
        return planned
    snapshot = scan.snapshot()
    if snapshot is None:
        return []
    planner = _cached_planner()(
        table_metadata=scan.table_metadata,
        io=scan.io,
        row_filter=scan.row_filter,
        case_sensitive=scan.case_sensitive,
        options=scan.options,
    )
    with gc_paused():  # tens of thousands of objects that live on (support/gc_pause.py)
        digests = planner.plan_digests(snapshot.manifests(scan.io))
        return _planned_digests(digests, unpartitioned_specs(scan.table_metadata), equality)


def _from_task(task: FileScanTask, equality: bool = False) -> PlannedFile:
    """A task a catalog planned, as a :class:`PlannedFile` (equality deletes refused unless
    the plan takes them)."""
    positions, equalities = _by_kind(task.delete_files)
    if equalities and not equality:
        raise UnsupportedTableError(
            f"equality delete file {equalities[0].file_path} applies to {task.file.file_path}; "
            "equality deletes are not supported"
        )
    return PlannedFile(task.file, positions, equalities)


@functools.cache
def _cached_planner() -> Any:
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.table import ManifestGroupPlanner
    from pyiceberg.typedef import KeyDefaultDict
    from pyiceberg.types import strtobool
    from pyiceberg.utils.concurrent import ExecutorFactory

    from puffin.iceberg.metadata.manifests import (
        cache_in_use,
        cached_view,
        read_manifest_entries,
    )
    from puffin.iceberg.scan.bounds import bounds_test
    from puffin.io.locations import local_path

    class CachedPlanner(ManifestGroupPlanner):
        """pyiceberg's planner (0.12) with :meth:`plan_digests`: its evaluators over the
        process's cache of entries, integer bounds tested quickly first."""

        def plan_digests(self, manifests: Iterable[ManifestFile]) -> Iterator[_Digest]:
            """A :class:`_Digest` of each manifest's entries that pass the filters."""
            chosen = KeyDefaultDict(self._build_manifest_evaluator)
            kept = [m for m in manifests if chosen[m.partition_spec_id](m)]
            partitions = KeyDefaultDict(self._build_partition_evaluator)
            metrics = self._build_metrics_evaluator()
            least = _least_data_sequence(kept)
            work = [(m, partitions[m.partition_spec_id]) for m in kept
                    if self._check_sequence_number(least, m)]
            cached = cache_in_use()  # here: the reading threads do not see the context
            # Files whose integer bounds rule them out, as pyiceberg's evaluator would, are
            # not visited by it (scan/bounds.py).
            quick = bounds_test(self.table_metadata.schema(), self.row_filter,
                                self.case_sensitive) or (lambda _: True)

            # No condition: only pyiceberg's rule on empty files can rule an entry out.
            everything = self.row_filter == AlwaysTrue()
            empty_too = strtobool(self.options.get("include_empty_files", "false"))

            def entries(args: tuple[ManifestFile, Any]) -> _Digest:
                manifest, in_partition = args
                if cached:
                    digest = cached_view(self.io, manifest, "plan", _digest)
                else:
                    digest = _digest(read_manifest_entries(self.io, manifest))
                if everything:
                    return digest if empty_too else digest.without_empty()
                return digest.kept(lambda f: quick(f) and in_partition(f) and metrics(f))

            # Decoding a manifest is Python holding the GIL: threads pay off only while reads
            # wait on a remote store (local ones decoded 25 % faster in the calling thread).
            if all(local_path(m.manifest_path) is not None for m, _ in work):
                return map(entries, work)
            return ExecutorFactory.get_or_create().map(entries, work)

    return CachedPlanner


def _least_data_sequence(manifests: Iterable[ManifestFile]) -> int:
    """The smallest data sequence number in the data manifests (0 if none): a delete
    manifest whose entries are all older applies to no data file (pyiceberg's rule)."""
    from pyiceberg.manifest import ManifestContent

    return min(
        (m.min_sequence_number or 0 for m in manifests if m.content == ManifestContent.DATA),
        default=0,
    )


@dataclass(slots=True)
class _Digest:
    """A manifest's live entries as a plan reads them, made once per cached manifest: its
    data files as ``(path, data file, data sequence number, planned file)`` sorted by path
    (the last: the file's :class:`PlannedFile` without deletes, which a plan returns as it
    is), and its delete entries as the index files them.

    A warm plan of 20,000 files then touches a small tuple and a path per file, not the
    entry, its record and the record's fields, scattered over the heap (each plan stage
    cost 15-17x at ten times the files when it did), sorts runs already in order, and
    makes objects only for files with deletes."""

    #: ``(path, data file, data sequence number, planned file)``, sorted by path
    data: list[tuple[str, DataFile, int, PlannedFile]]
    deletes: list[DeleteEntry]
    #: whether any file has no rows (pyiceberg leaves those out of a plan)
    has_empty: bool = False

    def kept(self, test: Callable[[DataFile], bool]) -> _Digest:
        """The entries whose data file passes ``test``, in the same order."""
        return _Digest(
            [row for row in self.data if test(row[1])],
            [d for d in self.deletes if test(d.delete_file)],
            self.has_empty,
        )

    def without_empty(self) -> _Digest:
        return self.kept(_not_empty) if self.has_empty else self


def _digest(entries: Iterable[ManifestEntry]) -> _Digest:
    from pyiceberg.manifest import DataFileContent

    from puffin.iceberg.scan.delete_file_index import DeleteEntry, data_sequence

    data, deletes, empty = [], [], False
    for entry in entries:
        data_file = entry.data_file
        content = data_file.content
        empty = empty or data_file.record_count == 0
        if content == DataFileContent.DATA:
            sequence = data_sequence(entry)
            planned = _with_deletes(data_file, (), sequence)
            data.append((str(data_file.file_path), data_file, sequence, planned))
        elif content in (DataFileContent.POSITION_DELETES, DataFileContent.EQUALITY_DELETES):
            deletes.append(DeleteEntry.of(entry))
        else:
            raise ValueError(f"unknown data file content {content}: {entry}")
    data.sort(key=itemgetter(0))
    return _Digest(data, deletes, empty)


def _not_empty(data_file: DataFile) -> bool:
    return data_file.record_count != 0  # pyiceberg's rule: empty files are not planned


def _planned_digests(
    digests: Iterable[_Digest], unpartitioned: frozenset[int] = frozenset(), equality: bool = False
) -> list[PlannedFile]:
    """The data files of ``digests`` (one per manifest), sorted by path, with the delete
    files of each, found through :class:`DeleteFileIndex` (by the file they name, or by
    partition and sequence number): pyiceberg's own index tests every vector of a
    partition against every data file of it. (pyiceberg's residuals are not made: a
    :class:`PlannedFile` has none.)"""
    from puffin.iceberg.scan.delete_file_index import DeleteFileIndex

    digests = list(digests)
    index = DeleteFileIndex(unpartitioned)
    for digest in digests:
        for entry in digest.deletes:
            index.add(entry)
    rows = list(itertools.chain.from_iterable(d.data for d in digests))
    rows.sort(key=itemgetter(0))  # runs in order: a merge
    if index.is_empty():
        return [row[3] for row in rows]
    applying = index.for_files(rows)
    if not index.has_equality_deletes():
        return [
            _with_deletes(row[1], found, row[2]) if found else row[3]
            for row, found in zip(rows, applying, strict=True)
        ]
    planned = []
    for (_, data_file, sequence, alone), found in zip(rows, applying, strict=True):
        if not found:
            planned.append(alone)
            continue
        positions, equalities = _by_kind(found)
        if equalities and not equality:
            # Only the scan applies them yet: refused as pyiceberg refuses them (its words),
            # but only where one applies to a file of the plan.
            raise ValueError("PyIceberg does not yet support equality deletes")
        numbers = index.equality_sequences
        sequences = {_path(d): numbers[_path(d)] for d in equalities}
        planned.append(PlannedFile(data_file, positions, equalities, sequence, sequences))
    return planned


def _by_kind(delete_files: Iterable[DataFile]) -> tuple[list[DataFile], list[DataFile]]:
    """(position deletes and vectors, equality deletes) of ``delete_files``, each by path."""
    from puffin.iceberg.metadata.delete_files import is_equality_delete

    ordered = sorted(delete_files, key=_path)
    equality = [is_equality_delete(d) for d in ordered]
    return (
        [d for d, e in zip(ordered, equality, strict=True) if not e],
        [d for d, e in zip(ordered, equality, strict=True) if e],
    )


def unpartitioned_specs(metadata: TableMetadata) -> frozenset[int]:
    """The ids of the table's partition specs without fields (their equality deletes are
    global)."""
    return frozenset(s.spec_id for s in metadata.partition_specs if s.is_unpartitioned())


def _path(data_file: DataFile) -> str:
    return str(data_file.file_path)


def _equality_delete_files(scan: DataScan) -> list[str]:
    """The equality delete files of the scan's snapshot, for the error that refuses them."""
    from pyiceberg.manifest import DataFileContent, ManifestContent

    from puffin.iceberg.metadata.manifests import read_manifest_entries

    snapshot = scan.snapshot()
    if snapshot is None:
        return []
    return [
        str(e.data_file.file_path)
        for m in snapshot.manifests(scan.io)
        if m.content == ManifestContent.DELETES
        for e in read_manifest_entries(scan.io, m)
        if e.data_file.content == DataFileContent.EQUALITY_DELETES
    ]


def keep_mask(
    positions: npt.NDArray[np.int64] | None, start: int, count: int
) -> npt.NDArray[np.bool_] | None:
    """Rows ``start .. start+count`` of a file that survive ``positions``; None if all do."""
    import numpy as np

    if positions is None or not len(positions):
        return None
    lo, hi = np.searchsorted(positions, [start, start + count])
    if lo == hi:
        return None
    mask = np.ones(count, dtype=bool)
    mask[positions[lo:hi] - start] = False
    return mask



def pick_mask(positions: npt.NDArray[np.int64], start: int, count: int) -> npt.NDArray[np.bool_]:
    """Rows ``start .. start+count`` of a file that are among ``positions`` (sorted)."""
    import numpy as np

    lo, hi = np.searchsorted(positions, [start, start + count])
    mask = np.zeros(count, dtype=bool)
    mask[positions[lo:hi] - start] = True
    return mask
