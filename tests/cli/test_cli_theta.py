"""`puffin ndv`, and `inspect`/`verify` on theta blobs, run as subprocesses.

Oracles: `mmh3` over Iceberg's single-value bytes built by hand here (Appendix D of the
table spec) for every Arrow type `ndv` maps, and `datasketches` for estimates, unions and
sketch decoding.  Parquet inputs are made with pyarrow.  Budget: about 15 s.
"""

from __future__ import annotations

import decimal
import io
import os
import struct
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import datasketches as ds
import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import puffin
from puffin.support.progress import Progress
from tests.cli.test_cli import ROOT, _env, check_shape, cli, documented_shape, err, json_of, ok, out

THETA = "apache-datasketches-theta-v1"
N = 60  # rows per test file: exact mode, so every hash is kept


def theta_hash(data: bytes) -> int:
    return mmh3.hash64(data, seed=9001, signed=False)[0] >> 1


def decimal_bytes(unscaled: int) -> bytes:
    """Java's BigInteger.toByteArray: minimal two's-complement, big-endian."""
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


def _ints(rng: np.random.Generator, low: int, high: int, dtype: Any) -> np.ndarray:
    return rng.integers(low, high, N).astype(dtype)


def typed_columns() -> list[tuple[str, pa.Array, str, list[bytes]]]:
    """(name, Arrow column, expected Iceberg type, the single-value bytes of each non-null)."""
    rng = np.random.default_rng(7)
    cols: list[tuple[str, pa.Array, str, list[bytes]]] = []

    def add(name: str, arr: pa.Array, ice: str, to_bytes: Any, raw: Any = None) -> None:
        values = arr.to_pylist() if raw is None else raw
        encoded = [to_bytes(v) for v in values if v is not None]
        cols.append((name, arr, ice, [b for b in encoded if b]))  # Java skips empty values

    mask = np.arange(N) % 9 == 4  # some nulls
    bools = rng.random(N) > 0.5
    add("c_bool", pa.array(bools, mask=mask), "boolean", lambda v: b"\x01" if v else b"\x00")
    for name, dtype, lo, hi in (
        ("c_i8", np.int8, -100, 100),
        ("c_i16", np.int16, -30000, 30000),
        ("c_u16", np.uint16, 0, 65535),
        ("c_i32", np.int32, -(2**31), 2**31 - 1),
    ):
        add(name, pa.array(_ints(rng, lo, hi, dtype)), "int", lambda v: struct.pack("<i", v))
    for name, dtype, lo, hi in (
        ("c_u32", np.uint32, 0, 2**32 - 1),
        ("c_i64", np.int64, -(2**62), 2**62),
    ):
        add(name, pa.array(_ints(rng, lo, hi, dtype)), "long", lambda v: struct.pack("<q", v))
    halves = (_ints(rng, -200, 200, np.int64) / 2).astype(np.float16)
    add("c_f16", pa.array(halves), "float", lambda v: struct.pack("<f", v))
    add(
        "c_f32", pa.array(rng.random(N).astype(np.float32)), "float", lambda v: struct.pack("<f", v)
    )
    add("c_f64", pa.array(rng.normal(size=N)), "double", lambda v: struct.pack("<d", v))
    unscaled = [int(v) for v in _ints(rng, -(10**9) + 1, 10**9, np.int64)]
    unscaled[:4] = [0, -128, 128, -1]
    dec = pa.array([decimal.Decimal(u).scaleb(-2) for u in unscaled], pa.decimal128(9, 2))
    add("c_dec", dec, "decimal(9,2)", decimal_bytes, raw=unscaled)
    days = [int(v) for v in _ints(rng, -5000, 20000, np.int64)]
    add(
        "c_d32",
        pa.array(np.array(days, dtype=np.int32), pa.date32()),
        "date",
        lambda v: struct.pack("<i", v),
        raw=days,
    )
    add(
        "c_d64",
        pa.array(np.array(days, dtype=np.int64) * 86_400_000, pa.date64()),
        "date",
        lambda v: struct.pack("<i", v),
        raw=days,
    )
    millis = [int(v) for v in _ints(rng, 0, 86_400_000, np.int64)]
    add(
        "c_t32",
        pa.array(np.array(millis, dtype=np.int32), pa.time32("ms")),
        "time",
        lambda v: struct.pack("<q", v * 1000),
        raw=millis,
    )
    micros = [int(v) for v in _ints(rng, 0, 86_400_000_000, np.int64)]
    add(
        "c_t64",
        pa.array(np.array(micros), pa.time64("us")),
        "time",
        lambda v: struct.pack("<q", v),
        raw=micros,
    )
    stamps = [int(v) for v in _ints(rng, -(2**40), 2**41, np.int64)]
    add(
        "c_ts_ms",
        pa.array(np.array(stamps), pa.timestamp("ms")),
        "timestamp",
        lambda v: struct.pack("<q", v * 1000),
        raw=stamps,
    )
    add(
        "c_tstz",
        pa.array(np.array(stamps), pa.timestamp("us", tz="UTC")),
        "timestamptz",
        lambda v: struct.pack("<q", v),
        raw=stamps,
    )
    add(
        "c_tsns",
        pa.array(np.array(stamps) * 1000, pa.timestamp("ns")),
        "timestamp_ns",
        lambda v: struct.pack("<q", v * 1000),
        raw=stamps,
    )
    add(
        "c_tsnstz",
        pa.array(np.array(stamps), pa.timestamp("ns", tz="America/New_York")),
        "timestamptz_ns",
        lambda v: struct.pack("<q", v),
        raw=stamps,
    )
    words = [None if i % 11 == 3 else ("" if i == 5 else f"wörd-{i % 23}") for i in range(N)]
    utf8 = lambda v: v.encode("utf-8")  # noqa: E731
    add("c_str", pa.array(words, pa.string()), "string", utf8)
    add("c_lstr", pa.array(words, pa.large_string()), "string", utf8)
    add("c_dict", pa.array(words, pa.string()).dictionary_encode(), "string", utf8)
    blobs = [None if w is None else w.encode()[::-1] + b"\x00" for w in words]
    add("c_bin", pa.array(blobs, pa.binary()), "binary", bytes)
    add("c_lbin", pa.array(blobs, pa.large_binary()), "binary", bytes)
    add(
        "c_fixed",
        pa.array([bytes([i % 7, 1, 2]) for i in range(N)], pa.binary(3)),
        "fixed[3]",
        bytes,
    )
    uuids = [uuid.UUID(int=(i % 17) * 0x0123456789ABCDEF0123).bytes for i in range(N)]
    add("c_uuid", pa.array(uuids, pa.uuid()), "uuid", bytes, raw=uuids)
    return cols


SKIPPED = {
    "c_list": pa.array([[i, i + 1] for i in range(N)]),
    "c_u64": pa.array(np.arange(N, dtype=np.uint64)),
    "c_tns": pa.array(np.arange(N), pa.time64("ns")),
}


def _with_id(name: str, arr: pa.Array, field_id: int) -> pa.Field:
    return pa.field(name, arr.type, metadata={"PARQUET:field_id": str(field_id)})


def test_ndv_maps_every_arrow_type_and_hashes_iceberg_bytes(tmp_path: Path) -> None:
    cols = typed_columns()
    arrays = [c[1] for c in cols] + list(SKIPPED.values())
    names = [c[0] for c in cols] + list(SKIPPED)
    fields = [_with_id(n, a, 100 + i) for i, (n, a) in enumerate(zip(names, arrays, strict=True))]
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    data = tmp_path / "types.parquet"
    pq.write_table(table, data, row_group_size=N // 2)
    stats = tmp_path / "stats.puffin"

    proc = cli(
        "ndv",
        data,
        "-o",
        stats,
        "--json",
        "--batch-rows",
        7,
        "--snapshot-id",
        42,
        "--sequence-number",
        3,
    )
    report = json_of(proc)
    assert proc.returncode == 0 and err(proc) == ""
    check_shape(report, documented_shape("ndv"))
    assert report["rows"] == N and report["files"] == [str(data)]
    assert [s["name"] for s in report["skipped"]] == list(SKIPPED)
    assert report["output"]["path"] == str(stats)
    assert report["output"]["file_size"] == stats.stat().st_size
    by_name = {c["name"]: c for c in report["columns"]}
    assert list(by_name) == [c[0] for c in cols]

    blobs = puffin.read_theta_blobs(stats)
    assert len(blobs) == len(cols) == report["output"]["blob_count"]
    for i, ((name, arr, ice, encoded), blob) in enumerate(zip(cols, blobs, strict=True)):
        expected = {theta_hash(b) for b in encoded}
        got = by_name[name]
        assert (got["iceberg_type"], got["field_id"]) == (ice, 100 + i), name
        assert got["values"] == len(arr) - arr.null_count, name
        assert got["ndv"] == len(expected) and got["estimate"] == len(expected), name
        assert blob.field_id == 100 + i
        assert set(blob.sketch.hashes.tolist()) == expected, name
        meta = blob.metadata
        assert (meta.type, meta.snapshot_id, meta.sequence_number) == (THETA, 42, 3)
        assert meta.compression_codec == "zstd" and dict(meta.properties) == {
            "ndv": str(len(expected))
        }
    with puffin.open(stats) as reader:
        assert reader.properties == {"created-by": f"puffin-cli {puffin.__version__}"}

    # Human output: an aligned table on stdout, the skipped columns as notes on stderr.
    proc = cli("ndv", data, "--columns", "c_i64,c_str")
    assert proc.returncode == 0
    lines = out(proc).splitlines()
    assert lines[0].split() == [
        "column",
        "field",
        "id",
        "type",
        "values",
        "ndv",
        "estimate",
        "(±2σ)",
    ]
    assert lines[1].split()[:5] == ["c_i64", "106", "long", "60", "60"]
    assert lines[2].split()[:5] == [
        "c_str",
        "119",
        "string",
        str(by_name["c_str"]["values"]),
        str(by_name["c_str"]["ndv"]),
    ]
    assert lines[3] == "60 rows in 1 file"
    assert err(proc) == ""
    assert err(cli("ndv", data)).count("note: skipped column") == len(SKIPPED)


def test_ndv_estimation_mode_across_files_matches_datasketches(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 2**40, 50_000)
    names = [f"user-{v % 9000}" for v in ids.tolist()]
    paths = []
    for part in range(2):
        rows = slice(part * 25_000, (part + 1) * 25_000)
        table = pa.table({"id": ids[rows], "name": names[rows]})  # no field ids: positions
        paths.append(tmp_path / f"part-{part}.parquet")
        pq.write_table(table, paths[-1], row_group_size=10_000)
    stats = tmp_path / "stats.puffin"
    report = json_of(cli("ndv", *paths, "-o", stats, "--json"))
    check_shape(report, documented_shape("ndv"))
    assert report["rows"] == 50_000
    for column, values, field_id in (("id", ids.tolist(), 1), ("name", names, 2)):
        update = ds.update_theta_sketch(12)
        for v in values:
            update.update(v)
        union = ds.theta_union(12)
        union.update(update)
        oracle = union.get_result()
        got = next(c for c in report["columns"] if c["name"] == column)
        assert got["field_id"] == field_id and got["num_retained"] == oracle.num_retained == 4096
        assert got["estimate"] == oracle.get_estimate()
        assert got["lower_bound"] == oracle.get_lower_bound(2)
        assert got["upper_bound"] == oracle.get_upper_bound(2)
        assert got["theta"] == oracle.theta
        blob = next(b for b in puffin.read_theta_blobs(stats) if b.field_id == field_id)
        assert blob.sketch.hashes.tolist() == sorted(oracle)

    # `inspect` shows, for each blob, the ndv and estimate the library reads (and datasketches
    # decodes from the same bytes).
    inspected = json_of(cli("inspect", "--json", stats))
    check_shape(inspected, documented_shape("inspect"))
    library = puffin.read_theta_blobs(stats)
    with puffin.open(stats) as reader:
        for entry, blob in zip(inspected["blobs"], library, strict=True):
            decoded = ds.compact_theta_sketch.deserialize(reader.read_blob(entry["index"]))
            assert entry["theta"]["ndv"] == blob.ndv
            assert entry["theta"]["estimate"] == blob.sketch.estimate == decoded.get_estimate()
            assert entry["theta"]["num_retained"] == decoded.num_retained
            assert entry["theta"]["lower_bound"] == decoded.get_lower_bound(2)
            assert entry["theta"]["ndv_matches_estimate"] is True
    assert ok(cli("verify", stats)) == f"{stats}: OK (2 blobs)\n"


def _datasketches_file(path: Path, sketches: list[tuple[Any, dict[str, str], list[int]]]) -> None:
    with puffin.create(path, created_by="test") as writer:
        for payload, props, fields in sketches:
            writer.add_blob(
                payload,
                type=THETA,
                fields=fields,
                snapshot_id=7,
                sequence_number=2,
                codec="zstd",
                properties=props,
            )


def test_inspect_and_verify_theta_blobs_written_by_datasketches(tmp_path: Path) -> None:
    big, small, seeded = (
        ds.update_theta_sketch(12),
        ds.update_theta_sketch(12),
        ds.update_theta_sketch(12, seed=123),
    )
    for i in range(20_000):
        big.update(f"value-{i}")
    for i in range(50):
        small.update(i)
        seeded.update(i)
    est_big = big.compact().get_estimate()
    good = tmp_path / "good.puffin"
    _datasketches_file(
        good,
        [
            (big.compact().serialize(), {"ndv": str(int(est_big))}, [1]),
            (small.compact().serialize(True), {}, [2]),  # compressed version 4, no ndv
        ],
    )
    report = json_of(cli("inspect", "--json", "--std-devs", "3", good))
    check_shape(report, documented_shape("inspect"))
    first, second = (b["theta"] for b in report["blobs"])
    assert first["ndv"] == int(est_big) and first["estimate"] == est_big
    assert first["upper_bound"] == big.compact().get_upper_bound(3) and first["std_devs"] == 3
    assert first["estimation_mode"] is True and 0 < first["theta"] < 1
    assert second == {
        "ndv": None,
        "estimate": 50.0,
        "lower_bound": 50.0,
        "upper_bound": 50.0,
        "std_devs": 3,
        "num_retained": 50,
        "theta": 1.0,
        "is_empty": False,
        "estimation_mode": False,
        "ndv_matches_estimate": None,
    }
    text = ok(cli("inspect", good))
    assert f"ndv              {int(est_big):,} (matches the estimate)" in text
    assert "ndv              (no ndv property)" in text
    assert "retained         50 entries, theta 1 (exact)" in text

    bad = tmp_path / "bad.puffin"
    _datasketches_file(
        bad,
        [
            (small.compact().serialize(), {"ndv": "51"}, [1]),
            (small.compact().serialize(), {"ndv": "50 "}, [2]),
            (seeded.compact().serialize(), {}, [3]),
            (small.compact().serialize(), {"ndv": "50"}, [4, 5]),
            (small.compact().serialize(), {"ndv": "50"}, [6]),
        ],
    )
    proc = cli("verify", good, bad)
    assert proc.returncode == 1 and err(proc) == ""
    lines = out(proc).splitlines()
    assert lines[0] == f"{good}: OK (2 blobs)"
    assert lines[1].startswith(
        f"{bad}, blob 0, offset 4, field ndv: ThetaSketchError: "
        "ndv property 51 does not match the sketch's estimate 50.0"
    )
    assert lines[2].startswith(f"{bad}, blob 1, ")
    assert "ndv property '50 ' is not a non-negative decimal integer" in lines[2]
    assert "ThetaSketchError: seed hash 0x" in lines[3] and f"{bad}, blob 2, offset " in lines[3]
    assert lines[4].startswith(f"{bad}, blob 3, ") and "exactly one field" in lines[4]
    assert lines[5] == "1 of 2 files valid"
    report = json_of(cli("inspect", "--json", bad))
    check_shape(report, documented_shape("inspect"))
    errors = [b["error"] and b["error"]["type"] for b in report["blobs"]]
    assert errors == [None, "ThetaSketchError", "ThetaSketchError", None, None]
    assert report["blobs"][0]["theta"]["ndv_matches_estimate"] is False
    assert report["valid"] is False


def test_verify_and_inspect_report_ndv_beyond_a_java_long(tmp_path: Path) -> None:
    small = ds.update_theta_sketch(12)
    for i in range(50):
        small.update(i)
    payload = small.compact().serialize()
    huge = tmp_path / "huge.puffin"
    _datasketches_file(
        huge,
        [
            (payload, {"ndv": "9" * 5000}, [1]),  # int() alone refuses over 4,300 digits
            (payload, {"ndv": str(1 << 63)}, [2]),  # one past Long.MAX_VALUE
            (payload, {"ndv": str((1 << 63) - 1)}, [3]),  # a long, but not the estimate
        ],
    )
    proc = cli("verify", huge)
    assert proc.returncode == 1 and err(proc) == ""
    lines = out(proc).splitlines()
    assert len(lines) == 3
    for index, line in enumerate(lines[:2]):
        assert line.startswith(f"{huge}, blob {index}, offset ") and "field ndv" in line
        assert "is not a non-negative decimal integer within a Java long" in line
    assert len(lines[0]) < 400  # the 5000 digits are cut short
    assert "does not match the sketch's estimate" in lines[2]
    report = json_of(cli("verify", "--json", huge))
    check_shape(report, documented_shape("verify"))
    assert [p["blob_index"] for p in report["files"][0]["problems"]] == [0, 1, 2]
    proc = cli("inspect", "--json", huge)
    assert proc.returncode == 1 and "Traceback" not in err(proc)
    blobs = json_of(proc)["blobs"]
    assert [b["error"] and b["error"]["type"] for b in blobs] == [
        "ThetaSketchError",
        "ThetaSketchError",
        None,
    ]
    assert blobs[2]["theta"]["ndv_matches_estimate"] is False


def test_ndv_lg_k_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    data = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), data)
    for value in ("4", "27", "x"):
        proc = cli("ndv", data, "--lg-k", value)
        assert proc.returncode == 2, (value, err(proc))
        assert "Traceback" not in err(proc) and out(proc) == ""
        errors = [line for line in err(proc).splitlines() if "error" in line]
        assert len(errors) == 1 and "--lg-k" in errors[0], err(proc)


def test_ndv_usage_and_input_errors(tmp_path: Path) -> None:
    data = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2], "l": [[1], [2]]}), data)
    other = tmp_path / "o.parquet"
    pq.write_table(pa.table({"a": ["x", "y"]}), other)
    not_parquet = tmp_path / "x.parquet"
    not_parquet.write_bytes(b"PAR1 this is not parquet")
    cases = [
        ((data, "--columns", "nope"), 2, "no column 'nope' in the Parquet schema (columns: a, l)"),
        ((data, "--columns", "l"), 2, "column 'l' of Arrow type list<element: int64> cannot be"),
        ((data, "--lg-k", "30"), 2, "argument --lg-k: "),
        ((data, "--snapshot-id", str(1 << 63)), 2, "argument --snapshot-id: expected a 64-bit"),
        ((data, other), 1, f"{other}: column 'a' is string with field id 1, but long"),
        ((not_parquet,), 1, f"puffin ndv: error: {not_parquet}: "),
        ((tmp_path / "missing.parquet",), 1, "No such file or directory"),
    ]
    for args, status, message in cases:
        proc = cli("ndv", *args)
        assert proc.returncode == status, (args, err(proc))
        assert message in err(proc), (args, err(proc))
        assert "Traceback" not in err(proc) and out(proc) == ""


def test_progress_line() -> None:
    stream = io.StringIO()
    with Progress(1000, label="ndv: ", stream=stream, enabled=True, width=4, transient=True) as p:
        p.update(250, note="file 1/2")
    text = stream.getvalue()
    assert text.startswith("\rndv: [#...]  25%  250/1.0k rows  ")
    assert "file 1/2" in text and text.endswith("\r\x1b[K")
    kept = io.StringIO()
    with Progress(1000, stream=kept, enabled=True, width=4) as p:
        p.update(1000)
    assert "[####] 100%  1.0k/1.0k rows  " in kept.getvalue()  # the final state stays
    assert kept.getvalue().endswith(" rows/s\x1b[K\n")
    for enabled, delay in ((False, 0.0), (True, 60.0)):
        quiet = io.StringIO()
        with Progress(1000, stream=quiet, enabled=enabled, delay=delay, transient=True) as p:
            p.update(250, note="file 1/2")
        assert quiet.getvalue() == "", (enabled, delay)


@pytest.mark.slow
def test_ndv_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    """Peak RSS of `ndv` on 2 and 10 row groups of 250k rows stays about the same."""

    def peak_rss_kib(path: Path) -> int:
        proc = subprocess.Popen(
            [sys.executable, "-m", "puffin", "ndv", str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
            cwd=ROOT,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        assert proc.returncode == 0
        return int(usage.ru_maxrss)

    rng = np.random.default_rng(11)
    sizes = {}
    for groups in (4, 16):
        path = tmp_path / f"{groups}.parquet"
        schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("x", pa.float64())])
        with pq.ParquetWriter(path, schema) as writer:
            for _ in range(groups):
                ids = rng.integers(0, 2**62, 250_000)
                names = pc.binary_join_element_wise(
                    "user-", pa.array(ids % 100_000).cast(pa.string()), ""
                )
                chunk = pa.table(
                    {"id": ids, "name": names, "x": rng.random(250_000)}, schema=schema
                )
                writer.write_table(chunk, row_group_size=250_000)
        # The smaller of two runs: a run on a loaded machine once grew by 24 MiB (thread
        # timing and the allocator's arenas); idle runs show no growth at all.
        sizes[groups] = min(peak_rss_kib(path) for _ in range(2))
    growth_mib = (sizes[16] - sizes[4]) / 1024
    assert growth_mib < 16, sizes  # with pre-buffering, pyarrow grew by 27 MiB here
