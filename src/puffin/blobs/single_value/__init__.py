"""Iceberg's single-value serialization (table spec, Appendix D), one value or whole columns.

Theta sketches in Iceberg statistics hash each value's single-value bytes, so a sketch is only
comparable with Java's when these bytes are exactly Java's ``Conversions.toByteBuffer``:

=====================  ==================================================================
type                   bytes
=====================  ==================================================================
boolean                ``00`` or ``01``
int, date              4-byte little-endian int (date: days since 1970-01-01)
long, time, timestamp  8-byte little-endian long (microseconds; ``_ns`` types: nanoseconds)
float, double          4/8-byte little-endian IEEE 754; every NaN is written as Java's
                       canonical NaN (``7fc00000`` / ``7ff8000000000000``), -0.0 stays -0.0
string                 UTF-8 without length
uuid                   16 bytes, big-endian (most significant byte first)
fixed(L), binary       the bytes themselves
decimal(P, S)          unscaled value at scale S, minimal two's-complement big-endian
=====================  ==================================================================

:func:`serialize_value` handles one Python value.  :func:`serialize_values` handles a whole
column (NumPy array, pyarrow array or chunked array, or a Python sequence) without a Python call
per value where the input allows it, and returns a :class:`SerializedValues`: the bytes of all
values in one uint8 buffer plus offsets (or a fixed width), and a validity mask for nulls.
Types are given as the spec's JSON spelling (``"int"``, ``"decimal(9,2)"``, ``"fixed[16]"``),
as an :class:`IcebergType`, or as a pyiceberg type object (imported lazily, never required).

One module per concept: ``scalar`` (one value), ``column`` (the container), ``from_numpy``,
``from_python`` and ``from_arrow`` (converters, one per type in a table), ``kernels``
(whole-array steps), ``serialize`` (any input, whole or as jobs) and ``distinct`` (for
sketches).
NumPy and pyarrow are imported only when this package is used; pyarrow is optional.
"""

from __future__ import annotations

from puffin.blobs.single_value.column import SerializedValues
from puffin.blobs.single_value.distinct import distinct_if_small_range, small_range_distinct
from puffin.blobs.single_value.from_arrow import numeric_values
from puffin.blobs.single_value.scalar import serialize_value
from puffin.blobs.single_value.serialize import serialize_tasks, serialize_values
from puffin.types import IcebergType, parse_type

__all__ = [
    "IcebergType",
    "SerializedValues",
    "distinct_if_small_range",
    "numeric_values",
    "parse_type",
    "serialize_tasks",
    "serialize_value",
    "serialize_values",
    "small_range_distinct",
]
