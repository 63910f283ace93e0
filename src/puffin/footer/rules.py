"""The one blob ⇄ JSON mapping of the footer, and its strict rules.

A blob is carried as its attribute dict (``type``, ``fields``, ``snapshot_id``, ...: the
``__dict__`` of a :class:`~puffin.BlobMetadata`), so the parsers below the model build no
object twice. Parsing is strict (every required field present with its JSON type, integers
in range, booleans and floats refused where integers belong) and names the blob and field at
fault. Unknown fields are ignored, as Iceberg Java ignores them. Writing follows Java's key
order, and leaves out an absent ``compression-codec`` and empty ``properties``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from puffin.errors import InvalidFooterError

__all__ = [
    "INT32_MAX", "INT32_MIN", "INT64_MAX", "INT64_MIN", "Footer", "blob_attrs", "blob_json",
    "footer_from_json", "footer_json", "json_type",
]

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class Footer(NamedTuple):
    """A checked footer: each blob's attribute dict, and the file's properties."""

    blobs: list[dict[str, Any]]
    properties: dict[str, str]


def blob_json(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object of one blob, keys in Iceberg Java's order."""
    out: dict[str, Any] = {
        "type": attrs["type"],
        "fields": list(attrs["fields"]),
        "snapshot-id": attrs["snapshot_id"],
        "sequence-number": attrs["sequence_number"],
        "offset": attrs["offset"],
        "length": attrs["length"],
    }
    if attrs["compression_codec"] is not None:
        out["compression-codec"] = attrs["compression_codec"]
    if attrs["properties"]:
        out["properties"] = dict(attrs["properties"])
    return out


def footer_json(footer: Footer) -> dict[str, Any]:
    """The JSON document of a footer: its blobs, and its properties unless there are none."""
    doc: dict[str, Any] = {"blobs": [blob_json(b) for b in footer.blobs]}
    if footer.properties:
        doc["properties"] = dict(footer.properties)
    return doc


def footer_from_json(doc: object, *, check_text: bool = True) -> Footer:
    """A parsed JSON document checked as a footer payload.

    ``check_text=False`` skips the per-string Unicode check when the caller knows the
    document came from text without surrogate escapes.
    """
    if not isinstance(doc, dict):
        raise InvalidFooterError(f"footer payload must be a JSON object, got {json_type(doc)}")
    if "blobs" not in doc:
        raise InvalidFooterError("footer payload has no 'blobs' field", field="blobs")
    blobs_value = doc["blobs"]
    if not isinstance(blobs_value, list):
        raise InvalidFooterError(
            f"'blobs' must be a JSON list, got {json_type(blobs_value)}", field="blobs"
        )
    blobs = [
        (None if check_text else _fast_attrs(item)) or blob_attrs(item, blob_index=i)
        for i, item in enumerate(blobs_value)
    ]
    properties = _properties(doc, _Ctx(None)) if "properties" in doc else {}
    return Footer(blobs, properties)


def blob_attrs(obj: object, *, blob_index: int | None = None) -> dict[str, Any]:
    """One blob's JSON object checked field by field, as an attribute dict."""
    if not isinstance(obj, dict):
        raise InvalidFooterError(
            f"blob metadata must be a JSON object, got {json_type(obj)}", blob_index=blob_index
        )
    ctx = _Ctx(blob_index)
    blob_type = ctx.string(obj, "type")
    fields_value = ctx.required(obj, "fields")
    if not isinstance(fields_value, list):
        raise ctx.error("fields", f"must be a JSON list of ints, got {json_type(fields_value)}")
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
        raise ctx.error("compression-codec", f"must be a JSON string, got {json_type(codec)}")
    if isinstance(codec, str):
        _check_text(codec, ctx, "compression-codec")
    properties = _properties(obj, ctx) if "properties" in obj else {}
    return {
        "type": blob_type,
        "fields": fields,
        "snapshot_id": snapshot_id,
        "sequence_number": sequence_number,
        "offset": offset,
        "length": length,
        "compression_codec": codec,
        "properties": MappingProxyType(dict(properties)),
    }


def _fast_attrs(obj: object) -> dict[str, Any] | None:
    """A well-formed blob in one pass; ``None`` sends it to the detailed checker.

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
    return {
        "type": blob_type,
        "fields": tuple(fields),
        "snapshot_id": snapshot_id,
        "sequence_number": sequence_number,
        "offset": offset,
        "length": length,
        "compression_codec": codec,
        "properties": MappingProxyType(properties),
    }


_EMPTY: dict[str, str] = {}


def json_type(value: object) -> str:
    """How an error names a JSON value's type."""
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
            raise self.error(name, f"must be a JSON string, got {json_type(value)}")
        _check_text(value, self, name)
        return value

    def long(self, obj: dict[str, Any], name: str) -> int:
        return self.integer(self.required(obj, name), name, INT64_MIN, INT64_MAX, "a long")

    def integer(self, value: object, name: str, low: int, high: int, kind: str) -> int:
        # bool is an int in Python but not in JSON; floats like 1.0 are not integers either.
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"must be {kind}, got {json_type(value)}")
        if not low <= value <= high:
            raise self.error(name, f"is out of range for {kind}: {value}")
        return value


def _check_text(value: str, ctx: _Ctx, name: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ctx.error(name, "holds an unpaired surrogate escape, not valid Unicode") from None


def _properties(obj: dict[str, Any], ctx: _Ctx) -> dict[str, str]:
    value = obj["properties"]
    if not isinstance(value, dict):
        raise ctx.error("properties", f"must be a JSON object, got {json_type(value)}")
    for key, item in value.items():
        if not isinstance(item, str):
            raise ctx.error(
                "properties", f"value of {key!r} must be a JSON string, got {json_type(item)}"
            )
        _check_text(key, ctx, "properties")
        _check_text(item, ctx, "properties")
    return value
