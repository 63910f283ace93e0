"""The streaming footer parser: msgspec for footers too large to build every value of.

A payload of at most 16 MiB whose JSON holds at most ``Limits.max_json_values`` values is
parsed exactly (:mod:`puffin.footer.exact`: every value built, duplicate keys and NaN
located by byte); :func:`puffin.footer.parse` decides. A larger one (the footer of a file of
deletion vectors for hundreds of thousands of data files, or one with a large unknown field)
is decoded by msgspec straight from the bytes into the fields a blob keeps: values nothing
keeps (unknown fields and whatever they nest) are skipped without building a Python object,
so memory follows the blobs, not the payload's bulk; their nesting is checked on the bytes
first, a chunk at a time (:func:`puffin.footer.caps.first_too_deep`). The blobs are then
checked by the same rules (:mod:`puffin.footer.rules`), and keys a blob or its properties
repeat are found.
What this path does not do: refuse a repeated top-level key (msgspec keeps the last value,
as Jackson does) and give a byte position for a type error (it names the blob and field
instead). docs/reliability.md has the measured memory.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from puffin.errors import InvalidFooterError, LimitExceededError, PuffinError
from puffin.footer.caps import first_too_deep, json_cap_violation, too_deep
from puffin.footer.exact import parse_exact
from puffin.footer.rules import Footer, blob_attrs, footer_from_json
from puffin.footer.text import PayloadError
from puffin.limits import Limits

__all__ = ["EXACT_BYTES", "parse_streaming", "recursion_room"]

#: Payloads up to this size (and ``Limits.max_json_values``) take the exact parser.
EXACT_BYTES = 16 << 20
#: Nesting never allowed deeper than this, whatever ``Limits.max_json_depth`` says: the
#: decoder recurses on the C stack.
_DEPTH_CEILING = 10_000
_BYTE = re.compile(r"\s*\(byte (\d+)\)$")
_BLOB = re.compile(r"^\$\.blobs\[(\d+)\](?:\.(.*))?$")
_ROOM = threading.Lock()


@contextmanager
def recursion_room(depth: int) -> Iterator[None]:
    """Room on the interpreter's recursion limit for ``depth`` nested JSON levels.

    Python's ``json`` and msgspec count nesting against it, so Jackson's 1,000 levels
    would otherwise fail near the limit's default of 1,000. The limit is only ever raised
    (another thread may be deep in its own calls) and restored afterwards.
    """
    frame: FrameType | None = sys._getframe()
    used = 0
    while frame is not None:
        used, frame = used + 1, frame.f_back
    with _ROOM:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, used + min(depth, _DEPTH_CEILING) + 64))
        try:
            yield
        finally:
            sys.setrecursionlimit(old)


def _decoder() -> Any:
    import msgspec

    # Scalars are typed (a wrong type fails at once, before anything is built); a blob's
    # lists and maps stay raw bytes until the exact rules, under the caps, read them.
    # defstruct, not class syntax: this module's annotations are strings.
    raw = msgspec.Raw
    blob = msgspec.defstruct(
        "Blob",
        [
            ("type", str),
            ("fields", raw),
            ("snapshot_id", int),
            ("sequence_number", int),
            ("offset", int),
            ("length", int),
            ("compression_codec", str | None, None),
            ("properties", raw, msgspec.Raw()),  # empty: absent (no union with Raw)
        ],
        rename="kebab",
    )
    footer = msgspec.defstruct(
        "Footer", [("blobs", list[blob]), ("properties", raw, msgspec.Raw())]  # type: ignore[valid-type]
    )
    return msgspec.json.Decoder(footer), msgspec


def parse_streaming(data: bytes | bytearray, limits: Limits) -> Footer:
    """The footer decoded by msgspec; raises :class:`PayloadError` for errors with a byte."""
    _require_utf8(data)
    cap = min(limits.max_json_depth, _DEPTH_CEILING)
    deep = first_too_deep(data, cap)
    if deep is not None:
        raise PayloadError(too_deep(cap), deep)
    decoder, msgspec = _decoder()
    try:
        with recursion_room(limits.max_json_depth):
            footer = decoder.decode(data)
    except RecursionError:  # only if text that is not JSON misled the depth scan
        raise too_deep(cap) from None
    except msgspec.ValidationError as exc:
        raise _validation_error(str(exc)) from None
    except msgspec.DecodeError as exc:
        text = str(exc)
        at = _BYTE.search(text)
        error = InvalidFooterError(f"footer payload is not valid JSON: {_BYTE.sub('', text)}")
        # msgspec places a truncated payload nowhere: its end is where more was due.
        place = int(at.group(1)) if at else len(data) if "truncated" in text else 0
        raise PayloadError(error, place) from None
    _no_repeated_blob_keys(data, footer, limits)
    return _checked(footer, limits)


_UTF8_CHUNK = 1 << 20


def _require_utf8(data: bytes | bytearray) -> None:
    """Refuse invalid UTF-8 anywhere in the payload, placed at its byte, as the exact parser
    does: msgspec checks only the strings it builds (an unknown field's are skipped, a raw
    map's are checked later, at their own offsets). Decoded a MiB at a time, so memory
    stays flat; ASCII, the usual case, in one C pass."""
    import codecs

    if data.isascii():
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    for start in range(0, len(data), _UTF8_CHUNK):
        held = len(decoder.getstate()[0])  # bytes of a character split across chunks
        chunk = bytes(data[start : start + _UTF8_CHUNK])
        try:
            decoder.decode(chunk, final=start + _UTF8_CHUNK >= len(data))
        except UnicodeDecodeError as exc:
            error = InvalidFooterError(f"footer payload is not valid UTF-8: {exc.reason}")
            raise PayloadError(error, start - held + exc.start) from None


_BLOB_KEYS = (b"type", b"fields", b"snapshot-id", b"sequence-number", b"offset", b"length",
              b"compression-codec", b"properties")
_SPACE_BEFORE_COLON = re.compile(rb'"\s+:')


def _may_repeat_blob_keys(data: bytes | bytearray, footer: Any) -> bool:
    """Whether a blob may repeat a key: ``False`` only when none can.

    Each key's unescaped ``"key":`` tokens are counted over the whole payload (C speed)
    against the blobs that hold it (every blob a required key; an optional one only those
    msgspec gave a value, and ``properties`` the footer too). More tokens than that mean a
    repeat, or the same name in a property or an unknown field.
    """
    if _SPACE_BEFORE_COLON.search(data) is not None:
        return True
    held = dict.fromkeys(_BLOB_KEYS, len(footer.blobs))
    held[b"compression-codec"] = sum(b.compression_codec is not None for b in footer.blobs)
    held[b"properties"] = sum(len(b.properties) > 0 for b in footer.blobs) + (
        len(footer.properties) > 0
    )
    return any(
        data.count(b'"' + k + b'":') - data.count(b'\\"' + k + b'":') > held[k]
        for k in _BLOB_KEYS
    )


def _no_repeated_blob_keys(data: bytes | bytearray, footer: Any, limits: Limits) -> None:
    """Refuse a blob object that repeats a key (msgspec would keep the last value): if the
    token count says one may, each blob that names a key twice is read again, exactly."""
    if not _may_repeat_blob_keys(data, footer):
        return
    import msgspec

    shape = msgspec.defstruct("Raws", [("blobs", list[msgspec.Raw])])
    raws: Any = msgspec.json.decode(data, type=shape)
    for i, raw in enumerate(raws.blobs):
        chunk = bytes(raw)
        if not any(chunk.count(b'"' + k + b'"') > 1 for k in _BLOB_KEYS):
            continue
        try:  # the exact parser finds and places the repeat (within the caps)
            parse_exact(b'{"blobs":[' + chunk + b"]}", limits)
        except PayloadError as at:
            # Over a cap, the blob cannot be searched for a repeat: refused, not guessed.
            if "duplicate key" in at.error.reason or isinstance(at.error, LimitExceededError):
                raise at.error.with_context(blob_index=i) from None
        except PuffinError:
            pass  # not a repeat: the blob's own checks report it in their turn


def _validation_error(text: str) -> InvalidFooterError:
    """msgspec's ``Expected `int`, got `str` - at `$.blobs[2].offset``` as our error."""
    message, at, path = text.rpartition(" - at ")
    if not at:  # the payload itself (not an object): msgspec names no path
        return InvalidFooterError(f"footer payload: {text}")
    match = _BLOB.match(path.strip("`"))
    if match is None:
        return InvalidFooterError(f"footer payload: {message or text} at {path}")
    field = match.group(2)
    return InvalidFooterError(
        f"blob metadata: {message}", blob_index=int(match.group(1)), field=field
    )


#: A blob's raw list or map at most this long is decoded straight away (it cannot hold
#: more values than the caps allow); a longer one is checked against the caps first.
_SMALL_RAW = 64 * 1024
_CHUNK = 8192


def _value(raw: Any, limits: Limits, blob_index: int | None, name: str) -> Any:
    """A raw list or map of the footer, read by the exact path's rules under the caps."""
    import msgspec

    data = bytes(raw)
    if len(data) <= min(_SMALL_RAW, limits.max_json_values):
        try:
            if name == "fields":
                return msgspec.json.decode(data, type=list[int])
            value = msgspec.json.decode(data, type=dict[str, str])
            # Without escapes, a map of strings holds four quotes a pair: fewer pairs than
            # that means a key repeated, which the exact parser finds and names.
            if b"\\" not in data and 4 * len(value) == data.count(b'"'):
                return value
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass  # the exact rules below say what is wrong, in their words
    wrapped = b'{"blobs":[],"properties":' + data + b"}" if name == "properties" else data
    violation = json_cap_violation(wrapped, limits)
    if violation is not None:
        raise violation[0].with_context(blob_index=blob_index, field=name)
    if name == "fields":
        import json

        try:
            return json.loads(data)  # checked below as a list of ints
        except ValueError as exc:
            raise InvalidFooterError(f"fields: {exc}", blob_index=blob_index) from None
    try:
        return parse_exact(wrapped, limits).properties
    except PayloadError as at:
        raise at.error.with_context(blob_index=blob_index, field=name) from None
    except PuffinError as exc:
        raise exc.with_context(blob_index=blob_index, field=name) from None


def _blob_doc(blob: Any, index: int, limits: Limits) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "type": blob.type,
        "fields": _value(blob.fields, limits, index, "fields"),
        "snapshot-id": blob.snapshot_id,
        "sequence-number": blob.sequence_number,
        "offset": blob.offset,
        "length": blob.length,
    }
    if blob.compression_codec is not None:
        doc["compression-codec"] = blob.compression_codec
    if len(blob.properties):
        doc["properties"] = _value(blob.properties, limits, index, "properties")
    return doc


def _checked(footer: Any, limits: Limits) -> Footer:
    """The blobs through the exact path's rules, a chunk at a time (so only one chunk of
    plain dicts exists at once); msgspec already refused unpaired surrogates."""
    blobs: list[dict[str, Any]] = []
    for start in range(0, len(footer.blobs), _CHUNK):
        part = footer.blobs[start : start + _CHUNK]
        # Each chunk's structs let go once read: they are not all held beside every blob
        # built (200,000 blobs: tens of MiB at the end).
        footer.blobs[start : start + _CHUNK] = [None] * len(part)
        docs = [_blob_doc(b, start + i, limits) for i, b in enumerate(part)]
        del part
        try:
            blobs.extend(footer_from_json({"blobs": docs}, check_text=False).blobs)
        except PuffinError:  # again one by one, for the blob's index in the file
            blobs.extend(
                blob_attrs(d, blob_index=start + i) for i, d in enumerate(docs)
            )
    properties = {}
    if len(footer.properties):
        properties = _value(footer.properties, limits, None, "properties")
    return Footer(blobs, properties)
