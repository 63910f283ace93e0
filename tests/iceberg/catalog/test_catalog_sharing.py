"""The embedded catalog shared with other processes: commits wait, land or fail cleanly.

Before, any other process holding a read transaction on ``catalog.db`` (a ``sqlite3`` shell,
Iceberg Java's ``JdbcCatalog``) made every commit fail with an internal error, left a new
metadata file behind, and the failing process kept a lock until it exited.  The holders
here are separate processes, not threads.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("pyiceberg")

from puffin.errors import CatalogLockedError, TableNotFoundError, UsageError
from puffin.iceberg import (
    append,
    compute_table_statistics,
    create_sample_table,
    delete_rows,
    load_catalog,
    load_table,
    local_catalog,
    sample_batch,
    upgrade_to_v3,
)

_HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
conn.execute(sys.argv[2])
if sys.argv[2] == "BEGIN":
    conn.execute("SELECT * FROM iceberg_tables").fetchall()  # a read transaction, held
print("holding", flush=True)
sys.stdin.read()
"""


@contextmanager
def _holder(database: Path, begin: str) -> Iterator[None]:
    """Another process holding a transaction (``BEGIN`` + a read, or ``BEGIN IMMEDIATE``)
    on the catalog until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(database), begin],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def _table(warehouse: Path) -> object:
    return upgrade_to_v3(create_sample_table(local_catalog(warehouse), "db.t", rows=900, files=3))


def _files(warehouse: Path) -> set[str]:
    return {str(p) for p in (warehouse / "db" / "t").rglob("*") if p.is_file()}


def test_a_reader_in_another_process_does_not_block_commits(tmp_path: Path) -> None:
    table = _table(tmp_path)
    with _holder(tmp_path / "catalog.db", "BEGIN"):
        result = delete_rows(table, "category = 3")
        assert result.snapshot_id is not None and result.attempts == 1
        appended = append(result.table, sample_batch(100, start=900))
        stats = compute_table_statistics(appended, progress=False)
    fresh = local_catalog(tmp_path).load_table("db.t")
    assert fresh.current_snapshot().snapshot_id == appended.current_snapshot().snapshot_id
    assert fresh.current_snapshot().parent_snapshot_id == result.snapshot_id
    assert [s.statistics_path for s in fresh.metadata.statistics] == [stats.statistics_path]
    mode = sqlite3.connect(tmp_path / "catalog.db").execute("PRAGMA journal_mode").fetchone()
    assert mode[0] == "wal"


def test_a_writer_holding_the_lock_too_long_is_a_clean_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path)
    before = _files(tmp_path)
    location = table.metadata_location
    monkeypatch.setenv("PUFFIN_CATALOG_BUSY_TIMEOUT", "0.2")
    monkeypatch.setattr("puffin.iceberg.metadata.commit_retry.CommitRetry.wait_s", lambda *_: 0.0)
    table = local_catalog(tmp_path).load_table("db.t")  # its connections wait 0.2 s
    with _holder(tmp_path / "catalog.db", "BEGIN IMMEDIATE"):
        with pytest.raises(CatalogLockedError, match="locked by another process") as info:
            delete_rows(table, "category = 3")
        assert "PUFFIN_CATALOG_BUSY_TIMEOUT" in str(info.value)
        assert _files(tmp_path) == before  # no Puffin file, manifest or metadata.json left
    # No connection or lock of ours outlives the call: another process writes at once.
    other = sqlite3.connect(tmp_path / "catalog.db", isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")
    other.execute("ROLLBACK")
    other.close()
    assert local_catalog(tmp_path).load_table("db.t").metadata_location == location


def test_the_command_line_exits_1_naming_the_lock(tmp_path: Path) -> None:
    _table(tmp_path)
    before = _files(tmp_path)
    env = {**os.environ, "PUFFIN_CATALOG_BUSY_TIMEOUT": "0.1"}
    command = [sys.executable, "-m", "puffin", "table", "delete", "db.t"]
    command += ["--warehouse", str(tmp_path), "--where", "category = 3"]
    with _holder(tmp_path / "catalog.db", "BEGIN IMMEDIATE"):
        # The lock is held for good: only the busy timeout can end the command (a hang
        # fails by this timeout).
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "puffin table delete: error:" in proc.stderr
    assert "locked by another process" in proc.stderr
    assert "internal error" not in proc.stderr
    assert _files(tmp_path) == before


def test_a_failed_lookup_leaves_no_catalog_behind(tmp_path: Path) -> None:
    folder = tmp_path / "nowh"
    with pytest.raises(TableNotFoundError):
        load_table(load_catalog(warehouse=folder), "db.events")
    assert not folder.exists()
    existing = tmp_path / "wh"
    create_sample_table(local_catalog(existing), "db.t", rows=10)
    with pytest.raises(TableNotFoundError):
        load_table(load_catalog(warehouse=existing), "db.other")
    assert (existing / "catalog.db").is_file()  # a catalog that was there stays
    with pytest.raises(UsageError, match=r"NAMESPACE\.TABLE"):
        load_table(load_catalog(warehouse=existing), "events")
