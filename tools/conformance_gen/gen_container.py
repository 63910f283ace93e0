"""Container tier: valid files for every codec and footer, and one invalid file per rule."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

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

__all__ = ["valid_files", "valid_vectors"]

_TIER = "container"
_CODECS = (None, "lz4", "zstd")
_TEXT = "some blob \u0000 binary data \U0001f92f that is not very very long, is it?".encode()


def _payload(n: int, seed: int) -> bytes:
    """Deterministic, partly compressible bytes."""
    return bytes(((i * 7 + seed) % 251) if i % 3 else (i // 3) % 256 for i in range(n))


def valid_files() -> Iterator[tuple[str, str, str, list[BlobSpec], dict[str, str], bool]]:
    """(name, spec key, description, blobs, file properties, compressed footer) of each valid
    container; the writer tier reuses them."""
    created = {"created-by": "puffin conformance"}
    yield "empty", "blobs-required", "no blobs, no properties", [], {}, False
    yield "empty-created-by", "created-by", "no blobs, created-by set", [], created, False
    yield "empty-lz4-footer", "footer-lz4", "no blobs, LZ4 footer", [], created, True
    for footer in (False, True):
        tag = "lz4-footer" if footer else "plain-footer"
        for codec in _CODECS:
            cname = codec or "none"
            one = [BlobSpec(_payload(100, 1), codec=codec)]
            yield (
                f"one-blob-{cname}-{tag}",
                "blob-codec",
                f"one 100-byte blob, codec {cname}, {tag}",
                one,
                created,
                footer,
            )
            three = [
                BlobSpec(
                    _payload(n, n), fields=(i + 1,), snapshot_id=7, sequence_number=3, codec=codec
                )
                for i, n in enumerate((1, 4096, 70000))
            ]
            yield (
                f"three-blobs-{cname}-{tag}",
                "blob-length",
                f"blobs of 1, 4096 and 70000 bytes, codec {cname}, {tag}",
                three,
                created,
                footer,
            )
        mixed = [BlobSpec(_TEXT, codec=c, fields=(2,)) for c in _CODECS]
        yield f"mixed-codecs-{tag}", "codecs", f"one blob per codec, {tag}", mixed, created, footer
    yield from _special_valid(created)


def _special_valid(
    created: dict[str, str],
) -> Iterator[tuple[str, str, str, list[BlobSpec], dict[str, str], bool]]:
    for codec in _CODECS:
        cname = codec or "none"
        yield (
            f"empty-payload-{cname}",
            "blob-length",
            f"a zero-byte blob, codec {cname}",
            [BlobSpec(b"", codec=codec)],
            created,
            False,
        )
    yield (
        "large-compressible-zstd",
        "codec-zstd",
        "a 1 MiB payload of one repeated pattern, zstd",
        [BlobSpec(b"puffin!" * (1 << 17) + b"puffin!"[: (1 << 20) % 7], codec="zstd")],
        created,
        False,
    )
    unicode_props = {"created-by": "Ünïcødé writer 🐧 1.0", "clé": "välue ✓", "空": "値"}
    yield (
        "unicode",
        "file-properties",
        "non-ASCII property keys, values and blob type",
        [BlobSpec(_TEXT, type="blob-ü-🐧", properties={"naïve": "日本語"})],
        unicode_props,
        False,
    )
    yield (
        "unicode-lz4-footer",
        "footer-lz4",
        "non-ASCII text in an LZ4 footer",
        [BlobSpec(_TEXT, type="blob-ü-🐧", properties={"naïve": "日本語"})],
        unicode_props,
        True,
    )
    yield (
        "unknown-types-and-properties",
        "blob-types",
        "blob types and properties no reader knows must be readable as opaque blobs",
        [
            BlobSpec(b"\x00\x01\x02", type="future-index-v9", properties={"x-unknown": "1"}),
            BlobSpec(b"opaque", type="x", fields=(), properties={"": ""}),
        ],
        {**created, "x-future-property": "value"},
        False,
    )
    yield (
        "extreme-longs",
        "blob-snapshot",
        "snapshot-id and sequence-number at the Java long bounds, many field ids",
        [
            BlobSpec(
                b"a",
                snapshot_id=(1 << 63) - 1,
                sequence_number=-(1 << 63),
                fields=tuple(range(-3, 40)),
            )
        ],
        created,
        False,
    )
    many = [BlobSpec(bytes([i % 256]) * (i % 5), fields=(i,), type=f"t{i % 7}") for i in range(800)]
    yield "many-blobs", "blobs-required", "800 blobs: a footer over 64 KiB", many, created, False
    yield "many-blobs-lz4-footer", "footer-lz4", "800 blobs, LZ4 footer", many, created, True


def valid_vectors() -> Iterator[Vector]:
    for name, spec, description, blobs, props, footer in valid_files():
        data, result = write_file(blobs, properties=props, compress_footer=footer)
        yield Vector(
            _TIER,
            name,
            "read-container",
            spec,
            description,
            {"result": result},
            inputs={f"{name}.puffin": data},
            verdict="valid",
        )
    yield from _hand_made_valid()


def _hand_made_valid() -> Iterator[Vector]:
    """Valid files a Java-like writer would not produce: gaps, reordering, spacing."""
    base, result = write_file(
        [BlobSpec(b"first", fields=(1,)), BlobSpec(b"second", fields=(2,))],
        properties={"created-by": "puffin conformance"},
    )
    doc = footer_doc(base)
    start, _ = footer_bounds(base)
    body = base[4:start]
    gap = b"\xee" * 5
    shifted = copy.deepcopy(doc)
    shifted["blobs"][1]["offset"] += len(gap)
    data = assemble(body[:5] + gap + body[5:], json_bytes(shifted))
    expected = copy.deepcopy(result)
    expected["blobs"][1]["offset"] += len(gap)
    yield _valid(
        "gap-between-blobs", "blob-offset", "unused bytes between two blobs", data, expected
    )
    reordered = copy.deepcopy(doc)
    reordered["blobs"].reverse()
    expected = copy.deepcopy(result)
    expected["blobs"].reverse()
    yield _valid(
        "footer-order-differs",
        "blob-offset",
        "footer lists the blobs in another order than their offsets",
        replace_footer(base, json_bytes(reordered)),
        expected,
    )
    pretty = (
        b'{\n  "properties" : {"created-by" : "puffin conformance"},\n  "blobs" : '
        + json_bytes(doc["blobs"])
        + b"\n}"
    )
    yield _valid(
        "pretty-footer-json",
        "blobs-required",
        "footer JSON with whitespace and keys in another order",
        replace_footer(base, pretty),
        result,
    )
    escaped = json_bytes(doc).replace(b"conformance", b"conform\\u0061nce")
    yield _valid(
        "escaped-footer-json",
        "blobs-required",
        "JSON escapes in the footer",
        replace_footer(base, escaped),
        result,
    )
    shared = copy.deepcopy(doc)
    shared["blobs"][1] = dict(shared["blobs"][0], fields=[2])
    expected = copy.deepcopy(result)
    expected["blobs"][1] = dict(expected["blobs"][0], fields=[2])
    yield _valid(
        "blobs-share-bytes",
        "blob-offset",
        "two footer entries point at the same bytes",
        replace_footer(base, json_bytes(shared)),
        expected,
    )


def _valid(name: str, spec: str, description: str, data: bytes, result: dict[str, Any]) -> Vector:
    return Vector(
        _TIER,
        name,
        "read-container",
        spec,
        description,
        {"result": result},
        inputs={f"{name}.puffin": data},
        verdict="valid",
    )
