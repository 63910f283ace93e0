"""Whole columns of any input: split into pieces, convert each, join (or hand out as jobs)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np

from puffin.blobs.single_value.column import SerializedValues, concat
from puffin.blobs.single_value.distinct import distinct_if_small_range
from puffin.blobs.single_value.from_arrow import from_arrow, is_arrow, optional_pyarrow
from puffin.blobs.single_value.from_numpy import from_numpy
from puffin.blobs.single_value.from_python import from_python
from puffin.types import IcebergType, parse_type

__all__ = ["serialize_tasks", "serialize_values"]


def _interchange(values: Any) -> Iterator[tuple[str, Any]] | None:
    """Pieces of an object pyarrow can import (``__arrow_array__``, the Arrow C interface)."""
    if hasattr(values, "__arrow_array__"):  # pandas extension arrays and Series of them
        pa = optional_pyarrow()
        if pa is not None:
            return iter([("arrow", pa.array(values))])
    if hasattr(values, "__arrow_c_array__") or hasattr(values, "__arrow_c_stream__"):
        pa = optional_pyarrow()
        if pa is not None:
            if hasattr(values, "__arrow_c_stream__"):
                return _pieces(pa.chunked_array(values))
            return iter([("arrow", pa.array(values))])
    return None


def _pieces(values: Any) -> Iterator[tuple[str, Any]]:
    """Split an input into ("arrow", Array), ("numpy", ndarray) or ("python", iterable)."""
    if is_arrow(values):
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            for chunk in values.chunks:
                yield "arrow", chunk
            return
        if isinstance(values, pa.Array):
            yield "arrow", values
            return
        raise TypeError(f"cannot serialize {type(values).__name__}; pass an Array or ChunkedArray")
    if isinstance(values, np.ndarray):
        yield _numpy_piece(values)
        return
    imported = _interchange(values)
    if imported is not None:
        yield from imported
        return
    if hasattr(values, "__array__") and not isinstance(values, (list, tuple, str, bytes)):
        yield _numpy_piece(np.asarray(values))
        return
    if isinstance(values, (str, bytes, bytearray)):
        raise TypeError("pass a sequence of values, not a single str/bytes")
    yield "python", values


def _numpy_piece(values: Any) -> tuple[str, Any]:
    """Object and str arrays hold Python values: the Python converter takes them (masked
    slots as nulls); every other array is NumPy's."""
    if values.ndim != 1 or values.dtype.kind not in "OU":
        return "numpy", values
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values).tolist()
        return "python", [None if m else v for v, m in zip(values.data.tolist(), mask, strict=True)]
    return "python", values.tolist()


_CONVERTERS: dict[str, Callable[[Any, IcebergType], SerializedValues]] = {
    "arrow": from_arrow,
    "numpy": from_numpy,
    "python": from_python,
}


def _serialize_piece(kind: str, piece: Any, t: IcebergType) -> SerializedValues:
    return _CONVERTERS[kind](piece, t)


def serialize_tasks(
    values: Any, iceberg_type: str | IcebergType | Any, rows: int, *, distinct: bool = False
) -> list[Callable[[], SerializedValues]]:
    """Jobs that each serialize at most ``rows`` values of ``values``, in order.

    NumPy and Arrow inputs are sliced without copying and serialized when a job runs, so a
    thread pool can convert and hash slices in parallel while they are still in cache; other
    inputs are serialized here and their result is sliced.  With ``distinct=True`` (for
    sketches, which only see the set of values) a NumPy integer or datetime array whose values
    span a small range is first reduced to its distinct values.
    """
    t = parse_type(iceberg_type)
    tasks: list[Callable[[], SerializedValues]] = []
    for kind, piece in _pieces(values):
        if distinct and kind == "numpy" and t.name != "boolean":
            # A low-cardinality column (dates above all) then serializes and hashes only
            # its distinct values.  Clustered columns, whose range is only small slice by
            # slice, are reduced after serializing (``theta_build.dedupe_small_range``).
            reduced = distinct_if_small_range(piece)
            piece = piece if reduced is None else reduced
        lazy = kind == "arrow" or (kind == "numpy" and piece.dtype.kind != "O" and piece.ndim)
        if lazy:
            for s in range(0, len(piece), rows):
                part = piece.slice(s, rows) if kind == "arrow" else piece[s : s + rows]
                tasks.append(partial(_serialize_piece, kind, part, t))
        else:
            done = _serialize_piece(kind, piece, t)
            n = len(done)
            tasks.extend(partial(done.slice, s, min(n, s + rows)) for s in range(0, n, rows))
    return tasks


def serialize_values(values: Any, iceberg_type: str | IcebergType | Any) -> SerializedValues:
    """Serialize a whole column of ``iceberg_type`` values; see :class:`SerializedValues`.

    ``values`` may be a 1-D NumPy array (masked arrays mark nulls; NaT is null), a pyarrow
    Array or ChunkedArray (nulls from its validity), any object exposing the Arrow C data
    interface, or a Python iterable (``None`` = null).  NumPy integers mean days for ``date``,
    microseconds for ``time``/``timestamp*``, nanoseconds for ``*_ns`` and the numeric value
    for ``decimal``; datetime64/timedelta64 arrays are converted to the type's unit and refused
    when that would lose precision.  Fixed-width results are zero-copy views where possible.
    """
    t = parse_type(iceberg_type)
    return concat(t, [_serialize_piece(kind, piece, t) for kind, piece in _pieces(values)])
