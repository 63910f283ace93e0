"""Which delete files apply to each data file of a plan, found without visiting the others.

pyiceberg 0.12's ``DeleteFileIndex`` keys a delete file by the data file its path bounds
name, and otherwise by partition; a deletion vector written without path bounds (this
library's, for one) lands in its partition's list, and every data file of the partition then
tests every vector of it (``_applies_to_data_file`` builds a metrics evaluator per pair):
planning 20,000 files with 5,000 vectors took 79 s. As Iceberg Java's ``DeleteFileIndex``:

* a deletion vector (and a position-delete file whose ``referenced_data_file`` is set, or
  whose ``file_path`` bounds name one file) is found by that data file's path, in a dict;
* any other position-delete file, by ``(spec id, partition)``, sorted by data sequence
  number so the ones at or after the data file's are a binary search away, and kept only
  when its ``file_path`` bounds may hold the data file's path (compared as pyiceberg's
  inclusive metrics evaluator compares them, on bounds decoded once);
* an equality delete file, by ``(spec id, partition)``, or among the global ones when its
  spec has no partition fields (it then applies to every partition of every spec);
* a delete file applies to a data file when its data sequence number is at least the data
  file's (position deletes and vectors), or greater than it (equality deletes: they delete
  rows written before them), as in the spec;
* a data file has at most one deletion vector, whose data sequence number is at least its
  own: two vectors, or a vector below its data file, are corrupt metadata, refused with
  :class:`~puffin.errors.TableMetadataError` as Java 1.10's index refuses them (a vector
  below would otherwise be skipped and the rows it deletes come back).

The result per data file is the set pyiceberg's index gives for position deletes
(``tests/iceberg/scan/test_delete_file_index.py`` compares the two on every kind of table),
and the spec's rules for every kind (the same file, against a model). Java also drops an
equality delete file whose key bounds cannot overlap the data file's; this index keeps it
(applying it then deletes nothing). A plan carries them only for the jobs that apply them
(``plan_files(..., equality=True)``); the others refuse them (``scan/plan.py``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from puffin.errors import TableMetadataError
from puffin.iceberg.metadata.manifests import REFERENCED_DATA_FILE

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile, ManifestEntry

__all__ = [
    "DeleteEntry",
    "DeleteFileIndex",
    "data_sequence",
    "lenient_vectors",
    "partition_key",
    "scoped_data_file",
]

#: Within :func:`lenient_vectors`, a plan keeps what breaks the one-vector rules.
_LENIENT: ContextVar[bool] = ContextVar("puffin_lenient_vectors", default=False)

#: The ``file_path`` column of a position-delete file (its bounds name the data files).
PATH_FIELD_ID = 2147483546
INITIAL_SEQUENCE_NUMBER = 0
_NONE: frozenset[Any] = frozenset()
_NO_FILES: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteEntry:
    """A live delete entry as the index files it, prepared once (a plan keeps these with
    each cached manifest: ``scan/plan.py``)."""

    delete_file: DataFile
    sequence: int  #: its data sequence number
    equality: bool
    #: the one data file it applies to (a vector, or a position-delete file naming one)
    target: str | None
    #: ``(spec id, partition)`` for one found by partition (``target`` None)
    partition: tuple[int, tuple[Any, ...]] | None
    #: its decoded ``file_path`` bounds (a position-delete file found by partition)
    bounds: tuple[str, str] | None
    #: a deletion vector (a Puffin blob), of which a data file has at most one
    vector: bool = False
    #: ``(delete_file,)``: what a plan gives the data file this one alone applies to
    files: tuple[DataFile, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", (self.delete_file,))

    @classmethod
    def of(cls, entry: ManifestEntry) -> DeleteEntry:
        from pyiceberg.manifest import DataFileContent, FileFormat

        delete_file = entry.data_file
        sequence = data_sequence(entry)
        if delete_file.content == DataFileContent.EQUALITY_DELETES:
            return cls(delete_file, sequence, True, None, partition_key(delete_file), None)
        target = _referenced_data_file(delete_file)
        if target is not None:
            vector = delete_file.file_format == FileFormat.PUFFIN
            return cls(delete_file, sequence, False, target, None, None, vector)
        return cls(
            delete_file, sequence, False, None, partition_key(delete_file),
            _path_bounds(delete_file),
        )  # fmt: skip


@dataclass(slots=True)
class _BySequence:
    """Delete files of one key, sorted by data sequence number once all are added."""

    entries: list[tuple[int, DataFile, tuple[str, str] | None]] = field(default_factory=list)
    sequences: list[int] | None = None
    #: the data file this key names (found by path), its deletion vector and the vector's
    #: data sequence number
    path: str = ""
    vector: tuple[int, DataFile] | None = None

    def add(self, sequence: int, delete_file: DataFile, bounds: tuple[str, str] | None) -> None:
        self.entries.append((sequence, delete_file, bounds))
        self.sequences = None

    @classmethod
    def holding(cls, entry: DeleteEntry) -> _BySequence:
        """A bucket for the data file ``entry`` names, holding ``entry``."""
        assert entry.target is not None
        bucket = cls(path=entry.target)
        bucket.add_entry(entry)
        return bucket

    def add_entry(self, entry: DeleteEntry) -> None:
        """A delete file found by the data file it names: a vector, or a position-delete
        file."""
        if entry.vector:
            self.add_vector(entry.sequence, entry.delete_file)
        else:
            self.add(entry.sequence, entry.delete_file, None)

    def add_vector(self, sequence: int, delete_file: DataFile) -> None:
        """The deletion vector of the data file this key names; a second one breaks the
        spec (Java 1.10's index refuses it too: "Can't index multiple DVs")."""
        if self.vector is not None and not _LENIENT.get():
            first = self.vector[1].file_path
            raise TableMetadataError(
                f"two deletion vectors for data file {self.path}: in {first} and in "
                f"{delete_file.file_path} (a data file has at most one)"
            )
        self.vector = (sequence, delete_file)
        self.add(sequence, delete_file, None)

    def check_vector(self, sequence: int) -> None:
        """A deletion vector below its data file's data sequence number ``sequence`` is a
        writer's mistake that would bring deleted rows back: Java 1.10 fails the scan
        ("DV data sequence number ... must be greater than or equal to ..."), so does this."""
        if self.vector is not None and self.vector[0] < sequence and not _LENIENT.get():
            raise TableMetadataError(
                f"deletion vector in {self.vector[1].file_path} for data file {self.path} has "
                f"data sequence number {self.vector[0]}, below the data file's {sequence}"
            )

    def files_at_or_after(self, sequence: int) -> Sequence[DataFile]:
        """The delete files of data sequence number ``sequence`` or later, by path (a
        data file's vectors: most often one)."""
        if len(self.entries) == 1:
            first, delete_file, _ = self.entries[0]
            if first >= sequence:
                return [delete_file]
            self.check_vector(sequence)
            return _NO_FILES
        self.check_vector(sequence)
        return by_path({d for _, d, _ in self.at_or_after(sequence)})

    def at_or_after(self, sequence: int) -> list[tuple[int, DataFile, tuple[str, str] | None]]:
        """The delete files of data sequence number ``sequence`` or later."""
        return self.entries[bisect_left(self._sorted(), sequence) :]

    def after(self, sequence: int) -> list[tuple[int, DataFile, tuple[str, str] | None]]:
        """The delete files of a data sequence number later than ``sequence``."""
        return self.entries[bisect_right(self._sorted(), sequence) :]

    def _sorted(self) -> list[int]:
        if self.sequences is None:
            self.entries.sort(key=lambda e: e[0])
            self.sequences = [e[0] for e in self.entries]
        return self.sequences


class DeleteFileIndex:
    """The delete entries of a plan, indexed by the data file they name or by partition.

    ``unpartitioned_specs``: the ids of the table's partition specs without fields, whose
    equality delete files apply to every partition (the spec's global deletes)."""

    def __init__(self, unpartitioned_specs: frozenset[int] = frozenset()) -> None:
        self._unpartitioned = unpartitioned_specs
        #: by the data file they name: the one delete entry that does (most often), or a
        #: bucket of them (no object made per vector: a plan builds this index each time)
        self._by_path: dict[str, DeleteEntry | _BySequence] = {}
        self._by_partition: dict[tuple[int, tuple[Any, ...]], _BySequence] = {}
        self._equality_global = _BySequence()
        self._equality: dict[tuple[int, tuple[Any, ...]], _BySequence] = {}
        #: each equality delete file's data sequence number, by path
        self.equality_sequences: dict[str, int] = {}
        self._wide = False  # any delete file found by partition, or global

    def is_empty(self) -> bool:
        return not (
            self._by_path or self._by_partition or self._equality or self._equality_global.entries
        )

    def has_equality_deletes(self) -> bool:
        return bool(self._equality or self._equality_global.entries)

    def add(self, entry: ManifestEntry | DeleteEntry) -> None:
        """A live delete entry of the snapshot: a deletion vector, a position-delete file or
        an equality delete file."""
        d = entry if isinstance(entry, DeleteEntry) else DeleteEntry.of(entry)
        if d.target is not None:
            held = self._by_path.get(d.target)
            if held is None:
                self._by_path[d.target] = d
            elif isinstance(held, DeleteEntry):
                self._by_path[d.target] = bucket = _BySequence.holding(held)
                bucket.add_entry(d)
            else:
                held.add_entry(d)
            return
        self._wide = True
        assert d.partition is not None
        by_partition = self._by_partition
        if d.equality:
            self.equality_sequences[str(d.delete_file.file_path)] = d.sequence
            if (d.delete_file.spec_id or 0) in self._unpartitioned:
                self._equality_global.add(d.sequence, d.delete_file, None)
                return
            by_partition = self._equality
        bucket = by_partition.setdefault(d.partition, _BySequence())
        bucket.add(d.sequence, d.delete_file, d.bounds)

    def for_files(self, rows: Sequence[tuple[Any, ...]]) -> list[Sequence[DataFile]]:
        """For each ``(path, data file, data sequence number, ...)`` of ``rows``, the delete
        files that apply, by path: what a plan asks, in one call (with only vectors, a dict
        lookup a file)."""
        if self._wide:
            return [by_path(self.for_file(row[0], row[1], row[2])) for row in rows]
        get, one = self._by_path.get, DeleteEntry
        return [
            _NO_FILES if (found := get(row[0])) is None
            else found.files if found.__class__ is one and found.sequence >= row[2]
            else _bucket(found).files_at_or_after(row[2])
            for row in rows
        ]  # fmt: skip

    def for_data_file(self, entry: ManifestEntry) -> AbstractSet[DataFile]:
        """The delete files that apply to the data file of ``entry``."""
        data_file = entry.data_file
        return self.for_file(str(data_file.file_path), data_file, data_sequence(entry))

    def for_file(self, path: str, data_file: DataFile, sequence: int) -> AbstractSet[DataFile]:
        """The delete files that apply to the data file at ``path`` of data sequence number
        ``sequence`` (the plan's digest holds the three, so nothing else is read)."""
        by_path = self._by_path.get(path)
        if isinstance(by_path, DeleteEntry):  # made a bucket once, kept for the next query
            by_path = self._by_path[path] = _BySequence.holding(by_path)
        if not self._wide:  # only vectors (v3): most files of a plan have none
            if by_path is None:
                return _NONE  # nothing allocated: see PlannedFile
            by_path.check_vector(sequence)
            return {d for _, d, _ in by_path.at_or_after(sequence)}
        key = partition_key(data_file)
        in_partition = self._by_partition.get(key)
        equality = self._equality.get(key)
        found: set[DataFile] = set()
        if in_partition:
            for _, delete_file, bounds in in_partition.at_or_after(sequence):
                if bounds is None or bounds[0] <= path <= bounds[1]:
                    found.add(delete_file)
        if by_path is not None:
            by_path.check_vector(sequence)
            found.update(d for _, d, _ in by_path.at_or_after(sequence))
        # Equality deletes apply only to rows written before them: a strictly later number.
        if equality:
            found.update(d for _, d, _ in equality.after(sequence))
        if self._equality_global.entries:
            found.update(d for _, d, _ in self._equality_global.after(sequence))
        return found


def _bucket(held: DeleteEntry | _BySequence) -> _BySequence:
    """What the index holds for one data file's path, as a bucket."""
    return _BySequence.holding(held) if isinstance(held, DeleteEntry) else held


@contextmanager
def lenient_vectors() -> Iterator[None]:
    """Plans made inside keep two vectors of one data file, and a vector below its data
    file's sequence number (left out, as a delete that does not apply), instead of refusing
    the table: what ``verify_table`` needs to report each problem rather than stop at one."""
    token = _LENIENT.set(True)
    try:
        yield
    finally:
        _LENIENT.reset(token)


def by_path(files: AbstractSet[DataFile]) -> Sequence[DataFile]:
    """``files`` in order of path (one file: no key read)."""
    if len(files) < 2:
        return list(files) if files else _NO_FILES
    return sorted(files, key=lambda d: str(d.file_path))


def data_sequence(entry: ManifestEntry) -> int:
    """An entry's data sequence number (a v1 file's: the initial one)."""
    return int(entry.sequence_number or INITIAL_SEQUENCE_NUMBER)


def partition_key(file: DataFile) -> tuple[int, tuple[Any, ...]]:
    """The spec and partition values as a plain tuple (an unpartitioned file's empty record
    and none are one); pyiceberg's ``Record`` hashes by its ``repr``, which cost more than
    the rest of a plan of 20,000 files."""
    partition = file.partition
    values = tuple(partition[i] for i in range(len(partition))) if partition else ()
    return file.spec_id or 0, values


def _referenced_data_file(delete_file: DataFile) -> str | None:
    """The one data file a delete file applies to: the v3 ``referenced_data_file``, or
    ``file_path`` bounds equal to each other (as pyiceberg reads them)."""
    if len(delete_file) > REFERENCED_DATA_FILE and delete_file[REFERENCED_DATA_FILE]:
        return str(delete_file[REFERENCED_DATA_FILE])
    bounds = _path_bounds(delete_file)
    if bounds is not None and bounds[0] == bounds[1]:
        return bounds[0]
    return None


def scoped_data_file(delete_file: DataFile) -> str | None:
    """The one data file a position-delete file deletes rows of, when its ``file_path``
    bounds say so (lower equal to upper, as Java writes a file-scoped delete file)."""
    bounds = _path_bounds(delete_file)
    return bounds[0] if bounds is not None and bounds[0] == bounds[1] else None


def _path_bounds(delete_file: DataFile) -> tuple[str, str] | None:
    """The ``file_path`` column's lower and upper bounds, decoded; ``None`` when either is
    missing (the file may then hold any data file's rows)."""
    lower = (delete_file.lower_bounds or {}).get(PATH_FIELD_ID)
    upper = (delete_file.upper_bounds or {}).get(PATH_FIELD_ID)
    if not lower or not upper:
        return None
    try:
        return bytes(lower).decode("utf-8"), bytes(upper).decode("utf-8")
    except UnicodeDecodeError:
        return None
