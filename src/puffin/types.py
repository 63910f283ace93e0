"""Iceberg's primitive types, and the one map between them and Arrow types.

Single-value serialization, the theta sketches, the CLI and the Iceberg integration all
speak of column types; they parse them here (:func:`parse_type`) and convert to and from
Arrow here (:func:`arrow_type_for`, :func:`iceberg_type_for_arrow`), so a type is spelled
and mapped the same way everywhere.  pyarrow is imported only inside the Arrow functions.

Example::

    from puffin.types import arrow_type_for, iceberg_type_for_arrow, parse_type
    t = parse_type("decimal(9,2)")          # IcebergType('decimal', precision=9, scale=2)
    arrow_type_for(t)                       # decimal128(9, 2)
    iceberg_type_for_arrow(pa.int16())      # IcebergType('int')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "FIXED_WIDTHS",
    "PRIMITIVE_TYPES",
    "IcebergType",
    "UnsupportedArrowTypeError",
    "arrow_type_for",
    "iceberg_type_for_arrow",
    "parse_type",
]

#: The primitive types spelled by name alone (decimal and fixed carry parameters).
PRIMITIVE_TYPES = frozenset(
    {
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "binary",
    }
)
#: Byte width of every single-value serialization of a type (``fixed[L]``: L).
FIXED_WIDTHS = {
    "boolean": 1,
    "int": 4,
    "date": 4,
    "float": 4,
    "long": 8,
    "double": 8,
    "time": 8,
    "timestamp": 8,
    "timestamptz": 8,
    "timestamp_ns": 8,
    "timestamptz_ns": 8,
    "uuid": 16,
}
_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
_FIXED_RE = re.compile(r"^fixed\[\s*(\d+)\s*\]$")
_MAX_PRECISION = 38
_FIELD_EXTENSION_KEY = b"ARROW:extension:name"
_UUID_EXTENSIONS = ("arrow.uuid", "uuid")


@dataclass(frozen=True)
class IcebergType:
    """An Iceberg primitive type: ``name`` plus decimal precision/scale or fixed length."""

    name: str
    precision: int | None = None
    scale: int | None = None
    length: int | None = None

    def __str__(self) -> str:
        if self.name == "decimal":
            return f"decimal({self.precision}, {self.scale})"
        if self.name == "fixed":
            return f"fixed[{self.length}]"
        return self.name

    @property
    def width(self) -> int | None:
        """Byte width of every serialized value, or ``None`` when it varies."""
        if self.name == "fixed":
            return self.length
        return FIXED_WIDTHS.get(self.name)


def parse_type(iceberg_type: str | IcebergType | Any) -> IcebergType:
    """Read a type from its JSON spelling, an :class:`IcebergType`, or a pyiceberg type."""
    if isinstance(iceberg_type, IcebergType):
        return iceberg_type
    if isinstance(iceberg_type, str):
        text = iceberg_type
    elif type(iceberg_type).__module__.startswith("pyiceberg"):
        # pyiceberg primitive types print as their JSON spelling ("decimal(9, 2)").
        text = str(iceberg_type)
    else:
        raise TypeError(f"not an Iceberg type: {iceberg_type!r}")
    text = text.strip().lower()
    if text in PRIMITIVE_TYPES:
        return IcebergType(text)
    m = _DECIMAL_RE.match(text)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2))
        if not 1 <= precision <= _MAX_PRECISION or not 0 <= scale <= precision:
            raise ValueError(f"invalid decimal type {iceberg_type!r}: P must be 1-38, S 0-P")
        return IcebergType("decimal", precision=precision, scale=scale)
    m = _FIXED_RE.match(text)
    if m:
        length = int(m.group(1))
        if length < 1:
            raise ValueError(f"invalid fixed type {iceberg_type!r}: length must be positive")
        return IcebergType("fixed", length=length)
    raise ValueError(f"unsupported Iceberg type for single-value serialization: {iceberg_type!r}")


# -- Iceberg -> Arrow ---------------------------------------------------------------------


def _simple_arrow_types() -> dict[str, pa.DataType]:
    import pyarrow as pa

    return {
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "date": pa.date32(),
        "time": pa.time64("us"),
        "timestamp": pa.timestamp("us"),
        "timestamptz": pa.timestamp("us", tz="UTC"),
        "timestamp_ns": pa.timestamp("ns"),
        "timestamptz_ns": pa.timestamp("ns", tz="UTC"),
        "string": pa.large_string(),
        "binary": pa.large_binary(),
        "uuid": pa.binary(16),
    }


def arrow_type_for(iceberg_type: str | IcebergType | Any) -> pa.DataType:
    """The Arrow type whose values are exactly the Iceberg type's values.

    Takes what :func:`parse_type` takes (a JSON spelling, an :class:`IcebergType` or a
    pyiceberg type); raises ``TypeError`` for a type with no Arrow counterpart here
    (nested types, malformed spellings).
    """
    import pyarrow as pa

    try:
        t = parse_type(iceberg_type)
    except ValueError as exc:
        raise TypeError(f"no Arrow type for Iceberg type {iceberg_type}") from exc
    if t.name == "decimal":
        return pa.decimal128(t.precision, t.scale)
    if t.name == "fixed":
        return pa.binary(t.length)
    return _simple_arrow_types()[t.name]


# -- Arrow -> Iceberg ---------------------------------------------------------------------


class UnsupportedArrowTypeError(TypeError):
    """The Arrow type has no Iceberg primitive counterpart that can be sketched."""


def _is_view(arrow_type: pa.DataType, kind: str) -> bool:
    return str(arrow_type) == f"{kind}_view"


def _integer_type(arrow_type: pa.DataType) -> IcebergType:
    """int8-int32 and uint8/uint16 fit an int, int64 and uint32 a long; uint64 may not fit."""
    import pyarrow.types as t

    if t.is_uint64(arrow_type):
        raise UnsupportedArrowTypeError("uint64 values may not fit an Iceberg long")
    if t.is_int64(arrow_type) or t.is_uint32(arrow_type):
        return IcebergType("long")
    return IcebergType("int")


def _temporal_type(arrow_type: pa.DataType) -> IcebergType:
    import pyarrow.types as t

    if t.is_date(arrow_type):
        return IcebergType("date")
    if t.is_time(arrow_type):
        if arrow_type.unit == "ns":
            raise UnsupportedArrowTypeError("Iceberg has no nanosecond time type")
        return IcebergType("time")
    name = "timestamptz" if arrow_type.tz is not None else "timestamp"
    return IcebergType(f"{name}_ns" if arrow_type.unit == "ns" else name)


def _fixed_size_type(
    arrow_type: pa.DataType, field: pa.Field | None, uuid_hint: bool
) -> IcebergType:
    width = arrow_type.byte_width
    metadata = (field.metadata or {}) if field is not None else {}
    extension = metadata.get(_FIELD_EXTENSION_KEY, b"").decode("utf-8", "replace")
    if width == 16 and (uuid_hint or extension in _UUID_EXTENSIONS):
        return IcebergType("uuid")
    return IcebergType("fixed", length=width)


def iceberg_type_for_arrow(
    arrow_type: pa.DataType, *, field: pa.Field | None = None, uuid_hint: bool = False
) -> IcebergType:
    """The Iceberg primitive type a column of ``arrow_type`` is sketched as.

    Extension types are read through their storage (``arrow.uuid`` is ``uuid``), dictionaries
    through their values.  ``field`` lends its metadata (an ``ARROW:extension:name`` of
    ``arrow.uuid``) and ``uuid_hint`` says the Parquet column has the UUID logical type
    (files written without an Arrow schema read back as ``fixed_size_binary(16)``).  Cast
    values to :func:`arrow_type_for` of the result before serializing them.  Raises
    :class:`UnsupportedArrowTypeError` (a ``TypeError``) saying why a type has no match.
    """
    import pyarrow as pa
    import pyarrow.types as t

    if isinstance(arrow_type, pa.BaseExtensionType):
        if arrow_type.extension_name in _UUID_EXTENSIONS:
            return IcebergType("uuid")
        return iceberg_type_for_arrow(arrow_type.storage_type, field=field, uuid_hint=uuid_hint)
    if t.is_dictionary(arrow_type):
        return iceberg_type_for_arrow(arrow_type.value_type, field=field, uuid_hint=uuid_hint)
    if t.is_boolean(arrow_type):
        return IcebergType("boolean")
    if t.is_integer(arrow_type):
        return _integer_type(arrow_type)
    if t.is_floating(arrow_type):
        return IcebergType("double" if t.is_float64(arrow_type) else "float")
    if t.is_decimal(arrow_type):
        precision, scale = arrow_type.precision, arrow_type.scale
        if precision > _MAX_PRECISION:
            raise UnsupportedArrowTypeError(
                f"decimal precision {precision} exceeds Iceberg's {_MAX_PRECISION}"
            )
        if scale < 0:
            raise UnsupportedArrowTypeError(f"Iceberg has no negative decimal scale ({scale})")
        return IcebergType("decimal", precision=precision, scale=scale)
    if t.is_date(arrow_type) or t.is_time(arrow_type) or t.is_timestamp(arrow_type):
        return _temporal_type(arrow_type)
    if t.is_string(arrow_type) or t.is_large_string(arrow_type) or _is_view(arrow_type, "string"):
        return IcebergType("string")
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or _is_view(arrow_type, "binary"):
        return IcebergType("binary")
    if t.is_fixed_size_binary(arrow_type):
        return _fixed_size_type(arrow_type, field, uuid_hint)
    if t.is_nested(arrow_type):
        raise UnsupportedArrowTypeError(
            "nested types are not sketched (only primitive top-level columns)"
        )
    raise UnsupportedArrowTypeError("no Iceberg primitive type for this Arrow type")
