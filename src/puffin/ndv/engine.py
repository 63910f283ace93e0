"""The one NDV engine: Arrow columns in, Iceberg theta sketches out.

``puffin ndv`` (through :func:`puffin.ndv.parquet.sketch_parquet`) and
``compute_table_statistics`` read and hash through :func:`sketch_parts`; each task of the
Spark ``arrow`` engine hashes through :class:`ColumnSketch`.
Why it is faster than one :class:`~puffin.blobs.theta.files.ThetaSketchBuilder` update per batch:

- each column keeps one hashing state (the candidates below theta) for the whole run, and
  each thread one scratch space: no thread pool, no fresh 12 MiB scratch and no union per
  batch;
- strings are hashed straight from the Arrow offsets and data buffers (no cast to
  ``large_string``);
- a dictionary-encoded column is hashed once per dictionary: the entries its rows use are
  gathered batch after batch and hashed when the dictionary changes, never row by row;
- :func:`sketch_parts` runs one worker per CPU, each taking the next part (a row group, a
  file), decoding it batch by batch (pyarrow releases the GIL) and hashing each batch while
  it is in cache: one worker's reading overlaps another's hashing, and memory is a batch or
  two per worker.

A theta sketch is the set of the ``k`` smallest distinct hashes, so neither the order nor
the grouping of values changes it: the sketches are byte-identical to
:meth:`ThetaSketch.from_values` on the same columns.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from puffin.blobs.single_value import numeric_values, serialize_values
from puffin.blobs.theta.build import (
    CHUNK_ROWS,
    FIRST_CHUNK_ROWS,
    MAX_THETA,
    TASK_ROWS,
    Accumulator,
    Worker,
    add_in_chunks,
    dedupe_small_range,
    default_threads,
    union_states,
)
from puffin.blobs.theta.files import DEFAULT_LG_K, ThetaSketch, check_lg_k
from puffin.types import IcebergType, arrow_type_for, parse_type

if TYPE_CHECKING:
    import pyarrow as pa
    from numpy.typing import NDArray

__all__ = [
    "Batches",
    "ColumnSketch",
    "Part",
    "PartsNdv",
    "keep_freed_memory",
    "sketch_parts",
]


def _same_kind(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether ``have`` holds ``want``'s values with other offsets (the serializer reads both)."""
    import pyarrow as pa

    t = pa.types
    strings = (t.is_string, t.is_large_string, t.is_string_view)
    binaries = (t.is_binary, t.is_large_binary, t.is_binary_view)
    return any(
        any(p(have) for p in group) and any(p(want) for p in group) for group in (strings, binaries)
    )


class ColumnSketch:
    """One column's theta sketch, built from Arrow arrays batch after batch.

    ``cast``: cast each array to the Arrow type of the Iceberg type first (what ``puffin ndv``
    does with Parquet types such as ``uint32`` or ``timestamp[ms]``); without it arrays go to
    the single-value serializer as they are (what ``ThetaSketch.from_values`` does).
    ``non_null`` counts the non-null rows added.  ``scratch``: hashing work space (12 MiB),
    which the sketches one thread fills in turn may share.  Not thread-safe.
    """

    def __init__(
        self,
        iceberg_type: str | IcebergType | Any,
        *,
        lg_k: int = DEFAULT_LG_K,
        cast: bool = False,
        scratch: Worker | None = None,
    ) -> None:
        self.iceberg_type = parse_type(iceberg_type)
        self.lg_k = check_lg_k(lg_k)
        self.non_null = 0
        self._target = arrow_type_for(self.iceberg_type) if cast else None
        self._acc = Accumulator(self.lg_k)
        self._worker = scratch  # hashing scratch, shareable by the sketches of one thread
        self._dictionary: pa.Array | None = None
        self._dictionary_key: tuple[Any, ...] = ()
        self._used: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)

    def add(self, values: pa.Array | pa.ChunkedArray) -> None:
        """Hash a batch of values (an Array or ChunkedArray; nulls are skipped)."""
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            for chunk in values.chunks:
                self.add(chunk)
            return
        self.non_null += len(values) - values.null_count
        if isinstance(values.type, pa.BaseExtensionType):
            values = values.storage
        if pa.types.is_dictionary(values.type):
            self._add_dictionary(values)
        elif len(values):
            self._hash(values)

    def result(self) -> ThetaSketch:
        """The sketch of every value added so far (the column may keep growing)."""
        self._flush_dictionary()
        hashes, theta = self._acc.state()
        return ThetaSketch._make(hashes, theta, self.lg_k)

    @staticmethod
    def union(parts: Sequence[ColumnSketch]) -> ThetaSketch:
        """The sketch of everything added to any of ``parts`` (the same column, in pieces)."""
        states = []
        for part in parts:
            part._flush_dictionary()
            states.append(part._acc.state())
        hashes, theta = union_states(states, 1 << parts[0].lg_k)
        return ThetaSketch._make(hashes, theta, parts[0].lg_k)

    def _normalized(self, values: pa.Array) -> pa.Array:
        target = self._target
        if target is None or values.type == target or _same_kind(values.type, target):
            return values
        return values.cast(target)

    def _hash(self, values: pa.Array) -> None:
        part = serialize_values(self._normalized(values), self.iceberg_type)
        if self._worker is None:
            self._worker = Worker()
        acc, worker = self._acc, self._worker
        step = FIRST_CHUNK_ROWS if acc.theta == MAX_THETA else CHUNK_ROWS
        n = len(part)
        for start in range(0, n, TASK_ROWS):
            piece = dedupe_small_range(part.slice(start, min(n, start + TASK_ROWS)))
            step = add_in_chunks(acc, piece, worker, step)

    def _add_dictionary(self, values: pa.DictionaryArray) -> None:
        """Mark the dictionary entries the rows use; hash them when the dictionary changes.

        Hashing the used entries is exact: they are the values of the non-null rows.  The
        dictionary is held until flushed, so its buffer addresses identify it; pyarrow's
        Parquet reader gives each batch its own copy of a column chunk's dictionary, which
        :meth:`_holds` recognises by content, so the chunk's entries are hashed once.
        """
        import pyarrow.compute as pc

        dictionary = values.dictionary
        key = (
            tuple(0 if b is None else b.address for b in dictionary.buffers()),
            dictionary.offset,
            len(dictionary),
        )
        if key != self._dictionary_key and not self._holds(dictionary):
            self._flush_dictionary()
            self._dictionary, self._dictionary_key = dictionary, key
            self._used = np.zeros(len(dictionary), dtype=np.bool_)
        indices = values.indices
        if indices.null_count:
            indices = pc.drop_null(indices)
        if len(indices):
            self._used[numeric_values(indices)] = True

    def _holds(self, dictionary: pa.Array) -> bool:
        """Whether the held dictionary has exactly ``dictionary``'s entries (a comparison of
        their bytes, far cheaper than hashing them again)."""
        held = self._dictionary
        return held is not None and len(held) == len(dictionary) and held.equals(dictionary)

    def _flush_dictionary(self) -> None:
        dictionary, used = self._dictionary, self._used
        self._dictionary, self._dictionary_key = None, ()
        self._used = np.zeros(0, dtype=np.bool_)
        if dictionary is not None and used.any():
            self._hash(dictionary if used.all() else dictionary.take(np.flatnonzero(used)))


#: How long jemalloc keeps freed pages for reuse (see :func:`_reusing_pool`).
_DECAY_MS = 1000
# glibc's mallopt parameters and the values :func:`keep_freed_memory` sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD, _TRIM_THRESHOLD = 32 << 20, 256 << 20

Batches = Iterator[tuple[int, Mapping[Any, Any]]]
#: A part of the input: called on a worker thread, it yields ``(rows, {key: column})``
#: batches (a column is an Arrow array, chunked array or ``None`` when absent).
Part = Callable[[], Batches]


class _Job:
    """Parts handed to worker threads in order; the first failure stops the job."""

    def __init__(self, parts: Sequence[Part], on_batch: Callable[[int, int], None] | None) -> None:
        self.on_batch = on_batch
        self.parts: queue.SimpleQueue[tuple[int, Part]] = queue.SimpleQueue()
        for index, part in enumerate(parts):
            self.parts.put((index, part))
        self.rows = 0
        self.failures: list[tuple[int, Hashable | None, BaseException]] = []
        self.lock = threading.Lock()

    def run(self, sketches: Mapping[Hashable, ColumnSketch]) -> None:
        """Read and hash parts until none is left or one has failed.

        Once a part has failed no worker takes another; the parts already taken (all
        earlier in order) are finished, so the failure reported is the first in order.
        """
        while not self.failures:
            try:
                index, part = self.parts.get_nowait()
            except queue.Empty:
                return
            key: Hashable | None = None
            try:
                for rows, columns in part():
                    for key, values in columns.items():
                        if values is not None:
                            sketches[key].add(values)
                    key = None
                    with self.lock:
                        self.rows += rows
                        if self.on_batch is not None:
                            self.on_batch(rows, index)
            except BaseException as exc:  # re-raised by the caller, with its place
                with self.lock:
                    self.failures.append((index, key, exc))
                return


@dataclass(frozen=True)
class PartsNdv:
    """What :func:`sketch_parts` found: per key its sketch and non-null count, and the rows."""

    sketches: dict[Hashable, ThetaSketch]
    non_null: dict[Hashable, int]
    rows: int


#: ``guard(part index, key)``: a context in which an error reading that part (``key`` None)
#: or hashing its column ``key`` is raised, so the caller can say where it came from.
PartGuard = Callable[[int, "Hashable | None"], AbstractContextManager[None]]


def sketch_parts(
    parts: Sequence[Part],
    types: Mapping[Any, str | IcebergType | Any],
    *,
    lg_k: int = DEFAULT_LG_K,
    cast: bool = False,
    threads: int | None = None,
    on_batch: Callable[[int, int], None] | None = None,
    guard: PartGuard | None = None,
) -> PartsNdv:
    """Theta sketches of the columns ``types`` names (key -> Iceberg type) over all ``parts``.

    ``threads`` workers (default: the available CPUs) each take the next part, read it
    batch by batch (Parquet decoding releases the GIL) and hash each batch while it is in
    cache, into their own sketches, unioned at the end: one worker's reading overlaps
    another's hashing, as in DuckDB's scans, and memory is a batch or two per worker.
    ``on_batch(rows, part index)`` is called after each batch is hashed (under a lock).
    """
    job = _Job(parts, on_batch)
    n = max(1, min(default_threads() if threads is None else threads, len(parts)))
    workers: list[dict[Hashable, ColumnSketch]] = []
    for _ in range(n):
        scratch = Worker()
        workers.append(
            {k: ColumnSketch(t, lg_k=lg_k, cast=cast, scratch=scratch) for k, t in types.items()}
        )
    with _reusing_pool():
        helpers = [
            threading.Thread(target=job.run, args=(w,), name="puffin-ndv", daemon=True)
            for w in workers[1:]
        ]
        for t in helpers:
            t.start()
        try:
            job.run(workers[0])
        finally:
            for t in helpers:
                t.join()
    if job.failures:
        index, key, exc = min(job.failures, key=lambda f: f[0])
        with guard(index, key) if guard is not None else contextlib.nullcontext():
            raise exc
    return PartsNdv(
        {k: ColumnSketch.union([w[k] for w in workers]) for k in types},
        {k: sum(w[k].non_null for w in workers) for k in types},
        job.rows,
    )


def keep_freed_memory() -> None:
    """Make glibc's malloc keep freed memory for reuse, for the rest of the process.

    NumPy's temporaries of a few MiB come from malloc; in worker threads glibc returns them
    to the OS on free and page-faults them back on the next batch (0.2 s of kernel time for
    10 M rows, a tenth of ``puffin ndv``).  Fixed mmap and trim thresholds stop that, at the
    cost of keeping up to 256 MiB of freed memory: for a command's own process, not for a
    library's host.  Does nothing where the C library is not glibc.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):  # pragma: no cover - not glibc
        return
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


def _reusing_pool() -> AbstractContextManager[None]:
    """An Arrow allocator that keeps freed pages a while, for the duration of a job.

    pyarrow's default allocators return each batch's memory to the OS at once and fault it
    back for the next batch: a third of the CPU time of reading went to the kernel.  jemalloc
    with a one-second decay reuses it (measured: 0.3 s less CPU for 10 M rows, peak RSS no
    higher); where pyarrow has no jemalloc, the system allocator, which also reuses it.
    """
    import pyarrow as pa

    try:
        pa.jemalloc_set_decay_ms(_DECAY_MS)
        pool = pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowNotImplementedError):  # pragma: no cover
        pool = pa.system_memory_pool()

    @contextlib.contextmanager
    def swap() -> Iterator[None]:
        before = pa.default_memory_pool()
        pa.set_memory_pool(pool)
        try:
            yield
        finally:
            pa.set_memory_pool(before)

    return swap()
