"""Building blocks for vectors: files written with the public API, and byte-level edits.

Valid files come from :func:`puffin.create`; invalid ones are valid files with bytes edited
(:func:`assemble` lays out a file from a hand-made footer, :func:`replace_footer` swaps the
footer of a written file), so each invalid vector breaks exactly one rule.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import puffin
from puffin.conformance.results import container_result

__all__ = [
    "BlobSpec",
    "assemble",
    "container_result",
    "footer_bounds",
    "replace_footer",
    "write_file",
]

_MAGIC = b"PFA1"
_TAIL = struct.Struct("<iI")


@dataclass(frozen=True)
class BlobSpec:
    """A blob to write: payload and footer fields (``codec`` None for uncompressed)."""

    data: bytes
    type: str = "conformance-blob"
    fields: tuple[int, ...] = (1,)
    snapshot_id: int = -1
    sequence_number: int = -1
    properties: Mapping[str, str] = field(default_factory=dict)
    codec: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The writer-tier request form of this blob."""
        return {
            "type": self.type,
            "fields": list(self.fields),
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "compression-codec": self.codec,
            "properties": dict(self.properties),
            "data-hex": self.data.hex(),
        }


def write_file(
    blobs: Sequence[BlobSpec],
    *,
    properties: Mapping[str, str] | None = None,
    compress_footer: bool = False,
) -> tuple[bytes, dict[str, Any]]:
    """A file written by :func:`puffin.create`, and the ``read-container`` result it must give."""
    out = io.BytesIO()
    written = []
    with puffin.create(out, properties=properties, compress_footer=compress_footer) as writer:
        for blob in blobs:
            meta = writer.add_blob(
                blob.data,
                type=blob.type,
                fields=list(blob.fields),
                snapshot_id=blob.snapshot_id,
                sequence_number=blob.sequence_number,
                properties=blob.properties,
                codec=blob.codec,
            )
            written.append((meta, blob.data))
    result = container_result(
        dict(properties or {}),
        [(meta.to_json_dict(), data) for meta, data in written],
    )
    return out.getvalue(), result


def footer_bounds(data: bytes) -> tuple[int, int]:
    """(start of the footer's leading magic, footer payload size) of a well-formed file."""
    size, _ = _TAIL.unpack_from(data, len(data) - 12)
    return len(data) - 12 - size - 4, size


def assemble(body: bytes, payload: bytes, *, flags: int = 0, size: int | None = None) -> bytes:
    """``MAGIC body MAGIC payload size flags MAGIC`` (``size`` defaults to the real one)."""
    tail = _TAIL.pack(len(payload) if size is None else size, flags)
    return _MAGIC + body + _MAGIC + payload + tail + _MAGIC


def replace_footer(data: bytes, footer: object | bytes) -> bytes:
    """The same blobs with another footer payload (a JSON document or raw bytes)."""
    start, _ = footer_bounds(data)
    payload = footer if isinstance(footer, bytes) else json_bytes(footer)
    return assemble(data[4:start], payload)


def json_bytes(doc: object) -> bytes:
    """Compact JSON as Iceberg Java writes footers."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def footer_doc(data: bytes) -> dict[str, Any]:
    """The footer JSON of a file with a plain footer, as a dict (to edit and re-assemble)."""
    start, size = footer_bounds(data)
    doc = json.loads(data[start + 4 : start + 4 + size])
    assert isinstance(doc, dict)
    return doc
