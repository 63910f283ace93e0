"""What the corpus and the runner agree on: its format name and version, its tiers, and
the form of expected results (positions listed, or their digest past a size).

The corpus itself is written by the repository's generator (``tools/conformance_gen``), not
by the installed package; the runner reads it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "CORPUS_FORMAT",
    "CORPUS_VERSION",
    "MAX_LISTED_POSITIONS",
    "TIERS",
    "container_result",
    "positions_digest",
    "positions_result",
    "sha256",
]

CORPUS_FORMAT = "puffin-conformance"
#: Bumped when a vector's meaning changes (not when vectors are added).
CORPUS_VERSION = 1
TIERS = ("container", "deletion-vector", "theta", "writer", "captured", "table")

#: Positions up to this many are listed in expected results; above, a digest and the count.
MAX_LISTED_POSITIONS = 2000

def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def positions_digest(positions: Iterable[int]) -> str:
    """SHA-256 of the ascending positions, each an unsigned 64-bit little-endian integer."""
    digest = hashlib.sha256()
    for position in positions:
        digest.update(position.to_bytes(8, "little"))
    return digest.hexdigest()


def positions_result(positions: list[int]) -> dict[str, Any]:
    """The expected result of a DV read: the count, and the positions or their digest."""
    if len(positions) <= MAX_LISTED_POSITIONS:
        return {"count": len(positions), "positions": positions}
    return {"count": len(positions), "positions-sha256": positions_digest(positions)}


def container_result(
    properties: Mapping[str, str], blobs: Sequence[tuple[Mapping[str, Any], bytes]]
) -> dict[str, Any]:
    """The language-neutral ``read-container`` result: footer fields plus payload digests."""
    entries = []
    for meta, data in blobs:
        entries.append(
            {
                "type": meta["type"],
                "fields": list(meta["fields"]),
                "snapshot-id": meta["snapshot-id"],
                "sequence-number": meta["sequence-number"],
                "offset": meta["offset"],
                "length": meta["length"],
                "compression-codec": meta.get("compression-codec"),
                "properties": dict(meta.get("properties", {})),
                "size": len(data),
                "sha256": sha256(data),
            }
        )
    return {"properties": dict(properties), "blobs": entries}
