"""CRoaring through pyroaring's ``BitMap64``: the portable 64-bit Roaring format of DVs.

The DV framing (big-endian length, magic, CRC-32) is checked here as the spec says; the
bitmap itself is CRoaring's ``roaring64_bitmap_portable_deserialize_safe``.  Writing runs
CRoaring's ``run_optimize`` and portable serialization inside the same framing.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from puffin.conformance.adapters._base import Response, error, ok

__all__ = ["PyroaringAdapter"]

_MAGIC = bytes.fromhex("D1D33964")


def _positions(bitmap: Any) -> dict[str, Any]:
    positions = [int(p) for p in bitmap]
    return {"count": len(positions), "positions": positions}


class PyroaringAdapter:
    """``pyroaring``: read-dv, read-bitmap, write-dv."""

    ops = frozenset({"read-dv", "read-bitmap", "write-dv"})

    def __init__(self) -> None:
        import pyroaring

        self._bitmap64 = pyroaring.BitMap64
        self.name = f"pyroaring {pyroaring.__version__} (CRoaring)"

    def handle(self, request: Mapping[str, Any]) -> Response:
        try:
            if request["op"] == "write-dv":
                return ok(self._write(request["ranges"]))
            data = Path(request["path"]).read_bytes()
            if request["op"] == "read-bitmap":
                return ok(_positions(self._bitmap64.deserialize(data)))
            payload = data[request["offset"] : request["offset"] + request["length"]]
            result = _positions(self._bitmap64.deserialize(_unframe(payload)))
            expected = request.get("record-count")
            if expected is not None and result["count"] != expected:
                raise ValueError(f"{result['count']} positions, record count {expected}")
            return ok(result)
        except Exception as exc:  # pyroaring raises ValueError or TypeError
            return error(exc)

    def _write(self, ranges: list[list[int]]) -> Response:
        bitmap = self._bitmap64()
        for args in ranges:
            bitmap.update(range(*args))
        bitmap.run_optimize()
        body = bytes(bitmap.serialize())
        framed = (
            struct.pack(">I", 4 + len(body))
            + _MAGIC
            + body
            + struct.pack(">I", zlib.crc32(_MAGIC + body))
        )
        return {"size": len(framed), "sha256": hashlib.sha256(framed).hexdigest()}

    def close(self) -> None:
        pass


def _unframe(payload: bytes) -> bytes:
    if len(payload) < 12:
        raise ValueError("shorter than the DV framing")
    (length,) = struct.unpack_from(">I", payload, 0)
    if length != len(payload) - 8:
        raise ValueError(f"length {length} for a {len(payload)}-byte payload")
    if payload[4:8] != _MAGIC:
        raise ValueError("bad magic")
    (crc,) = struct.unpack_from(">I", payload, 4 + length)
    if crc != zlib.crc32(payload[4 : 4 + length]):
        raise ValueError("CRC mismatch")
    return payload[8 : 4 + length]
