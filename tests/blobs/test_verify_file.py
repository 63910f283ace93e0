"""``puffin.verify_file``: the library's one verifier, and the rules it shares.

Bad content never raises; each problem says what and where.  The ``ndv`` boundary sketch
is one where Iceberg Java's ``(long) (count * (2^63 / theta))`` in doubles and ``floor`` of
the C++ estimate ``count / (theta / 2^63)`` differ by one: both are valid Iceberg files.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest

import puffin
from _paths import TESTDATA
from puffin.blobs import standard

# Found by searching counts and thetas near integer estimates (see the module docstring).
BOUNDARY_COUNT = 4097
BOUNDARY_THETA = 377813545911676065


def _sketch(count: int, theta: int) -> puffin.ThetaSketch:
    rng = np.random.default_rng(7)
    hashes = np.unique(rng.integers(1, theta, size=count * 2, dtype=np.uint64))[:count]
    assert len(hashes) == count
    blob = puffin.ThetaSketch._make(hashes, theta, None).serialize()
    return puffin.ThetaSketch.deserialize(blob)


def _theta_file(sketch: puffin.ThetaSketch, ndv: str | None) -> bytes:
    out = io.BytesIO()
    props = {} if ndv is None else {standard.NDV: ndv}
    with puffin.create(out) as writer:
        writer.add_blob(
            sketch.serialize(),
            type=standard.APACHE_DATASKETCHES_THETA_V1,
            fields=[1],
            snapshot_id=1,
            sequence_number=1,
            properties=props,
        )
    return out.getvalue()


def test_java_and_cpp_ndv_differ_at_the_boundary() -> None:
    cpp = BOUNDARY_COUNT / (float(BOUNDARY_THETA) / float(1 << 63))
    java = standard.java_ndv(BOUNDARY_COUNT, BOUNDARY_THETA)
    assert math.floor(cpp) + 1 == java == 100018


@pytest.mark.parametrize("ndv", ["100018", "100017"])
def test_java_formula_boundary_is_accepted(ndv: str) -> None:
    sketch = _sketch(BOUNDARY_COUNT, BOUNDARY_THETA)
    assert math.floor(sketch.estimate) == 100017  # the C++ estimate datasketches gives
    assert puffin.verify_file(_theta_file(sketch, ndv)) == []


@pytest.mark.parametrize("ndv", ["100019", "100016"])
def test_ndv_beside_the_boundary_is_rejected(ndv: str) -> None:
    problems = puffin.verify_file(_theta_file(_sketch(BOUNDARY_COUNT, BOUNDARY_THETA), ndv))
    assert [(p.category, p.blob_index, p.field) for p in problems] == [
        ("theta-sketch", 0, standard.NDV)
    ]
    assert "Java records 100018" in problems[0].message


@pytest.mark.parametrize("ndv", ["9" * 5000, str(1 << 63), "5\n", "-1", "", "٣"])
def test_malformed_ndv_is_a_problem_not_a_crash(ndv: str) -> None:
    problems = puffin.verify_file(_theta_file(_sketch(10, standard.JAVA_LONG_MAX), ndv))
    assert len(problems) == 1
    assert problems[0].category == "theta-sketch" and problems[0].field == standard.NDV
    assert "Java long" in problems[0].message


def test_parse_long_property_guards_digits_before_int() -> None:
    assert standard.parse_long_property({"x": "0"}, "x") == 0
    assert standard.parse_long_property({}, "x") is None
    assert standard.parse_long_property({"x": str(standard.JAVA_LONG_MAX)}, "x") == (1 << 63) - 1
    with pytest.raises(puffin.InvalidBlobError, match="Java long") as info:
        standard.parse_long_property({"x": "1" * 10_000}, "x", blob_index=4)
    assert info.value.blob_index == 4 and info.value.field == "x"
    assert len(str(info.value)) < 200  # the value is shortened in the message


def test_two_dvs_for_one_data_file_is_one_problem() -> None:
    out = io.BytesIO()
    puffin.write_deletion_vectors(out, {"a.parquet": [1, 2]})
    data = out.getvalue()
    with puffin.open(data) as reader:
        blob = reader.blobs[0]
        payload = reader.read_raw(blob)
    twice = io.BytesIO()
    with puffin.create(twice) as writer:
        for _ in range(2):
            writer.add_blob(
                payload,
                type=blob.type,
                fields=list(blob.fields),
                snapshot_id=-1,
                sequence_number=-1,
                properties=dict(blob.properties),
            )
    problems = puffin.verify_file(twice.getvalue())
    with puffin.open(twice.getvalue()) as reader:
        second = reader.blobs[1].offset
    assert [(p.category, p.blob_index, p.field, p.offset) for p in problems] == [
        ("deletion-vector", 1, standard.REFERENCED_DATA_FILE, second)
    ]


def test_every_problem_of_a_damaged_file_is_located(tmp_path: Path) -> None:
    """A CRC flip in one DV blob: the problem names the blob and its file offset."""
    out = tmp_path / "dv.puffin"
    entries = puffin.write_deletion_vectors(str(out), {"a": [1], "b": [2, 3]})
    data = bytearray(out.read_bytes())
    second = entries[1]
    data[second.content_offset + second.content_size_in_bytes - 1] ^= 1
    problems = puffin.verify_file(bytes(data))
    assert len(problems) == 1
    p = problems[0]
    assert (p.category, p.blob_index) == ("deletion-vector", 1)
    # A file offset inside the damaged blob (the CRC's, where the decoder can say so).
    start = second.content_offset
    assert p.offset is not None and start <= p.offset < start + second.content_size_in_bytes
    assert "CRC" in p.message
    assert "blob 1" not in p.message  # the index is in blob_index, not repeated in the text


def test_golden_files_are_valid(tmp_path: Path) -> None:
    golden = sorted((TESTDATA / "iceberg-java" / "puffin").glob("*.bin"))
    assert len(golden) == 3
    for path in golden:
        assert puffin.verify_file(str(path)) == [], path


def test_unopenable_sources_are_one_problem(tmp_path: Path) -> None:
    [missing] = puffin.verify_file(str(tmp_path / "nope.puffin"))
    assert missing.category == "io" and missing.error == "FileNotFoundError"
    data = (TESTDATA / "iceberg-java" / "puffin" / "empty-puffin-uncompressed.bin").read_bytes()
    [short] = puffin.verify_file(data[:-1])
    assert short.category == "invalid-file" and short.offset is not None
    assert str(short).startswith("offset ")
