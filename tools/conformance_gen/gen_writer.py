"""Writer tier: given these inputs, a Java-compatible writer produces exactly these bytes.

Containers follow Iceberg Java's footer layout (compact JSON, Java's key order, ``properties``
omitted when empty) and zstd level 3 frames with content size and checksum; DV payloads
follow Java's ``RoaringPositionBitmap`` (run-optimized, an empty bitmap for every key below
the largest).  Java's own golden files are among the expectations, so the bytes are Java's,
not only ours.  LZ4 inputs are left out: Iceberg Java cannot write LZ4.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import puffin
from tools.conformance_gen.build import BlobSpec, write_file
from tools.conformance_gen.corpus import Vector, sha256
from tools.conformance_gen.gen_captured import java_digest
from tools.conformance_gen.gen_container import valid_files
from tools.conformance_gen.gen_dv import DV_SETS, positions_of

__all__ = ["writer_vectors"]

_TIER = "writer"
_JAVA = "iceberg-java/puffin/"
_TEXT = (
    "some blob \u0000 binary data \U0001f92f that is not very very very very very very long, is it?"
)


def _request(blobs: list[BlobSpec], properties: dict[str, str]) -> dict[str, Any]:
    return {
        "properties": properties,
        "compress-footer": False,
        "blobs": [blob.to_json() for blob in blobs],
    }


def _container_vectors() -> Iterator[Vector]:
    for name, spec, description, blobs, props, footer in valid_files():
        too_big = len(blobs) > 100 or sum(len(b.data) for b in blobs) > 8192
        if footer or too_big or any(b.codec == "lz4" for b in blobs):
            continue  # Java writes no LZ4; large payloads are left to the container tier
        data, _ = write_file(blobs, properties=props)
        yield Vector(
            _TIER,
            f"container-{name}",
            "write-container",
            spec,
            f"{description}; the bytes are container/{name}.puffin",
            {"result": {"size": len(data), "sha256": sha256(data)}},
            args=_request(blobs, props),
        )


def _java_goldens() -> Iterator[Vector]:
    sample = [
        BlobSpec(b"abcdefghi", type="some-blob", fields=(1,), snapshot_id=2, sequence_number=1),
        BlobSpec(
            _TEXT.encode(), type="some-other-blob", fields=(2,), snapshot_id=2, sequence_number=1
        ),
    ]
    created = {"created-by": "Test 1234"}
    yield Vector(
        _TIER,
        "java-empty-puffin-uncompressed",
        "write-container",
        "blobs-required",
        "no blobs: Iceberg Java's empty-puffin-uncompressed.bin",
        {"result": java_digest(_JAVA + "empty-puffin-uncompressed.bin")},
        args=_request([], {}),
    )
    yield Vector(
        _TIER,
        "java-sample-metric-data-uncompressed",
        "write-container",
        "blob-offset",
        "Iceberg Java's sample-metric-data-uncompressed.bin",
        {"result": java_digest(_JAVA + "sample-metric-data-uncompressed.bin")},
        args=_request(sample, created),
    )
    zstd = [
        BlobSpec(
            b.data, type=b.type, fields=b.fields, snapshot_id=2, sequence_number=1, codec="zstd"
        )
        for b in sample
    ]
    yield Vector(
        _TIER,
        "java-sample-metric-data-compressed-zstd",
        "write-container",
        "codec-zstd",
        "Iceberg Java's sample-metric-data-compressed-zstd.bin",
        {"result": java_digest(_JAVA + "sample-metric-data-compressed-zstd.bin")},
        args=_request(zstd, created),
    )
    for rel, name in (
        ("iceberg-java/deletes/empty-position-index.bin", "empty"),
        ("iceberg-java/deletes/small-alternating-values-position-index.bin", "alternating"),
        ("iceberg-java/deletes/all-container-types-position-index.bin", "java-all-container-types"),
    ):
        yield Vector(
            _TIER,
            f"java-dv-{name}",
            "write-dv",
            "dv-layout",
            f"Iceberg Java's {rel.rsplit('/', 1)[1]}",
            {"result": java_digest(rel)},
            args={"ranges": [list(r) for r in DV_SETS[name][1]]},
        )
    small_large = [(100, 102), (2147483747, 2147483749)]
    yield Vector(
        _TIER,
        "java-dv-small-and-large",
        "write-dv",
        "dv-layout",
        "Iceberg Java's small-and-large-values-position-index.bin",
        {"result": java_digest("iceberg-java/deletes/small-and-large-values-position-index.bin")},
        args={"ranges": [list(r) for r in small_large]},
    )


def _dv_vectors() -> Iterator[Vector]:
    for name, (description, ranges) in DV_SETS.items():
        payload = puffin.DeletionVector(positions_of(ranges)).serialize()
        yield Vector(
            _TIER,
            f"dv-{name}",
            "write-dv",
            "dv-layout",
            f"{description}: the deletion-vector-v1 payload Iceberg Java writes",
            {"result": {"size": len(payload), "sha256": sha256(payload)}},
            args={"ranges": [list(r) for r in ranges]},
        )


def writer_vectors() -> Iterator[Vector]:
    yield from _java_goldens()
    yield from _container_vectors()
    yield from _dv_vectors()
