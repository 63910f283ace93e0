"""`puffin inspect`, `verify` and `dv` on deletion vectors, run as subprocesses.

Positions come from testdata/README.md (files written by Iceberg Java and iceberg-go).
Budget: about 10 s.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import puffin
from tests.cli.test_cli import ROOT, _env, check_shape, cli, documented_shape, err, json_of, ok, out

GO = ROOT / "testdata" / "iceberg-go"
JAVA_DV = GO / "single-blob-dv.puffin"  # written by Iceberg Java
GO_DV = GO / "deletion-vector-v1.puffin"  # written by iceberg-go
JAVA_REF = "s3://warehouse/db/table/data/00000-0-abc.parquet"
DELETES = ROOT / "testdata" / "iceberg-java" / "deletes"
ALL_CONTAINERS = DELETES / "all-container-types-position-index.bin"
HIGH = 1 << 32


def _readme_all_containers() -> np.ndarray:
    """all-container-types-position-index.bin's positions, as testdata/README.md states them."""
    parts = []
    for base, small in ((0, [5, 7]), (HIGH, [10, 20])):
        lo, hi = (65537, 66536) if base == 0 else (65546, 66036)
        parts += [
            np.array(small) + base,
            np.arange(lo, hi) + base,
            np.arange(131073, 196607) + base,
        ]
    return np.concatenate(parts)


def _patched(src: Path, dst: Path, old: bytes, new: bytes) -> Path:
    data = src.read_bytes()
    assert len(old) == len(new) and data.count(old) == 1
    dst.write_bytes(data.replace(old, new))
    return dst


def test_inspect_dv_golden_files() -> None:
    shape = documented_shape("inspect")
    for path, referenced, fields, props in (
        (JAVA_DV, JAVA_REF, [2147483645], ["referenced-data-file", "cardinality"]),
        (GO_DV, "data/test.parquet", [], ["cardinality", "referenced-data-file"]),
    ):
        report = json_of(cli("inspect", "--json", path))
        check_shape(report, shape)
        (blob,) = report["blobs"]
        assert (blob["type"], blob["fields"], blob["snapshot_id"], blob["sequence_number"]) == (
            "deletion-vector-v1",
            fields,
            -1,
            -1,
        )
        assert (blob["offset"], blob["length"], blob["compression_codec"]) == (4, 50, None)
        assert list(blob["properties"]) == props  # the file's order
        assert blob["deletion_vector"] == {
            "referenced_data_file": referenced,
            "cardinality": 5,
            "positions": [1, 3, 5, 7, 9],
            "positions_complete": True,
        }
        assert blob["theta"] is None and blob["error"] is None and report["valid"] is True
    text = ok(cli("inspect", JAVA_DV, "--positions", "2"))
    assert "data file        " + JAVA_REF in text
    assert "cardinality      5" in text
    assert "positions        1, 3  … first 2 of 5 (--positions all for every one)" in text


def test_inspect_positions_limit_on_a_large_dv(tmp_path: Path) -> None:
    path = tmp_path / "dv.puffin"
    positions = _readme_all_containers()
    puffin.write_deletion_vectors(path, {"f.parquet": positions})
    few = json_of(cli("inspect", "--json", path))["blobs"][0]["deletion_vector"]
    assert few["cardinality"] == 132561 == len(positions)
    assert few["positions"] == positions[:10].tolist() and not few["positions_complete"]
    every = json_of(cli("inspect", "--json", "--positions", "all", path))
    dv = every["blobs"][0]["deletion_vector"]
    assert dv["positions"] == positions.tolist() and dv["positions_complete"]


def test_verify_and_inspect_report_broken_dvs(tmp_path: Path) -> None:
    data = bytearray(JAVA_DV.read_bytes())
    data[4 + 50 - 1] ^= 0x01  # last byte of the CRC
    bad_crc = tmp_path / "bad-crc.puffin"
    bad_crc.write_bytes(bytes(data))
    bad_count = _patched(
        JAVA_DV, tmp_path / "count.puffin", b'"cardinality":"5"', b'"cardinality":"6"'
    )
    bad_snapshot = _patched(
        GO_DV, tmp_path / "snap.puffin", b'"snapshot-id":-1', b'"snapshot-id":-2'
    )
    no_ref = _patched(
        JAVA_DV, tmp_path / "noref.puffin", b'"referenced-data-file"', b'"referenced-data-fil_"'
    )
    proc = cli("verify", JAVA_DV, GO_DV, bad_crc, bad_count, bad_snapshot, no_ref)
    assert proc.returncode == 1 and err(proc) == ""
    lines = out(proc).splitlines()
    assert lines[:2] == [f"{JAVA_DV}: OK (1 blob)", f"{GO_DV}: OK (1 blob)"]
    # The offset is the blob's (a file offset); the CRC's place in the payload, after the
    # 4-byte length and the 42 bytes of magic and bitmap, is in the message.
    assert lines[2].startswith(f"{bad_crc}, blob 0, offset 4: DeletionVectorError: ")
    assert "deletion vector CRC-32 mismatch: stored 0x" in lines[2]
    assert lines[2].endswith("(at byte 46 of the payload)")
    assert lines[3].startswith(f"{bad_count}, blob 0, offset 4: DeletionVectorError: ")
    assert lines[3].endswith("deletion vector holds 5 positions, expected 6")
    assert lines[4].startswith(
        f"{bad_snapshot}, blob 0, offset 4, field snapshot-id: DeletionVectorError: "
    )
    assert lines[5].startswith(
        f"{no_ref}, blob 0, offset 4, field referenced-data-file: DeletionVectorError: "
    )
    assert lines[6] == "2 of 6 files valid"
    twice = tmp_path / "twice.puffin"
    with puffin.create(twice) as writer:
        for _ in range(2):
            writer.add_blob(
                JAVA_DV.read_bytes()[4:54],
                type="deletion-vector-v1",
                fields=[2147483645],
                properties={"referenced-data-file": "a.parquet", "cardinality": "5"},
            )
    proc = cli("verify", "-q", twice)
    assert proc.returncode == 1
    assert out(proc) == (
        f"{twice}, blob 1, offset 54, field referenced-data-file: DeletionVectorError: a second "
        "deletion vector for data file 'a.parquet' (the first is blob 0)\n"
    )

    report = json_of(cli("inspect", "--json", bad_crc))
    check_shape(report, documented_shape("inspect"))
    (blob,) = report["blobs"]
    assert report["valid"] is False and blob["deletion_vector"] is None
    assert blob["error"]["type"] == "DeletionVectorError" and blob["error"]["offset"] == 4
    proc = cli("inspect", bad_crc)
    assert proc.returncode == 1 and err(proc) == ""
    assert "error            DeletionVectorError: deletion vector CRC-32 mismatch" in out(proc)


def test_dv_formats_on_golden_files() -> None:
    for path in (JAVA_DV, GO_DV):
        assert ok(cli("dv", path)) == "1\n3\n5\n7\n9\n"
    assert ok(cli("dv", JAVA_DV, "--format", "ranges")) == "1\n3\n5\n7\n9\n"
    report = json_of(cli("dv", JAVA_DV, "--format", "json"))
    check_shape(report, documented_shape("dv"))
    assert report["deletion_vectors"] == [
        {
            "blob_index": 0,
            "referenced_data_file": JAVA_REF,
            "offset": 4,
            "length": 50,
            "cardinality": 5,
            "positions": [1, 3, 5, 7, 9],
        }
    ]
    # By manifest range, without the footer: a Puffin file and bare Java DV payloads.
    assert ok(cli("dv", JAVA_DV, "--offset", 4, "--length", 50, "--record-count", 5)) == (
        "1\n3\n5\n7\n9\n"
    )
    expected = _readme_all_containers()
    size = ALL_CONTAINERS.stat().st_size
    lines = ok(cli("dv", ALL_CONTAINERS, "--offset", 0, "--length", size)).split()
    assert np.array_equal(np.array(lines, dtype=np.int64), expected)
    assert ok(cli("dv", ALL_CONTAINERS, "--offset", 0, "--length", size, "--format", "ranges")) == (
        "5\n7\n65537-66535\n131073-196606\n"
        f"{HIGH + 10}\n{HIGH + 20}\n{HIGH + 65546}-{HIGH + 66035}\n"
        f"{HIGH + 131073}-{HIGH + 196606}\n"
    )
    small = DELETES / "small-and-large-values-position-index.bin"
    report = json_of(
        cli("dv", small, "--offset", 0, "--length", 56, "--format", "json", "--data-file", "x")
    )
    check_shape(report, documented_shape("dv"))
    assert report["deletion_vectors"] == [
        {
            "blob_index": None,
            "referenced_data_file": "x",
            "offset": 0,
            "length": 56,
            "cardinality": 4,
            "positions": [100, 101, 2147483747, 2147483748],
        }
    ]
    empty = DELETES / "empty-position-index.bin"
    assert ok(cli("dv", empty, "--offset", 0, "--length", 20)) == ""


def test_dv_selection_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "two.puffin"
    puffin.write_deletion_vectors(path, {"a.parquet": [1, 2, 3, 10], "b.parquet": [7]})
    assert (
        ok(cli("dv", path))
        == "# a.parquet (4 positions)\n1\n2\n3\n10\n# b.parquet (1 positions)\n7\n"
    )
    assert ok(cli("dv", path, "--data-file", "b.parquet")) == "7\n"
    assert ok(cli("dv", path, "--data-file", "a.parquet", "--format", "ranges")) == "1-3\n10\n"
    report = json_of(cli("dv", path, "--format", "json"))
    check_shape(report, documented_shape("dv"))
    assert [d["referenced_data_file"] for d in report["deletion_vectors"]] == [
        "a.parquet",
        "b.parquet",
    ]

    proc = cli("dv", path, "--data-file", "c.parquet")
    assert proc.returncode == 1 and out(proc) == ""
    assert err(proc) == (
        f"puffin dv: error: {path}: no deletion vector for data file 'c.parquet' "
        "(the file has DVs for: a.parquet, b.parquet)\n"
    )
    proc = cli("dv", ROOT / "testdata/iceberg-java/puffin/sample-metric-data-uncompressed.bin")
    assert proc.returncode == 1 and "no deletion-vector-v1 blob in the file" in err(proc)
    proc = cli("dv", JAVA_DV, "--offset", 4, "--length", 50, "--record-count", 4)
    assert proc.returncode == 1 and out(proc) == ""
    assert err(proc).endswith(
        "deletion vector holds 5 positions, expected 4 (deletion vector at [4, 54), offset 4)\n"
    )
    proc = cli("dv", JAVA_DV, "--offset", 4, "--length", 5000)
    assert proc.returncode == 1 and "outside the file of 384 bytes" in err(proc)
    proc = cli("dv", JAVA_DV, "--offset", 5, "--length", 50)  # misaligned range
    assert (
        proc.returncode == 1 and "DeletionVector" not in err(proc) and "Traceback" not in err(proc)
    )


def test_dv_stops_quietly_when_the_reader_goes_away(tmp_path: Path) -> None:
    path = tmp_path / "big.puffin"
    puffin.write_deletion_vectors(path, {"f.parquet": np.arange(0, 2_000_000, 2)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "puffin", "dv", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"0\n"
    proc.stdout.close()  # like `| head -1`
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert stderr == b""
