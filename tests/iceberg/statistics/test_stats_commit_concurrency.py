"""Statistics commits that survive each other: bounded retries on a refreshed table, no leftovers.

Sixteen processes commit statistics to one SQLite-catalog table at once.  Each loads the
table before any of them commits, so all but the first commit from stale metadata and must
refresh and retry.  "Succeed" means: every call returns, every statistics file is
registered in the final metadata (one per snapshot, each replacing the previous one), and
no ``.stats`` file exists that no metadata version ever registered.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import LongType, NestedField

from iceberg_fixtures import make_catalog
from puffin.errors import CommitConflictError
from puffin.iceberg import local_catalog
from puffin.iceberg.deletes.upgrade import upgrade_to_v3
from puffin.iceberg.statistics import files as statistics
from puffin.iceberg.statistics.compute import compute_table_statistics
from puffin.iceberg.statistics.files import read_table_statistics

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
PROCESSES = 16


def _table(warehouse: Path, snapshots: int, format_version: int = 2) -> Table:
    catalog = make_catalog(warehouse)
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    for s in range(snapshots):
        table.append(pa.table({"id": pa.array(range(s * 10, s * 10 + 10), pa.int64())}))
    table = catalog.load_table("db.t")
    return upgrade_to_v3(table) if format_version == 3 else table


def _stats_files(warehouse: Path) -> set[str]:
    return {p.name for p in warehouse.rglob("*.stats")}


def _ever_registered(warehouse: Path) -> set[str]:
    """Every statistics file named by any metadata version of the table."""
    names = set()
    for path in (warehouse / "db" / "t" / "metadata").glob("*.metadata.json"):
        for stats in json.loads(path.read_text()).get("statistics", []):
            names.add(Path(stats["statistics-path"]).name)
    return names


def _commit_in_process(
    warehouse: str, snapshot_index: int | None, barrier: Any
) -> tuple[str, int]:
    """Commit statistics from a fresh process; the path written and the conflicts lost."""
    lost: list[int] = []
    real = statistics.register_statistics

    def counting(table: Table, stats: Any) -> None:
        try:
            real(table, stats)
        except CommitFailedException:
            lost.append(1)
            raise

    statistics.register_statistics = counting  # this process only
    table = local_catalog(warehouse).load_table("db.t")
    snapshots = sorted(table.snapshots(), key=lambda s: s.sequence_number or 0)
    snapshot_id = None if snapshot_index is None else snapshots[snapshot_index].snapshot_id
    barrier.wait()
    stats = compute_table_statistics(table, snapshot_id=snapshot_id, progress=False)
    return str(stats.statistics_path), len(lost)


def _run(warehouse: Path, indexes: list[int | None]) -> list[str]:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(len(indexes))
        with ctx.Pool(len(indexes)) as pool:
            results = pool.starmap(
                _commit_in_process, [(str(warehouse), i, barrier) for i in indexes]
            )
    # The figure docs/reliability.md quotes (shown with pytest -s).
    print(f"\n{len(indexes)} processes: {sum(n for _, n in results)} lost commits retried, "
          f"at most {max(n for _, n in results)} by one process")
    return [path for path, _ in results]


@pytest.mark.slow  # about 15 s: sixteen processes
def test_sixteen_processes_one_snapshot_each(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    _table(warehouse, PROCESSES)
    paths = _run(warehouse, list(range(PROCESSES)))
    table = local_catalog(warehouse).load_table("db.t")
    registered = {s.snapshot_id: s.statistics_path for s in table.metadata.statistics}
    assert len(registered) == PROCESSES
    assert sorted(registered.values()) == sorted(paths)
    assert _stats_files(warehouse) == {Path(p).name for p in paths}
    for snapshot in table.snapshots():
        stats = read_table_statistics(table, snapshot_id=snapshot.snapshot_id)
        assert stats["id"].ndv == snapshot.sequence_number * 10  # type: ignore[operator]


@pytest.mark.slow  # about 15 s: sixteen processes
def test_sixteen_processes_same_snapshot(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    _table(warehouse, 2)
    paths = _run(warehouse, [None] * PROCESSES)
    table = local_catalog(warehouse).load_table("db.t")
    (registered,) = table.metadata.statistics  # each commit replaced the one before
    assert registered.statistics_path in paths
    assert read_table_statistics(table)["id"].ndv == 20
    # Every file was committed once (and replaced since); none is from a failed attempt.
    assert _stats_files(warehouse) == {Path(p).name for p in paths}
    assert _stats_files(warehouse) <= _ever_registered(warehouse)


@pytest.mark.parametrize("format_version", [2, 3])
def test_stale_table_is_refreshed_and_committed(tmp_path: Path, format_version: int) -> None:
    warehouse = tmp_path / "wh"
    stale = _table(warehouse, 2, format_version)
    first, second = stale.snapshots()
    fresh = local_catalog(warehouse).load_table("db.t")
    compute_table_statistics(fresh, snapshot_id=first.snapshot_id, progress=False)
    stats = compute_table_statistics(stale, snapshot_id=second.snapshot_id, progress=False)
    table = local_catalog(warehouse).load_table("db.t")
    assert {s.snapshot_id for s in table.metadata.statistics} == {
        first.snapshot_id,
        second.snapshot_id,
    }
    assert stale.metadata_location == table.metadata_location  # updated in place
    assert stats.statistics_path in {s.statistics_path for s in table.metadata.statistics}


@pytest.mark.parametrize("format_version", [2, 3])
def test_lost_commits_are_retried_on_the_refreshed_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, format_version: int
) -> None:
    warehouse = tmp_path / "wh"
    table = _table(warehouse, 1, format_version)
    real = statistics.register_statistics
    refreshed: list[int] = []
    real_refresh = Table.refresh

    def lose_twice(t: Table, stats: Any) -> None:
        if len(refreshed) < 2:
            raise CommitFailedException("another writer won")
        real(t, stats)

    def refresh(t: Table) -> Table:
        refreshed.append(1)
        return real_refresh(t)

    monkeypatch.setattr(statistics, "register_statistics", lose_twice)
    monkeypatch.setattr(Table, "refresh", refresh)
    monkeypatch.setattr("puffin.iceberg.metadata.commit_retry.CommitRetry.wait_s", lambda *_: 0.0)
    stats = compute_table_statistics(table, max_attempts=3, progress=False)
    assert len(refreshed) == 2
    (registered,) = local_catalog(warehouse).load_table("db.t").metadata.statistics
    assert registered == stats
    assert _stats_files(warehouse) == {Path(stats.statistics_path).name}


@pytest.mark.parametrize("format_version", [2, 3])
def test_a_commit_that_keeps_losing_removes_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, format_version: int
) -> None:
    warehouse = tmp_path / "wh"
    table = _table(warehouse, 1, format_version)
    calls: list[int] = []

    def lose(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        raise CommitFailedException("another writer won")

    monkeypatch.setattr(statistics, "register_statistics", lose)
    monkeypatch.setattr("puffin.iceberg.metadata.commit_retry.CommitRetry.wait_s", lambda *_: 0.0)
    with pytest.raises(CommitConflictError, match="lost to concurrent commits 3 times"):
        compute_table_statistics(table, max_attempts=3, progress=False)
    assert len(calls) == 3
    assert _stats_files(warehouse) == set()
    assert local_catalog(warehouse).load_table("db.t").metadata.statistics == []


def test_other_commit_errors_remove_the_file_and_pass_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = tmp_path / "wh"
    table = _table(warehouse, 1)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("catalog down")

    monkeypatch.setattr(statistics, "register_statistics", broken)
    with pytest.raises(RuntimeError, match="catalog down"):
        compute_table_statistics(table, progress=False)
    assert _stats_files(warehouse) == set()


def test_max_attempts_is_checked(tmp_path: Path) -> None:
    table = _table(tmp_path / "wh", 1)
    with pytest.raises(ValueError, match="max_attempts"):
        compute_table_statistics(table, max_attempts=0, progress=False)
    assert _stats_files(tmp_path / "wh") == set()
