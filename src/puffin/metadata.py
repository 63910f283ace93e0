"""The footer's metadata model: ``FileMetadata`` and ``BlobMetadata``.

Parsing is strict (every required field present with its JSON type, integers in range,
booleans and floats refused where integers belong) and names the blob and field at fault.
Unknown fields are ignored, as Iceberg Java ignores them.  Serialization reproduces Iceberg
Java's bytes: compact JSON, keys in Java's order, empty ``properties`` and absent
``compression-codec`` omitted, non-ASCII written raw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from puffin.errors import InvalidFooterError, PuffinError
from puffin.footer.text import byte_position, culprit, dump_java
from puffin.limits import DEFAULT_LIMITS, Limits, json_cap_violation

__all__ = ["BlobMetadata", "FileMetadata"]

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

CREATED_BY = "created-by"


def _frozen_properties(properties: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(properties or {}))


@dataclass(frozen=True)
class BlobMetadata:
    """One blob as the footer describes it.

    ``offset`` and ``length`` locate the stored (possibly compressed) bytes in the file.
    ``properties`` is read-only; its order is the order in the file.
    """

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "properties", _frozen_properties(self.properties))

    def __reduce__(self) -> tuple[Any, ...]:
        # MappingProxyType does not pickle; rebuild from a plain dict.
        return (
            BlobMetadata,
            (
                self.type,
                self.fields,
                self.snapshot_id,
                self.sequence_number,
                self.offset,
                self.length,
                self.compression_codec,
                dict(self.properties),
            ),
        )

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON object for this blob, keys in Iceberg Java's order."""
        out: dict[str, Any] = {
            "type": self.type,
            "fields": list(self.fields),
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "offset": self.offset,
            "length": self.length,
        }
        if self.compression_codec is not None:
            out["compression-codec"] = self.compression_codec
        if self.properties:
            out["properties"] = dict(self.properties)
        return out

    @classmethod
    def from_json_dict(cls, obj: object, *, blob_index: int | None = None) -> BlobMetadata:
        """Parse one ``BlobMetadata`` JSON object, strictly."""
        if not isinstance(obj, dict):
            raise InvalidFooterError(
                f"blob metadata must be a JSON object, got {_json_type(obj)}",
                blob_index=blob_index,
            )
        ctx = _Ctx(blob_index)
        blob_type = ctx.string(obj, "type")
        fields_value = ctx.required(obj, "fields")
        if not isinstance(fields_value, list):
            raise ctx.error(
                "fields", f"must be a JSON list of ints, got {_json_type(fields_value)}"
            )
        fields = tuple(
            ctx.integer(item, f"fields[{i}]", INT32_MIN, INT32_MAX, "an int")
            for i, item in enumerate(fields_value)
        )
        snapshot_id = ctx.long(obj, "snapshot-id")
        sequence_number = ctx.long(obj, "sequence-number")
        offset = ctx.long(obj, "offset")
        length = ctx.long(obj, "length")
        codec = obj.get("compression-codec")
        if codec is not None and not isinstance(codec, str):
            raise ctx.error("compression-codec", f"must be a JSON string, got {_json_type(codec)}")
        if isinstance(codec, str):
            _check_text(codec, ctx, "compression-codec")
        properties = _parse_properties(obj, ctx) if "properties" in obj else {}
        return cls(
            type=blob_type,
            fields=fields,
            snapshot_id=snapshot_id,
            sequence_number=sequence_number,
            offset=offset,
            length=length,
            compression_codec=codec,
            properties=properties,
        )


@dataclass(frozen=True)
class FileMetadata:
    """The footer payload: the blobs and the file's properties (e.g. ``created-by``)."""

    blobs: tuple[BlobMetadata, ...]
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "blobs", tuple(self.blobs))
        object.__setattr__(self, "properties", _frozen_properties(self.properties))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FileMetadata, (self.blobs, dict(self.properties)))

    def to_json_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"blobs": [b.to_json_dict() for b in self.blobs]}
        if self.properties:
            out["properties"] = dict(self.properties)
        return out

    def to_json(self) -> str:
        """Compact JSON exactly as Iceberg Java's ``FileMetadataParser`` writes it."""
        return dump_java(self.to_json_dict())

    def to_bytes(self) -> bytes:
        """UTF-8 of :meth:`to_json`: the uncompressed footer payload."""
        return self.to_json().encode("utf-8")

    @classmethod
    def from_json(
        cls, payload: str | bytes | bytearray | memoryview, *, limits: Limits | None = None
    ) -> FileMetadata:
        """Parse a footer payload (UTF-8 bytes or text), strictly.

        Raises :class:`~puffin.InvalidFooterError` naming the blob and field at fault, and
        the byte of the payload where the JSON goes wrong; ``limits`` bounds the JSON's
        nesting and size (see :class:`~puffin.Limits`). This parser builds every value:
        :func:`puffin.open` also reads footers past ``Limits.max_json_values``.
        """
        try:
            return parse_footer_payload(payload, limits or DEFAULT_LIMITS)
        except PayloadError as at:
            raise at.located("footer payload") from None

    @classmethod
    def from_json_dict(cls, doc: object, *, check_text: bool = True) -> FileMetadata:
        """Build from a parsed JSON document, strictly.

        ``check_text=False`` skips the per-string Unicode check when the caller knows the
        document came from text without surrogate escapes.
        """
        if not isinstance(doc, dict):
            raise InvalidFooterError(
                f"footer payload must be a JSON object, got {_json_type(doc)}"
            )
        if "blobs" not in doc:
            raise InvalidFooterError("footer payload has no 'blobs' field", field="blobs")
        blobs_value = doc["blobs"]
        if not isinstance(blobs_value, list):
            raise InvalidFooterError(
                f"'blobs' must be a JSON list, got {_json_type(blobs_value)}", field="blobs"
            )
        blobs = tuple(
            (None if check_text else _fast_blob(item))
            or BlobMetadata.from_json_dict(item, blob_index=i)
            for i, item in enumerate(blobs_value)
        )
        properties = _parse_properties(doc, _Ctx(None)) if "properties" in doc else {}
        return cls(blobs=blobs, properties=properties)


# --- parsing helpers ---------------------------------------------------------------------


class PayloadError(Exception):
    """A footer error at a byte of the payload, before the caller places it in a file."""

    def __init__(self, error: PuffinError, position: int) -> None:
        super().__init__(error, position)
        self.error = error
        self.position = position

    def located(self, payload: str, *, offset: int | None = None) -> PuffinError:
        """The error, its message naming the byte of ``payload``; ``offset`` in the file."""
        self.error.reason = f"{self.error.reason} (at byte {self.position} of the {payload})"
        return self.error.with_context(offset=offset)


def parse_footer_payload(
    payload: str | bytes | bytearray | memoryview, limits: Limits, *, checked: bool = False
) -> FileMetadata:
    """:meth:`FileMetadata.from_json`, raising :class:`PayloadError` for positioned errors;
    ``checked``: the caller already found the bytes within the JSON caps."""
    raw_surrogates = False
    if isinstance(payload, str):
        text = payload
        # Text handed in directly may hold raw surrogates; decoded UTF-8 cannot.
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raw_surrogates = True
            data = text.encode("utf-8", "surrogatepass")
    else:
        data = payload if isinstance(payload, bytes) else bytes(payload)
        try:
            text = str(payload, "utf-8")
        except UnicodeDecodeError as exc:
            raise PayloadError(InvalidFooterError(
                f"footer payload is not valid UTF-8: {exc.reason}"), exc.start) from None
    violation = None if checked else json_cap_violation(data, limits)
    if violation is not None:
        raise PayloadError(*violation)
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys,
                         parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        position = len(text[: exc.pos].encode("utf-8", "surrogatepass"))
        raise PayloadError(InvalidFooterError(
            f"footer payload is not valid JSON: {exc.msg} at line {exc.lineno} column "
            f"{exc.colno}"), position) from None
    except RecursionError:  # only with max_json_depth raised into the thousands
        raise InvalidFooterError("footer payload JSON is nested too deeply") from None
    except PuffinError as exc:  # a duplicate key or NaN/Infinity, from the parser's hooks
        raise PayloadError(exc, byte_position(text, culprit(exc))) from None
    except ValueError:
        # Python refuses to parse integers of more than 4,300 digits; no valid footer
        # holds one (every integer is at most 64 bits).
        error = InvalidFooterError(
            "footer payload holds an integer of more than 4,300 digits (a footer's numbers "
            "are 64-bit)"
        )
        raise PayloadError(error, byte_position(text, r"-?\d{4301,}")) from None
    # Only a \\uD800-\\uDFFF escape can put an unpaired surrogate into the parsed strings.
    return FileMetadata.from_json_dict(
        doc, check_text=raw_surrogates or bool(_SURROGATE_ESCAPE.search(text))
    )


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        # An ambiguous footer: Jackson keeps the last value, others the first.
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InvalidFooterError(f"duplicate key {key!r} in a JSON object", field=key)
            seen.add(key)
    return out


def _fast_blob(obj: object) -> BlobMetadata | None:
    """Build a well-formed blob in one pass; ``None`` sends it to the detailed checker.

    Footers of statistics files hold thousands of blobs, so the common case must be cheap.
    Exact ``type(...) is`` tests keep booleans out of the integers.  Strings are not checked
    for unpaired surrogates here: the payload is screened for ``\\ud8..`` escapes once.
    """
    if type(obj) is not dict:
        return None
    try:
        blob_type = obj["type"]
        fields = obj["fields"]
        snapshot_id = obj["snapshot-id"]
        sequence_number = obj["sequence-number"]
        offset = obj["offset"]
        length = obj["length"]
    except KeyError:
        return None
    codec = obj.get("compression-codec")
    properties = obj.get("properties", _EMPTY)
    if (
        type(blob_type) is not str
        or type(fields) is not list
        or type(snapshot_id) is not int
        or type(sequence_number) is not int
        or type(offset) is not int
        or type(length) is not int
        or (codec is not None and type(codec) is not str)
        or type(properties) is not dict
        or not INT64_MIN <= snapshot_id <= INT64_MAX
        or not INT64_MIN <= sequence_number <= INT64_MAX
        or not INT64_MIN <= offset <= INT64_MAX
        or not INT64_MIN <= length <= INT64_MAX
    ):
        return None
    for f in fields:
        if type(f) is not int or not INT32_MIN <= f <= INT32_MAX:
            return None
    for v in properties.values():
        if type(v) is not str:
            return None
    # Skip the dataclass __init__ (its frozen setattr calls cost more than the checks).
    blob = _new_blob(BlobMetadata)
    attrs = blob.__dict__
    attrs["type"] = blob_type
    attrs["fields"] = tuple(fields)
    attrs["snapshot_id"] = snapshot_id
    attrs["sequence_number"] = sequence_number
    attrs["offset"] = offset
    attrs["length"] = length
    attrs["compression_codec"] = codec
    attrs["properties"] = MappingProxyType(properties)
    return blob


_new_blob = object.__new__


_EMPTY: dict[str, str] = {}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _reject_constant(name: str) -> Any:
    raise InvalidFooterError(
        f"footer payload is not valid JSON: {name} is not a JSON value (NaN and Infinity "
        "are JavaScript, not JSON)"
    )


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction or exponent"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class _Ctx:
    """Where in the footer a value is, for error messages."""

    def __init__(self, blob_index: int | None) -> None:
        self.blob_index = blob_index

    def error(self, field_name: str, message: str) -> InvalidFooterError:
        return InvalidFooterError(
            f"{field_name!r} {message}", field=field_name, blob_index=self.blob_index
        )

    def required(self, obj: dict[str, Any], name: str) -> Any:
        if name not in obj:
            raise InvalidFooterError(
                f"required field {name!r} is missing", field=name, blob_index=self.blob_index
            )
        return obj[name]

    def string(self, obj: dict[str, Any], name: str) -> str:
        value = self.required(obj, name)
        if not isinstance(value, str):
            raise self.error(name, f"must be a JSON string, got {_json_type(value)}")
        _check_text(value, self, name)
        return value

    def long(self, obj: dict[str, Any], name: str) -> int:
        return self.integer(self.required(obj, name), name, INT64_MIN, INT64_MAX, "a long")

    def integer(self, value: object, name: str, low: int, high: int, kind: str) -> int:
        # bool is an int in Python but not in JSON; floats like 1.0 are not integers either.
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"must be {kind}, got {_json_type(value)}")
        if not low <= value <= high:
            raise self.error(name, f"is out of range for {kind}: {value}")
        return value


def _check_text(value: str, ctx: _Ctx, name: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ctx.error(name, "holds an unpaired surrogate escape, not valid Unicode") from None


def _parse_properties(obj: dict[str, Any], ctx: _Ctx) -> dict[str, str]:
    value = obj["properties"]
    if not isinstance(value, dict):
        raise ctx.error("properties", f"must be a JSON object, got {_json_type(value)}")
    for key, item in value.items():
        if not isinstance(item, str):
            raise ctx.error(
                "properties", f"value of {key!r} must be a JSON string, got {_json_type(item)}"
            )
        _check_text(key, ctx, "properties")
        _check_text(item, ctx, "properties")
    return value


# --- Java-compatible JSON writer -------------------------------------------------------------
