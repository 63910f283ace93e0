"""The Spark pipeline on real cluster shapes, started and stopped here on 127.0.0.1 from the
pyspark in ``.venv`` (no other download):

- a standalone master and a worker, each its own JVM (``spark-class ...Master`` / ``...Worker``);
- Apache Spark's own Connect server (``spark-class ...SparkConnectServer``).

On each (the standalone worker's ``python3`` lacks this library, so the driver ships its
environment there), statistics (the ``arrow`` engine, so Python workers run),
``delete_rows`` committed and the v2 -> v3 migration give the same sketches and deletion
vectors as the single-process library, byte for byte (which tests/spark/test_spark.py shows
``local[2]`` gives too), and deletion vectors equal to a model computed with pyarrow from the
condition alone; a compaction written on the executors leaves the rows and row ids it found,
and no orphan, as its single-process twin does, and one whose job fails leaves no file;
gathering position deletes, expiring snapshots and removing orphans there write and delete
what their twins do (tests/spark/test_maintenance.py: the model, on ``local[2]``); pyiceberg
and Iceberg Java 1.10.2 then read the model's rows from what they left.

Then the cluster as nodes that were not prepared: the worker's ``python3`` lacks this library.
``puffin spark dv --commit`` stops before any work with one line naming the executors'
Python and the remedies, and succeeds with ``--ship-environment`` (a PEX of the driver's
environment). A Python worker's own exception reaches the user by type and message.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from _paths import ROOT, TESTS
from _processes import free_port

pytestmark = [pytest.mark.spark, pytest.mark.java, pytest.mark.slow]

pyspark = pytest.importorskip("pyspark")
SPARK_HOME = Path(pyspark.__file__).resolve().parent
PUFFIN = str(Path(sys.executable).parent / "puffin")


def _wait(ready: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise AssertionError(f"{what} did not start in {timeout:.0f} s:\n{tail}")
        time.sleep(0.5)


def _spark_class(
    main: str, args: list[str], log: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), main, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # the JVM and its children stop together
        )


def _spark_submit(
    main: str, args: list[str], log: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-submit"), "--class", main, *args, "spark-internal"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _stop(*processes: subprocess.Popen[bytes]) -> None:
    for p in processes:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in processes:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _port_open(port: int) -> Callable[[], bool]:
    def check() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    return check


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose ``python3`` is this interpreter's base Python, without this library:
    the worker's PATH starts with it, as on nodes nobody prepared."""
    folder = tmp_path_factory.mktemp("bare-python")
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    (folder / "python3").symlink_to(base)
    probe = subprocess.run(
        [str(folder / "python3"), "-c", "import puffin"], capture_output=True, check=False
    )
    assert probe.returncode != 0, f"{base} imports puffin: the test needs a Python without it"
    return folder


def _java_env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(tmp),
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory, bare_python: Path) -> Iterator[str]:
    """``spark://127.0.0.1:PORT``: a master and one worker of 2 cores, stopped at the end."""
    tmp = tmp_path_factory.mktemp("standalone")
    port = free_port()
    env = _java_env(tmp)
    master = _spark_class(
        "org.apache.spark.deploy.master.Master",
        ["--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"],
        tmp / "master.log",
        env,
    )
    worker_env = {**env, "PATH": f"{bare_python}{os.pathsep}{env['PATH']}"}
    worker = None
    try:
        _wait(_port_open(port), 90, "the master", tmp / "master.log")
        worker = _spark_class(
            "org.apache.spark.deploy.worker.Worker",
            ["--host", "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port", "0",
             "--work-dir", str(tmp / "work"), f"spark://127.0.0.1:{port}"],
            tmp / "worker.log",
            worker_env,
        )  # fmt: skip
        _wait(
            lambda: "Registering worker" in (tmp / "master.log").read_text(errors="replace"),
            90, "the worker", tmp / "worker.log",
        )  # fmt: skip
        yield f"spark://127.0.0.1:{port}"
    finally:
        _stop(*(p for p in (worker, master) if p is not None))


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``sc://127.0.0.1:PORT``: Apache Spark's own Connect server, on ``local[2]`` with this
    environment's Python for its workers, stopped at the end."""
    tmp = tmp_path_factory.mktemp("connect")
    port = free_port()
    # As sbin/start-connect-server.sh starts it: spark-submit of the server's class.
    server = _spark_submit(
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        ["--master", "local[2]", "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.ui.enabled=false"],
        tmp / "connect.log",
        {**_java_env(tmp), "PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip
    try:
        _wait(_port_open(port), 120, "the Connect server", tmp / "connect.log")
        yield f"sc://127.0.0.1:{port}"
    finally:
        _stop(server)


# The three jobs in one driver process per cluster shape, against the single-process library
# and a pyarrow model; prints one JSON line.
_JOBS = r"""
import json, sys
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, sys.argv[3])  # tests/, for iceberg_fixtures
from iceberg_fixtures import commit_position_deletes_v2, make_catalog
import puffin
from puffin import spark as ps
from puffin.iceberg import (
    compute_table_statistics, create_sample_table, read_table_deletion_vectors,
)
from puffin.io.locations import local_path

master, folder = sys.argv[1], sys.argv[2]
# the standalone worker's python3 lacks this library: the driver's environment is shipped
spark = ps.local_session(master, ship_environment=not master.startswith("sc://"))
catalog = make_catalog(folder)
table = create_sample_table(
    catalog, "db.t", rows=12000, files=2, properties={"write.parquet.row-group-limit": "1000"}
)
out = {"remote": type(spark).__module__.startswith("pyspark.sql.connect")}

def sketches(stats):
    path = local_path(stats.statistics_path)
    return {b.field_id: b.sketch.serialize().hex() for b in puffin.read_theta_blobs(path)}

ours = ps.compute_table_statistics(spark, table, commit=False, engine="arrow")
single = compute_table_statistics(table, commit=False, progress=False)
out["stats_equal"] = sketches(ours) == sketches(single)
out["stats_columns"] = len(sketches(ours))

def category(path):
    column = pq.read_table(local_path(path), columns=["category"])["category"]
    return pc.equal(column, 3).fill_null(False).to_numpy(zero_copy_only=False)

v3 = ps.upgrade_to_v3(spark, table)  # no position deletes: the plain upgrade
result = ps.delete_rows(spark, catalog.load_table("db.t"), "category = 3")
vectors = read_table_deletion_vectors(result.table)
out["dv_files"] = len(vectors)
out["dv_model"] = all(
    np.array_equal(dv.to_numpy(), np.flatnonzero(category(path))) for path, dv in vectors.items()
)
out["dv_bytes"] = all(
    dv.serialize() == puffin.DeletionVector(np.flatnonzero(category(path))).serialize()
    for path, dv in vectors.items()
)

base = create_sample_table(catalog, "db.v2", rows=6000, files=2)
paths = sorted(t.file.file_path for t in base.scan().plan_files())
deleted = {paths[0]: np.arange(0, 3000, 3), paths[1]: np.array([0, 2999])}
v2 = commit_position_deletes_v2(catalog, base, deleted, new_identifier="db.pd")
migrated = ps.upgrade_to_v3(spark, v2)
got = read_table_deletion_vectors(migrated)
out["migrated_v3"] = migrated.metadata.format_version == 3
out["migrated_model"] = sorted(got) == sorted(deleted) and all(
    np.array_equal(got[p].to_numpy(), deleted[p]) for p in deleted
)

from puffin.iceberg import delete_rows, rewrite_data_files, scan_table, upgrade_to_v3
from puffin.iceberg.verify.orphans import find_orphans

def with_deletes(name):
    twin = upgrade_to_v3(create_sample_table(catalog, name, rows=6000, files=4))
    for where in ("id < 500", "id >= 5000"):
        twin = delete_rows(twin, where).table
    return twin

def lineage(t):
    fields = ("*", "_row_id", "_last_updated_sequence_number")
    return scan_table(t, selected_fields=fields).to_arrow().sort_by("id")

there, here = with_deletes("db.c"), with_deletes("db.c2")
before = lineage(there)
mine = ps.rewrite_data_files(spark, there, target_file_size_bytes=200_000)
single = rewrite_data_files(here, target_file_size_bytes=200_000)
out["compact_same_rows"] = lineage(mine.table).equals(before)
out["compact_counts"] = [mine.rewritten_files, mine.rows, single.rewritten_files, single.rows]
out["compact_orphans"] = len(find_orphans(mine.table))

from datetime import timedelta
from puffin.iceberg import expire_snapshots, rewrite_position_delete_files

gathered = ps.rewrite_position_delete_files(spark, with_deletes("db.r"))
twin = rewrite_position_delete_files(with_deletes("db.r2"))
out["gathered"] = [gathered.files_after, gathered.deleted_rows, twin.files_after, twin.deleted_rows]
expired = ps.expire_snapshots(spark, mine.table, older_than=timedelta(0), retain_last=1)
local_expired = expire_snapshots(single.table, older_than=timedelta(0), retain_last=1)
out["expired_files"] = [
    {k: n for k, (n, _) in expired.deleted.items()},
    {k: n for k, (n, _) in local_expired.deleted.items()},
]
out["expired_rows"] = lineage(expired.table).equals(before)

import os, time
from puffin.iceberg import remove_orphan_files

def orphaned(t):  # a stray file four days old, where the listing must go down to find it
    path = os.path.join(local_path(t.location()), "data", "stray", "old.parquet")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(b"orphan")
    os.utime(path, (time.time() - 4 * 86400,) * 2)
    return t

cleaned = ps.remove_orphan_files(spark, orphaned(expired.table))
local_cleaned = remove_orphan_files(orphaned(local_expired.table))
out["orphans"] = [
    [os.path.relpath(o.path, local_path(t.location())) for o in r.removed]
    for r, t in ((cleaned, expired.table), (local_cleaned, local_expired.table))
] + [cleaned.deleted == local_cleaned.deleted]
failing = with_deletes("db.f")  # a data file gone: the compaction's job fails
os.remove(local_path(sorted(t.file.file_path for t in failing.scan().plan_files())[0]))
data = os.path.join(local_path(failing.location()), "data")
present = set(os.listdir(data))
try:
    ps.rewrite_data_files(spark, failing, min_input_files=1,  # every file: all are small
                          target_file_size_bytes=10_000_000)
    out["failed_job"] = ["no error"]
except Exception as exc:
    time.sleep(1)  # nothing of the job appears after it returned, either
    out["failed_job"] = [type(exc).__name__, sorted(set(os.listdir(data)) - present)]
out["for_java"] = {  # what Java reads after: ids 500-4999 in each
    "compacted, expired, orphans removed": local_path(expired.table.metadata_location),
    "position deletes gathered": local_path(gathered.table.metadata_location),
}
out["pyiceberg"] = [  # pyiceberg's own reader
    sorted(catalog.load_table(name).scan().to_arrow()["id"].to_pylist()) == list(range(500, 5000))
    for name in ("db.c", "db.r")
]
print("RESULT " + json.dumps(out))
spark.stop()
"""


def _run_jobs(master: str, tmp: Path) -> dict[str, Any]:
    script = tmp / "jobs.py"
    script.write_text(_JOBS)
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYSPARK_PYTHON")}
    done = subprocess.run(
        [sys.executable, str(script), master, str(tmp / "wh"), str(TESTS)],
        capture_output=True, text=True, timeout=900, check=False, env=env, cwd=ROOT,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, (done.stdout[-2000:], done.stderr[-4000:])
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def _expected(result: dict[str, Any], java: Any) -> None:
    from peers.iceberg_java import read_java

    assert result["stats_equal"] and result["stats_columns"] >= 9
    assert result["dv_files"] == 2 and result["dv_model"] and result["dv_bytes"]
    assert result["migrated_v3"] and result["migrated_model"]
    # compaction written on the executors: the single-process twin's rows and row ids
    assert result["compact_same_rows"] and result["compact_orphans"] == 0
    assert result["compact_counts"] == [4, 4500, 4, 4500]  # 6000 rows less 500 and 1000
    # position deletes gathered and snapshots expired there: as the single-process twins
    assert result["gathered"] == [1, 1500, 1, 1500]
    files, twin_files = result["expired_files"]
    assert files == twin_files and files.get("data") == 4 and result["expired_rows"]
    # orphans listed and deleted there: as the single-process twin
    assert result["orphans"] == [["data/stray/old.parquet"]] * 2 + [True]
    assert result["pyiceberg"] == [True, True]
    assert result["failed_job"] == ["PythonWorkerError", []]  # nothing written is left
    for step, metadata in result["for_java"].items():  # Iceberg Java reads the model's rows
        ids = read_java(java, metadata).column("id").to_pylist()
        assert sorted(ids) == list(range(500, 5000)), step


def test_jobs_on_a_standalone_cluster(standalone: str, java: Any, tmp_path: Path) -> None:
    result = _run_jobs(standalone, tmp_path)
    assert result["remote"] is False
    _expected(result, java)


def test_jobs_on_sparks_own_connect_server(
    connect_server: str, java: Any, tmp_path: Path
) -> None:
    result = _run_jobs(connect_server, tmp_path)
    assert result["remote"] is True
    _expected(result, java)


def _sample(folder: Path) -> None:
    for command in (["sample", "db.t", "--rows", "6000", "--files", "2"], ["upgrade", "db.t"]):
        subprocess.run(
            [PUFFIN, "table", *command, "--warehouse", str(folder)],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip


def _current_snapshot(folder: Path) -> int:
    from puffin.iceberg import load_catalog, load_table

    table = load_table(load_catalog(warehouse=folder, create=False), "db.t")
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return int(snapshot.snapshot_id)


def _dv_commit(master: str, folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYSPARK_PYTHON")}
    return subprocess.run(
        [PUFFIN, "spark", "dv", "db.t", "--where", "category = 3", "--commit",
         "--warehouse", str(folder), "--master", master, "--no-progress", *extra],
        capture_output=True, text=True, timeout=900, check=False, env=env,
    )  # fmt: skip


def test_executors_without_the_library_stop_before_any_work(
    standalone: str, tmp_path: Path, bare_python: Path
) -> None:
    folder = tmp_path / "wh"
    _sample(folder)
    before = _current_snapshot(folder)
    done = _dv_commit(standalone, folder)
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "the executors' Python (" in lines[0]
    assert "No module named 'puffin'" in lines[0]
    assert "--ship-environment" in lines[0] and "spark.pyspark.python" in lines[0]
    assert _current_snapshot(folder) == before  # nothing committed
    data = folder / "db" / "t" / "data"
    assert not list(data.glob("*.puffin"))  # nothing written


def test_shipping_the_environment_runs_on_bare_executors(
    standalone: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path / "wh"
    _sample(folder)
    before = _current_snapshot(folder)
    done = _dv_commit(standalone, folder, "--ship-environment", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _current_snapshot(folder) != before
    from puffin.iceberg import load_catalog, load_table, read_table_deletion_vectors

    table = load_table(load_catalog(warehouse=folder, create=False), "db.t")
    assert sum(len(dv) for dv in read_table_deletion_vectors(table).values()) > 0
    # compaction on the same bare executors: the rows and row ids it found, the deleted gone
    from puffin.iceberg import scan_table

    fields = ("*", "_row_id", "_last_updated_sequence_number")
    rows = scan_table(table, selected_fields=fields).to_arrow().sort_by("id")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYSPARK_PYTHON")}
    done = subprocess.run(
        [PUFFIN, "spark", "compact", "db.t", "--min-deleted", "0", "--json", "--no-progress",
         "--warehouse", str(folder), "--master", standalone, "--ship-environment"],
        capture_output=True, text=True, timeout=900, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert doc["rewritten_files"] == 2 and doc["rows"] == rows.num_rows
    table = load_table(load_catalog(warehouse=folder, create=False), "db.t")
    assert not read_table_deletion_vectors(table)
    assert scan_table(table, selected_fields=fields).to_arrow().sort_by("id").equals(rows)
