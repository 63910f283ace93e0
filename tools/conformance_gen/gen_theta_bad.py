"""Theta tier: invalid sketches (one rule each) and theta blobs whose ``ndv`` is checked.

The ``ndv`` boundary: Iceberg Java records ``(long) (count * (2^63 / theta))`` computed in
doubles; for 5 retained hashes and theta 3547450783405683004 that is 12, while ``floor`` of
the C++ estimate ``count / (theta / 2^63)`` is 13.  Both are what a real writer records, so a
verifier must accept either, and nothing else.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator

import puffin
from puffin.blobs import standard
from tools.conformance_gen.corpus import Vector
from tools.conformance_gen.gen_theta import sketch_result

__all__ = ["BOUNDARY_THETA", "boundary_sketch", "theta_rule_vectors"]

_TIER = "theta"
BOUNDARY_THETA = 3547450783405683004
_HEAD = struct.Struct("<BBBBBBHIfQ")  # pre-longs 3: ..., seed hash, count, p, theta


def _estimation_bytes() -> bytes:
    hashes = [(i * 0x9E3779B97F4A7C15) % (1 << 63) for i in range(1, 200)]
    return puffin.ThetaSketch.from_hashes(hashes, lg_k=5).serialize()


def boundary_sketch() -> bytes:
    """5 hashes under theta 3547450783405683004: Java's ndv 12, the C++ estimate 13.0."""
    hashes = [BOUNDARY_THETA // 7 * (i + 1) for i in range(5)]
    head = _HEAD.pack(3, 3, 3, 0, 0, 0x1A, 0x93CC, len(hashes), 1.0, BOUNDARY_THETA)
    return head + b"".join(struct.pack("<Q", h) for h in hashes)


def _edit(data: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


def _bad_sketches() -> Iterator[tuple[str, str, bytes]]:
    good = _estimation_bytes()
    first = 24
    n = struct.unpack_from("<I", good, 8)[0]
    last = first + 8 * (n - 1)
    theta = struct.unpack_from("<Q", good, 16)[0]
    yield (
        "seed-hash",
        "seed hash 0x1234, not the default seed's 0x93CC",
        _edit(good, 6, "<H", 0x1234),
    )
    yield "truncated-hashes", "the last hash cut short", good[:-5]
    yield "truncated-preamble", "6 bytes of preamble", good[:6]
    yield "serial-version", "serial version 9", _edit(good, 1, "<B", 9)
    yield "family", "family 2 (an update sketch), not compact", _edit(good, 2, "<B", 2)
    yield "count-too-large", "count 40, 32 hashes present", _edit(good, 8, "<I", 40)
    yield "theta-zero", "theta 0", _edit(good, 16, "<Q", 0)
    yield "theta-above-max", "theta 2^63", _edit(good, 16, "<Q", 1 << 63)
    yield "hash-at-theta", "a hash equal to theta", _edit(good, last, "<Q", theta)
    swapped = bytearray(good)
    swapped[first : first + 8], swapped[first + 8 : first + 16] = (
        good[first + 8 : first + 16],
        good[first : first + 8],
    )
    yield "unordered", "two hashes swapped in an ordered sketch", bytes(swapped)
    yield "zero-hash", "a hash of 0", _edit(good, first, "<Q", 0)
    yield "pre-longs", "pre-longs 1 with a count and theta present", _edit(good, 0, "<B", 1)


def _theta_file(
    sketch: bytes,
    properties: dict[str, str],
    *,
    fields: list[int] | None = None,
    codec: str | None = None,
) -> bytes:
    out = io.BytesIO()
    with puffin.create(out, created_by="puffin conformance") as writer:
        writer.add_blob(
            sketch,
            type=standard.APACHE_DATASKETCHES_THETA_V1,
            fields=[3] if fields is None else fields,
            snapshot_id=1,
            sequence_number=1,
            properties=properties,
            codec=codec,
        )
    return out.getvalue()


def _container(name: str, description: str, data: bytes, verdict: str) -> Vector:
    with puffin.open(data) as reader:
        from puffin.conformance.results import container_result

        result = container_result(
            reader.properties, [(m.to_json_dict(), reader.read_blob(m)) for m in reader.blobs]
        )
    return Vector(
        _TIER,
        name,
        "read-container",
        "theta-ndv",
        description,
        {"result": result},
        inputs={f"{name}.puffin": data},
        verdict=verdict,
    )


def _ndv_vectors() -> Iterator[Vector]:
    sketch = boundary_sketch()
    for ndv, verdict, why in (
        ("12", "valid", "Java's formula (count * (2^63 / theta) in doubles) gives 12"),
        ("13", "valid", "floor of the C++ estimate count / (theta / 2^63) is 13"),
        ("11", "theta-sketch", "neither formula gives 11"),
        ("14", "theta-sketch", "neither formula gives 14"),
    ):
        yield _container(
            f"ndv-boundary-{ndv}",
            f"ndv {ndv} for the boundary sketch: {why}",
            _theta_file(sketch, {standard.NDV: ndv}),
            verdict,
        )
    good = _estimation_bytes()
    ndv = str(puffin.ThetaSketch.deserialize(good).ndv)
    for label, text in (
        ("space", f" {ndv}"),
        ("newline", f"{ndv}\n"),
        ("plus", f"+{ndv}"),
        ("negative", "-1"),
        ("empty", ""),
        ("exponent", "1e3"),
        ("beyond-long", str(1 << 63)),
        ("arabic-digits", "١٢"),
    ):
        yield _container(
            f"ndv-{label}",
            f"ndv property {text!r} is not a plain decimal long",
            _theta_file(good, {standard.NDV: text}),
            "theta-sketch",
        )
    yield _container(
        "ndv-absent",
        "a theta blob without ndv (the property is optional)",
        _theta_file(good, {}),
        "valid",
    )
    yield _container(
        "theta-zstd",
        "a zstd-compressed theta blob, as Iceberg Java writes them",
        _theta_file(good, {standard.NDV: ndv}, codec="zstd"),
        "valid",
    )
    yield _container(
        "theta-two-fields",
        "a theta blob naming two fields",
        _theta_file(good, {standard.NDV: ndv}, fields=[1, 2]),
        "theta-sketch",
    )
    yield _container(
        "theta-bad-seed",
        "a theta blob whose sketch has another seed's hash",
        _theta_file(_edit(good, 6, "<H", 0x1234), {}),
        "theta-sketch",
    )


def theta_rule_vectors() -> Iterator[Vector]:
    for name, description, data in _bad_sketches():
        yield Vector(
            _TIER,
            f"invalid-{name}",
            "read-theta",
            "theta-compact",
            description,
            {"error": "theta-sketch"},
            inputs={f"invalid-{name}.bin": data},
        )
    boundary = puffin.ThetaSketch.deserialize(boundary_sketch())
    yield Vector(
        _TIER,
        "read-ndv-boundary",
        "read-theta",
        "theta-ndv",
        "the ndv boundary sketch: estimate 13.0 in C++, 12.999999999999998 in Java",
        {"result": sketch_result(boundary)},
        inputs={"ndv-boundary.bin": boundary_sketch()},
    )
    yield from _ndv_vectors()
