"""Captured tier: files other implementations wrote, with provenance and what they hold.

The bytes are copied from the repository's ``testdata/`` (itself copied from the upstream
test resources, see ``testdata/README.md``); an installed package, which has no
``testdata/``, finds the same bytes in its shipped corpus.  Expected results come from the
upstream documentation of each file, not from this library.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tools.conformance_gen.build import container_result
from tools.conformance_gen.corpus import Vector, positions_result
from tools.conformance_gen.gen_dv import DV_SETS, positions_of

__all__ = ["SOURCES", "captured_bytes", "captured_vector", "captured_vectors"]

_TIER = "captured"
_K = 1 << 32
_APACHE = "Apache-2.0"
#: folder -> (who wrote the files, upstream location)
SOURCES: dict[str, tuple[str, str]] = {
    "iceberg-java/puffin": (
        "Apache Iceberg Java",
        "apache/iceberg core/src/test/resources/org/apache/iceberg/puffin/v1/",
    ),
    "iceberg-java/deletes": (
        "Apache Iceberg Java",
        "apache/iceberg core/src/test/resources/org/apache/iceberg/deletes/",
    ),
    "croaring": ("CRoaring", "RoaringBitmap/CRoaring tests/testdata/"),
    "roaring-format-spec": ("RoaringFormatSpec", "RoaringBitmap/RoaringFormatSpec testdata64/"),
    "iceberg-go": (
        "apache/iceberg-go (single-blob-dv.puffin written by Iceberg Java)",
        "apache/iceberg-go test fixtures",
    ),
    "sail": (
        "Sail 0.7.2 (pysail, lakehq/sail)",
        "captured 2026-11-23 from Sail's DELETE, see testdata/README.md: ",
    ),
    "iceberg-java-spark": (
        "Apache Iceberg Java 1.10.2 on Spark 3.5.9 (iceberg-spark-runtime-3.5_2.12-1.10.2.jar)",
        "captured 2026-11-24 from Java's DELETE and compute_table_stats, see testdata/README.md: ",
    ),
    "ducklake": (
        "DuckLake 1.0 (DuckDB 1.5.5, duckdb-extension-ducklake 1.5.5)",
        "captured 2026-11-23 from DuckLake's DELETE, see testdata/README.md: ",
    ),
}
#: folder -> licence, where it is not Apache-2.0
_LICENCES = {"ducklake": "MIT"}


def _flat(rel: str) -> str:
    return rel.replace("/", "-")


def captured_bytes(rel: str) -> bytes:
    """A captured file's bytes: the repository's testdata, else the committed corpus."""
    repo = Path(__file__).resolve().parents[2]
    shipped = repo / "src" / "puffin" / "conformance" / "corpus" / _TIER / _flat(rel)
    for candidate in (repo / "testdata" / rel, shipped):
        if candidate.is_file():
            return candidate.read_bytes()
    raise FileNotFoundError(f"captured file {rel} is neither in testdata/ nor in the corpus")


def _provenance(rel: str) -> dict[str, str]:
    folder, name = rel.rsplit("/", 1)
    writer, upstream = SOURCES[folder]
    return {
        "written-by": writer,
        "upstream": upstream + name,
        "licence": _LICENCES.get(folder, _APACHE),
        "copied-from": f"testdata/{rel}",
    }


def captured_vector(
    rel: str,
    op: str,
    spec: str,
    description: str,
    expected: dict[str, Any],
    args: dict[str, Any] | None = None,
    verdict: str | None = None,
    suffix: str = "",
) -> Vector:
    name = _flat(rel).rsplit(".", 1)[0] + suffix
    return Vector(
        _TIER,
        name,
        op,
        spec,
        description,
        expected,
        args=args or {},
        inputs={_flat(rel): captured_bytes(rel)},
        verdict=verdict,
        provenance=_provenance(rel),
    )


_TEXT = (
    "some blob \u0000 binary data \U0001f92f that is not very very very very very very long, is it?"
)


def _java_sample(offsets: tuple[tuple[int, int], tuple[int, int]], codec: str | None) -> Any:
    blobs = []
    contents = (("some-blob", 1, b"abcdefghi"), ("some-other-blob", 2, _TEXT.encode()))
    for (offset, length), (kind, field, data) in zip(offsets, contents, strict=True):
        meta = {
            "type": kind,
            "fields": [field],
            "snapshot-id": 2,
            "sequence-number": 1,
            "offset": offset,
            "length": length,
            "compression-codec": codec,
        }
        blobs.append((meta, data))
    return container_result({"created-by": "Test 1234"}, blobs)


def _puffin_files() -> Iterator[Vector]:
    base = "iceberg-java/puffin/"
    yield captured_vector(
        base + "empty-puffin-uncompressed.bin",
        "read-container",
        "blobs-required",
        'Java\'s empty file: footer exactly {"blobs":[]}',
        {"result": container_result({}, [])},
        verdict="valid",
    )
    yield captured_vector(
        base + "sample-metric-data-uncompressed.bin",
        "read-container",
        "blob-offset",
        "Java's two-blob sample, uncompressed",
        {"result": _java_sample(((4, 9), (13, 83)), None)},
        verdict="valid",
    )
    yield captured_vector(
        base + "sample-metric-data-compressed-zstd.bin",
        "read-container",
        "codec-zstd",
        "Java's two-blob sample, zstd blobs",
        {"result": _java_sample(((4, 22), (26, 77)), "zstd")},
        verdict="valid",
    )
    go_positions = positions_result([1, 3, 5, 7, 9])
    for rel, data_file, note in (
        (
            "iceberg-go/single-blob-dv.puffin",
            "s3://warehouse/db/table/data/00000-0-abc.parquet",
            "written by Iceberg Java",
        ),
        (
            "iceberg-go/deletion-vector-v1.puffin",
            "data/test.parquet",
            "written by iceberg-go: fields [], properties sorted",
        ),
    ):
        yield captured_vector(
            rel,
            "read-dvs",
            "dv-properties",
            f"one DV of 1, 3, 5, 7, 9; {note}",
            {"result": {"vectors": {data_file: go_positions}}},
            verdict="valid",
            suffix="-footer",
        )
        yield captured_vector(
            rel,
            "read-dv",
            "dv-layout",
            f"the same DV by its range; {note}",
            {"result": go_positions},
            args={"offset": 4, "length": 50, "record-count": 5},
            verdict="valid",
            suffix="-range",
        )


_DV_PAYLOADS = {
    "empty-position-index.bin": [],
    "small-alternating-values-position-index.bin": [1, 3, 5, 7, 9],
    "small-and-large-values-position-index.bin": [100, 101, 2147483747, 2147483748],
    "all-container-types-position-index.bin": positions_of(DV_SETS["java-all-container-types"][1]),
}


def _dv_files() -> Iterator[Vector]:
    for name, positions in _DV_PAYLOADS.items():
        rel = "iceberg-java/deletes/" + name
        size = len(captured_bytes(rel))
        yield captured_vector(
            rel,
            "read-dv",
            "dv-layout",
            f"Java's DV payload {name}",
            {"result": positions_result(positions)},
            args={"offset": 0, "length": size, "record-count": len(positions)},
        )


def _bitmaps() -> Iterator[Vector]:
    spread = sorted(k * _K + v for k in range(10) for v in range(10))
    good = {
        "64mapempty.bin": [],
        "64map32bitvals.bin": list(range(10)),
        "64mapspreadvals.bin": spread,
    }
    for folder in ("iceberg-java/deletes", "croaring"):
        for name, positions in good.items():
            yield captured_vector(
                f"{folder}/{name}",
                "read-bitmap",
                "dv-portable",
                f"portable 64-bit bitmap {name}",
                {"result": positions_result(positions)},
            )
    yield captured_vector(
        "iceberg-java/deletes/64maphighvals.bin",
        "read-bitmap",
        "dv-portable",
        "a copy mangled into U+FFFD bytes upstream: its first key is negative as int32",
        {"error": "deletion-vector"},
    )
    yield captured_vector(
        "croaring/64maphighvals.bin",
        "read-bitmap",
        "dv-positions",
        "a valid portable bitmap whose keys are >= 2^31: positions >= 2^63, which a DV cannot hold",
        {"error": "deletion-vector"},
    )
    for name in (
        "64mapemptyinput.bin",
        "64mapsizetoosmall.bin",
        "64mapinvalidsize.bin",
        "64mapkeytoosmall.bin",
    ):
        yield captured_vector(
            f"croaring/{name}",
            "read-bitmap",
            "dv-portable",
            f"CRoaring's malformed {name}",
            {"error": "deletion-vector"},
        )
    yield from _format_spec()


def _format_spec() -> Iterator[Vector]:
    evens = list(range(0, 65536, 2))
    first = evens + list(range(_K, _K + 1_000_000)) + [1 << 48]
    second: list[int] = []
    for base in (0, _K):
        second += list(range(base, base + 0x9001)) + list(range(base + 0xA000, base + 0x10001))
        second += [base + 131072, base + 131077, *list(range(base + 524288, base + 589824, 2))]
    for name, positions in (("bitmap64.bin", first), ("portable_bitmap64.bin", second)):
        yield captured_vector(
            f"roaring-format-spec/{name}",
            "read-bitmap",
            "dv-portable",
            f"RoaringFormatSpec's {name}",
            {"result": positions_result(sorted(positions))},
        )


# Sail's DELETE (testdata/README.md, sail/): a table of 3 data files of 2000 rows whose ``id``
# runs from the file's first id, one of them (ids 4000-5999) already holding our DV of
# positions 5, 6 and 1000.  Expected positions follow from the WHERE condition and the ids,
# not from a reader.
_SAIL_DATA = "file:///tmp/puffin-sail-capture/warehouse/db/sail/data/00000-0-{}.parquet"
_SAIL_FILES = {
    0: _SAIL_DATA.format("04ff169e-8e57-43f3-b702-d1a137036071"),
    2000: _SAIL_DATA.format("ae5c6310-a3a1-41ba-ada9-b7e984a99ab5"),
    4000: _SAIL_DATA.format("45562e2e-3f26-4d61-8045-ffb015c006ae"),
}
_SAIL_ROWS = 2000
_SAIL_BEFORE = {4000: [5, 6, 1000]}  # our DV, which Sail merged with its own deletes
_SAIL_WHERE = "id % 7 = 0 OR (id >= 4100 AND id < 4600)"
#: file -> (first id of each blob's data file, (offset, length) of the blob as Sail's manifest
#: records them)
_SAIL_PUFFINS = {
    "sail/two-dvs.puffin": ((0, (4, 612)), (2000, (616, 612))),
    "sail/merged-dv.puffin": ((4000, (4, 899)),),
}


def _sail_positions(first_id: int) -> list[int]:
    deleted = {
        p for p in range(_SAIL_ROWS) if (first_id + p) % 7 == 0 or 4100 <= first_id + p < 4600
    }
    return sorted(deleted.union(_SAIL_BEFORE.get(first_id, [])))


def _sail() -> Iterator[Vector]:
    for rel, blobs in _SAIL_PUFFINS.items():
        how = f"Sail's DELETE WHERE {_SAIL_WHERE}: {len(blobs)} DV(s)"
        if any(first in _SAIL_BEFORE for first, _ in blobs):
            how += ", its deletes merged with an earlier DV"
        expected = {
            _SAIL_FILES[first]: positions_result(_sail_positions(first)) for first, _ in blobs
        }
        yield captured_vector(
            rel,
            "read-dvs",
            "dv-properties",
            f"{how}; read through the footer",
            {"result": {"vectors": expected}},
            verdict="valid",
            suffix="-footer",
        )
        for index, (first, (offset, length)) in enumerate(blobs):
            positions = _sail_positions(first)
            yield captured_vector(
                rel,
                "read-dv",
                "dv-layout",
                f"{how}; blob {index} by the range in Sail's manifest",
                {"result": positions_result(positions)},
                args={"offset": offset, "length": length, "record-count": len(positions)},
                verdict="valid",
                suffix=f"-blob-{index}",
            )


# DuckLake's DELETE (testdata/README.md, ducklake/) with WRITE_DELETION_VECTORS: one data file
# per table whose ``id`` equals the row position, and a bare deletion-vector-v1 blob (no Puffin
# magic or footer, though named ``.puffin``; the catalog records footer_size 0).  Expected
# positions follow from the WHERE condition, not from a reader.
_DUCKLAKE: dict[str, tuple[int, str, list[int]]] = {
    "ducklake/array-dv.puffin": (
        5000,
        "id % 7 = 3 OR id BETWEEN 4000 AND 4099",
        [p for p in range(5000) if p % 7 == 3 or 4000 <= p <= 4099],
    ),
    "ducklake/bitset-dv.puffin": (
        140000,
        "id BETWEEN 60000 AND 139999 OR id % 1000 = 7",
        [p for p in range(140000) if 60000 <= p <= 139999 or p % 1000 == 7],
    ),
}


def _ducklake() -> Iterator[Vector]:
    for rel, (rows, where, positions) in _DUCKLAKE.items():
        size = len(captured_bytes(rel))
        yield captured_vector(
            rel,
            "read-dv",
            "dv-layout",
            f"DuckLake's DELETE WHERE {where} on {rows} rows: a bare DV blob, the whole file",
            {"result": positions_result(positions)},
            args={"offset": 0, "length": size, "record-count": len(positions)},
        )


def captured_vectors() -> Iterator[Vector]:
    yield from _puffin_files()
    yield from _dv_files()
    yield from _bitmaps()
    yield from _sail()
    yield from _ducklake()


def java_digest(rel: str) -> dict[str, Any]:
    """Size and SHA-256 of a captured Java file: the bytes a writer must reproduce."""
    data = captured_bytes(rel)
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
