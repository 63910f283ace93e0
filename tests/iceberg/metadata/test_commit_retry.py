"""Iceberg's ``commit.retry.*`` table properties, honoured by every commit (one loop:
``metadata/commits.with_retries``): a rival writer really commits before each of our
attempts, so each lost race is a real one, failed by the catalog."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from puffin.errors import CommitConflictError, UsageError
from puffin.iceberg import (
    append,
    create_sample_table,
    local_catalog,
    sample_batch,
    scan_table,
    upgrade_to_v3,
)
from puffin.iceberg.metadata.commit_retry import CommitRetry
from puffin.iceberg.writes.transaction import transaction


def _table(warehouse: Path, v3: bool = True, **properties: str) -> Any:
    table = create_sample_table(local_catalog(warehouse), "db.t", rows=50, files=1)
    table = upgrade_to_v3(table) if v3 else table
    if properties:
        with transaction(table) as tx:
            tx.set_properties(properties)
    return table


class Rival:
    """Appends one row through pyiceberg (its own table object) before each of our first
    ``wins`` commit attempts: our attempt then fails in the catalog, a lost race."""

    def __init__(self, warehouse: Path, monkeypatch: pytest.MonkeyPatch, wins: int) -> None:
        from puffin.iceberg.metadata import v3

        self.warehouse, self.wins, self.rows, self.busy = warehouse, wins, 0, False
        real = v3.commit

        def beaten(table: Any, requirements: Any, updates: Any) -> Any:
            if self.rows < self.wins and not self.busy:  # not the rival's own commit
                self.win()
            return real(table, requirements, updates)

        monkeypatch.setattr(v3, "commit", beaten)

    def win(self) -> None:
        theirs = local_catalog(self.warehouse).load_table("db.t")
        self.busy = True
        try:
            append(theirs, sample_batch(1, start=90_000 + self.rows, seed=self.rows),
                   statistics="none", max_attempts=1)  # fmt: skip
        finally:
            self.busy = False
        self.rows += 1


def _data_files(warehouse: Path) -> set[str]:
    return {p.name for p in warehouse.rglob("data/*.parquet")}


def _referenced(table: Any) -> set[str]:
    return {Path(t.file.file_path).name for t in table.refresh().scan().plan_files()}


def test_the_defaults_are_javas() -> None:
    assert CommitRetry() == CommitRetry(4, 100, 60_000, 1_800_000)
    assert CommitRetry().attempts == 5


def test_waits_double_with_jitter_up_to_the_longest() -> None:
    retry = CommitRetry(num_retries=20, min_wait_ms=100, max_wait_ms=1_000)
    for lost in range(1, 12):
        base = min(0.1 * 2 ** (lost - 1), 1.0)
        waits = [retry.wait_s(lost) for _ in range(50)]
        assert all(base <= w <= min(2 * base, 1.0) for w in waits), (lost, waits)
    assert retry.wait_s(1, cap_s=0.05) == 0.05


def test_javas_default_lands_after_four_lost_races(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path, **{"commit.retry.min-wait-ms": "1"})
    rival = Rival(tmp_path, monkeypatch, wins=4)
    table = append(table, sample_batch(10, start=1_000), statistics="none")
    assert rival.rows == 4
    ids = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    assert len(ids) == 50 + 4 + 10 and len(set(ids)) == len(ids)


def test_num_retries_bounds_the_attempts_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path, **{"commit.retry.num-retries": "2", "commit.retry.min-wait-ms": "1"})
    rival = Rival(tmp_path, monkeypatch, wins=10)
    with pytest.raises(CommitConflictError) as info:
        append(table, sample_batch(10, start=1_000), statistics="none")
    assert rival.rows == 3, "three attempts: the first and two retries"
    message = str(info.value)
    assert "lost to concurrent commits 3 times in " in message
    assert "commit.retry.num-retries=2" in message and "--set-property" in message
    assert _data_files(tmp_path) == _referenced(table), "our data files were removed"


def test_the_total_timeout_ends_the_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path, **{
        "commit.retry.num-retries": "1000", "commit.retry.min-wait-ms": "50",
        "commit.retry.max-wait-ms": "50", "commit.retry.total-timeout-ms": "400",
    })  # fmt: skip
    rival = Rival(tmp_path, monkeypatch, wins=1_000)
    started = time.monotonic()
    with pytest.raises(CommitConflictError, match="total-timeout-ms=400"):
        append(table, sample_batch(10, start=1_000), statistics="none")
    assert time.monotonic() - started < 30
    assert 2 <= rival.rows < 50


def test_a_value_java_cannot_read_is_refused_before_writing(tmp_path: Path) -> None:
    table = _table(tmp_path, v3=False)
    # Written behind the property checks, as another tool could (pyiceberg writes v2 only).
    table.catalog.commit_table(table, (), _set_property("commit.retry.num-retries", "many"))
    table = table.refresh()
    before = _data_files(tmp_path)
    with pytest.raises(UsageError, match=r"commit\.retry\.num-retries='many' is not a whole"):
        append(table, sample_batch(10, start=1_000), statistics="none")
    assert _data_files(tmp_path) == before


def _set_property(key: str, value: str) -> tuple[Any, ...]:
    from pyiceberg.table.update import SetPropertiesUpdate

    return (SetPropertiesUpdate(updates={key: value}),)
