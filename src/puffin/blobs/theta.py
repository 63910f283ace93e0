"""``apache-datasketches-theta-v1`` blobs: Iceberg-compatible Theta sketches.

Iceberg table statistics store, per column, a compact Theta sketch of the column's distinct
values, each value hashed from its single-value serialization (see
:mod:`puffin.blobs.single_value`).  ``datasketches`` can estimate, union and decode such
sketches but cannot build them for most Iceberg types (it hashes ints as 8-byte longs and has
no notion of dates, decimals or UUIDs), so this module builds them itself, vectorized:

    sketch = ThetaSketch.from_values(column, "date")       # NumPy, pyarrow or a list
    sketch.estimate, sketch.lower_bound(2), sketch.upper_bound(2)
    data = sketch.serialize()                              # compact, version 3, as Java writes
    same = ThetaSketch.deserialize(data)                   # versions 1-4 (4 = compressed)
    merged = ThetaSketch.union(a, b, c)

The sketch a column gets is canonical: the ``k`` smallest distinct hashes with theta the
``(k + 1)``-th, exactly what a DataSketches union returns, whatever the chunking or threads.

Puffin helpers: :func:`add_theta_blob` writes a sketch the way Iceberg Java and Trino do
(one field id, zstd, property ``ndv``), :func:`read_theta_blobs` reads them all back.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from puffin.blobs._murmur3 import DEFAULT_SEED
from puffin.blobs._theta_build import (
    MAX_THETA,
    TASK_ROWS,
    Accumulator,
    build,
    default_threads,
    union_states,
)
from puffin.blobs.single_value import IcebergType, parse_type, serialize_tasks
from puffin.errors import ThetaSketchError

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

    from puffin.metadata import BlobMetadata
    from puffin.reader import PuffinReader
    from puffin.writer import PuffinWriter

    U64 = NDArray[np.uint64]

__all__ = [
    "APACHE_DATASKETCHES_THETA_V1",
    "DEFAULT_LG_K",
    "NDV_PROPERTY",
    "ThetaBlob",
    "ThetaSketch",
    "ThetaSketchBuilder",
    "add_theta_blob",
    "read_theta_blobs",
]

#: The Puffin blob type of a compact Theta sketch.
APACHE_DATASKETCHES_THETA_V1 = "apache-datasketches-theta-v1"
#: The blob property holding the distinct-value estimate (Iceberg's NDV).
NDV_PROPERTY = "ndv"
#: log2 of the nominal entries Iceberg (and DataSketches) use by default: k = 4096.
DEFAULT_LG_K = 12
MIN_LG_K = 5
MAX_LG_K = 26
#: 16-bit hash of the default seed 9001, stored in every non-empty serialized sketch.
SEED_HASH = 0x93CC

_FAMILY_COMPACT = 3
_FLAG_BIG_ENDIAN = 0x01
_FLAG_READ_ONLY = 0x02
_FLAG_EMPTY = 0x04
_FLAG_COMPACT = 0x08
_FLAG_ORDERED = 0x10
_FLAG_SINGLE_ITEM = 0x20
_P_ONE = struct.pack("<f", 1.0)
_NDV_RE = re.compile(r"[0-9]+", re.ASCII)  # used with fullmatch: "5\n" is not an ndv


def _raw_hashes(hashes: Any) -> U64:
    """Caller-supplied 63-bit Theta hashes as a flat uint64 array, checked."""
    arr = np.asarray(hashes)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"hashes must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.uint64, copy=False).reshape(-1)
    if arr.size and int(arr.max()) > MAX_THETA:
        raise ValueError("Theta hashes are below 2^63")
    return arr


def _check_lg_k(lg_k: int) -> int:
    if isinstance(lg_k, bool) or not isinstance(lg_k, int) or not MIN_LG_K <= lg_k <= MAX_LG_K:
        raise ValueError(f"lg_k must be an integer from {MIN_LG_K} to {MAX_LG_K}, got {lg_k!r}")
    return lg_k


class ThetaSketch:
    """An immutable compact Theta sketch: sorted distinct 63-bit hashes below ``theta64``.

    Build one with :meth:`from_values` (or :class:`ThetaSketchBuilder` for streams), read one
    with :meth:`deserialize` or :meth:`from_datasketches`.  ``ThetaSketch()`` is the empty
    sketch.  Estimates and bounds come from ``datasketches`` itself.
    """

    __slots__ = ("_ds", "_hashes", "_lg_k", "_theta")

    def __init__(self) -> None:
        self._hashes: U64 = np.empty(0, dtype=np.uint64)
        self._theta = MAX_THETA
        self._lg_k: int | None = None
        self._ds: Any = None
        self._hashes.flags.writeable = False

    @classmethod
    def _make(cls, hashes: U64, theta: int, lg_k: int | None) -> ThetaSketch:
        """Wrap already-validated parts: ``hashes`` sorted, distinct, all in (0, theta)."""
        sketch = cls.__new__(cls)
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        hashes.flags.writeable = False
        sketch._hashes = hashes
        sketch._theta = int(theta)
        sketch._lg_k = lg_k
        sketch._ds = None
        return sketch

    # -- building --------------------------------------------------------------------------

    @classmethod
    def from_values(
        cls,
        values: Any,
        iceberg_type: str | IcebergType | Any,
        *,
        lg_k: int = DEFAULT_LG_K,
        threads: int | None = None,
    ) -> ThetaSketch:
        """The sketch of a column's values, hashed as Iceberg Java hashes them.

        ``values``: a NumPy array, a pyarrow Array or ChunkedArray, or a Python iterable;
        nulls and empty strings/binaries are skipped (as Java skips them).  ``iceberg_type``:
        the spec's JSON spelling (``"long"``, ``"decimal(9,2)"``, ``"fixed[16]"``...), an
        :class:`~puffin.blobs.single_value.IcebergType` or a pyiceberg type.  ``threads``
        defaults to the available CPUs.  See :func:`puffin.serialize_values` for how each
        input kind maps to a type.
        """
        return ThetaSketchBuilder(iceberg_type, lg_k=lg_k, threads=threads).update(values).result()

    @classmethod
    def from_hashes(cls, hashes: Any, *, lg_k: int = DEFAULT_LG_K) -> ThetaSketch:
        """The sketch of raw 63-bit Theta hashes (any order, repeats allowed; 0 is ignored)."""
        arr = _raw_hashes(hashes)
        acc = Accumulator(_check_lg_k(lg_k))
        acc.add(arr)
        retained, theta = acc.state()
        return cls._make(retained, theta, lg_k)

    # -- set operations --------------------------------------------------------------------

    def union(self, *others: ThetaSketch | bytes | Any, lg_k: int | None = None) -> ThetaSketch:
        """The union of this sketch and ``others`` (ours, serialized bytes, or ``datasketches``
        sketches), as a DataSketches union with ``lg_k`` returns it.

        Called on the class it unions any number of sketches: ``ThetaSketch.union(a, b, c)``.
        ``lg_k`` defaults to the largest known among the inputs (12 for deserialized ones).
        """
        sketches = [self, *(_coerce(o) for o in others)]
        if lg_k is None:
            lg_k = max([s._lg_k or DEFAULT_LG_K for s in sketches])
        k = 1 << _check_lg_k(lg_k)
        states = [(s._hashes, s._theta) for s in sketches if not s.is_empty]
        hashes, theta = union_states(states, k)
        return ThetaSketch._make(hashes, theta, lg_k)

    # -- properties ------------------------------------------------------------------------

    @property
    def hashes(self) -> U64:
        """The retained hashes, ascending (a read-only array)."""
        return self._hashes

    @property
    def num_retained(self) -> int:
        return int(self._hashes.shape[0])

    @property
    def theta64(self) -> int:
        """Theta as the integer threshold (2^63 - 1 in exact mode)."""
        return self._theta

    @property
    def theta(self) -> float:
        """Theta as a sampling fraction in (0, 1]."""
        return self._theta / float(MAX_THETA)

    @property
    def lg_k(self) -> int | None:
        """log2 of the nominal entries this sketch was built with (``None`` if unknown)."""
        return self._lg_k

    @property
    def is_empty(self) -> bool:
        """True for the sketch of no values."""
        return self._theta == MAX_THETA and self._hashes.shape[0] == 0

    @property
    def is_estimation_mode(self) -> bool:
        return self._theta < MAX_THETA

    @property
    def estimate(self) -> float:
        """Estimated number of distinct values."""
        return float(self.to_datasketches().get_estimate())

    @property
    def ndv(self) -> int:
        """The estimate truncated to an integer, as Iceberg Java stores it in ``ndv``.

        Computed with Java's formula ``count * (2^63 / theta)`` (C++ divides by
        ``theta / 2^63``; the two can differ in the last bit), so the property is the one Java
        would write for this sketch.
        """
        return int(self.num_retained * (float(MAX_THETA) / self._theta))

    def lower_bound(self, num_std_devs: int = 2) -> float:
        """Lower bound of the distinct count at 1, 2 or 3 standard deviations."""
        return float(self.to_datasketches().get_lower_bound(_check_std_devs(num_std_devs)))

    def upper_bound(self, num_std_devs: int = 2) -> float:
        """Upper bound of the distinct count at 1, 2 or 3 standard deviations."""
        return float(self.to_datasketches().get_upper_bound(_check_std_devs(num_std_devs)))

    # -- serialization ---------------------------------------------------------------------

    def serialize(self, *, compressed: bool = False) -> bytes:
        """The compact sketch bytes: serial version 3 exactly as datasketches-java writes them.

        ``compressed=True`` writes serial version 4 (what Spark's ``theta_sketch_agg`` and
        Java's ``toByteArrayCompressed`` emit) when it applies (two or more entries, or one
        in estimation mode); older datasketches-java readers cannot read version 4, so
        Iceberg blobs use version 3.
        """
        n = self.num_retained
        estimating = self._theta < MAX_THETA
        if compressed and n > 0 and (n > 1 or estimating):
            return _serialize_v4(self._hashes, self._theta)
        if self.is_empty:
            # Java writes the empty sketch with seed hash 0; readers skip the check for it.
            return bytes([1, 3, _FAMILY_COMPACT, 0, 0, 0x1E, 0, 0])
        flags = _FLAG_READ_ONLY | _FLAG_COMPACT | _FLAG_ORDERED
        if n == 1 and not estimating:
            flags |= _FLAG_SINGLE_ITEM
            head = struct.pack("<BBBBBBH", 1, 3, _FAMILY_COMPACT, 0, 0, flags, SEED_HASH)
            return head + self._hashes.astype("<u8").tobytes()
        pre_longs = 3 if estimating else 2
        head = struct.pack("<BBBBBBHI", pre_longs, 3, _FAMILY_COMPACT, 0, 0, flags, SEED_HASH, n)
        head += _P_ONE
        if estimating:
            head += struct.pack("<Q", self._theta)
        return head + self._hashes.astype("<u8").tobytes()

    @classmethod
    def deserialize(cls, data: bytes | bytearray | memoryview) -> ThetaSketch:
        """Read a compact sketch of serial version 1, 2, 3 or 4 (as datasketches-java does).

        The seed hash must be the default seed's (0x93CC) except in empty sketches (Java
        writes 0 there) and version 1 (which has none).  Raises
        :class:`~puffin.ThetaSketchError`, naming the byte offset, for anything malformed.
        """
        hashes, theta = _deserialize(memoryview(data).cast("B"))
        return cls._make(hashes, theta, None)

    def to_datasketches(self) -> Any:
        """This sketch as a ``datasketches.compact_theta_sketch`` (cached)."""
        if self._ds is None:
            import datasketches

            if self.is_empty:
                self._ds = datasketches.update_theta_sketch().compact()
            else:
                self._ds = datasketches.compact_theta_sketch.deserialize(self.serialize())
        return self._ds

    @classmethod
    def from_datasketches(cls, sketch: Any) -> ThetaSketch:
        """Read a ``datasketches`` theta sketch (compact or update) with the default seed."""
        compact = sketch.compact() if hasattr(sketch, "compact") else sketch
        return cls.deserialize(compact.serialize())

    # -- dunder ----------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ThetaSketch):
            return NotImplemented
        return self._theta == other._theta and np.array_equal(self._hashes, other._hashes)

    def __hash__(self) -> int:
        return hash((self._theta, self._hashes.tobytes()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (self.serialize(), self._lg_k))

    def __repr__(self) -> str:
        if self.is_empty:
            return "ThetaSketch(empty)"
        mode = f"theta={self.theta:.6g}" if self.is_estimation_mode else "exact"
        return f"ThetaSketch(estimate={self.estimate:.6g}, retained={self.num_retained}, {mode})"


def _restore(data: bytes, lg_k: int | None) -> ThetaSketch:
    sketch = ThetaSketch.deserialize(data)
    sketch._lg_k = lg_k
    return sketch


def _check_std_devs(num_std_devs: int) -> int:
    if num_std_devs not in (1, 2, 3) or isinstance(num_std_devs, bool):
        raise ValueError(f"num_std_devs must be 1, 2 or 3, got {num_std_devs!r}")
    return num_std_devs


def _coerce(other: Any) -> ThetaSketch:
    if isinstance(other, ThetaSketch):
        return other
    if isinstance(other, (bytes, bytearray, memoryview)):
        return ThetaSketch.deserialize(other)
    if type(other).__module__.startswith(("datasketches", "_datasketches")):
        return ThetaSketch.from_datasketches(other)
    raise TypeError(f"cannot union a {type(other).__name__} with a ThetaSketch")


class ThetaSketchBuilder:
    """Builds one sketch from a stream of column chunks.

    ``update`` takes anything :meth:`ThetaSketch.from_values` takes and may be called any
    number of times; ``result`` returns the sketch of everything so far and the builder keeps
    going.  Work is spread over ``threads`` threads (default: the available CPUs).
    """

    def __init__(
        self,
        iceberg_type: str | IcebergType | Any,
        *,
        lg_k: int = DEFAULT_LG_K,
        threads: int | None = None,
    ) -> None:
        self._type = parse_type(iceberg_type)
        self._lg_k = _check_lg_k(lg_k)
        if threads is not None and (isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        self._threads = default_threads() if threads is None else int(threads)
        self._state: tuple[U64, int] = (np.empty(0, dtype=np.uint64), MAX_THETA)

    @property
    def iceberg_type(self) -> IcebergType:
        return self._type

    @property
    def lg_k(self) -> int:
        return self._lg_k

    def update(self, values: Any) -> ThetaSketchBuilder:
        """Add a chunk of values (returns the builder, so calls can be chained).

        The update is all or nothing: if a value cannot be serialized the builder is left as
        it was.
        """
        tasks = serialize_tasks(values, self._type, TASK_ROWS, distinct=True)
        state = build(tasks, self._lg_k, self._threads)
        self._merge(state)
        return self

    def update_hashes(self, hashes: Any) -> ThetaSketchBuilder:
        """Add raw 63-bit Theta hashes computed elsewhere (0 is ignored)."""
        arr = _raw_hashes(hashes)
        acc = Accumulator(self._lg_k)
        acc.add(arr)
        self._merge(acc.state())
        return self

    def _merge(self, state: tuple[U64, int]) -> None:
        self._state = union_states([self._state, state], 1 << self._lg_k)

    def result(self) -> ThetaSketch:
        """The canonical sketch of every value added so far."""
        hashes, theta = self._state
        return ThetaSketch._make(hashes, theta, self._lg_k)


# -------------------------------------------------------------------------------------------
# Serialized forms
# -------------------------------------------------------------------------------------------


def _serialize_v4(hashes: U64, theta: int) -> bytes:
    """Serial version 4: hashes as bit-packed deltas, big-endian bit order, as Java packs."""
    n = hashes.shape[0]
    estimating = theta < MAX_THETA
    deltas = np.diff(hashes, prepend=np.uint64(0))
    entry_bits = int(np.bitwise_or.reduce(deltas)).bit_length()
    count_bytes = (n.bit_length() + 7) // 8
    flags = _FLAG_READ_ONLY | _FLAG_COMPACT | _FLAG_ORDERED
    out = bytearray(
        struct.pack(
            "<BBBBBBH", 2 if estimating else 1, 4, 3, entry_bits, count_bytes, flags, SEED_HASH
        )
    )
    if estimating:
        out += struct.pack("<Q", theta)
    out += n.to_bytes(count_bytes, "little")
    shifts = np.arange(entry_bits - 1, -1, -1, dtype=np.uint64)
    bits = ((deltas[:, None] >> shifts[None, :]) & np.uint64(1)).astype(np.uint8)
    out += np.packbits(bits.reshape(-1)).tobytes()
    return bytes(out)


def _need(mem: memoryview, size: int, what: str, offset: int) -> None:
    if len(mem) < size:
        raise ThetaSketchError(
            f"truncated sketch: {what} needs {size} bytes, only {len(mem)} present", offset=offset
        )


def _check_seed_hash(mem: memoryview) -> None:
    seed_hash = int.from_bytes(mem[6:8], "little")
    if seed_hash != SEED_HASH:
        raise ThetaSketchError(
            f"seed hash 0x{seed_hash:04X} is not the default seed's 0x{SEED_HASH:04X} "
            f"(the sketch was built with another seed than {DEFAULT_SEED})",
            offset=6,
        )


def _check_theta(theta: int, offset: int) -> int:
    if not 0 < theta <= MAX_THETA:
        raise ThetaSketchError(f"theta {theta} is outside (0, 2^63 - 1]", offset=offset)
    return theta


def _check_hashes(hashes: U64, theta: int, ordered: bool, offset: int) -> U64:
    """Validate retained hashes: all in (0, theta), distinct; sort unordered ones."""
    if hashes.shape[0] == 0:
        return hashes
    bad = (hashes == 0) | (hashes >= np.uint64(theta))
    if bad.any():
        i = int(np.argmax(bad))
        raise ThetaSketchError(
            f"hash {int(hashes[i])} at entry {i} is not in (0, theta={theta})",
            offset=offset + 8 * i,
        )
    if not ordered:
        hashes = np.sort(hashes)
    steps = hashes[1:] <= hashes[:-1]
    if steps.any():
        i = int(np.argmax(steps)) + 1
        problem = "repeats" if hashes[i] == hashes[i - 1] else "is out of order"
        if ordered:
            raise ThetaSketchError(f"hash at entry {i} {problem}", offset=offset + 8 * i)
        raise ThetaSketchError(f"unordered sketch: a hash {problem}", offset=offset)
    return hashes


def _read_hashes(mem: memoryview, start: int, count: int) -> U64:
    _need(mem, start + 8 * count, f"{count} hashes", start)
    return np.frombuffer(mem, dtype="<u8", count=count, offset=start).astype(np.uint64)


def _no_trailing(mem: memoryview, end: int) -> None:
    if len(mem) != end:
        raise ThetaSketchError(f"{len(mem) - end} unexpected bytes after the sketch", offset=end)


def _deserialize(mem: memoryview) -> tuple[U64, int]:
    _need(mem, 8, "the preamble", 0)
    pre_longs = mem[0] & 0x3F
    ser_ver = mem[1]
    family = mem[2]
    if ser_ver == 3:
        return _deserialize_v3(mem, pre_longs, family)
    if ser_ver == 4:
        return _deserialize_v4(mem, pre_longs, family)
    if ser_ver == 2:
        return _deserialize_v2(mem, pre_longs, family)
    if ser_ver == 1:
        return _deserialize_v1(mem, pre_longs, family)
    raise ThetaSketchError(f"unknown serial version {ser_ver}", offset=1)


def _deserialize_v3(mem: memoryview, pre_longs: int, family: int) -> tuple[U64, int]:
    if family != _FAMILY_COMPACT:
        raise ThetaSketchError(f"family {family} is not a compact sketch (3)", offset=2)
    flags = mem[5]
    if flags & _FLAG_BIG_ENDIAN:
        raise ThetaSketchError("big-endian sketches are not supported", offset=5)
    if not flags & _FLAG_COMPACT or not flags & _FLAG_READ_ONLY:
        raise ThetaSketchError(f"flags 0x{flags:02X} lack compact/read-only", offset=5)
    if not 1 <= pre_longs <= 3:
        raise ThetaSketchError(f"preamble longs {pre_longs} is not 1, 2 or 3", offset=0)
    empty_hashes = np.empty(0, dtype=np.uint64)
    if flags & _FLAG_EMPTY:
        if pre_longs >= 2:
            _need(mem, 16, "the preamble", 8)
            count = int.from_bytes(mem[8:12], "little")
            if count:
                raise ThetaSketchError(f"empty sketch claims {count} entries", offset=8)
        _no_trailing(mem, 8 * pre_longs)
        return empty_hashes, MAX_THETA
    _check_seed_hash(mem)
    if pre_longs == 1:  # single item (Java sets flag 0x20, C++ does not)
        hashes = _read_hashes(mem, 8, 1)
        _no_trailing(mem, 16)
        return _check_hashes(hashes, MAX_THETA, True, 8), MAX_THETA
    _need(mem, 8 * pre_longs, "the preamble", 8)
    count = int.from_bytes(mem[8:12], "little")
    theta = MAX_THETA
    if pre_longs == 3:
        theta = _check_theta(int.from_bytes(mem[16:24], "little"), 16)
    start = 8 * pre_longs
    hashes = _read_hashes(mem, start, count)
    _no_trailing(mem, start + 8 * count)
    return _check_hashes(hashes, theta, bool(flags & _FLAG_ORDERED), start), theta


def _deserialize_v4(mem: memoryview, pre_longs: int, family: int) -> tuple[U64, int]:
    if family != _FAMILY_COMPACT:
        raise ThetaSketchError(f"family {family} is not a compact sketch (3)", offset=2)
    if pre_longs not in (1, 2):
        raise ThetaSketchError(f"preamble longs {pre_longs} is not 1 or 2", offset=0)
    entry_bits = mem[3]
    if not 1 <= entry_bits <= 63:
        raise ThetaSketchError(f"entry bits {entry_bits} is not in 1..63", offset=3)
    count_bytes = mem[4]
    if not 1 <= count_bytes <= 4:
        raise ThetaSketchError(f"entry-count width {count_bytes} is not in 1..4", offset=4)
    _check_seed_hash(mem)
    pos = 8
    theta = MAX_THETA
    if pre_longs == 2:
        _need(mem, 16, "theta", 8)
        theta = _check_theta(int.from_bytes(mem[8:16], "little"), 8)
        pos = 16
    _need(mem, pos + count_bytes, "the entry count", pos)
    count = int.from_bytes(mem[pos : pos + count_bytes], "little")
    pos += count_bytes
    packed_size = (count * entry_bits + 7) // 8
    _need(mem, pos + packed_size, f"{count} packed entries", pos)
    _no_trailing(mem, pos + packed_size)
    if count == 0:
        return np.empty(0, dtype=np.uint64), theta
    packed = np.frombuffer(mem, dtype=np.uint8, count=packed_size, offset=pos)
    bits = np.unpackbits(packed)[: count * entry_bits].reshape(count, entry_bits)
    deltas = np.zeros(count, dtype=np.uint64)
    for j in range(entry_bits):
        deltas <<= np.uint64(1)
        deltas |= bits[:, j]
    if not deltas.all():
        i = int(np.argmin(deltas))
        raise ThetaSketchError(f"entry {i} repeats its predecessor (zero delta)", offset=pos)
    # Deltas are positive and below 2^63; a running sum that wraps shows as a decrease.
    hashes = np.cumsum(deltas, dtype=np.uint64)
    overflow = hashes[1:] <= hashes[:-1]
    if overflow.any() or int(hashes[-1]) >= theta:
        raise ThetaSketchError(f"entries reach past theta={theta}", offset=pos)
    return hashes, theta


def _deserialize_v2(mem: memoryview, pre_longs: int, family: int) -> tuple[U64, int]:
    if not 1 <= family <= 4:
        raise ThetaSketchError(f"family {family} is not 1..4 for serial version 2", offset=2)
    if pre_longs == 1:
        _no_trailing(mem, 8)
        return np.empty(0, dtype=np.uint64), MAX_THETA
    if pre_longs not in (2, 3):
        raise ThetaSketchError(f"preamble longs {pre_longs} is not 1, 2 or 3", offset=0)
    _need(mem, 8 * pre_longs, "the preamble", 8)
    count = int.from_bytes(mem[8:12], "little")
    theta = MAX_THETA
    if pre_longs == 3:
        theta = _check_theta(int.from_bytes(mem[16:24], "little"), 16)
    if count == 0 and theta == MAX_THETA:
        _no_trailing(mem, 8 * pre_longs)
        return np.empty(0, dtype=np.uint64), MAX_THETA
    _check_seed_hash(mem)
    start = 8 * pre_longs
    hashes = _read_hashes(mem, start, count)
    _no_trailing(mem, start + 8 * count)
    return _check_hashes(hashes, theta, True, start), theta


def _deserialize_v1(mem: memoryview, pre_longs: int, family: int) -> tuple[U64, int]:
    if pre_longs != 3:
        raise ThetaSketchError(f"serial version 1 has 3 preamble longs, not {pre_longs}", offset=0)
    if not 1 <= family <= 3:
        raise ThetaSketchError(f"family {family} is not 1..3 for serial version 1", offset=2)
    _need(mem, 24, "the preamble", 8)
    count = int.from_bytes(mem[8:12], "little")
    theta = _check_theta(int.from_bytes(mem[16:24], "little"), 16)
    if count == 0 and theta == MAX_THETA:
        _no_trailing(mem, 24)
        return np.empty(0, dtype=np.uint64), MAX_THETA
    hashes = _read_hashes(mem, 24, count)
    _no_trailing(mem, 24 + 8 * count)
    return _check_hashes(hashes, theta, True, 24), theta


# -------------------------------------------------------------------------------------------
# Puffin blobs
# -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThetaBlob:
    """A theta blob read back from a Puffin file.

    Unpacks as ``field_id, sketch, ndv = blob``; ``metadata`` is the blob's footer entry.
    ``ndv`` is the ``ndv`` property (``None`` when the writer left it out).
    """

    field_id: int
    sketch: ThetaSketch
    ndv: int | None
    metadata: BlobMetadata

    def __iter__(self) -> Iterator[Any]:
        return iter((self.field_id, self.sketch, self.ndv))


def add_theta_blob(
    writer: PuffinWriter,
    sketch: ThetaSketch,
    field_id: int,
    *,
    snapshot_id: int,
    sequence_number: int,
    codec: str | None = "zstd",
    properties: Mapping[str, str] | None = None,
) -> BlobMetadata:
    """Write ``sketch`` as the theta blob of ``field_id``, the way Iceberg Java does it.

    The payload is the version-3 compact sketch, compressed with ``codec`` (zstd, as Java),
    with property ``ndv`` = the estimate truncated to an integer.  Extra ``properties`` are
    added after it.  Returns the blob's footer metadata.
    """
    if not isinstance(sketch, ThetaSketch):
        raise TypeError(f"sketch must be a ThetaSketch, got {type(sketch).__name__}")
    props = {NDV_PROPERTY: str(sketch.ndv)}
    for key, value in (properties or {}).items():
        if key == NDV_PROPERTY:
            raise ValueError("the ndv property is derived from the sketch")
        props[key] = value
    return writer.add_blob(
        sketch.serialize(),
        type=APACHE_DATASKETCHES_THETA_V1,
        fields=[field_id],
        snapshot_id=snapshot_id,
        sequence_number=sequence_number,
        properties=props,
        codec=codec,
    )


def read_theta_blobs(source: PuffinReader | Any) -> list[ThetaBlob]:
    """Every ``apache-datasketches-theta-v1`` blob of a Puffin file, in footer order.

    ``source`` is an open :class:`~puffin.PuffinReader` or anything :func:`puffin.open`
    accepts.  Each blob must name exactly one field and hold a valid sketch; ``ndv``, when
    present, must be a non-negative decimal integer.  Problems raise
    :class:`~puffin.ThetaSketchError` with the blob's index.
    """
    from puffin.reader import PuffinReader, open

    if isinstance(source, PuffinReader):
        return _read_theta_blobs(source)
    with open(source) as reader:
        return _read_theta_blobs(reader)


def _read_theta_blobs(reader: PuffinReader) -> list[ThetaBlob]:
    out: list[ThetaBlob] = []
    for index, meta in enumerate(reader.blobs):
        if meta.type != APACHE_DATASKETCHES_THETA_V1:
            continue
        if len(meta.fields) != 1:
            raise ThetaSketchError(
                f"a theta blob names exactly one field, this one {len(meta.fields)}",
                blob_index=index,
                field="fields",
            )
        ndv = _parse_ndv(meta.properties, index)
        payload = reader.read_blob(index)
        try:
            sketch = ThetaSketch.deserialize(payload)
        except ThetaSketchError as exc:
            raise ThetaSketchError(exc.reason, offset=exc.offset, blob_index=index) from None
        out.append(ThetaBlob(meta.fields[0], sketch, ndv, meta))
    return out


def _parse_ndv(properties: Mapping[str, str], index: int) -> int | None:
    value = properties.get(NDV_PROPERTY)
    if value is None:
        return None
    # Length before int(): Python refuses (ValueError) to convert over 4,300 digits, and an
    # ndv is a Java long, as Long.parseLong reads it.
    if len(value) > 19 or not _NDV_RE.fullmatch(value) or int(value) > 0x7FFFFFFFFFFFFFFF:
        raise ThetaSketchError(
            f"ndv {value[:40]!r} is not a non-negative decimal integer within a long",
            blob_index=index,
            field="ndv",
        )
    return int(value)
