"""Maintenance on Spark's executors against its single-process twin on a twin table.

``puffin.spark.rewrite_data_files``: compaction whose files are written on the executors
leaves the rows, row ids, files removed and statistics the single-process compaction leaves
(the model: the rows the sample table's Parquet files hold, less the deletes' conditions),
and no file of its own behind when a task fails. ``puffin.spark.expire_snapshots``: the
same snapshots expired and the same files deleted, by kind and bytes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")

import puffin.spark as ps
from iceberg_fixtures import make_catalog
from puffin.errors import PythonWorkerError
from puffin.iceberg import (
    compute_table_statistics,
    create_sample_table,
    delete_rows,
    read_table_statistics,
    rewrite_data_files,
    scan_table,
    upgrade_to_v3,
    verify_table,
)
from puffin.iceberg.maintenance.file_groups import pack
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.verify.orphans import find_orphans
from puffin.io.locations import local_path

pytestmark = pytest.mark.spark

# The sample table's four files hold ids 0-749, 750-1499, 1500-2249 and 2250-2999.
DELETES: list[tuple[str, Any]] = [
    ("id < 100", lambda t: pc.less(t["id"], 100)),
    (
        "id >= 800 and id < 850",
        lambda t: pc.and_(pc.greater_equal(t["id"], 800), pc.less(t["id"], 850)),
    ),
    ("id >= 2700", lambda t: pc.greater_equal(t["id"], 2700)),
]
LINEAGE = ("_row_id", "_last_updated_sequence_number")
#: Files of about 44 KB are small against it (75 %): all four are rewritten, in three bins.
TARGET = 60_000


def _deleted(folder: Path, version: int = 3) -> tuple[Any, pa.Table]:
    """The sample table with :data:`DELETES` applied (deletion vectors on v3, position-delete
    files on v2), and the model of its rows."""
    table = create_sample_table(make_catalog(folder), "db.t", rows=3000, files=4, seed=4)
    model = pa.concat_tables(
        pq.read_table(local_path(p.path)) for p in plan_files(table, table.current_snapshot())
    )
    if version == 3:
        table = upgrade_to_v3(table)
    else:  # deletes as Parquet position-delete files, not copy-on-write
        with table.transaction() as tx:
            tx.set_properties({"write.delete.mode": "merge-on-read"})
        table = table.refresh()
    compute_table_statistics(table, progress=False)
    table = table.refresh()
    for where, condition in DELETES:
        table = delete_rows(table, where).table
        model = model.filter(pc.invert(pc.fill_null(condition(model), False)))
    return table, model.sort_by("id")


def _rows(table: Any, lineage: bool) -> pa.Table:
    fields = ("*", *LINEAGE) if lineage else ("*",)
    return scan_table(table, selected_fields=fields).to_arrow().sort_by("id")


def _removed(table: Any) -> list[tuple[int, int]]:
    """The data files the current snapshot removed from its parent's, as (rows, bytes):
    the two tables are built alike but their files are named by random uuids."""
    current = table.current_snapshot()
    parent = table.snapshot_by_id(current.parent_snapshot_id)
    after = {p.path for p in plan_files(table, current)}
    return sorted(
        (p.record_count, p.data_file.file_size_in_bytes)
        for p in plan_files(table, parent)
        if p.path not in after
    )


@pytest.mark.parametrize("version", [3, 2])
def test_the_same_rows_row_ids_and_files_as_local_compaction(
    spark: Any, tmp_path: Path, version: int
) -> None:
    here, model = _deleted(tmp_path / "local", version)
    there, _ = _deleted(tmp_path / "spark", version)
    before = _rows(there, version == 3)
    local = rewrite_data_files(here, target_file_size_bytes=TARGET)
    result = ps.rewrite_data_files(spark, there, target_file_size_bytes=TARGET)
    for field in ("rewritten_files", "rows", "dropped_deleted_rows", "removed_vectors",
                  "statistics", "bytes_before"):  # fmt: skip
        assert getattr(result, field) == getattr(local, field), field
    assert result.rewritten_files == 4 and result.added_files >= 3  # a bin at least a file
    table = result.table
    assert table.current_snapshot().summary.operation.value == "replace"
    rows = _rows(table, version == 3)
    assert rows.equals(before)  # the same rows and, on v3, row ids
    assert _rows(table, False).equals(model)
    assert table.scan().to_arrow().sort_by("id").equals(model)  # pyiceberg's reader
    assert _removed(table) == _removed(local.table)
    assert verify_table(table).ok, verify_table(table).problems
    assert not find_orphans(table)  # nothing of the job's left beside the table's files
    assert read_table_statistics(table).snapshot_id == table.current_snapshot().snapshot_id


def test_partial_progress_commits_each_batch_once_written(spark: Any, tmp_path: Path) -> None:
    table, model = _deleted(tmp_path)
    before = _rows(table, True)
    result = ps.rewrite_data_files(
        spark, table, target_file_size_bytes=TARGET, partial_progress_commits=2
    )
    assert (result.commits, result.failed_groups, result.rewritten_files) == (2, 0, 4)
    assert _rows(result.table, True).equals(before) and _rows(result.table, False).equals(model)
    assert not find_orphans(result.table)


def test_an_interrupt_after_a_batch_committed_exits_4_and_leaves_no_file(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Ctrl-C once the second batch's files are written on the executors, before its
    commit: the first batch's snapshot stays, the command exits 4 naming the groups left,
    and the second batch's files are removed."""
    from puffin.cli import main
    from puffin.iceberg import local_catalog
    from puffin.spark import compact as spark_compact

    table, model = _deleted(tmp_path)
    before = _rows(table, True)
    real = spark_compact._SparkRewriter.__call__
    written: list[list[str]] = []

    def interrupted(self: Any, *args: Any) -> Any:
        added = real(self, *args)
        written.append([str(f.file_path) for f in added])
        if len(written) == 2:
            raise KeyboardInterrupt
        return added

    monkeypatch.setattr(spark_compact._SparkRewriter, "__call__", interrupted)
    command = ["spark", "compact", "db.t", "--target-size", str(TARGET), "--no-statistics"]
    status = main([*command, "--partial-progress", "3", "--master", "local[2]",
                   "--warehouse", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 4, err
    table = local_catalog(tmp_path, create=False).load_table("db.t")
    assert str(table.current_snapshot().snapshot_id) in err and "2 file groups" in err
    assert len(written) == 2 and written[1]
    assert not any(Path(local_path(p)).exists() for p in written[1])
    assert all(Path(local_path(p)).exists() for p in written[0])  # the first batch's, kept
    assert _rows(table, True).equals(before) and _rows(table, False).equals(model)
    assert not find_orphans(table)


def test_the_command_line_prints_what_table_compact_prints(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from puffin.cli import main
    from puffin.iceberg import local_catalog

    table, model = _deleted(tmp_path)
    command = ["spark", "compact", "db.t", "--target-size", str(TARGET), "--no-statistics"]
    assert main([*command, "--json", "--master", "local[2]", "--warehouse", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "spark compact" and doc["snapshot_id"]
    assert (doc["rewritten_files"], doc["rows"], doc["statistics"]) == (4, model.num_rows, "none")
    table = local_catalog(tmp_path, create=False).load_table("db.t")
    assert table.current_snapshot().snapshot_id == doc["snapshot_id"]
    assert _rows(table, False).equals(model)
    assert main([*command, "--master", "local[2]", "--warehouse", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("nothing to compact")


def test_a_failed_task_commits_nothing_and_leaves_no_file(spark: Any, tmp_path: Path) -> None:
    """A data file gone from disk fails the task of its bin, after the other bins wrote
    theirs: the job commits nothing, and no file it wrote is left."""
    table, _ = _deleted(tmp_path)
    current = table.current_snapshot()
    planned = plan_files(table, current)
    bins = pack({(0, None): planned}, TARGET)
    Path(local_path(bins[-1][1][-1].path)).unlink()
    with pytest.raises(PythonWorkerError, match="FileNotFoundError"):
        ps.rewrite_data_files(spark, table, target_file_size_bytes=TARGET)
    table = table.refresh()
    assert table.current_snapshot().snapshot_id == current.snapshot_id
    assert not find_orphans(table)


def test_a_task_still_running_when_the_job_fails_leaves_no_file(
    spark: Any, tmp_path: Path
) -> None:
    """Eight bins in two tasks of four; the second task fails at once, on its first bin:
    Spark returns the failure, but the first task writes on until its Python worker is
    killed (``spark.python.task.killTimeout`` later), through all its bins here. No file of
    the job is left once it has failed, nor appears in the seconds after: the driver removes
    them only when no task runs any more (without that wait, the first task's eight files
    are left)."""
    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=320_000, files=16, seed=2)
    planned = plan_files(table, table.current_snapshot())
    size = max(p.data_file.file_size_in_bytes for p in planned)
    bins = pack({(0, None): planned}, 2 * size)
    assert len(bins) == 8
    Path(local_path(bins[4][1][0].path)).unlink()
    data = Path(local_path(table.location())) / "data"
    before = set(data.rglob("*.parquet"))
    with pytest.raises(PythonWorkerError, match="FileNotFoundError"):
        ps.rewrite_data_files(spark, table, min_deleted_fraction=0.0, min_input_files=1,
                              target_file_size_bytes=2 * size, statistics="none")  # fmt: skip
    for _ in range(30):
        assert set(data.rglob("*.parquet")) == before
        time.sleep(0.1)


def test_expiry_deletes_on_the_executors_what_local_expiry_deletes(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four snapshots (deletes, a compaction) expired to the last: the same snapshots and
    files go, by kind and bytes, as the single-process expiry's on a twin table; through
    the command line too."""
    from datetime import timedelta

    from puffin.cli import main
    from puffin.iceberg import expire_snapshots, local_catalog

    tables = []
    for name in ("local", "spark", "cli"):
        table, model = _deleted(tmp_path / name)
        tables.append(rewrite_data_files(table, target_file_size_bytes=TARGET).table)
    here = expire_snapshots(tables[0], older_than=timedelta(0), retain_last=1)
    there = ps.expire_snapshots(spark, tables[1], older_than=timedelta(0), retain_last=1)
    assert len(there.expired_snapshot_ids) == len(here.expired_snapshot_ids) >= 4
    assert _files_by_kind(there.deleted) == _files_by_kind(here.deleted)
    assert there.deleted_files > 10
    assert not there.skipped_outside_table
    assert _rows(there.table, False).equals(model)
    assert there.table.scan().to_arrow().sort_by("id").equals(model)  # pyiceberg's reader
    assert verify_table(there.table).ok and not find_orphans(there.table)
    command = ["spark", "expire", "db.t", "--older-than", "0s", "--json"]
    assert main([*command, "--master", "local[2]", "--warehouse", str(tmp_path / "cli")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "spark expire"
    deleted = {k: (v["files"], v["bytes"]) for k, v in doc["deleted"].items()}
    assert _files_by_kind(deleted) == _files_by_kind(here.deleted)
    table = local_catalog(tmp_path / "cli", create=False).load_table("db.t")
    assert _rows(table, False).equals(model)


def _files_by_kind(deleted: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """Files deleted by kind, with bytes for data files: the other files of twin tables
    differ by a few bytes (the snapshot ids and uuids they record)."""
    return {k: (n, b if k == "data" else None) for k, (n, b) in deleted.items()}


def _plant_orphans(table: Any) -> list[str]:
    """Files nothing references, three days old, in folders the listing must open (and
    hidden ones it must not list); their paths relative to the table's folder."""
    import os

    root = Path(local_path(table.location()))
    planted = ["data/stray.parquet", "data/p=1/a.parquet", "data/p=2/q=3/b.parquet",
               "metadata/old.avro", "data/.hidden/c.parquet", "data/_tmp/d.parquet",
               "data/p=1/.e.crc"]  # fmt: skip
    old = time.time() - 4 * 86400
    for relative in planted:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"orphan")
        os.utime(path, (old, old))
    return planted[:4]  # the hidden ones are never listed


def _not_on_the_driver(*args: Any) -> bool:
    raise AssertionError("an orphan was deleted on the driver")


def test_an_orphan_task_reports_files_gone_and_outside_the_table(tmp_path: Path) -> None:
    """What a Spark task of the orphan cleanup sends back, run here: the set-aside file it
    deleted (by kind and bytes), and one found gone; an expiry's task notes a location
    outside the table as skipped, not gone."""
    from puffin.spark.file_tasks import TableRef
    from puffin.spark.table_files import _task

    table, _ = _deleted(tmp_path)
    folder = Path(local_path(table.location())) / "data"
    aside = folder / ".x.parquet.puffin-set-aside"
    aside.write_bytes(b"12345")
    ref = TableRef.of(table, table.current_snapshot())
    batch = pa.record_batch({"location": [str(aside), str(folder / ".gone")],
                             "kind": ["data", "data"]})  # fmt: skip
    out = pa.Table.from_batches(list(_task(ref, (), True)(iter([batch])))).to_pylist()
    gone = str(folder / ".gone")
    assert out == [
        {"kind": "data", "files": 1, "bytes": 5, "skipped": None, "gone": None},
        {"kind": None, "files": None, "bytes": None, "skipped": None, "gone": gone},
    ]
    assert not aside.exists()
    batch = pa.record_batch({"location": [str(tmp_path / "elsewhere")], "kind": ["data"]})
    out = pa.Table.from_batches(list(_task(ref, (), False)(iter([batch])))).to_pylist()
    assert out == [{"kind": None, "files": None, "bytes": None,
                    "skipped": str(tmp_path / "elsewhere"), "gone": None}]  # fmt: skip


def test_orphan_cleanup_lists_on_the_executors_what_local_cleanup_lists(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from puffin.cli import main
    from puffin.iceberg import remove_orphan_files
    from puffin.iceberg.maintenance.guard import Deletions
    from puffin.iceberg.verify.orphans import listed_files
    from puffin.spark.table_files import list_on_executors

    tables = []
    for name in ("local", "spark"):
        table, model = _deleted(tmp_path / name)
        tables.append(table)
        visible = _plant_orphans(table)
    root = str(local_path(tables[1].location()))
    for per_core in (0, 1, 64):  # a task walks the root; the driver opens one level; all
        assert sorted(list_on_executors(spark, per_core)(root)) == sorted(listed_files(root))
    here = remove_orphan_files(tables[0])
    with pytest.MonkeyPatch.context() as patch:  # the driver deletes nothing itself
        patch.setattr(Deletions, "finish", _not_on_the_driver)
        there = ps.remove_orphan_files(spark, tables[1])

    def relative(result: Any, table: Any) -> list[str]:
        root = Path(local_path(table.location()))
        return sorted(str(Path(o.path).relative_to(root)) for o in result.removed)

    assert relative(there, tables[1]) == relative(here, tables[0]) == sorted(visible)
    assert there.deleted == here.deleted and not there.dry_run
    left = find_orphans(tables[1])
    assert all(o.modified.timestamp() > time.time() - 3 * 86400 for o in left)  # none old
    assert _rows(tables[1].refresh(), False).equals(model)
    _plant_orphans(tables[1])  # again, for the command line's dry run
    command = ["spark", "remove-orphans", "db.t", "--json", "--master", "local[2]"]
    assert main([*command, "--warehouse", str(tmp_path / "spark")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "spark remove-orphans" and doc["deleted"] is False
    root = Path(local_path(tables[1].location()))
    listed = sorted(str(Path(f["path"]).relative_to(root)) for f in doc["files"])
    assert listed == sorted(visible)


@pytest.mark.parametrize("version", [3, 2])
def test_position_deletes_rewritten_from_positions_read_on_the_executors(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], version: int
) -> None:
    """Three deletes' files (vectors on v3, gathered; position-delete files on v2, one per
    data file already, left): the same files before and after, vectors and deleted rows as
    the single-process rewrite of a twin table, the rows unchanged; through the command line
    too."""
    from puffin.cli import main
    from puffin.iceberg import local_catalog, rewrite_position_delete_files

    here, model = _deleted(tmp_path / "local", version)
    there, _ = _deleted(tmp_path / "spark", version)
    _deleted(tmp_path / "cli", version)  # the command line's twin
    before = _rows(there, version == 3)
    local = rewrite_position_delete_files(here)
    result = ps.rewrite_position_delete_files(spark, there)
    counts = ("files_before", "files_after", "vectors", "dropped_dangling", "deleted_rows")
    assert [getattr(result, c) for c in counts] == [getattr(local, c) for c in counts]
    assert result.files_before == 3 and result.deleted_rows == 3000 - model.num_rows
    if version == 3:  # three Puffin files, one vector each: gathered into one
        assert result.snapshot_id and result.files_after == 1
    else:  # a position-delete file per data file already (write.delete.granularity=file)
        assert result.snapshot_id is None and local.snapshot_id is None
    assert _rows(result.table, version == 3).equals(before)
    assert _rows(result.table, False).equals(model)
    assert result.table.scan().to_arrow().sort_by("id").equals(model)  # pyiceberg's reader
    assert verify_table(result.table).ok
    command = ["spark", "rewrite-deletes", "db.t", "--json", "--master", "local[2]"]
    assert main([*command, "--warehouse", str(tmp_path / "cli")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "spark rewrite-deletes"
    assert [doc[c] for c in counts] == [getattr(local, c) for c in counts]
    table = local_catalog(tmp_path / "cli", create=False).load_table("db.t")
    assert _rows(table, False).equals(model)


def test_java_reads_what_the_spark_maintenance_left(
    spark: Any, java: Any, tmp_path: Path
) -> None:
    """Iceberg Java 1.10.2 reads the model's rows after each maintenance job ran on Spark:
    position deletes gathered, files compacted, snapshots expired."""
    from datetime import timedelta

    from peers.iceberg_java import read_java

    table, model = _deleted(tmp_path)
    ids = sorted(model.column("id").to_pylist())
    table = ps.rewrite_position_delete_files(spark, table).table
    table = ps.rewrite_data_files(spark, table, target_file_size_bytes=TARGET).table
    for step in ("compacted", "expired"):
        rows = read_java(java, local_path(table.metadata_location) or "")
        assert sorted(rows.column("id").to_pylist()) == ids, step
        table = ps.expire_snapshots(spark, table, older_than=timedelta(0)).table


_KILLED_TASK = r"""
import json, os, signal, sys, threading, time
from pathlib import Path

sys.path.insert(0, sys.argv[2])  # tests/, for iceberg_fixtures
from iceberg_fixtures import make_catalog
import puffin.spark as ps
from puffin.iceberg import create_sample_table, delete_rows, scan_table, upgrade_to_v3
from puffin.iceberg.verify.orphans import find_orphans

folder = Path(sys.argv[1])
table = upgrade_to_v3(create_sample_table(make_catalog(folder), "db.t", rows=100_000, files=4))
table = delete_rows(table, " or ".join(
    f"(id >= {start} and id < {start + 100})" for start in range(0, 100_000, 25_000))).table
fields = ("id", "_row_id")
before = scan_table(table, selected_fields=fields).to_arrow().sort_by("id")
spark = ps.local_session("local[2,2]")  # a failed task is tried once more
data = folder / "db" / "t" / "data"
known = set(os.listdir(data))
killed = []

def workers():
    daemons = set()
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                line = f.read()
            with open(f"/proc/{pid}/stat") as f:
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if b"pyspark.daemon" in line:
            daemons.add(int(pid))

    def ours(pid):  # this process's own Spark (other tests' sessions may run beside it)
        for _ in range(20):
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    return [pid for pid, parent in parents.items() if parent in daemons and ours(parent)]

def kill_when_writing():  # the first new data file appears: its writer dies mid-write
    while True:
        new = [n for n in os.listdir(data) if n not in known and n.endswith(".parquet")]
        if new:
            for pid in workers():
                os.kill(pid, signal.SIGKILL)
            killed.extend(new)
            return
        time.sleep(0.002)

threading.Thread(target=kill_when_writing, daemon=True).start()
started = time.time()
result = ps.rewrite_data_files(spark, table, min_deleted_fraction=0.0, statistics="none",
                               target_file_size_bytes=32 * 1024)
seconds = time.time() - started
after = scan_table(result.table, selected_fields=fields).to_arrow().sort_by("id")
print("RESULT " + json.dumps({
    "killed": killed, "rewritten": result.rewritten_files, "same": after.equals(before),
    "seconds": seconds,
    "orphans": [o.path for o in find_orphans(result.table)],
    "left": [n for n in killed if (data / n).exists()],
}))
spark.stop()
"""


def test_a_killed_task_is_retried_and_leaves_no_file(tmp_path: Path) -> None:
    """On ``local[2,2]`` the Python workers are killed as the first new data file appears:
    Spark tries the tasks again, the job commits the retries' files, and the killed
    attempts' half-written files are gone (found by their names, not by a listing). Files
    of 32 KiB: a file is still being written when it appears (one byte made a file of each
    row group, about 170,000 of them, and the test took four minutes)."""
    import os
    import subprocess
    import sys

    from _paths import ROOT, TESTS

    script = tmp_path / "killed.py"
    script.write_text(_KILLED_TASK)
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYSPARK_PYTHON")}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "wh"), str(TESTS)],
        capture_output=True, text=True, timeout=600, check=False, env=env, cwd=ROOT,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, (done.stdout[-2000:], done.stderr[-4000:])
    result = json.loads(lines[-1][len("RESULT ") :])
    assert result["killed"] and result["rewritten"] == 4 and result["same"]
    assert result["left"] == [] and result["orphans"] == []


@pytest.mark.parametrize(
    ("raw", "seconds"), [("2s", 2.0), ("500ms", 0.5), ("1m", 60.0), (" 3S ", 3.0), ("soon", 2.0)]
)
def test_spark_durations_read_as_seconds(raw: str, seconds: float) -> None:
    """How long a Spark Connect driver waits out a failed job's tasks
    (``spark.python.task.killTimeout``, and a second more)."""
    from puffin.spark.settle import duration_seconds

    assert duration_seconds(raw) == seconds
