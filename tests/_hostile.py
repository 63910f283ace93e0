"""Helpers for the hostile-input tests: hand-edited compression frames, Puffin layouts, footer JSON.

The frames are edited at the byte level, independently of ``puffin.codecs``, so the tests
check the library against the LZ4 and Zstandard frame formats rather than against itself.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = [
    "DROP",
    "DV_MAGIC",
    "LZ4_MAGIC",
    "ZSTD_MAGIC",
    "footer_blob",
    "lz4_set_content_size",
    "puffin_file",
    "xxh32",
    "zstd_set_content_size",
]

DV_MAGIC = bytes.fromhex("d1d33964")
LZ4_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (the LZ4 frame format's header and content checksum), from its specification."""
    n = len(data)
    i = 0
    if n >= 16:
        v = [
            (seed + _P1 + _P2) & _M32,
            (seed + _P2) & _M32,
            seed & _M32,
            (seed - _P1) & _M32,
        ]
        while i + 16 <= n:
            for lane in range(4):
                (word,) = struct.unpack_from("<I", data, i + 4 * lane)
                v[lane] = (_rotl((v[lane] + word * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (word,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _lz4_descriptor_end(frame: bytes | bytearray, at: int) -> int:
    """Offset just past the FLG..(dict id) bytes of the LZ4 frame starting at ``at``."""
    flg = frame[at + 4]
    end = at + 6
    if flg & 0x08:
        end += 8
    if flg & 0x01:
        end += 4
    return end


def lz4_set_content_size(frame: bytes, size: int, *, at: int = 0) -> bytes:
    """The LZ4 frame at ``at`` with its content-size field set to ``size``.

    The header checksum is recomputed, so the edited frame has a valid header and only the
    claim is false.  The frame must already carry a content size (FLG bit 3).
    """
    out = bytearray(frame)
    if out[at : at + 4] != LZ4_MAGIC or not out[at + 4] & 0x08:
        raise ValueError("not an LZ4 frame with a content size")
    struct.pack_into("<Q", out, at + 6, size)
    end = _lz4_descriptor_end(out, at)
    out[end] = (xxh32(bytes(out[at + 4 : end])) >> 8) & 0xFF
    return bytes(out)


def zstd_set_content_size(frame: bytes, size: int) -> bytes:
    """The Zstandard frame with its Frame_Content_Size rewritten as an 8-byte ``size``.

    Zstandard frame headers carry no checksum, so only the descriptor's FCS flag and the
    field itself change; the blocks and the content checksum are kept.
    """
    if frame[:4] != ZSTD_MAGIC:
        raise ValueError("not a zstd frame")
    fhd = frame[4]
    fcs_flag = fhd >> 6
    single_segment = bool(fhd & 0x20)
    did_len = (0, 1, 2, 4)[fhd & 0x03]
    pos = 5 + (0 if single_segment else 1) + did_len
    fcs_len = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    new_fhd = (fhd & 0x3F) | 0xC0
    return (
        frame[:4]
        + bytes([new_fhd])
        + frame[5:pos]
        + struct.pack("<Q", size)
        + frame[pos + fcs_len :]
    )


def puffin_file(payload: bytes, *, payload_size: int | None = None, flags: int = 0,
                body: bytes = b"") -> bytes:
    """A Puffin file built by hand: magic, ``body``, then a footer around ``payload``.

    ``payload_size`` overrides the FooterPayloadSize field (to make it lie).
    """
    size = len(payload) if payload_size is None else payload_size
    return (
        b"PFA1" + body + b"PFA1" + payload + struct.pack("<iI", size, flags) + b"PFA1"
    )


def generation_payloads(generation: str, count: int = 40, size: int = 48 * 1024) -> list[bytes]:
    """Deterministic blob payloads for one generation of the crash-safety test's file."""
    import random

    rng = random.Random(generation)
    return [rng.randbytes(size // 2) + bytes([i % 251]) * (size // 2) for i in range(count)]


def write_generation(target: object, generation: str) -> None:
    """Write the file of ``generation`` to ``target`` (a path or a binary file object)."""
    import puffin

    codecs = (None, "lz4", "zstd")
    with puffin.create(target, created_by=generation) as writer:  # type: ignore[arg-type]
        for i, payload in enumerate(generation_payloads(generation)):
            writer.add_blob(payload, type="crash-test", fields=[i], codec=codecs[i % 3])


def dv_portable(*entries: tuple[int, bytes], count: int | None = None) -> bytes:
    """A portable 64-bit Roaring bitmap by hand: the key count (``count`` if given, to lie),
    then each 32-bit key and its serialized bitmap."""
    body = struct.pack("<Q", len(entries) if count is None else count)
    for key, bitmap in entries:
        body += struct.pack("<I", key) + bitmap
    return body


def dv_frame(body: bytes) -> bytes:
    """A deletion-vector-v1 payload around a portable body: length, magic, body, CRC."""
    import zlib

    crc = zlib.crc32(DV_MAGIC + body)
    return struct.pack(">I", 4 + len(body)) + DV_MAGIC + body + struct.pack(">I", crc)


#: ``footer_blob(key=DROP)`` leaves the key out.
DROP = object()


def footer_blob(**changes: Any) -> dict[str, Any]:
    """One blob of a footer's JSON (a theta sketch's fields), with ``changes`` (``snapshot_id``
    sets ``snapshot-id``; a value of :data:`DROP` removes the key)."""
    doc: dict[str, Any] = {
        "type": "apache-datasketches-theta-v1",
        "fields": [1, 2],
        "snapshot-id": 7,
        "sequence-number": 3,
        "offset": 4,
        "length": 10,
    }
    for key, value in changes.items():
        key = key.replace("_", "-")
        if value is DROP:
            doc.pop(key)
        else:
            doc[key] = value
    return doc
