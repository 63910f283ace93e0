"""What every adapter is: a name, the operations it speaks, and one call per request.

A request and its response are the JSON objects of the protocol (docs/conformance.md); an
adapter for another language speaks the same objects as JSON lines over a subprocess.
"""

from __future__ import annotations

import decimal
import hashlib
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["Adapter", "error", "ok", "python_values", "theta_result"]

Response = dict[str, Any]


class Adapter(Protocol):
    """One implementation under test."""

    name: str
    ops: frozenset[str]

    def handle(self, request: Mapping[str, Any]) -> Response:
        """Answer one request: ``{"ok": true, "result": ...}`` or ``{"ok": false, ...}``."""
        ...

    def close(self) -> None:
        """Release processes and files."""
        ...


def ok(result: object) -> Response:
    return {"ok": True, "result": result}


def error(exc: BaseException, category: str | None = None) -> Response:
    """A rejection; ``category`` when the implementation can name one of ours."""
    out: Response = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
    if category is not None:
        out["category"] = category
    return out


def theta_result(num_retained: int, theta64: int, estimate: float, hashes: list[int]) -> Response:
    """The language-neutral description of a compact theta sketch."""
    digest = hashlib.sha256(b"".join(h.to_bytes(8, "little") for h in sorted(hashes)))
    return {
        "empty": num_retained == 0 and theta64 == (1 << 63) - 1,
        "num-retained": num_retained,
        "theta64": theta64,
        "estimate": estimate,
        "hashes-sha256": digest.hexdigest(),
    }


_FLOATS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def python_values(iceberg_type: str, values: list[Any]) -> list[Any]:
    """The protocol's JSON values as Python values of an Iceberg type.

    Integers for int, long, date (days), time and timestamps (micro- or nanoseconds); floats
    as numbers or "NaN"/"Infinity"/"-Infinity"; decimals as strings; uuids as strings;
    fixed and binary as hex.
    """
    if iceberg_type.startswith("decimal"):
        return [decimal.Decimal(v) for v in values]
    if iceberg_type == "uuid":
        return [uuid.UUID(v) for v in values]
    if iceberg_type == "binary" or iceberg_type.startswith("fixed"):
        return [bytes.fromhex(v) for v in values]
    if iceberg_type in ("float", "double"):
        return [_FLOATS.get(v, v) if isinstance(v, str) else float(v) for v in values]
    return list(values)
