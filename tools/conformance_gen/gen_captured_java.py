"""Captured tier, Iceberg Java 1.10.2 on Spark: files its DELETE and compute_table_stats wrote.

testdata/README.md ("iceberg-java-spark/") tells how they were made: one Parquet data file
of ids 0..2999 in row order, ``DELETE WHERE id % 7 = 0``, then ``DELETE WHERE id >= 2000 AND
id < 2500`` (Java merges it into the live vector: a second Puffin file), then
``compute_table_stats``. The deleted positions follow from the conditions and the ids, not
from a reader; offsets, lengths and record counts are Java's own, from its ``delete_files``
metadata table; the statistics file's expected reading is what Java's ``Puffin.read``
returned (``table-stats.expected.json``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from tools.conformance_gen.corpus import Vector, positions_result
from tools.conformance_gen.gen_captured import captured_vector

__all__ = ["java_spark_vectors"]

_FOLDER = "iceberg-java-spark"
_DATA = (
    "file:/tmp/puffin-java-capture/warehouse/db/cap/data/"
    "00000-0-29c6e791-7057-4c6a-80e8-eae0d9bfbc4e-0-00001.parquet"
)
_ROWS = 3000
#: file -> (WHERE conditions that deleted its positions, (content offset, size, record count))
_DVS = {
    "dv-delete.puffin": (("id % 7 = 0",), (4, 898, 429)),
    "dv-merged.puffin": (("id % 7 = 0", "id >= 2000 AND id < 2500"), (4, 1467, 857)),
}


def _deleted(conditions: tuple[str, ...]) -> list[int]:
    """Positions = ids in the one data file; each condition as written in Java's DELETE."""
    tests = {
        "id % 7 = 0": lambda i: i % 7 == 0,
        "id >= 2000 AND id < 2500": lambda i: 2000 <= i < 2500,
    }
    return [i for i in range(_ROWS) if any(tests[c](i) for c in conditions)]


def _dvs() -> Iterator[Vector]:
    for name, (conditions, (offset, length, count)) in _DVS.items():
        rel = f"{_FOLDER}/{name}"
        positions = _deleted(conditions)
        assert len(positions) == count, (name, len(positions), count)
        how = "Iceberg Java's DELETE WHERE " + " then ".join(conditions)
        if len(conditions) > 1:
            how += " (merged into the live vector)"
        yield captured_vector(
            rel, "read-dvs", "dv-properties", f"{how}; read through the footer",
            {"result": {"vectors": {_DATA: positions_result(positions)}}},
            verdict="valid", suffix="-footer",
        )
        yield captured_vector(
            rel, "read-dv", "dv-layout", f"{how}; by the range in Java's manifest",
            {"result": positions_result(positions)},
            args={"offset": offset, "length": length, "record-count": count},
            verdict="valid", suffix="-range",
        )


def _stats() -> Iterator[Vector]:
    rel = f"{_FOLDER}/table-stats.puffin"
    expected = Path(__file__).resolve().parents[2] / "testdata" / _FOLDER
    result = json.loads((expected / "table-stats.expected.json").read_text(encoding="utf-8"))
    yield captured_vector(
        rel, "read-container", "theta-ndv",
        "Iceberg Java's compute_table_stats after both deletes: two zstd theta blobs (id, name) "
        "with ndv 2143 and 1000; expected as Java's Puffin.read reads it",
        {"result": result}, verdict="valid",
    )


def java_spark_vectors() -> Iterator[Vector]:
    """The captured vectors of Iceberg Java's own Spark writes."""
    yield from _dvs()
    yield from _stats()
