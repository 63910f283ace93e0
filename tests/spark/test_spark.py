"""The Spark pipeline on a local[2] session (one JVM for the whole module).

Peers: our single-machine builder (``ThetaSketch.from_values``, itself checked against
datasketches and mmh3 in test_theta.py), Spark's own datasketches-java functions
(``theta_sketch_agg``, ``theta_union_agg``, ``theta_sketch_estimate``), pyarrow reading the
data files for deletion vectors, and pyiceberg's own deletion-vector reader.

Budget: about two minutes on 2 shared cores, most of it the JVM start and Spark's first jobs.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")

import puffin
from iceberg_fixtures import commit_deletion_vectors_v3, commit_position_deletes_v2, make_catalog
from puffin import spark as ps
from puffin.blobs.theta.files import ThetaSketch
from puffin.errors import JavaNotFoundError, SetupError, UsageError
from puffin.spark._java import _java_major

pytestmark = [
    pytest.mark.spark,
    # pyspark 4 warns on each Arrow call when pandas >= 3 is installed; we use no pandas.
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"),
]


# -------------------------------------------------------------------------------------------
# Java check (no JVM needed)
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_292"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ('openjdk version "11.0.2" 2019-01-15 LTS', 11),
        ("no version here", None),
    ],
)
def test_java_version_parsing(text: str, major: int | None) -> None:
    assert _java_major(text) == major


def test_package_import_is_light_and_keeps_its_names() -> None:
    code = (
        "import sys, puffin.spark as ps; "
        "print(' '.join(m for m in ('argparse', 'pyspark', 'pyarrow', 'puffin.cli') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    assert ps.SetupError is SetupError and ps.JavaNotFoundError is JavaNotFoundError
    assert issubclass(ps.JavaNotFoundError, ps.SetupError)
    assert not hasattr(ps, "SparkSetupError")  # the 0.1 alias is gone
    for name in ps.__all__:
        assert getattr(ps, name) is not None, name


def test_register_cli_adds_the_spark_commands() -> None:
    import argparse

    from puffin.spark.cli import register_cli

    parser = argparse.ArgumentParser()
    register_cli(parser.add_subparsers())
    args = parser.parse_args(["spark", "stats", "db.t", "--engine", "arrow", "--no-commit"])
    assert (args.table, args.engine, args.no_commit, args.master) == (
        "db.t",
        "arrow",
        True,
        "local[*]",
    )
    args = parser.parse_args(["spark", "dv", "db.t", "--where", "x = 1", "--json"])
    assert (args.where, args.json, args.no_merge) == ("x = 1", True, False)
    with pytest.raises(SystemExit):
        parser.parse_args(["spark", "stats", "db.t", "--engine", "gpu"])


def _fake_java(folder: Path, version: str) -> Path:
    home = folder / f"jdk-{version}"
    (home / "bin").mkdir(parents=True)
    exe = home / "bin" / "java"
    exe.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2020-01-01' >&2\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return home


def test_java_missing_or_old_gives_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(JavaNotFoundError) as missing:
        ps.check_java()
    message = str(missing.value)
    assert "\n" not in message
    assert "not found" in message and "apt-get install openjdk-17-jre-headless" in message

    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, "1.8.0_292")))
    with pytest.raises(JavaNotFoundError, match=r"is Java 8: install Java 17"):
        ps.check_java()
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, "17.0.2")))
    assert ps.check_java() == 17


def test_cli_without_java_says_so_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path), "JAVA_HOME": str(tmp_path / "nojava")}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run(
        [sys.executable, "-m", "puffin", "spark", "stats", "db.t", "--warehouse", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr  # a setup error (puffin.errors.SetupError)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "Java" in lines[0] and "openjdk-17-jre-headless" in lines[0]


# -------------------------------------------------------------------------------------------
# One Spark session for the module
# -------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _scratch_under_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Uncommitted deletion-vector jobs without ``location=`` write into a new temporary
    folder (``puffin.spark.deletes.scratch_location``): under ``tmp_path`` here, so the
    tests leave nothing in the machine's temporary folder. (The session, module-scoped,
    starts before this and keeps its own log folder.)"""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


# Every Iceberg primitive type: (column, Iceberg type).  The Parquet file Spark reads holds
# each column in the form Spark can read; the reference sketch is built from the column in
# its natural Arrow form (time64, timestamp[ns], fixed_size_binary(16), ...).
TYPES = {
    "b": "boolean",
    "i": "int",
    "l": "long",
    "f": "float",
    "d": "double",
    "dec9": "decimal(9,2)",
    "dec18": "decimal(18,4)",
    "dec38": "decimal(38,10)",
    "dt": "date",
    "tm": "time",
    "ts": "timestamp",
    "tz": "timestamptz",
    "tsn": "timestamp_ns",
    "tzn": "timestamptz_ns",
    "s": "string",
    "u": "uuid",
    "us": "uuid",
    "fx": "fixed[5]",
    "bin": "binary",
}
# Columns whose Spark type does not name the Iceberg type.
OVERRIDES = {k: TYPES[k] for k in ("tm", "tsn", "tzn", "u", "us", "fx")}


def _columns(rows: int, distinct: int, seed: int) -> tuple[pa.Table, pa.Table]:
    """(natural Arrow columns for the reference, Spark-readable columns), same values."""
    import decimal

    rng = np.random.default_rng(seed)
    v = rng.integers(0, distinct, rows)
    nulls = rng.random(rows) < 0.03
    mixed = (v.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)).view(np.int64)
    doubles = np.where(v % 17 == 0, -0.0, (v - distinct // 2) / 3.0)
    doubles[v == 1] = 0.0
    doubles[v == 2] = np.nan
    doubles[v == 3] = -np.inf
    floats = doubles.astype(np.float32)
    uuids = [uuid.UUID(int=int(x) * 0x1F1F1F1F1F1F1F1F1 + 7) for x in v]
    natural = {
        "b": pa.array(v % 2 == 0),
        "i": pa.array((mixed >> 32).astype(np.int32)),
        "l": pa.array(mixed),
        "f": pa.array(floats),
        "d": pa.array(doubles),
        "dec9": pa.array(
            [decimal.Decimal(int(x) - distinct // 2).scaleb(-2) for x in v], pa.decimal128(9, 2)
        ),
        "dec18": pa.array(
            [
                decimal.Decimal((int(x) - 500_000) * 10**12 + int(x)).scaleb(-4)
                for x in mixed % 10**6
            ],
            pa.decimal128(18, 4),
        ),
        "dec38": pa.array(
            [decimal.Decimal(int(x) * 10**25 - 3).scaleb(-10) for x in v], pa.decimal128(38, 10)
        ),
        "dt": pa.array((v % 60000 - 20000).astype(np.int32), pa.date32()),
        "tm": pa.array(v * 997 % 86_400_000_000, pa.time64("us")),
        "ts": pa.array(mixed // 4096, pa.timestamp("us")),
        "tz": pa.array(mixed // 8192, pa.timestamp("us", tz="UTC")),
        "tsn": pa.array(mixed // 2, pa.timestamp("ns")),
        "tzn": pa.array(mixed // 3, pa.timestamp("ns", tz="UTC")),
        "s": pa.array(["" if x == 5 else f"välue-{x}" for x in v]),
        "u": pa.array([u.bytes for u in uuids], pa.binary(16)),
        "us": pa.array([str(u) for u in uuids]),
        "fx": pa.array([int(x).to_bytes(5, "little") for x in v], pa.binary(5)),
        "bin": pa.array([b"" if x == 9 else int(x).to_bytes(int(x) % 7 + 2, "big") for x in v]),
    }
    natural = {k: pa.array(a.to_pylist(), a.type, mask=nulls) for k, a in natural.items()}
    readable = dict(natural)
    for name, cast in (("tm", pa.int64()), ("tsn", pa.int64()), ("tzn", pa.int64())):
        readable[name] = natural[name].cast(cast)
    for name in ("u", "fx"):
        readable[name] = natural[name].cast(pa.binary())
    return pa.table(natural), pa.table(readable)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[pa.Table, str]]:
    folder = tmp_path_factory.mktemp("spark-data")
    out = {}
    # exact: ~700 distinct values per column; estimation: ~9000 distinct (> k = 4096).
    for mode, rows, distinct in (("exact", 3000, 700), ("estimation", 20000, 12000)):
        natural, readable = _columns(rows, distinct, seed=len(mode))
        path = folder / f"{mode}.parquet"
        pq.write_table(readable, path, row_group_size=rows // 5)
        out[mode] = (natural, str(path))
    return out


@pytest.mark.parametrize("mode", ["exact", "estimation"])
@pytest.mark.parametrize("partitions", [1, 7])
@pytest.mark.parametrize("engine", ["arrow", "auto"])
def test_sketches_equal_single_machine(
    spark: Any, datasets: Any, mode: str, partitions: int, engine: str
) -> None:
    natural, path = datasets[mode]
    df = spark.read.parquet(path)
    df = df.coalesce(1) if partitions == 1 else df.repartition(partitions)
    ours = ps.compute_ndv_sketches(df, list(TYPES), iceberg_types=OVERRIDES, engine=engine)
    assert list(ours) == list(TYPES)
    for name, iceberg_type in TYPES.items():
        expected = ThetaSketch.from_values(natural.column(name), iceberg_type)
        assert expected.is_estimation_mode == (mode == "estimation" and name != "b"), name
        assert ours[name].serialize() == expected.serialize(), (name, iceberg_type)


def test_jvm_engine_covers_what_it_claims(spark: Any, datasets: Any) -> None:
    natural, path = datasets["exact"]
    df = spark.read.parquet(path).repartition(3)
    expressible = [n for n in TYPES if n not in ("f", "dec38", "us")]
    got = ps.compute_ndv_sketches(
        df,
        expressible,
        iceberg_types={k: v for k, v in OVERRIDES.items() if k in expressible},
        engine="jvm",
    )
    for name in expressible:
        expected = ThetaSketch.from_values(natural.column(name), TYPES[name])
        assert got[name].serialize() == expected.serialize(), name
    # A collated string is still hashed as its UTF-8 bytes, not its collation key.
    from pyspark.sql import functions as F

    collated = df.select(F.collate("s", "UNICODE_CI").alias("s"))
    got = ps.compute_ndv_sketches(collated, ["s"], engine="jvm")
    assert (
        got["s"].serialize() == ThetaSketch.from_values(natural.column("s"), "string").serialize()
    )
    for name in ("f", "dec38", "us"):
        with pytest.raises(UsageError, match="cannot be sketched in the JVM"):
            ps.compute_ndv_sketches(
                df,
                [name],
                iceberg_types={k: v for k, v in OVERRIDES.items() if k == name},
                engine="jvm",
            )


def test_empty_and_all_null_columns(spark: Any) -> None:
    df = spark.createDataFrame([(None, "x")], "a long, s string").where("s = 'y'")
    for engine in ("arrow", "auto"):
        got = ps.compute_ndv_sketches(df, ["a", "s"], engine=engine)
        assert got["a"].is_empty and got["s"].is_empty
        assert got["a"].serialize() == ThetaSketch().serialize()
    nulls = spark.createDataFrame([(None,), (None,)], "a int")
    assert ps.compute_ndv_sketches(nulls, ["a"])["a"].is_empty


def test_bad_arguments(spark: Any) -> None:
    df = spark.createDataFrame([(1, 2.5)], "a long, x double")
    with pytest.raises(UsageError, match="engine"):
        ps.compute_ndv_sketches(df, ["a"], engine="gpu")
    with pytest.raises(UsageError, match="lg_k"):
        ps.compute_ndv_sketches(df, ["a"], lg_k=40)
    with pytest.raises(UsageError, match="not sketched"):
        ps.compute_ndv_sketches(df, ["a"], iceberg_types={"x": "double"})
    with pytest.raises(TypeError, match="no Iceberg primitive type"):
        ps.compute_ndv_sketches(spark.createDataFrame([([1],)], "a array<int>"), ["a"])


# -------------------------------------------------------------------------------------------
# Spark's own theta functions read our sketches
# -------------------------------------------------------------------------------------------


def test_spark_theta_functions_accept_our_sketches(spark: Any) -> None:
    from pyspark.sql import functions as F

    rng = np.random.default_rng(3)
    parts = [rng.integers(0, 30000, 8000) for _ in range(4)]  # estimation mode
    small = [np.arange(i * 10, i * 10 + 50) for i in range(3)]  # exact mode
    for chunks, iceberg_type in ((parts, "long"), (small, "long"), (parts, "string")):
        values = [c if iceberg_type == "long" else pa.array([f"k{x}" for x in c]) for c in chunks]
        ours = [ThetaSketch.from_values(v, iceberg_type) for v in values]
        union = ThetaSketch.union(*ours)
        frame = spark.createDataFrame([(bytes(s.serialize()),) for s in ours], "sk binary")
        each = frame.select(F.theta_sketch_estimate("sk").alias("e")).collect()
        assert [r.e for r in each] == [round(s.estimate) for s in ours]
        row = frame.agg(F.theta_union_agg("sk").alias("u")).collect()[0]
        theirs = bytes(row.u)
        assert spark.createDataFrame([(theirs,)], "u binary").select(
            F.theta_sketch_estimate("u")
        ).collect()[0][0] == round(union.estimate)
        # Spark's union (compressed, version 4) decodes to exactly our canonical union.
        assert ThetaSketch.deserialize(theirs) == union

        # Spark's own theta_sketch_agg hashes longs and strings as Iceberg does.
        flat = np.concatenate(chunks)
        raw = spark.createDataFrame(
            pa.table({"v": flat if iceberg_type == "long" else [f"k{x}" for x in flat]})
        )
        sk = bytes(raw.agg(F.theta_sketch_agg("v").alias("s")).collect()[0].s)
        assert ThetaSketch.union(ThetaSketch(), sk) == union


# -------------------------------------------------------------------------------------------
# Iceberg tables
# -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark-warehouse")


@pytest.fixture(scope="module")
def catalog(warehouse: Path) -> Any:
    return make_catalog(warehouse)


@pytest.fixture(scope="module")
def base(catalog: Any) -> Any:
    from puffin.iceberg import create_sample_table

    # Small row groups so a data file spans several Spark partitions in the DV test.
    return create_sample_table(
        catalog,
        "db.base",
        rows=24000,
        files=3,
        properties={"write.parquet.row-group-limit": "1000"},
    )


def _data_paths(table: Any) -> list[str]:
    return sorted(t.file.file_path for t in table.scan().plan_files())


def _local(location: str) -> str:
    from puffin.io.locations import local_path

    path = local_path(location)
    assert path is not None
    return path


def _stats_bytes(stats: Any) -> dict[int, bytes]:
    return {
        b.field_id: b.sketch.serialize()
        for b in puffin.read_theta_blobs(_local(stats.statistics_path))
    }


def test_table_statistics_equal_single_process_job(spark: Any, catalog: Any, base: Any) -> None:
    from puffin.iceberg import compute_table_statistics

    paths = _data_paths(base)
    deleted = {paths[0]: np.arange(0, 8000, 3), paths[2]: np.array([0, 5, 7999])}
    v2 = commit_position_deletes_v2(catalog, base, deleted, new_identifier="db.stats_v2")
    v2.update_schema().rename_column("category", "kind").commit()
    v2 = catalog.load_table("db.stats_v2")
    v3, _ = commit_deletion_vectors_v3(catalog, base, deleted, new_identifier="db.stats_v3")

    for table, commit in ((base, True), (v2, True), (v3, False)):
        ours = ps.compute_table_statistics(spark, table, commit=commit)
        reference = compute_table_statistics(table, commit=False, progress=False)
        assert _stats_bytes(ours) == _stats_bytes(reference)
        assert [b.properties for b in ours.blob_metadata] == [
            b.properties for b in reference.blob_metadata
        ]
        with open(_local(ours.statistics_path), "rb") as f:
            data = f.read()
        assert ours.file_size_in_bytes == len(data)
        with puffin.open(data) as reader:
            assert reader.footer_size == ours.file_footer_size_in_bytes
            assert {b.snapshot_id for b in reader.blobs} == {table.current_snapshot().snapshot_id}
        if commit:
            reloaded = catalog.load_table(".".join(table.name()))
            registered = [
                s for s in reloaded.metadata.statistics if s.snapshot_id == ours.snapshot_id
            ]
            assert registered == [ours]

    # The id column is unique: its ndv is the live row count (exact below 4096? no: 24000,
    # so within the sketch's bounds); deleted rows are not counted.
    sketch = ThetaSketch.deserialize(
        _stats_bytes(ps.compute_table_statistics(spark, v2, columns=["id"], commit=False))[1]
    )
    live = 24000 - sum(len(p) for p in deleted.values())
    assert sketch.lower_bound(3) <= live <= sketch.upper_bound(3)


def _expected_positions(path: str) -> np.ndarray[Any, Any]:
    data = pq.read_table(_local(path), columns=["category", "user_name"])
    mask = pc.or_kleene(pc.equal(data["category"], 7), pc.starts_with(data["user_name"], "user-12"))
    return np.flatnonzero(mask.fill_null(False).to_numpy(zero_copy_only=False))


def test_deletion_vectors_hold_matching_rows(spark: Any, base: Any) -> None:
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    key = "spark.sql.files.maxPartitionBytes"
    spark.conf.set(key, str(64 * 1024))  # several partitions per data file
    try:
        entries = ps.deletion_vectors_for(spark, base, "category = 7 OR user_name LIKE 'user-12%'")
    finally:
        spark.conf.unset(key)
    paths = _data_paths(base)
    assert [e.referenced_data_file for e in entries] == paths
    assert len({e.path for e in entries}) == 1
    data = Path(_local(entries[0].path)).read_bytes()
    assert all(e.file_size_in_bytes == len(data) for e in entries)
    theirs = {
        dv.referenced_data_file: dv for dv in deletion_vectors_from_puffin_file(PuffinFile(data))
    }
    for e in entries:
        expected = _expected_positions(e.referenced_data_file)
        assert 0 < len(expected) == e.record_count
        dv = puffin.read_deletion_vector(
            data, e.content_offset, e.content_size_in_bytes, record_count=e.record_count
        )
        np.testing.assert_array_equal(dv.to_numpy(), expected)
        got = np.sort(theirs[e.referenced_data_file].to_vector().to_numpy())
        np.testing.assert_array_equal(got, expected)

    assert ps.deletion_vectors_for(spark, base, "id < 0") == []


def test_deletion_vectors_merge_existing_deletes(spark: Any, catalog: Any, base: Any) -> None:
    paths = _data_paths(base)
    old = {paths[1]: np.array([1, 2, 3, 4000])}
    table = commit_position_deletes_v2(catalog, base, old, new_identifier="db.dv_merge")
    entries = ps.deletion_vectors_for(spark, table, "category = 7")
    for e in entries:
        data = pq.read_table(_local(e.referenced_data_file), columns=["category"])
        expected = np.flatnonzero(pc.equal(data["category"], 7).fill_null(False).to_numpy())
        if e.referenced_data_file in old:
            expected = np.union1d(expected, old[e.referenced_data_file])
        dv = puffin.read_deletion_vector(_local(e.path), e.content_offset, e.content_size_in_bytes)
        np.testing.assert_array_equal(dv.to_numpy(), expected)
    plain = ps.deletion_vectors_for(spark, table, "category = 7", merge_existing=False)
    assert [e.record_count for e in plain][1] == [e.record_count for e in entries][1] - 4


def test_position_deletes_become_deletion_vectors(
    spark: Any, catalog: Any, base: Any, tmp_path: Path
) -> None:
    paths = _data_paths(base)
    first = {paths[0]: np.arange(0, 8000, 2), paths[2]: np.array([3, 9, 7999])}
    second = {paths[0]: np.array([1, 3, 7001]), "file:///gone/old.parquet": np.array([5])}
    t1 = commit_position_deletes_v2(catalog, base, first, new_identifier="db.pd1")
    t2 = commit_position_deletes_v2(catalog, t1, second, new_identifier="db.pd2")

    entries = ps.position_deletes_to_deletion_vectors(spark, t2)
    expected = {paths[0]: np.union1d(first[paths[0]], second[paths[0]]), paths[2]: first[paths[2]]}
    assert [e.referenced_data_file for e in entries] == sorted(expected)
    for e in entries:
        dv = puffin.read_deletion_vector(_local(e.path), e.content_offset, e.content_size_in_bytes)
        np.testing.assert_array_equal(dv.to_numpy(), expected[e.referenced_data_file])

    # Plain files to a location: every referenced file is kept, dead ones included.
    delete_files = sorted(
        {str(d.file_path) for t in t2.scan().plan_files() for d in t.delete_files}
    )
    assert len(delete_files) == 2
    out = tmp_path / "migrated.puffin"
    entries = ps.position_deletes_to_deletion_vectors(spark, delete_files, location=str(out))
    assert [e.referenced_data_file for e in entries] == sorted(
        [*expected, "file:///gone/old.parquet"]
    )
    assert all(e.path == str(out) for e in entries)
    with puffin.open(str(out)) as reader:
        assert len(reader.blobs) == 3
    # Nothing committed: nothing written into the table's folders (a temporary folder).
    scratch = ps.position_deletes_to_deletion_vectors(spark, delete_files)
    assert scratch and not scratch[0].path.startswith(_local(t2.location()))
    assert Path(scratch[0].path).parent.parent == Path(tempfile.gettempdir())
    assert all(not e.path.startswith(_local(t2.location())) for e in entries)


# -------------------------------------------------------------------------------------------
# Command line (the running session is reused)
# -------------------------------------------------------------------------------------------


def test_cli_stats_and_dv(
    spark: Any, catalog: Any, base: Any, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from puffin.cli import main

    code = main(["spark", "stats", "db.base", "--warehouse", str(warehouse), "--columns", "id,tag"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "committed" in out and ".stats" in out and "tag" in out
    stats = ["spark", "stats", "db.base", "--warehouse", str(warehouse), "--columns", "id"]
    assert main([*stats, "--json", "--no-commit"]) == 0
    import json as _json

    doc = _json.loads(capsys.readouterr().out)
    assert (doc["schema_version"], doc["command"], doc["committed"]) == (1, "spark stats", False)
    # A misspelled column is the same usage error (exit 2) as in `puffin table delete`.
    bad = ["spark", "dv", "db.base", "--warehouse", str(warehouse), "--where", "categroy = 3"]
    assert main(bad) == 2
    err = capsys.readouterr().err
    assert "puffin spark dv: error:" in err and "'categroy'" in err and "SQLSTATE" not in err
    table = catalog.load_table("db.base")
    assert table.metadata.statistics[-1].statistics_path in out

    code = main(
        [
            "spark",
            "dv",
            "db.base",
            "--warehouse",
            str(warehouse),
            "--where",
            "category = 3",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    import json

    doc = json.loads(out)
    assert (doc["schema_version"], doc["command"]) == (1, "spark dv")  # every --json's envelope
    assert len(doc["deletion_vectors"]) == 3
    total = sum(
        int(pc.sum(pc.equal(pq.read_table(_local(p), columns=["category"])["category"], 3)).as_py())
        for p in _data_paths(table)
    )
    assert sum(d["record_count"] for d in doc["deletion_vectors"]) == total


# -------------------------------------------------------------------------------------------
# Spark Connect: the same calls through a remote session (its own JVM, in a subprocess)
# -------------------------------------------------------------------------------------------

_CONNECT_SCRIPT = """
import json, os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
import numpy as np, pyarrow as pa
from pyspark.sql import SparkSession
from puffin import spark as ps
from puffin.blobs.theta.files import ThetaSketch
from puffin.iceberg import compute_table_statistics, create_sample_table, local_catalog
import puffin

spark = SparkSession.builder.remote("local[2]").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
out = {}
rng = np.random.default_rng(5)
v = rng.integers(0, 9000, 20000)
df = spark.createDataFrame(
    pa.table({"l": v, "i": v.astype(np.int32), "s": [f"k{x}" for x in v]})
).repartition(3)
for engine in ("arrow", "auto"):
    got = ps.compute_ndv_sketches(df, ["l", "i", "s"], engine=engine)
    out[engine] = [
        got["l"] == ThetaSketch.from_values(v, "long"),
        got["i"] == ThetaSketch.from_values(v.astype(np.int32), "int"),
        got["s"] == ThetaSketch.from_values(pa.array([f"k{x}" for x in v]), "string"),
    ]
catalog = local_catalog(sys.argv[1])
table = create_sample_table(catalog, "db.c", rows=30000, files=2)
ours = ps.compute_table_statistics(spark, table, commit=False)
ref = compute_table_statistics(table, commit=False, progress=False)
local = lambda p: p.replace("file://", "")
read = lambda s: [b.sketch.serialize() for b in puffin.read_theta_blobs(local(s.statistics_path))]
out["stats"] = read(ours) == read(ref)
entries = ps.deletion_vectors_for(spark, table, "category = 3")
out["dv"] = [e.record_count for e in entries]
import pyarrow.compute as pc, pyarrow.parquet as pq
out["dv_ok"] = all(
    np.array_equal(
        puffin.read_deletion_vector(
            local(e.path), e.content_offset, e.content_size_in_bytes
        ).to_numpy(),
        np.flatnonzero(pc.equal(pq.read_table(local(e.referenced_data_file))["category"], 3)
                       .fill_null(False).to_numpy()),
    )
    for e in entries
)
print("RESULT " + json.dumps(out))
"""


@pytest.mark.slow
def test_spark_connect_session(tmp_path: Path) -> None:
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect] (grpcio)")
    try:
        ps.check_java()
    except ps.JavaNotFoundError as exc:
        pytest.skip(str(exc))
    script = tmp_path / "connect.py"
    script.write_text(_CONNECT_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "SPARK_REMOTE": "", "TMPDIR": str(tmp_path)},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    import json

    result = json.loads(lines[-1][len("RESULT ") :])
    assert result["arrow"] == [True, True, True]
    assert result["auto"] == [True, True, True]
    assert result["stats"] is True
    # category is uniform over 0..199: each of the 2 files has matches.
    assert len(result["dv"]) == 2 and all(n > 0 for n in result["dv"])
    assert result["dv_ok"] is True  # positions equal pyarrow's evaluation of the condition


# -------------------------------------------------------------------------------------------
# The demo (make demo), small, on the module's session
# -------------------------------------------------------------------------------------------


def test_demo_runs_end_to_end(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from puffin import demo

    args = ["--rows", "40000", "--files", "2", "--output", str(tmp_path)]
    assert demo.main(args) == 0
    out = capsys.readouterr().out
    assert "all checks passed" in out
    assert "all 9 sketches equal single-machine ThetaSketch.from_values, byte for byte" in out
    assert out.count("$ puffin inspect") == 2
    # Running it again re-creates the table in the same folder.
    assert demo.main(args) == 0
    assert "all checks passed" in capsys.readouterr().out


# --- one condition language: Spark matches what pyarrow's evaluation matches -------------------

_CONDITIONS = [
    "x = 1.5",
    "x != 1.5",
    "x > 0",
    "x <= 0",
    "x is nan",
    "not x is nan",
    "x is null",
    "x is not null",
    "s in ('a', 'b')",
    "s not in ('a', 'b')",
    "not (s = 'a')",
    "s like 'a%'",
    "s not like 'a%'",
    "d < '2024-01-03'",
    "ts >= '2024-01-01T12:00:00'",
    "dec between 1.5 and 3",
    "id < 3 or (x > 1 and s = 'c')",
]


@pytest.fixture(scope="module")
def nulls_and_nans(catalog: Any) -> Any:
    import datetime
    from decimal import Decimal

    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        DateType,
        DecimalType,
        DoubleType,
        LongType,
        NestedField,
        StringType,
        TimestampType,
    )

    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "x", DoubleType(), required=False),
        NestedField(3, "s", StringType(), required=False),
        NestedField(4, "d", DateType(), required=False),
        NestedField(5, "ts", TimestampType(), required=False),
        NestedField(6, "dec", DecimalType(9, 2), required=False),
    )
    xs = [1.5, float("nan"), None, -2.0, 0.0, 3.0, float("nan"), 1.5]
    ss = ["a", "b", None, "c", "ab", "ba", "c", None]
    base = datetime.datetime(2024, 1, 1)
    n = len(xs)
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array(xs, pa.float64()),
            "s": pa.array(ss, pa.string()),
            "d": pa.array([None if i == 3 else (base + datetime.timedelta(days=i)).date()
                           for i in range(n)], pa.date32()),
            "ts": pa.array([base + datetime.timedelta(hours=6 * i) for i in range(n)],
                           pa.timestamp("us")),
            "dec": pa.array([Decimal(i) / 2 for i in range(n)], pa.decimal128(9, 2)),
        }
    )
    table = catalog.create_table("db.conditions", schema)
    table.append(data)
    return catalog.load_table("db.conditions")


@pytest.mark.parametrize("where", _CONDITIONS)
def test_spark_matches_the_rows_pyarrow_matches(
    spark: Any, nulls_and_nans: Any, where: str
) -> None:
    from puffin.iceberg.scan.matching import matching_positions
    from puffin.iceberg.scan.plan import plan_files
    from puffin.iceberg.scan.row_filter import bind_where

    table = nulls_and_nans
    bound = bind_where(table, where)
    expected = {
        p.path: matching_positions(table, p, bound).tolist()
        for p in plan_files(table, table.current_snapshot())
    }
    got = ps.deletion_vector_positions(spark, table, where, merge_existing=False)
    assert {k: v.to_numpy().tolist() for k, v in got.items()} == {
        k: v for k, v in expected.items() if v
    }


def test_spark_refuses_a_dangling_and_before_running(spark: Any, base: Any) -> None:
    from puffin.errors import ColumnNotFoundError

    with pytest.raises(UsageError, match="cannot parse"):
        ps.deletion_vectors_for(spark, base, "category = 7 and")
    with pytest.raises(UsageError, match="cannot parse"):
        ps.deletion_vectors_for(spark, base, "category = 8 amount")
    with pytest.raises(ColumnNotFoundError, match="nope"):
        ps.deletion_vectors_for(spark, base, "nope = 1")
    # Inexact literals are refused as delete_rows refuses them, never rounded or coerced.
    for where in ("category = 9.5", "id = 10.7", "category = '7'", "category = 99999999999"):
        with pytest.raises(UsageError):
            ps.deletion_vectors_for(spark, base, where)


# -------------------------------------------------------------------------------------------
# Executors: the preflight and their errors (tests/spark/test_cluster.py runs real clusters)
# -------------------------------------------------------------------------------------------

# A function from a module nobody can import travels by value, as user code would.
_FAILING_TASK = '''
def fail(batches):
    for batch in batches:
        raise ValueError("boom in the worker: " + str(batch.num_rows))
        yield batch
'''


def test_a_python_workers_exception_reaches_the_caller(spark: Any) -> None:
    from puffin.errors import PythonWorkerError
    from puffin.spark.preflight import worker_errors

    namespace: dict[str, Any] = {"__name__": "not_importable_here"}
    exec(compile(_FAILING_TASK, "<user task>", "exec"), namespace)
    frame = spark.range(5, numPartitions=1)
    with pytest.raises(PythonWorkerError) as info, worker_errors():
        frame.mapInArrow(namespace["fail"], frame.schema).collect()
    message = str(info.value)
    assert message == "a Python task failed on the executors: ValueError: boom in the worker: 5"
    assert info.value.__cause__ is not None  # Py4J's error, with the whole trace, stays chained


def test_the_preflight_reports_the_executors_python(spark: Any) -> None:
    from puffin.spark.preflight import check_executors, require_executors

    found = check_executors(spark)
    assert found.error is None and found.puffin == puffin.__version__
    assert found.python == sys.executable  # local masters run the driver's Python
    assert require_executors(spark) is require_executors(spark)  # once per session


def test_worker_errors_leave_other_errors_alone() -> None:
    from puffin.spark.preflight import _last_line, worker_errors

    with pytest.raises(KeyError), worker_errors():
        raise KeyError("not from Spark")
    text = (
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n  File \"w.py\", line 1, in main\n"
        "puffin.errors.DeletionVectorError: bad CRC\n\n"
        "\tat org.apache.spark.api.python.PythonException.foo(PythonRunner.scala:1)\n"
    )
    assert _last_line(Exception(text)) == "puffin.errors.DeletionVectorError: bad CRC"
    assert _last_line(Exception("Job aborted\nmore")) == "Job aborted"


# A CDC history (tests/cdc_history.py): deletes by one key and by two, a null key, upserts
# in both partitions, a key deleted then inserted again.
CDC_STEPS = [
    ("delete", [1, None], 0, ("id",)),
    ("upsert", [2], 1, ("id",)),
    ("delete", [3], 0, ("id", "p")),
    ("insert", [1], 0, ("id",)),
    ("upsert", [0, 1], 0, ("id",)),
]


@pytest.mark.parametrize("partitioned", [True, False])
def test_equality_deletes_are_matched_on_the_executors(
    spark: Any, tmp_path: Path, partitioned: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """The statistics job counts the rows the model holds live (the NDV of a column unique
    per row); a delete on Spark counts live rows only; the conversion on Spark (the
    function, or the command line on the unpartitioned table) leaves the model's rows and no
    equality delete, and gives the vectors the Python jobs give on the same history."""
    import json

    from cdc_history import build_history, equality_files, live_rows
    from puffin.cli import main
    from puffin.iceberg import convert_equality_deletes, delete_rows, local_catalog
    from puffin.iceberg.maintenance.convert_equality import ConvertResult

    table, model = build_history(tmp_path / "spark", partitioned, CDC_STEPS)
    assert equality_files(table) and live_rows(table) == model.live()
    stats = ps.compute_table_statistics(spark, table, columns=["tag"], commit=False)
    assert int(stats.blob_metadata[0].properties["ndv"]) == len(model.live())
    # every live row but the newest, rows the equality deletes removed among them
    cut = max(r[2] for r in model.live())
    deleted = ps.delete_rows(spark, table, f"tag < {cut}")
    assert deleted.deleted_rows == len(model.live()) - 1 > 0
    table = deleted.table
    model.rows = [(s, r) for s, r in model.rows if r[2] >= cut]
    assert live_rows(table) == model.live()

    if partitioned:
        converted = ps.convert_equality_deletes(spark, table)
    else:
        command = ["spark", "convert-equality-deletes", "db.cdc", "--json", "--warehouse"]
        assert main([*command, str(tmp_path / "spark")]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["command"] == "spark convert-equality-deletes" and doc["snapshot_id"]
        table = local_catalog(tmp_path / "spark", create=False).load_table("db.cdc")
        counts = (doc["equality_files"], doc["data_files"], doc["converted_rows"])
        converted = ConvertResult(table, doc["snapshot_id"], *counts)
    assert not equality_files(converted.table)
    assert live_rows(converted.table) == model.live()
    twin, _ = build_history(tmp_path / "python", partitioned, CDC_STEPS)
    expected = convert_equality_deletes(delete_rows(twin, f"tag < {cut}").table)
    assert (converted.equality_files, converted.data_files, converted.converted_rows) == (
        expected.equality_files, expected.data_files, expected.converted_rows,
    )  # fmt: skip
    assert converted.converted_rows > 0


def test_a_v2_cdc_table_is_deleted_from_upgraded_and_converted_on_spark(
    spark: Any, tmp_path: Path
) -> None:
    """A v2 table with equality deletes: a merge-on-read delete on Spark writes
    position-delete files, the upgrade on Spark turns those into vectors and keeps the
    equality deletes, and the conversion on Spark leaves the model's rows."""
    from cdc_history import build_history, equality_files, live_rows

    table, model = build_history(tmp_path, False, CDC_STEPS, format_version=2)
    with table.transaction() as tx:
        tx.set_properties({"write.delete.mode": "merge-on-read"})
    table = table.refresh()
    cut = max(r[2] for r in model.live())
    deleted = ps.delete_rows(spark, table, f"tag < {cut}")
    assert deleted.position_delete_files and deleted.vectors == ()
    model.rows = [(s, r) for s, r in model.rows if r[2] >= cut]
    assert live_rows(deleted.table) == model.live()
    upgraded = ps.upgrade_to_v3(spark, deleted.table)
    assert upgraded.metadata.format_version == 3 and equality_files(upgraded)
    assert live_rows(upgraded) == model.live()
    converted = ps.convert_equality_deletes(spark, upgraded)
    assert not equality_files(converted.table) and live_rows(converted.table) == model.live()


def test_floating_point_equality_keys_match_on_spark_as_iceberg_compares_them(
    spark: Any, tmp_path: Path
) -> None:
    """Spark tasks match equality keys with the Python job's code (Spark's own join took
    -0.0 for 0.0): keys 0.0 and NaN delete the rows 0.0 and NaN, not -0.0 nor 1.5, as
    Java's ``Float.compareTo`` tells them apart; the conversion leaves those rows."""
    import math

    from iceberg_fixtures import equality_delete_file
    from puffin.iceberg import append, scan_table, upgrade_to_v3
    from puffin.iceberg.metadata.snapshots import commit_snapshot

    ids = [{"PARQUET:field_id": str(i)} for i in (1, 2)]
    schema = pa.schema([pa.field("id", pa.int64(), metadata=ids[0]),
                        pa.field("x", pa.float64(), metadata=ids[1])])  # fmt: skip
    catalog = make_catalog(tmp_path)
    table = upgrade_to_v3(catalog.create_table("db.f", schema))
    xs = [0.0, -0.0, math.nan, 1.5, None]
    table = append(table, pa.table({"id": range(len(xs)), "x": xs}, schema=schema))
    keys = pa.table({"x": [0.0, math.nan]}, schema=pa.schema([schema.field("x")]))
    delete = equality_delete_file(table, tmp_path / "eq.parquet", keys, [2])
    table, _ = commit_snapshot(table, [], deletes=[delete], operation="delete")
    assert sorted(scan_table(table).to_arrow()["id"].to_pylist()) == [1, 3, 4]
    converted = ps.convert_equality_deletes(spark, table)
    assert converted.converted_rows == 2
    assert sorted(scan_table(converted.table).to_arrow()["id"].to_pylist()) == [1, 3, 4]
