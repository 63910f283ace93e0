"""The corpus model: a vector, the spec sentences vectors quote, and deterministic output.

A vector is one JSON document ``<tier>/<name>.json`` beside its input file(s).  Everything a
peer needs is in the JSON: the operation, its arguments, the expected result (decoded
values, never Python objects) or the expected error category, and the spec sentence tested.
The format constants and the form of results are the installed package's
(:mod:`puffin.conformance.results`), shared with the runner.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from puffin.conformance.results import (
    CORPUS_FORMAT,
    CORPUS_VERSION,
    TIERS,
    positions_digest,
    positions_result,
    sha256,
)

__all__ = [
    "CORPUS_FORMAT",
    "CORPUS_VERSION",
    "SPEC",
    "TIERS",
    "Corpus",
    "Vector",
    "positions_digest",
    "positions_result",
    "sha256",
]

_PUFFIN = "puffin-spec"
_TABLE = "iceberg-table-spec"
#: Passages on deletion vectors of a newer table spec (testdata/specs/iceberg-table-spec-v3-dv.txt)
_TABLE_V3 = "iceberg-table-spec-v3"

#: Spec sentences, quoted verbatim from the Puffin spec and the Iceberg table spec.
SPEC: dict[str, tuple[str, str]] = {
    "magic": (
        _PUFFIN,
        "Magic is four bytes 0x50, 0x46, 0x41, 0x31 (short for: Puffin Fratercula arctica, "
        "version 1)",
    ),
    "footer-magic": (_PUFFIN, "Magic: four bytes, same as at the beginning of the file"),
    "footer-size": (
        _PUFFIN,
        "FooterPayloadSize: a length in bytes of the FooterPayload (after compression, if "
        "compressed), stored as 4 byte integer",
    ),
    "flags": (
        _PUFFIN,
        "bit 0 (lowest bit): whether FooterPayload is compressed - all other bits are reserved "
        "for future use and should be set to 0 on write",
    ),
    "footer-lz4": (
        _PUFFIN,
        "Footer payload bytes is either uncompressed or LZ4-compressed (as a single LZ4 "
        "compression frame with content size present), UTF-8 encoded JSON payload "
        "representing a single FileMetadata object.",
    ),
    "blobs-required": (_PUFFIN, "blobs | list of BlobMetadata objects | yes"),
    "file-properties": (
        _PUFFIN,
        "properties | JSON object with string property values | no | storage for arbitrary "
        "meta-information, like writer identification/version.",
    ),
    "blob-type": (_PUFFIN, "type | JSON string | yes | See Blob types"),
    "blob-fields": (
        _PUFFIN,
        "fields | JSON list of ints | yes | List of field IDs the blob was computed for",
    ),
    "blob-snapshot": (
        _PUFFIN,
        "snapshot-id | JSON long | yes | ID of the Iceberg table's snapshot the blob was "
        "computed from.",
    ),
    "blob-offset": (
        _PUFFIN,
        "offset | JSON long | yes | The offset in the file where the blob contents start",
    ),
    "blob-length": (
        _PUFFIN,
        "length | JSON long | yes | The length of the blob stored in the file (after "
        "compression, if compressed)",
    ),
    "blob-codec": (
        _PUFFIN,
        "compression-codec | JSON string | no | See Compression codecs. If omitted, the data "
        "is assumed to be uncompressed.",
    ),
    "blob-properties": (
        _PUFFIN,
        "properties | JSON object with string property values | no | storage for arbitrary "
        "meta-information about the blob",
    ),
    "blob-types": (_PUFFIN, "The blobs can be of a type listed below"),
    "codecs": (
        _PUFFIN,
        "If it is compressed the codec should be one of codecs listed below. For maximal "
        "interoperability, other codecs are not supported.",
    ),
    "codec-lz4": (_PUFFIN, "lz4 | Single LZ4 compression frame, with content size present"),
    "codec-zstd": (
        _PUFFIN,
        "zstd | Single Zstandard compression frame, with content size present",
    ),
    "created-by": (
        _PUFFIN,
        "created-by - human-readable identification of the application writing the file, "
        "along with its version.",
    ),
    "int-encoding": (
        _PUFFIN,
        "A 4 byte integer is always signed, in a two's complement representation, stored "
        "little-endian.",
    ),
    "theta": (
        _PUFFIN,
        "The sketch is obtained by constructing Alpha family sketch with default seed, and "
        "feeding it with individual distinct values converted to bytes using Iceberg's "
        "single-value serialization.",
    ),
    "theta-compact": (
        _PUFFIN,
        'A serialized form of a "compact" Theta sketch produced by the Apache DataSketches '
        "library.",
    ),
    "theta-ndv": (
        _PUFFIN,
        "ndv: estimate of number of distinct values, derived from the sketch, stored as "
        "non-negative integer value represented using decimal digits with no leading or "
        "trailing spaces.",
    ),
    "dv-layout": (
        _PUFFIN,
        "The serialized blob contains: - Combined length of the vector and magic bytes stored "
        "as 4 bytes, big-endian - A 4-byte magic sequence, D1 D3 39 64 - The vector, "
        "serialized as described below - A CRC-32 checksum of the magic bytes and serialized "
        "vector as 4 bytes, big-endian",
    ),
    "dv-portable": (
        _PUFFIN,
        'The position vector is serialized using the Roaring bitmap "portable" format. This '
        "representation consists of: - The number of 32-bit Roaring bitmaps, serialized as 8 "
        "bytes, little-endian - For each 32-bit Roaring bitmap, ordered by unsigned "
        "comparison of the 32-bit keys: - The key stored as 4 bytes, little-endian - A 32-bit "
        "Roaring bitmap",
    ),
    "dv-positions": (
        _PUFFIN,
        "The vector supports positive 64-bit positions (the most significant bit must be 0), "
        "but is optimized for cases where most positions fit in 32 bits by using a collection "
        "of 32-bit Roaring bitmaps.",
    ),
    "dv-properties": (
        _PUFFIN,
        "The blob's properties must: - Include referenced-data-file, the location of the data "
        "file the delete vector applies to; must be equal to the data file's location in "
        "table metadata - Include cardinality, the number of deleted rows (set positions) in "
        "the delete vector - Omit compression-codec; deletion-vector-v1 is not compressed",
    ),
    "dv-snapshot": (
        _PUFFIN,
        "snapshot-id and sequence-number must be set to -1 in blob metadata for Puffin v1.",
    ),
    "dv-set-bit": (
        _PUFFIN,
        "A set bit at position P indicates that the row at position P is deleted.",
    ),
    "dv-blob": (
        _PUFFIN,
        "A serialized delete vector (bitmap) that represents the positions of rows in a file "
        "that are deleted.",
    ),
    "dv-cardinality": (
        _TABLE_V3,
        "Number of records in this file, or the cardinality of a deletion vector",
    ),
    "dv-entry-fields": (
        _TABLE_V3,
        "For deletion vectors, these values are required and must exactly match the `offset` "
        "and `length` stored in the Puffin footer for the deletion vector blob.",
    ),
    "dv-scope": (
        _TABLE_V3,
        "A deletion vector must be applied to a data file when all of the following are true: "
        "- The data file's `file_path` is equal to the deletion vector's `referenced_data_file` "
        "- The data file's data sequence number is _less than or equal to_ the deletion "
        "vector's data sequence number - The data file's partition (both spec and partition "
        "values) is equal [4] to the deletion vector's partition",
    ),
    "dv-one-per-file": (
        _TABLE_V3,
        "At most one deletion vector is allowed per data file in a snapshot.",
    ),
    "snapshot-union": (
        _TABLE,
        "The data in a snapshot is the union of all files in its manifests.",
    ),
    "scan-deleted-entries": (
        _TABLE,
        "Scans are planned by reading the manifest files for the current snapshot listed in "
        "the table metadata. Deleted entries in a manifest are not included in the scan.",
    ),
    "single-value": (
        _TABLE,
        "This serialization scheme is for storing single values as individual binary values "
        "in the lower and upper bounds maps of manifest files.",
    ),
}


@dataclass(frozen=True)
class Vector:
    """One conformance vector.

    ``expected`` is either ``{"result": ...}`` or ``{"error": category}``.  ``verdict`` is
    what a full verifier (``puffin verify``) must say about a Puffin-file input: ``"valid"``
    or an error category; ``None`` when the input is not a whole Puffin file.
    """

    tier: str
    name: str
    op: str
    spec: str
    description: str
    expected: Mapping[str, Any]
    args: Mapping[str, Any] = field(default_factory=dict)
    inputs: Mapping[str, bytes] = field(default_factory=dict)
    verdict: str | None = None
    provenance: Mapping[str, str] | None = None

    @property
    def id(self) -> str:
        return f"{self.tier}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        document, quote = SPEC[self.spec]
        doc: dict[str, Any] = {
            "id": self.id,
            "tier": self.tier,
            "op": self.op,
            "description": self.description,
            "spec": {"document": document, "quote": quote},
        }
        if self.inputs:
            doc["input"] = next(iter(self.inputs))
            doc["inputs"] = {
                name: {"size": len(data), "sha256": sha256(data)}
                for name, data in self.inputs.items()
            }
        doc["args"] = dict(self.args)
        doc["expected"] = dict(self.expected)
        if self.verdict is not None:
            doc["verdict"] = self.verdict
        if self.provenance is not None:
            doc["provenance"] = dict(self.provenance)
        return doc


def dump_json(doc: object) -> bytes:
    """Stable JSON bytes: objects indented two spaces, lists of scalars on one line, UTF-8."""
    return (_dump(doc, 0) + "\n").encode("utf-8")


def _flat(value: object) -> bool:
    if isinstance(value, list):
        return all(
            not isinstance(v, (dict, list)) or (isinstance(v, list) and _flat(v)) for v in value
        )
    return not isinstance(value, dict)


def _dump(value: object, level: int) -> str:
    if _flat(value) or (isinstance(value, dict) and not value):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    pad = "  " * (level + 1)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {_dump(v, level + 1)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * level + "}"
    assert isinstance(value, list)
    return "[\n" + ",\n".join(pad + _dump(v, level + 1) for v in value) + "\n" + "  " * level + "]"


class Corpus:
    """The files of a corpus as ``{relative path: bytes}``, built in memory, written once."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.vectors: list[Vector] = []

    def add(self, vector: Vector) -> None:
        if vector.tier not in TIERS:
            raise ValueError(f"unknown tier {vector.tier!r}")
        path = f"{vector.tier}/{vector.name}.json"
        if path in self.files:
            raise ValueError(f"duplicate vector {vector.id}")
        for name, data in vector.inputs.items():
            input_path = f"{vector.tier}/{name}"
            if self.files.get(input_path, data) != data:
                raise ValueError(f"{input_path} given twice with different bytes")
            self.files[input_path] = data
        self.files[path] = dump_json(vector.to_json())
        self.vectors.append(vector)

    def extend(self, vectors: Iterable[Vector]) -> None:
        for vector in vectors:
            self.add(vector)

    def finish(self, generator: str) -> dict[str, bytes]:
        """Every file, with ``index.json`` listing the vectors by tier."""
        counts = {tier: sum(v.tier == tier for v in self.vectors) for tier in TIERS}
        index = {
            "format": CORPUS_FORMAT,
            "version": CORPUS_VERSION,
            "generator": generator,
            "total": len(self.vectors),
            "tiers": counts,
            "vectors": [f"{v.tier}/{v.name}.json" for v in self.vectors],
        }
        files = dict(self.files)
        files["index.json"] = dump_json(index)
        return dict(sorted(files.items()))
