"""Delete-file and manifest rewrites that lose their race keep what they wrote and commit it on
the table as it then is, unless the concurrent commit replaced what they replace.

The concurrent commit runs from inside the job, after its work and before its commit (the
positions reader of ``rewrite_position_delete_files``, the regrouping of
``rewrite_manifests``). Rows are held to a model computed here; our scan and pyiceberg must
both give it, and the table must verify.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from puffin.iceberg import (
    append,
    delete_rows,
    rewrite_data_files,
    rewrite_manifests,
    rewrite_position_delete_files,
    sample_batch,
)
from puffin.iceberg.maintenance import rewrite_manifests as manifests_module
from puffin.iceberg.maintenance.rewrite_deletes import positions_here
from puffin.iceberg.metadata.delete_files import deletion_vector_refs
from tests.iceberg.maintenance import test_compact_rebase as base

ROWS = base.ROWS


def _table(tmp_path: Path, v3: bool = True) -> Any:
    table = base.sample_table(tmp_path, v3)
    for where in ("id < 3", "id = 150", "id in (5, 250)"):  # deletes in several files
        table = delete_rows(table, where).table
    return table


_ids = base.ids_read


def _gather_beside(table: Any, concurrent: Callable[[Any], None]) -> tuple[Any, list[int]]:
    calls: list[int] = []

    def positions(t: Any, snapshot: Any, planned: Any) -> Any:
        calls.append(1)
        found = positions_here(t, snapshot, planned)
        if len(calls) == 1:
            concurrent(t.catalog.load_table("db.t"))
        return found

    return rewrite_position_delete_files(table, positions=positions), calls


KEPT = [i for i in range(ROWS) if i not in (0, 1, 2, 5, 150, 250)]


@pytest.mark.parametrize("v3", [True, False], ids=["v3", "v2"])
def test_a_concurrent_delete_keeps_its_rows_deleted(tmp_path: Path, v3: bool) -> None:
    """v3: the file's new vector, merged from the one the rewrite replaces, is kept and the
    rewrite's own vector of that file dropped; v2: position-delete files add up."""
    table = _table(tmp_path, v3)
    result, calls = _gather_beside(table, lambda other: delete_rows(other, "id in (4, 300)"))
    assert len(calls) == 1 and result.attempts == 2 and result.snapshot_id is not None
    assert _ids(result.table) == [i for i in KEPT if i not in (4, 300)]
    if v3:
        vectors = deletion_vector_refs(result.table)
        assert len({r.referenced_data_file for r in vectors}) == len(vectors)  # one each


def test_a_concurrent_append_is_committed_beside(tmp_path: Path) -> None:
    table = _table(tmp_path)

    def appends(other: Any) -> None:
        append(other, sample_batch(10, start=10_000, seed=1), statistics="none")

    result, calls = _gather_beside(table, appends)
    assert len(calls) == 1 and result.attempts == 2 and result.files_after == 1
    assert _ids(result.table) == [*KEPT, *range(10_000, 10_010)]


def test_vectors_of_files_a_concurrent_compaction_removed_are_dropped(tmp_path: Path) -> None:
    table = _table(tmp_path)

    def compacts(other: Any) -> None:
        assert rewrite_data_files(other, min_input_files=1, statistics="none").added_files

    result, calls = _gather_beside(table, compacts)
    assert len(calls) == 1 and result.attempts == 2
    assert result.snapshot_id is None  # every vector went with its file: nothing left to do
    assert _ids(result.table) == KEPT
    live = {str(t.file.file_path) for t in result.table.scan().plan_files()}
    assert {r.referenced_data_file for r in deletion_vector_refs(result.table)} <= live


def _regroup_beside(
    table: Any, monkeypatch: pytest.MonkeyPatch, concurrent: Callable[[Any], None]
) -> tuple[Any, list[int]]:
    real = manifests_module._regrouped
    calls: list[int] = []

    def regrouped(t: Any, *args: Any) -> Any:
        calls.append(1)
        found = real(t, *args)
        if len(calls) == 1:
            concurrent(t.catalog.load_table("db.t"))
        return found

    monkeypatch.setattr(manifests_module, "_regrouped", regrouped)
    return rewrite_manifests(table), calls


def test_manifests_kept_across_a_concurrent_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path)

    def appends(other: Any) -> None:
        append(other, sample_batch(10, start=10_000, seed=1), statistics="none")

    result, calls = _regroup_beside(table, monkeypatch, appends)
    assert len(calls) == 1 and result.attempts == 2
    assert result.manifests_before == 4 and result.manifests_after == 2  # one new, one carried
    assert _ids(result.table) == [*KEPT, *range(10_000, 10_010)]


def test_manifests_replaced_meanwhile_are_regrouped_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path)
    append(table, sample_batch(10, start=10_000, seed=1), statistics="none")
    table = table.refresh()
    result, calls = _regroup_beside(table, monkeypatch, lambda other: rewrite_manifests(other))
    # ours, then the concurrent one's, which left one manifest: nothing more to regroup, and
    # what ours wrote is removed, not left as orphans
    assert len(calls) == 2 and result.attempts == 2 and result.snapshot_id is None
    assert _ids(result.table) == [*KEPT, *range(10_000, 10_010)]
