"""Building Theta sketches from serialized columns at NumPy speed.

The result of hashing a column into a sketch with nominal entries ``k`` is fully determined by
the set of distinct hashes: the ``k`` smallest distinct hashes below theta, with theta the
``(k + 1)``-th smallest (or 2^63 - 1 when there are at most ``k``).  That is what a DataSketches
union returns, so order, chunking and threads do not change the outcome.  This module exploits
that freedom:

- rows are hashed in chunks of :data:`CHUNK_ROWS` so the NumPy temporaries stay in cache;
  a worker's first chunks are smaller, so theta falls before the large ones;
- each chunk hands back only hashes below the current theta (usually a tiny fraction once the
  sketch is in estimation mode), which lets the hashing skip most of the finalizer (see
  :mod:`puffin.blobs.theta.murmur3`); a small direct-mapped table of recently seen hashes drops
  repeats cheaply while the sketch is still exact;
- kept candidates are buffered and reduced to the ``k`` smallest distinct with
  ``np.partition`` only when the buffer grows past a limit, lowering theta;
- the column is cut into slices of :data:`TASK_ROWS` rows that a thread pool serializes and
  hashes (NumPy releases the GIL), each worker with its own accumulator; the per-worker
  results are merged exactly like a union;
- integer-like columns and slices whose values span a small range (dates, years, codes) are
  first reduced to their distinct values, so repeats are never hashed.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from puffin.blobs.single_value import small_range_distinct
from puffin.blobs.theta.murmur3 import make_scratch, theta_hash_lanes, theta_hash_var

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

    from puffin.blobs.single_value import SerializedValues

    U64 = NDArray[np.uint64]

__all__ = [
    "MAX_THETA",
    "Accumulator",
    "accumulate",
    "add_in_chunks",
    "build",
    "default_threads",
    "hash_rows",
    "k_smallest_distinct",
    "union_states",
]

#: Theta of a sketch in exact mode (Java's Long.MAX_VALUE).
MAX_THETA = (1 << 63) - 1
#: Rows hashed per NumPy step (2 MiB per uint64 temporary, 12 MiB of scratch per worker).
#: Per-value cost is flat from 16 K to 256 K rows (L2 and L3 alike); larger steps mean fewer
#: GIL round trips, which is what two threads contend on.
CHUNK_ROWS = 262144
#: Rows in a worker's first step; each step is 4x the last, up to CHUNK_ROWS.  Theta falls
#: during the small steps, so the large ones that follow leave few candidates.
FIRST_CHUNK_ROWS = 16384
#: Rows per task handed to a worker thread (small enough to balance two or more threads).
TASK_ROWS = CHUNK_ROWS
_SEEN_BITS = 16
_SEEN_MIN_CANDIDATES = 1024


def default_threads() -> int:
    """Worker threads to use: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def _sorted_distinct(values: U64) -> U64:
    """The distinct values, ascending (sort and drop neighbours; cheaper than ``np.unique``,
    which hashes first, for the few thousand values a sketch compacts)."""
    values = np.sort(values)
    if values.shape[0] > 1:
        fresh = np.empty(values.shape[0], dtype=np.bool_)
        fresh[0] = True
        np.not_equal(values[1:], values[:-1], fresh[1:])
        if not fresh.all():
            values = values[fresh]
    return values


def k_smallest_distinct(pool: U64, k: int) -> tuple[U64, int | None]:
    """The ``k`` smallest distinct values of ``pool`` (sorted) and the ``(k+1)``-th, if any.

    ``np.partition`` finds the ``m`` smallest values counting repeats; their distinct values are
    exactly the smallest distinct ones, so ``m`` only grows when repeats leave fewer than
    ``k + 1`` of them.
    """
    n = pool.shape[0]
    if n <= k:
        return _sorted_distinct(pool), None
    m = k + 1
    while True:
        if m >= n:
            distinct = _sorted_distinct(pool)
            break
        distinct = _sorted_distinct(np.partition(pool, m - 1)[:m])
        if distinct.shape[0] > k:
            break
        m = min(n, 2 * m + (k + 1 - distinct.shape[0]))
    if distinct.shape[0] > k:
        return distinct[:k].copy(), int(distinct[k])
    return distinct, None


class Accumulator:
    """Distinct hashes below a shrinking theta, for one worker (not thread-safe)."""

    def __init__(self, lg_k: int) -> None:
        self.k = 1 << lg_k
        self.theta = MAX_THETA
        self.retained: U64 = np.empty(0, dtype=np.uint64)
        self._pending: list[U64] = []
        self._pending_count = 0
        self._limit = max(2 * self.k, 8192)
        self._seen: U64 | None = None

    def add(self, hashes: U64) -> None:
        """Offer theta hashes (the array may be reused by the caller afterwards)."""
        candidates = hashes[hashes < np.uint64(self.theta)]
        if candidates.shape[0] == 0:
            return
        if candidates.shape[0] >= _SEEN_MIN_CANDIDATES:
            candidates = self._drop_seen(candidates)
        if not candidates.all():  # hash 0 is never kept
            candidates = candidates[candidates != 0]
        self._pending.append(candidates)
        self._pending_count += candidates.shape[0]
        if self._pending_count > self._limit:
            self.compact()

    def _drop_seen(self, candidates: U64) -> U64:
        """Drop hashes equal to one recorded in the direct-mapped table (exact repeats only).

        A recorded hash was passed on to the pending buffer, so dropping its repeats loses
        nothing; collisions just overwrite a slot.
        """
        if self._seen is None:
            self._seen = np.zeros(1 << _SEEN_BITS, dtype=np.uint64)
        slots = (candidates & np.uint64((1 << _SEEN_BITS) - 1)).astype(np.intp)
        fresh = self._seen[slots] != candidates
        candidates = candidates[fresh]
        self._seen[slots[fresh]] = candidates
        return candidates

    def compact(self) -> None:
        """Fold the pending candidates into ``retained``, lowering theta past ``k`` entries."""
        if not self._pending:
            return
        pool = np.concatenate([self.retained, *self._pending])
        self._pending = []
        self._pending_count = 0
        if self.theta < MAX_THETA:
            pool = pool[pool < np.uint64(self.theta)]
        self.retained, theta = k_smallest_distinct(pool, self.k)
        if theta is not None:
            self.theta = min(self.theta, theta)

    def state(self) -> tuple[U64, int]:
        """(retained hashes, theta) after folding in everything pending."""
        self.compact()
        return self.retained, self.theta


def union_states(states: Sequence[tuple[U64, int]], k: int) -> tuple[U64, int]:
    """Union of (sorted distinct hashes, theta) states: the ``k`` smallest distinct hashes
    below the smallest theta, and the new theta."""
    if not states:
        return np.empty(0, dtype=np.uint64), MAX_THETA
    theta = min(t for _, t in states)
    pool = np.concatenate([h for h, _ in states])
    if theta < MAX_THETA:
        pool = pool[pool < np.uint64(theta)]
    hashes, kth = k_smallest_distinct(pool, k)
    return hashes, theta if kth is None else min(theta, kth)


class Worker:
    """Scratch buffers of one hashing thread."""

    def __init__(self) -> None:
        self.scratch = make_scratch(CHUNK_ROWS)
        self.buf = np.zeros(1 << 16, dtype=np.uint8)

    def byte_buffer(self, size: int) -> NDArray[np.uint8]:
        if self.buf.shape[0] < size:
            self.buf = np.zeros(max(size, 2 * self.buf.shape[0]), dtype=np.uint8)
        return self.buf


def hash_rows(
    values: SerializedValues,
    start: int,
    stop: int,
    worker: Worker | None = None,
    *,
    below: int | None = None,
) -> U64:
    """Theta hashes of the non-null, non-empty values in rows ``[start, stop)``, only those
    under ``below`` when it is given (then in no particular order).

    The result may live in the worker's scratch space (valid until its next call).
    """
    if worker is None:
        worker = Worker()
    if stop - start > CHUNK_ROWS:
        return np.concatenate(
            [
                hash_rows(values, s, min(stop, s + CHUNK_ROWS), worker, below=below).copy()
                for s in range(start, stop, CHUNK_ROWS)
            ]
        )
    valid = None if values.valid is None else values.valid[start:stop]
    width = values.width
    if width is not None and width <= 16:
        return _hash_fixed(values.data[start:stop], width, valid, worker, below)
    return _hash_variable(values, start, stop, valid, worker, below)


def _hash_fixed(
    rows: NDArray[np.uint8],
    width: int,
    valid: NDArray[np.bool_] | None,
    worker: Worker,
    below: int | None,
) -> U64:
    n = rows.shape[0]
    hi: U64 | None = None
    if width in (1, 2, 4, 8):  # lanes of 1-4 bytes are widened inside the first multiply
        lo: NDArray[Any] = rows.view(f"<u{width}").reshape(n)
    elif width < 8:
        padded = np.zeros((n, 8), dtype=np.uint8)
        padded[:, :width] = rows
        lo = padded.view("<u8").reshape(n)
    else:
        padded = np.zeros((n, 16), dtype=np.uint8)
        padded[:, :width] = rows
        both = padded.view("<u8")
        lo, hi = both[:, 0], both[:, 1]
    if valid is not None:
        lo = lo[valid]
        hi = None if hi is None else hi[valid]
    return theta_hash_lanes(lo, hi, width, scratch=worker.scratch, below=below)


def _hash_variable(
    values: SerializedValues,
    start: int,
    stop: int,
    valid: NDArray[np.bool_] | None,
    worker: Worker,
    below: int | None,
) -> U64:
    width = values.width
    if width is not None:  # fixed[L] with L > 16
        data = values.data[start:stop].reshape(-1)
        offsets = np.arange(stop - start + 1, dtype=np.int64) * width
    else:
        assert values.offsets is not None
        offsets = values.offsets[start : stop + 1].astype(np.int64)
        data = values.data
    first, last = int(offsets[0]), int(offsets[-1])
    if last + 16 <= data.shape[0]:
        buf, starts = data, offsets[:-1]  # enough bytes follow: read the column in place
    else:  # the column's last keys: copy them into a padded buffer
        size = last - first
        buf = worker.byte_buffer(size + 16)[: size + 16]
        buf[:size] = data[first:last]
        buf[size:] = 0
        starts = offsets[:-1] - first
    lengths = np.diff(offsets)
    if valid is not None or int(lengths.min()) == 0:  # drop nulls and empty values
        keep = lengths > 0
        if valid is not None:
            keep &= valid
        starts = starts[keep]
        lengths = lengths[keep]
    if starts.shape[0] == 0:
        return np.empty(0, dtype=np.uint64)
    return theta_hash_var(
        buf, starts, lengths, keep_order=False, scratch=worker.scratch, below=below
    )


_INTEGER_LIKE = frozenset(
    {"int", "long", "date", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"}
)


def dedupe_small_range(part: SerializedValues) -> SerializedValues:
    """Drop repeated values of an integer-like column slice whose values span a small range.

    Low-cardinality columns (dates above all, also years, codes, small counters) repeat the
    same values over and over; when a slice's values fit a range of at most half its length,
    only its distinct values are hashed (see :func:`small_range_distinct`).  The distinct set,
    hence the sketch, is unchanged.
    """
    t = part.iceberg_type
    n = len(part)
    if t.name not in _INTEGER_LIKE:
        return part
    width = part.width
    assert width in (4, 8)
    values = part.data.view(f"<i{width}").reshape(n)
    if part.valid is not None:
        values = values[part.valid]
    distinct = small_range_distinct(values)  # None for short or wide slices
    if distinct is None:
        return part
    return type(part)(t, distinct.view(np.uint8).reshape(-1, width), None, None)



def add_in_chunks(acc: Accumulator, part: SerializedValues, worker: Worker, step: int) -> int:
    """Hash ``part`` into ``acc`` in chunks of ``step`` rows growing to ``CHUNK_ROWS``.

    Small first chunks let theta fall before the large ones, so most of those hashes skip
    the end of the finalizer (``below=``).  Returns the chunk size to go on with.
    """
    n = len(part)
    c = 0
    while c < n:
        stop = min(n, c + step)
        acc.add(hash_rows(part, c, stop, worker, below=acc.theta))
        c = stop
        step = min(CHUNK_ROWS, 4 * step)
    return step

def accumulate(
    tasks: Sequence[Callable[[], SerializedValues]],
    accumulators: list[Accumulator],
    threads: int,
) -> None:
    """Run serialization jobs and hash their rows into ``accumulators`` (one per thread).

    Each thread pulls the next job from a shared queue, so uneven jobs still balance.
    """
    jobs: queue.SimpleQueue[Callable[[], SerializedValues]] = queue.SimpleQueue()
    for task in tasks:
        jobs.put(task)
    workers = max(1, min(threads, len(accumulators), len(tasks)))

    def run(acc: Accumulator) -> None:
        worker = Worker()
        step = FIRST_CHUNK_ROWS
        while True:
            try:
                task = jobs.get_nowait()
            except queue.Empty:
                return
            step = add_in_chunks(acc, dedupe_small_range(task()), worker, step)

    if workers == 1:
        run(accumulators[0])
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="puffin-theta") as pool:
        futures = [pool.submit(run, accumulators[i]) for i in range(workers)]
        for f in futures:
            f.result()


def build(
    tasks: Sequence[Callable[[], SerializedValues]], lg_k: int, threads: int | None = None
) -> tuple[U64, int]:
    """(k smallest distinct hashes, theta) of all rows the serialization ``tasks`` produce."""
    n_threads = default_threads() if threads is None else max(1, threads)
    accumulators = [Accumulator(lg_k) for _ in range(max(1, min(n_threads, len(tasks))))]
    accumulate(tasks, accumulators, n_threads)
    return union_states([a.state() for a in accumulators], 1 << lg_k)
