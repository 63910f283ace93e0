"""Deletion-vector tier: DV blobs read by byte range and through the footer, valid and not.

Valid position sets cover every Roaring container kind, gap keys and high keys; each is read
from a Puffin file by its manifest range, through the file's footer, and from a bare file
that is no Puffin container at all (a reader given ``content_offset`` and
``content_size_in_bytes`` must not need the footer).
"""

from __future__ import annotations

import io
import random
import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from pyroaring import BitMap

import puffin
from puffin.blobs import standard
from tools.conformance_gen.corpus import Vector, positions_result

__all__ = ["DV_SETS", "dv_vectors", "frame_dv", "portable", "positions_of"]

_TIER = "deletion-vector"
DV_MAGIC = bytes.fromhex("D1D33964")
#: Python ``range`` arguments: (start, stop) or (start, stop, step).
Ranges = Sequence[tuple[int, ...]]


def _every(start: int, stop: int, step: int) -> list[tuple[int, ...]]:
    return [(start, stop, step)]


def _random(seed: int, count: int, high: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return [(p, p + 1) for p in sorted(set(rng.randrange(high) for _ in range(count)))]


_K1 = 1 << 32
#: name -> (description, half-open ranges of positions).  Writers can produce all of these.
DV_SETS: dict[str, tuple[str, list[tuple[int, ...]]]] = {
    "empty": ("no positions", []),
    "zero": ("position 0 only", [(0, 1)]),
    "alternating": ("positions 1, 3, 5, 7, 9 (Iceberg Java's sample)", _every(1, 10, 2)),
    "array-container": ("3000 positions every 7: an array container", _every(0, 21000, 7)),
    "bitmap-container": ("10000 even positions: a bitmap container", _every(0, 20000, 2)),
    "run-container": ("[0, 100000): run containers", [(0, 100000)]),
    "full-container": ("[0, 65536): one full container", [(0, 65536)]),
    "all-kinds-one-key": (
        "array, bitmap and run containers under key 0",
        _every(5, 50, 9) + _every(65536, 65536 + 12000, 2) + [(131072, 140000)],
    ),
    "java-all-container-types": (
        "Iceberg Java's all-container-types positions",
        [
            (5, 6),
            (7, 8),
            (65537, 66536),
            (131073, 196607),
            (_K1 + 10, _K1 + 11),
            (_K1 + 20, _K1 + 21),
            (_K1 + 65546, _K1 + 66036),
            (_K1 + 131073, _K1 + 196607),
        ],
    ),
    "key-boundary": (
        "2^32 - 1 and 2^32: the last of key 0, the first of key 1",
        [(_K1 - 1, _K1 + 1)],
    ),
    "gap-keys": (
        "keys 0 and 5 only: empty bitmaps for keys 1-4",
        [(3, 4), (5 * _K1 + 9, 5 * _K1 + 10)],
    ),
    "key-one-only": ("positions under key 1 only", [(_K1 + 1, _K1 + 4)]),
    "many-keys": (
        "one position under each of 100 keys",
        [(k * _K1 + k, k * _K1 + k + 1) for k in range(100)],
    ),
    "random-5000": ("5000 seeded random positions below 10^7", _random(14, 5000, 10**7)),
    "random-wide": ("300 random positions below 2^36", _random(15, 300, 1 << 36)),
    "container-edges": (
        "the first and last value of 16-bit containers",
        [(65535, 65537), (131071, 131073), (_K1 - 65536, _K1 - 65535)],
    ),
    "run-across-keys": ("a run across the key 0 / key 1 boundary", [(_K1 - 70000, _K1 + 70000)]),
    "one-million": ("[0, 1000000): a million positions", [(0, 1_000_000)]),
    "every-third": ("every third position below 600000", _every(0, 600000, 3)),
    "dense-and-sparse": (
        "a dense run, then sparse positions",
        [(0, 5000), *_every(5000, 2000000, 10007)],
    ),
}


def positions_of(ranges: Ranges) -> list[int]:
    out: set[int] = set()
    for args in ranges:
        out.update(range(*args))
    return sorted(out)


def portable(bitmaps: Sequence[tuple[int, bytes]], count: int | None = None) -> bytes:
    """A portable 64-bit Roaring bitmap from (key, serialized 32-bit bitmap) pairs."""
    n = len(bitmaps) if count is None else count
    return struct.pack("<Q", n) + b"".join(struct.pack("<I", k) + bm for k, bm in bitmaps)


def frame_dv(body: bytes, *, magic: bytes = DV_MAGIC, length: int | None = None) -> bytes:
    """``[BE length][magic][body][BE CRC-32 of magic + body]``."""
    size = len(magic) + len(body) if length is None else length
    crc = zlib.crc32(magic + body)
    return struct.pack(">I", size) + magic + body + struct.pack(">I", crc)


def bm32(values: Sequence[int] | range, *, runs: bool = True) -> bytes:
    bitmap = BitMap(values)
    if runs:
        bitmap.run_optimize()
    return bytes(bitmap.serialize())


def _data_file(name: str) -> str:
    return f"s3://bucket/db/table/data/{name}.parquet"


def write_dv_file(vectors: dict[str, list[tuple[int, ...]]]) -> tuple[bytes, list[Any]]:
    """A Puffin file of DVs written by :func:`puffin.write_deletion_vectors`, and its entries."""
    out = io.BytesIO()
    positions = {name: positions_of(ranges) for name, ranges in vectors.items()}
    entries = puffin.write_deletion_vectors(out, positions, created_by="puffin conformance")
    return out.getvalue(), entries


def _range_args(entry: Any, *, record_count: int | None = None) -> dict[str, Any]:
    return {
        "offset": entry.content_offset,
        "length": entry.content_size_in_bytes,
        "record-count": entry.record_count if record_count is None else record_count,
    }


def _valid_set_vectors() -> Iterator[Vector]:
    for name, (description, ranges) in DV_SETS.items():
        file_name = _data_file(name)
        data, entries = write_dv_file({file_name: ranges})
        expected = positions_result(positions_of(ranges))
        puffin_input = {f"{name}.puffin": data}
        yield Vector(
            _TIER,
            f"range-{name}",
            "read-dv",
            "dv-layout",
            f"{description}; read by content offset and size",
            {"result": expected},
            args=_range_args(entries[0]),
            inputs=puffin_input,
            verdict="valid",
        )
        yield Vector(
            _TIER,
            f"footer-{name}",
            "read-dvs",
            "dv-properties",
            f"{description}; read through the footer",
            {"result": {"vectors": {file_name: expected}}},
            inputs=puffin_input,
            verdict="valid",
        )
        payload = data[entries[0].content_offset :][: entries[0].content_size_in_bytes]
        bare = b"not a puffin file" + payload + b"\x00trailing"
        yield Vector(
            _TIER,
            f"bare-{name}",
            "read-dv",
            "dv-layout",
            f"{description}; a DV at a byte range of a file with no Puffin footer",
            {"result": expected},
            args={"offset": 17, "length": len(payload), "record-count": len(positions_of(ranges))},
            inputs={f"bare-{name}.bin": bare},
        )


def _multi_dv() -> Iterator[Vector]:
    files: dict[str, list[tuple[int, ...]]] = {
        _data_file(f"multi-{i}"): [(i * 10, i * 10 + i + 1)] for i in range(4)
    }
    data, entries = write_dv_file(files)
    expected = {name: positions_result(positions_of(r)) for name, r in files.items()}
    inputs = {"multi-dv.puffin": data}
    yield Vector(
        _TIER,
        "multi-dv",
        "read-dvs",
        "dv-properties",
        "four DVs for four data files in one Puffin file: each file gets its own "
        "positions (DuckDB 1.5.5 applies the first DV to every data file)",
        {"result": {"vectors": expected}},
        inputs=inputs,
        verdict="valid",
    )
    for i, entry in enumerate(entries):
        yield Vector(
            _TIER,
            f"multi-dv-blob-{i}",
            "read-dv",
            "dv-layout",
            f"blob {i} of a four-DV file read by its own range",
            {"result": expected[entry.referenced_data_file]},
            args=_range_args(entry),
            inputs=inputs,
            verdict="valid",
        )


def dv_vectors() -> Iterator[Vector]:
    """The valid deletion-vector vectors (the invalid ones: :mod:`.gen_dv_bad`)."""
    yield from _valid_set_vectors()
    yield from _multi_dv()


def dv_blob_file(
    payload: bytes,
    *,
    properties: dict[str, str] | None = None,
    snapshot_id: int = -1,
    sequence_number: int = -1,
    codec: str | None = None,
    extra: Sequence[bytes] = (),
) -> bytes:
    """A Puffin file with DV blobs written through :func:`puffin.create` as given."""
    out = io.BytesIO()
    with puffin.create(out, created_by="puffin conformance") as writer:
        for data in (payload, *extra):
            writer.add_blob(
                data,
                type=standard.DELETION_VECTOR_V1,
                fields=[2147483645],
                snapshot_id=snapshot_id,
                sequence_number=sequence_number,
                properties=properties,
                codec=codec,
            )
    return out.getvalue()
