"""The Theta sketch itself: :class:`ThetaSketch`, :class:`ThetaSketchBuilder`, ``lg_k``.

Building is in :mod:`puffin.blobs.theta.build`, the bytes in
:mod:`puffin.blobs.theta.format`; :mod:`puffin.blobs.theta.files` re-exports everything public
here next to the Puffin blob helpers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from puffin.blobs.single_value import IcebergType, parse_type, serialize_tasks
from puffin.blobs.theta import format as theta_format
from puffin.blobs.theta.build import (
    MAX_THETA,
    TASK_ROWS,
    Accumulator,
    build,
    default_threads,
    union_states,
)
from puffin.errors import UsageError
from puffin.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

    U64 = NDArray[np.uint64]

__all__ = [
    "DEFAULT_LG_K",
    "MAX_LG_K",
    "MIN_LG_K",
    "ThetaSketch",
    "ThetaSketchBuilder",
    "check_lg_k",
]

#: log2 of the nominal entries Iceberg (and DataSketches) use by default: k = 4096.
DEFAULT_LG_K = 12
MIN_LG_K = 5
MAX_LG_K = 26


def check_lg_k(lg_k: int) -> int:
    """``lg_k`` if it is an integer from :data:`MIN_LG_K` to :data:`MAX_LG_K`.

    The one check of a sketch size the library, the CLI and Spark share; raises
    :class:`~puffin.errors.UsageError` (a ``ValueError``) otherwise.
    """
    if isinstance(lg_k, bool) or not isinstance(lg_k, int) or not MIN_LG_K <= lg_k <= MAX_LG_K:
        raise UsageError(f"lg_k must be an integer from {MIN_LG_K} to {MAX_LG_K}, got {lg_k!r}")
    return lg_k


def _raw_hashes(hashes: Any) -> U64:
    """Caller-supplied 63-bit Theta hashes as a flat uint64 array, checked."""
    arr = np.asarray(hashes)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"hashes must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.uint64, copy=False).reshape(-1)
    if arr.size and int(arr.max()) > MAX_THETA:
        raise ValueError("Theta hashes are below 2^63")
    return arr


class _UnionFunction(Protocol):
    def __call__(self, *sketches: Any, lg_k: int | None = None) -> ThetaSketch: ...


class _Union:
    """``union`` on the class (any number of sketches, or iterables of them) and on an
    instance (that sketch and the others), so both spellings users reach for work."""

    def __get__(self, obj: ThetaSketch | None, owner: type | None = None) -> _UnionFunction:
        if obj is None:
            return _union
        sketch = obj

        def bound(*others: Any, lg_k: int | None = None) -> ThetaSketch:
            return _union(sketch, *others, lg_k=lg_k)

        bound.__doc__ = _union.__doc__
        return bound


def _union(*sketches: Any, lg_k: int | None = None) -> ThetaSketch:
    """The union of ``sketches`` (ours, serialized bytes, ``datasketches`` sketches, or
    iterables of them), as a DataSketches union with ``lg_k`` returns it.

    ``lg_k`` defaults to the largest known among the inputs (12 for deserialized ones, and
    for the union of nothing, which is the empty sketch).
    """
    flat: list[ThetaSketch] = []
    for item in sketches:
        if _is_one_sketch(item) or not isinstance(item, Iterable) or isinstance(item, str):
            flat.append(_coerce(item))
        else:
            flat.extend(_coerce(each) for each in item)
    if lg_k is None:
        lg_k = max([s._lg_k or DEFAULT_LG_K for s in flat], default=DEFAULT_LG_K)
    k = 1 << check_lg_k(lg_k)
    states = [(s._hashes, s._theta) for s in flat if not s.is_empty]
    hashes, theta = union_states(states, k)
    return ThetaSketch._make(hashes, theta, lg_k)


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
        acc = Accumulator(check_lg_k(lg_k))
        acc.add(arr)
        retained, theta = acc.state()
        return cls._make(retained, theta, lg_k)

    # -- set operations --------------------------------------------------------------------

    union = _Union()
    """``ThetaSketch.union([a, b])``, ``ThetaSketch.union(a, b)`` or ``a.union(b)``: see
    :func:`_union`."""

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
        """Estimated number of distinct values: ``count / theta``, in doubles as C++ computes it.

        Computed here rather than through :meth:`to_datasketches`, which would copy every
        hash twice (a verifier checking ``ndv`` against a large sketch would triple its
        memory); the result is the same double ``get_estimate()`` returns.
        """
        if self._theta == MAX_THETA:
            return float(self.num_retained)
        return float(self.num_retained) / (float(self._theta) / float(MAX_THETA))

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
        return theta_format.serialize(self._hashes, self._theta, compressed=compressed)

    @classmethod
    def deserialize(
        cls, data: bytes | bytearray | memoryview, *, limits: Limits | None = None
    ) -> ThetaSketch:
        """Read a compact sketch of serial version 1, 2, 3 or 4 (as datasketches-java does).

        The seed hash must be the default seed's (0x93CC) except in empty sketches (Java
        writes 0 there) and version 1 (which has none).  A sketch may declare at most
        ``limits.max_theta_entries`` entries (2^23 by default), so a small hostile payload
        cannot make the decoder allocate gigabytes.  Raises
        :class:`~puffin.ThetaSketchError`, naming the byte of the sketch in its message, for
        anything malformed (its ``offset``, a file offset, is left to the caller).
        """
        max_entries = (limits or DEFAULT_LIMITS).max_theta_entries
        hashes, theta = theta_format.deserialize(memoryview(data).cast("B"), max_entries)
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


def _is_one_sketch(item: Any) -> bool:
    return isinstance(item, (ThetaSketch, bytes, bytearray, memoryview)) or type(
        item
    ).__module__.startswith(("datasketches", "_datasketches"))


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
        self._lg_k = check_lg_k(lg_k)
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
