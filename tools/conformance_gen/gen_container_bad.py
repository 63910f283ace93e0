"""Container tier, invalid files: a valid file with one rule broken, and the error category."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any

import lz4.frame
import zstandard

from tools.conformance_gen.build import (
    BlobSpec,
    assemble,
    footer_bounds,
    footer_doc,
    json_bytes,
    replace_footer,
    write_file,
)
from tools.conformance_gen.corpus import Vector

__all__ = ["invalid_vectors"]

_TIER = "container"
_CREATED = {"created-by": "puffin conformance"}


def _invalid(name: str, spec: str, description: str, data: bytes, category: str) -> Vector:
    return Vector(
        _TIER,
        f"invalid-{name}",
        "read-container",
        spec,
        description,
        {"error": category},
        inputs={f"invalid-{name}.puffin": data},
        verdict=category,
    )


def _base(codec: str | None = None) -> bytes:
    data, _ = write_file(
        [
            BlobSpec(b"abcdefghi", codec=codec),
            BlobSpec(b"jklmnopqrstuvwxyz" * 4, fields=(2,), codec=codec),
        ],
        properties=_CREATED,
    )
    return data


def _edit(base: bytes, edit: Callable[[dict[str, Any]], object]) -> bytes:
    return replace_footer(base, json_bytes(edit(footer_doc(base))))


def _set_blob(index: int, key: str, value: object) -> Callable[[dict[str, Any]], object]:
    def edit(doc: dict[str, Any]) -> object:
        doc["blobs"][index][key] = value
        return doc

    return edit


def _drop_blob_key(key: str) -> Callable[[dict[str, Any]], object]:
    def edit(doc: dict[str, Any]) -> object:
        del doc["blobs"][0][key]
        return doc

    return edit


def _layout_invalid() -> Iterator[Vector]:
    base = _base()
    start, size = footer_bounds(base)
    yield _invalid("empty-file", "magic", "a zero-byte file", b"", "invalid-file")
    yield _invalid("magic-only", "magic", "only the leading magic", base[:4], "invalid-file")
    yield _invalid(
        "truncated-tail", "footer-magic", "the last byte is missing", base[:-1], "invalid-file"
    )
    yield _invalid(
        "truncated-half",
        "footer-size",
        "the second half of the file is missing",
        base[: len(base) // 2],
        "invalid-file",
    )
    bad = b"PFA2" + base[4:]
    yield _invalid("leading-magic", "magic", "leading magic PFA2", bad, "invalid-file")
    bad = base[:-4] + b"PFA0"
    yield _invalid("trailing-magic", "footer-magic", "trailing magic PFA0", bad, "invalid-file")
    bad = base[:start] + b"XFA1" + base[start + 4 :]
    yield _invalid(
        "footer-start-magic", "footer-magic", "footer's leading magic XFA1", bad, "invalid-file"
    )
    tail = len(base) - 12
    for label, value in (
        ("too-large", size + 1),
        ("too-small", size - 1),
        ("beyond-file", len(base) * 2),
        ("negative", -1),
        ("min-int", -(1 << 31)),
    ):
        bad = base[:tail] + struct.pack("<i", value) + base[tail + 4 :]
        yield _invalid(
            f"footer-size-{label}",
            "footer-size",
            f"footer payload size {value} (actual {size})",
            bad,
            "invalid-file",
        )
    for label, flags in (("bit1", 0x02), ("byte3", 1 << 24), ("all", 0xFFFFFFFE)):
        bad = base[: tail + 4] + struct.pack("<I", flags) + base[tail + 8 :]
        yield _invalid(
            f"flags-reserved-{label}",
            "flags",
            f"reserved flag bits set (0x{flags:08x})",
            bad,
            "invalid-file",
        )
    yield _invalid(
        "no-blobs-garbage",
        "magic",
        "magic, 8 bytes, then garbage",
        b"PFA1" + b"\x00" * 8 + b"PFA1",
        "invalid-file",
    )


def _field_edits() -> list[tuple[str, str, Callable[[dict[str, Any]], object], str]]:
    """(name, spec key, footer edit, description) of each footer field rule."""
    edits: list[tuple[str, str, Callable[[dict[str, Any]], object], str]] = [
        (
            "missing-blobs",
            "blobs-required",
            lambda d: {"properties": d["properties"]},
            "no blobs key",
        ),
        ("blobs-not-list", "blobs-required", lambda d: {"blobs": {}}, "blobs is an object"),
        (
            "properties-not-object",
            "file-properties",
            lambda d: {**d, "properties": []},
            "file properties is a list",
        ),
        (
            "property-not-string",
            "file-properties",
            lambda d: {**d, "properties": {"created-by": 5}},
            "a property value that is a number",
        ),
        ("blob-type-not-string", "blob-type", _set_blob(0, "type", 3), "type is a number"),
        ("fields-not-list", "blob-fields", _set_blob(0, "fields", 1), "fields is a number"),
        ("fields-not-ints", "blob-fields", _set_blob(0, "fields", ["1"]), "a field id string"),
        (
            "field-not-int32",
            "blob-fields",
            _set_blob(0, "fields", [1 << 31]),
            "a field id beyond a Java int",
        ),
        ("snapshot-id-float", "blob-snapshot", _set_blob(0, "snapshot-id", 1.5), "snapshot-id 1.5"),
        (
            "snapshot-id-beyond-long",
            "blob-snapshot",
            _set_blob(0, "snapshot-id", 1 << 63),
            "snapshot-id 2^63",
        ),
        ("offset-string", "blob-offset", _set_blob(0, "offset", "4"), "offset is a string"),
        (
            "codec-not-string",
            "blob-codec",
            _set_blob(0, "compression-codec", 1),
            "compression-codec is a number",
        ),
        (
            "blob-properties-not-strings",
            "blob-properties",
            _set_blob(0, "properties", {"k": None}),
            "a blob property value null",
        ),
    ]
    return edits


def _footer_invalid() -> Iterator[Vector]:
    base = _base()
    raw: list[tuple[str, bytes, str]] = [
        ("footer-not-json", b"{blobs: []}", "footer payload is not JSON"),
        ("footer-json-array", b"[]", "footer JSON is an array, not an object"),
        ("footer-truncated-json", json_bytes(footer_doc(base))[:-1], "footer JSON cut short"),
        ("footer-bad-utf8", b'{"blobs":[],"properties":{"a":"\xff\xfe"}}', "invalid UTF-8"),
        ("footer-trailing-data", json_bytes(footer_doc(base)) + b"{}", "a second JSON value"),
        ("footer-duplicate-key", b'{"blobs":[],"blobs":[]}', "the key blobs twice"),
        ("footer-empty", b"", "an empty footer payload"),
    ]
    for name, payload, description in raw:
        yield _invalid(
            name, "blobs-required", description, replace_footer(base, payload), "invalid-footer"
        )
    edits = _field_edits()
    for key in ("type", "fields", "snapshot-id", "sequence-number", "offset", "length"):
        edits.append((f"missing-{key}", "blob-type", _drop_blob_key(key), f"a blob without {key}"))
    for name, spec, edit, description in edits:
        yield _invalid(name, spec, description, _edit(base, edit), "invalid-footer")
    ranges: list[tuple[str, str, int]] = [
        ("offset-in-magic", "offset", 0),
        ("offset-negative", "offset", -4),
        ("offset-past-footer", "offset", footer_bounds(base)[0]),
        ("length-past-footer", "length", 1000),
        ("length-negative", "length", -1),
    ]
    for name, key, value in ranges:
        yield _invalid(
            name,
            "blob-offset",
            f"blob 0 {key} {value}",
            _edit(base, _set_blob(0, key, value)),
            "invalid-file",
        )


def _codec_invalid() -> Iterator[Vector]:
    base = _base()
    yield _invalid(
        "unknown-codec",
        "codecs",
        "compression-codec snappy",
        _edit(base, _set_blob(0, "compression-codec", "snappy")),
        "unknown-codec",
    )
    yield _invalid(
        "codec-case",
        "codecs",
        "compression-codec ZSTD (codec names are lower case)",
        _edit(base, _set_blob(0, "compression-codec", "ZSTD")),
        "unknown-codec",
    )
    yield _invalid(
        "codec-label-none",
        "blob-codec",
        'compression-codec "none" is not a codec',
        _edit(base, _set_blob(0, "compression-codec", "none")),
        "unknown-codec",
    )
    for codec in ("zstd", "lz4"):
        data = _base(codec)
        doc = footer_doc(data)
        blob = doc["blobs"][1]
        at = blob["offset"] + blob["length"] // 2
        bad = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
        yield _invalid(
            f"{codec}-corrupt-frame",
            f"codec-{codec}",
            f"a {codec} frame with a flipped byte",
            bad,
            "codec",
        )
        plain = _edit(_base(), _set_blob(1, "compression-codec", codec))
        yield _invalid(
            f"{codec}-not-a-frame",
            f"codec-{codec}",
            f"uncompressed bytes labelled {codec}",
            plain,
            "codec",
        )
    yield from _frame_rules(base)


def _frame_rules(base: bytes) -> Iterator[Vector]:
    payload = b"abcdefghijkl" * 10
    frames = {
        "zstd-no-content-size": (
            "zstd",
            zstandard.ZstdCompressor(write_content_size=False).compress(payload),
        ),
        "lz4-no-content-size": ("lz4", lz4.frame.compress(payload, store_size=False)),
        "zstd-two-frames": ("zstd", zstandard.ZstdCompressor().compress(payload) * 2),
        "lz4-two-frames": ("lz4", lz4.frame.compress(payload, store_size=True) * 2),
        "zstd-trailing-bytes": ("zstd", zstandard.ZstdCompressor().compress(payload) + b"\0"),
    }
    for name, (codec, frame) in frames.items():
        doc = footer_doc(base)
        start, _ = footer_bounds(base)
        doc["blobs"] = [
            dict(doc["blobs"][0], offset=start, length=len(frame), **{"compression-codec": codec})
        ]
        data = assemble(base[4:start] + frame, json_bytes(doc))
        yield _invalid(
            name,
            f"codec-{codec}",
            f"a blob that is not a single {codec} frame with content size",
            data,
            "codec",
        )
    yield from _footer_codec(base)


def _footer_codec(base: bytes) -> Iterator[Vector]:
    start, size = footer_bounds(base)
    body = base[4:start]
    payload = base[start + 4 : start + 4 + size]
    yield _invalid(
        "footer-flag-plain-payload",
        "footer-lz4",
        "compressed flag set on a plain JSON footer",
        assemble(body, payload, flags=1),
        "codec",
    )
    no_size = lz4.frame.compress(payload, store_size=False)
    yield _invalid(
        "footer-lz4-no-content-size",
        "footer-lz4",
        "LZ4 footer frame without content size",
        assemble(body, no_size, flags=1),
        "codec",
    )
    zstd = zstandard.ZstdCompressor().compress(payload)
    yield _invalid(
        "footer-zstd",
        "footer-lz4",
        "a zstd-compressed footer (only LZ4 is allowed)",
        assemble(body, zstd, flags=1),
        "codec",
    )
    good = lz4.frame.compress(payload, store_size=True)
    yield _invalid(
        "footer-lz4-truncated",
        "footer-lz4",
        "an LZ4 footer frame cut short",
        assemble(body, good[:-9], flags=1),
        "codec",
    )
    frame = _zstd_claiming(3 << 30)
    doc = footer_doc(base)
    doc["blobs"] = [
        dict(doc["blobs"][0], offset=start, length=len(frame), **{"compression-codec": "zstd"})
    ]
    yield _invalid(
        "zstd-content-size-3gib",
        "codec-zstd",
        "a zstd frame declaring 3 GiB of content (beyond any reader's array limit)",
        assemble(body + frame, json_bytes(doc)),
        "limit-exceeded",
    )


def _zstd_claiming(size: int) -> bytes:
    """A zstd frame header declaring ``size`` bytes of content, then a tiny raw block."""
    header = b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + struct.pack("<Q", size)
    block = struct.pack("<I", (1 | (0 << 1) | (4 << 3)))[:3] + b"abcd"  # last raw block of 4
    return header + block


def invalid_vectors() -> Iterator[Vector]:
    yield from _layout_invalid()
    yield from _footer_invalid()
    yield from _codec_invalid()
