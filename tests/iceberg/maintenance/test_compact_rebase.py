"""A compaction that loses its race commits its files on the table as it then is, unless the
concurrent commit touched what it replaces (``maintenance/compact_commit.py``).

Each test runs a concurrent commit from inside the rewriter, after the new files are written
and before the commit: the compaction's first commit loses, and what it does next is held
to the rule. Rows are held to a model: the sample's ids minus what was deleted, plus what was
appended, computed here without any reader; our scan and pyiceberg must both give it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import make_catalog
from peers import read_pyiceberg
from puffin.iceberg import (
    append,
    create_sample_table,
    delete_rows,
    rewrite_data_files,
    rewrite_position_delete_files,
    sample_batch,
    scan_table,
    upgrade_to_v3,
)
from puffin.iceberg.maintenance.compact import CompactOptions, compact
from puffin.iceberg.verify.orphans import find_orphans
from puffin.iceberg.writes.rewrite import rewrite_files
from puffin.io.locations import local_path

ROWS = 400  # four files: ids 0-99, 100-199, 200-299, 300-399


def sample_table(tmp_path: Path, v3: bool = True) -> Any:
    properties = {} if v3 else {"write.delete.mode": "merge-on-read"}
    table = create_sample_table(
        make_catalog(tmp_path), "db.t", rows=ROWS, files=4, seed=2, properties=properties
    )
    return upgrade_to_v3(table) if v3 else table


def _compact_beside(table: Any, concurrent: Callable[[Any], None]) -> tuple[Any, list[int]]:
    """Compact every file, running ``concurrent(another handle of the table)`` once, after
    the first rewrite and before its commit; the result and each rewrite's file count."""
    calls: list[int] = []

    def rewriter(t: Any, snapshot: Any, index: Any, groups: Any, target: int, written: Any) -> Any:
        added = rewrite_files(t, snapshot, index, groups, target, written)
        calls.append(sum(len(files) for files in groups.values()))
        if len(calls) == 1:
            concurrent(t.catalog.load_table("db.t"))
        return added

    options = CompactOptions(min_input_files=1, statistics="none")
    return compact(table, rewriter, options), calls


def ids_read(table: Any) -> list[int]:
    """The table's ids, the same in our scan and pyiceberg's; the table verifies and holds
    no orphan (nothing a lost race, a conflict or a dropped vector wrote is left)."""
    ours = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    theirs = read_pyiceberg(local_path(table.metadata_location) or "").column("id").to_pylist()
    assert sorted(ours) == sorted(theirs)
    assert find_orphans(table) == []
    return sorted(ours)


def test_a_concurrent_append_is_committed_beside_without_rewriting_again(tmp_path: Path) -> None:
    table = sample_table(tmp_path)

    def appends(other: Any) -> None:
        append(other, sample_batch(10, start=10_000, seed=1), statistics="none")

    result, calls = _compact_beside(table, appends)
    assert calls == [4] and result.attempts == 2 and result.rewritten_files == 4
    table = result.table
    assert ids_read(table) == [*range(ROWS), *range(10_000, 10_010)]
    assert len(table.scan().plan_files()) == 2  # the compacted file and the appended one


def test_a_concurrent_delete_on_v3_is_carried_into_the_new_files(tmp_path: Path) -> None:
    table = delete_rows(sample_table(tmp_path), "id < 5").table  # a vector to start from
    before = _row_ids(table)

    def deletes(other: Any) -> None:
        delete_rows(other, "id in (3, 7, 150, 399)")

    result, calls = _compact_beside(table, deletes)
    assert calls == [4] and result.attempts == 2  # no second rewrite
    table = result.table
    expected = [i for i in range(ROWS) if i >= 5 and i not in (7, 150, 399)]
    assert ids_read(table) == expected
    snapshot = table.current_snapshot()
    assert snapshot.summary.operation.value == "replace"
    assert _row_ids(table) == {i: before[i] for i in expected}  # each row keeps its id


def _row_ids(table: Any) -> dict[int, int]:
    rows = scan_table(table, selected_fields=("id", "_row_id")).to_arrow().to_pylist()
    return {r["id"]: r["_row_id"] for r in rows}


def test_a_concurrent_delete_on_v2_rewrites_again(tmp_path: Path) -> None:
    """v2 has no row ids: the rows a position delete names cannot be found in the new files,
    so the rewrite is done again on the table as it is (Java fails the group)."""
    table = sample_table(tmp_path, v3=False)

    def deletes(other: Any) -> None:
        delete_rows(other, "id in (3, 150)")

    result, calls = _compact_beside(table, deletes)
    assert calls == [4, 4] and result.attempts == 2
    assert ids_read(result.table) == [i for i in range(ROWS) if i not in (3, 150)]


def test_vectors_moved_by_a_delete_file_rewrite_are_no_conflict(tmp_path: Path) -> None:
    table = delete_rows(sample_table(tmp_path), "id < 5").table
    table = delete_rows(table, "id = 250").table  # two Puffin files: a rewrite gathers them

    def gathers(other: Any) -> None:
        assert rewrite_position_delete_files(other).snapshot_id is not None

    result, calls = _compact_beside(table, gathers)
    assert calls == [4] and result.attempts == 2
    assert ids_read(result.table) == [i for i in range(5, ROWS) if i != 250]


def test_files_another_compaction_took_are_rewritten_again(tmp_path: Path) -> None:
    table = delete_rows(sample_table(tmp_path), "id < 60").table

    def compacts(other: Any) -> None:
        assert rewrite_data_files(other, statistics="none").rewritten_files == 4

    result, calls = _compact_beside(table, compacts)
    assert calls[0] == 4 and len(calls) == 2 and result.attempts == 2
    assert ids_read(result.table) == list(range(60, ROWS))
