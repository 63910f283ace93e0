"""Deletion-vector tier: hand-assembled payloads (valid layouts Java does not write, and one
invalid payload per rule) and DV footer rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from puffin.blobs import standard
from tools.conformance_gen.corpus import Vector, positions_result
from tools.conformance_gen.gen_dv import bm32, dv_blob_file, frame_dv, portable

__all__ = ["dv_invalid_vectors"]

_TIER = "deletion-vector"
_FILE = "s3://bucket/db/table/data/hand-made.parquet"
_MAX_KEY = 0x7FFFFFFE


def _props(count: int | str) -> dict[str, str]:
    return {standard.REFERENCED_DATA_FILE: _FILE, standard.CARDINALITY: str(count)}


def _pair(
    name: str, spec: str, description: str, payload: bytes, count: int, positions: list[int] | None
) -> Iterator[Vector]:
    """read-dv by range and read-dvs through the footer of a file holding ``payload``."""
    data = dv_blob_file(payload, properties=_props(count))
    inputs = {f"{name}.puffin": data}
    if positions is None:
        expected: dict[str, object] = {"error": "deletion-vector"}
        footer_expected: dict[str, object] = expected
        verdict = "deletion-vector"
    else:
        expected = {"result": positions_result(positions)}
        footer_expected = {"result": {"vectors": {_FILE: positions_result(positions)}}}
        verdict = "valid"
    args = {"offset": 4, "length": len(payload), "record-count": count}
    yield Vector(
        _TIER,
        f"range-{name}",
        "read-dv",
        spec,
        description,
        expected,
        args=args,
        inputs=inputs,
        verdict=verdict,
    )
    yield Vector(
        _TIER,
        f"footer-{name}",
        "read-dvs",
        spec,
        description,
        footer_expected,
        inputs=inputs,
        verdict=verdict,
    )


def _hand_made_valid() -> Iterator[Vector]:
    high = [0, 1, 0x7FFFFFFF, 0x80000000]
    yield from _pair(
        "max-key",
        "dv-positions",
        "positions under key 0x7FFFFFFE, the largest key Iceberg Java reads; no "
        "empty bitmaps for the keys below",
        frame_dv(portable([(_MAX_KEY, bm32(high))])),
        4,
        [(_MAX_KEY << 32) | v for v in high],
    )
    yield from _pair(
        "sparse-keys",
        "dv-portable",
        "keys 0 and 9 with no empty bitmaps between them (Java writes them, "
        "readers must not need them)",
        frame_dv(portable([(0, bm32([1])), (9, bm32([2]))])),
        2,
        [1, (9 << 32) | 2],
    )
    values = list(range(0, 300000))
    yield from _pair(
        "not-run-optimized",
        "dv-portable",
        "[0, 300000) stored as bitmap containers, not runs",
        frame_dv(portable([(0, bm32(values, runs=False))])),
        len(values),
        values,
    )
    spread = [c * 65536 + 7 for c in range(6)] + list(range(400000, 410000))
    yield from _pair(
        "offset-header",
        "dv-portable",
        "a 32-bit bitmap with run containers and an offset header (5+ containers)",
        frame_dv(portable([(0, bm32(spread))])),
        len(spread),
        sorted(spread),
    )
    yield from _pair(
        "explicit-empty-bitmaps",
        "dv-portable",
        "empty bitmaps written for keys 0 and 1 before key 2",
        frame_dv(portable([(0, bm32([])), (1, bm32([])), (2, bm32([3]))])),
        1,
        [(2 << 32) | 3],
    )


def _bad_payloads() -> Iterator[tuple[str, str, str, bytes]]:
    good = frame_dv(portable([(0, bm32([1, 3, 5]))]))
    body = portable([(0, bm32([1, 3, 5]))])
    yield "crc-flipped", "dv-layout", "last CRC bit flipped", good[:-1] + bytes([good[-1] ^ 1])
    yield "crc-zero", "dv-layout", "CRC stored as 0", good[:-4] + b"\0\0\0\0"
    yield (
        "magic",
        "dv-layout",
        "magic D1 D3 39 65, CRC recomputed",
        frame_dv(body, magic=bytes.fromhex("D1D33965")),
    )
    for delta in (1, -1):
        yield (
            f"length-{'plus' if delta > 0 else 'minus'}-one",
            "dv-layout",
            f"length prefix off by {delta}",
            frame_dv(body, length=len(body) + 4 + delta),
        )
    yield "length-huge", "dv-layout", "length prefix 0xFFFFFFFF", frame_dv(body, length=2**32 - 1)
    yield "truncated", "dv-layout", "the last 3 bytes missing", good[:-3]
    yield "too-short", "dv-layout", "8 bytes: length and magic only", good[:8]
    yield from _bad_bitmaps()


def _bad_bitmaps() -> Iterator[tuple[str, str, str, bytes]]:
    """Framing intact (CRC valid), the portable bitmap inside broken."""
    body = portable([(0, bm32([1, 3, 5]))])
    yield (
        "keys-descending",
        "dv-portable",
        "key 1 before key 0, CRC valid",
        frame_dv(portable([(1, bm32([1])), (0, bm32([2, 3]))])),
    )
    yield (
        "keys-duplicate",
        "dv-portable",
        "key 0 twice, CRC valid",
        frame_dv(portable([(0, bm32([1])), (0, bm32([2, 3]))])),
    )
    for key in (0x7FFFFFFF, 0x80000000, 0xFFFFFFFF):
        yield (
            f"key-{key:08x}",
            "dv-positions",
            f"key 0x{key:08X}: positions of 2^63 - 2^32 and above, beyond Java's limit",
            frame_dv(portable([(key, bm32([1, 3, 5]))])),
        )
    yield (
        "count-too-large",
        "dv-portable",
        "bitmap count 2, one bitmap present",
        frame_dv(portable([(0, bm32([1, 3, 5]))], count=2)),
    )
    yield (
        "count-huge",
        "dv-portable",
        "bitmap count 2^40",
        frame_dv(portable([(0, bm32([1, 3, 5]))], count=1 << 40)),
    )
    yield (
        "trailing-bytes",
        "dv-portable",
        "4 bytes after the last bitmap, inside the length",
        frame_dv(body + b"\0\0\0\0"),
    )
    broken = bytearray(bm32([1, 3, 5]))
    broken[0] ^= 0xFF
    yield (
        "bad-cookie",
        "dv-portable",
        "the 32-bit bitmap's cookie is wrong",
        frame_dv(portable([(0, bytes(broken))])),
    )
    short = bm32(range(0, 20000, 2))[:-100]
    yield (
        "bitmap-truncated",
        "dv-portable",
        "a bitmap container cut short, CRC valid",
        frame_dv(portable([(0, short)])),
    )
    yield ("empty-body", "dv-portable", "magic and CRC around no bitmap at all", frame_dv(b""))


def _invalid_payloads() -> Iterator[Vector]:
    for name, spec, description, payload in _bad_payloads():
        yield from _pair(f"invalid-{name}", spec, description, payload, 3, None)
    good = frame_dv(portable([(0, bm32([1, 3, 5]))]))
    data = dv_blob_file(good, properties=_props(3))
    yield Vector(
        _TIER,
        "invalid-record-count",
        "read-dv",
        "dv-properties",
        "the manifest's record count (4) differs from the DV's 3 positions",
        {"error": "deletion-vector"},
        args={"offset": 4, "length": len(good), "record-count": 4},
        inputs={"record-count.puffin": data},
        verdict="valid",
    )


def _footer_rules() -> Iterator[Vector]:
    good = frame_dv(portable([(0, bm32([1, 3, 5]))]))
    no_file = {standard.CARDINALITY: "3"}
    no_count = {standard.REFERENCED_DATA_FILE: _FILE}
    empty_file = {**no_file, standard.REFERENCED_DATA_FILE: ""}
    cases: list[tuple[str, str, str, dict[str, Any]]] = [
        ("snapshot-id", "dv-snapshot", "snapshot-id 5", {"snapshot_id": 5}),
        ("sequence-number", "dv-snapshot", "sequence-number 2", {"sequence_number": 2}),
        ("compressed", "dv-properties", "compression-codec zstd", {"codec": "zstd"}),
        (
            "no-referenced-data-file",
            "dv-properties",
            "no referenced-data-file",
            {"properties": no_file},
        ),
        (
            "empty-referenced-data-file",
            "dv-properties",
            "referenced-data-file is empty",
            {"properties": empty_file},
        ),
        ("no-cardinality", "dv-properties", "no cardinality", {"properties": no_count}),
        (
            "cardinality-wrong",
            "dv-properties",
            "cardinality 4 for 3 positions",
            {"properties": _props(4)},
        ),
        ("cardinality-space", "dv-properties", 'cardinality " 3"', {"properties": _props(" 3")}),
        ("cardinality-negative", "dv-properties", "cardinality -3", {"properties": _props(-3)}),
        (
            "cardinality-beyond-long",
            "dv-properties",
            "cardinality 2^63",
            {"properties": _props(1 << 63)},
        ),
        (
            "same-data-file-twice",
            "dv-properties",
            "two DVs for the same data file",
            {"extra": [good]},
        ),
    ]
    for name, spec, description, changes in cases:
        data = dv_blob_file(good, **{"properties": _props(3), **changes})
        yield Vector(
            _TIER,
            f"invalid-footer-{name}",
            "read-dvs",
            spec,
            description,
            {"error": "deletion-vector"},
            inputs={f"footer-{name}.puffin": data},
            verdict="deletion-vector",
        )


def dv_invalid_vectors() -> Iterator[Vector]:
    yield from _hand_made_valid()
    yield from _invalid_payloads()
    yield from _footer_rules()
