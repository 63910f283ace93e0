"""Manifest merging on our commits, by Java's rule and properties: the number of manifests
stays bounded as appends and deletes go on, and no row id or row changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import make_catalog
from puffin.iceberg import (
    append,
    create_sample_table,
    delete_rows,
    sample_batch,
    scan_table,
    transaction,
    upgrade_to_v3,
    verify_table,
)
from puffin.iceberg.metadata.manifest_merge import pack_end
from puffin.iceberg.verify.orphans import find_orphans


def test_pack_end_fills_bins_from_the_end_in_order() -> None:
    weights = {"a": 5, "b": 5, "c": 5, "d": 12, "e": 1}
    assert pack_end(list("abc"), 10, weights.get) == [["a"], ["b", "c"]]
    assert pack_end(list("abcde"), 10, weights.get) == [["a"], ["b", "c"], ["d"], ["e"]]
    assert pack_end(list("ae"), 10, weights.get) == [["a", "e"]]
    assert pack_end([], 10, weights.get) == []


def _manifests(table: Any) -> tuple[int, int]:
    """(data, delete) manifests of the current snapshot."""
    from pyiceberg.manifest import ManifestContent

    found = table.current_snapshot().manifests(table.io)
    data = sum(1 for m in found if m.content == ManifestContent.DATA)
    return data, len(found) - data


def _lineage(table: Any) -> dict[int, tuple[int, int]]:
    got = scan_table(table, selected_fields=("id", "_row_id", "_last_updated_sequence_number"))
    rows = got.to_arrow()
    columns = [rows[n].to_pylist() for n in ("id", "_row_id", "_last_updated_sequence_number")]
    return {i: (r, s) for i, r, s in zip(*columns, strict=True)}


def _v3(tmp_path: Path, **properties: str) -> tuple[Any, pa.Table]:
    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=500, files=2))
    model = scan_table(table).to_arrow()
    if properties:
        with transaction(table) as tx:
            tx.set_properties(properties)
        table = table.refresh()
    return table, model


def test_appends_merge_once_the_minimum_count_is_reached(tmp_path: Path) -> None:
    table, model = _v3(tmp_path, **{"commit.manifest.min-count-to-merge": "4"})
    counts = [_manifests(table)[0]]
    lineage = _lineage(table)
    for i in range(9):
        batch = sample_batch(20, start=10_000 + 100 * i, seed=i)
        table = append(table, batch, statistics="none")
        model = pa.concat_tables([model, batch.cast(model.schema)])
        counts.append(_manifests(table)[0])
        now = _lineage(table)
        # No row id moves in a merge. (The upgraded table's rows get theirs with the first
        # v3 manifest list, as in Java: before it they have none.)
        assert {k: now[k] for k, v in lineage.items() if v[0] is not None} == {
            k: v for k, v in lineage.items() if v[0] is not None
        }
        lineage = now
    # Two manifests (the sample table's two appends); each append adds one until a commit
    # would make four, which merges them all into one (Java's rule with min-count 4).
    assert counts == [2, 3, 1, 2, 3, 1, 2, 3, 1, 2]
    assert len(set(r for r, _ in lineage.values())) == model.num_rows  # row ids stay unique
    assert scan_table(table).to_arrow().sort_by("id").equals(model.sort_by("id"))
    assert table.scan().to_arrow().num_rows == model.num_rows  # pyiceberg reads merged ones
    assert verify_table(table).ok, verify_table(table).problems
    assert find_orphans(table) == []  # a new manifest merged away is not left behind


def test_delete_manifests_merge_the_same_way(tmp_path: Path) -> None:
    table, model = _v3(tmp_path, **{"commit.manifest.min-count-to-merge": "3"})
    table = delete_rows(table, "id = 1").table  # the first v3 manifest list: row ids
    model = model.filter(pc.not_equal(model["id"], 1))
    lineage = _lineage(table)
    deleted: list[int] = []
    for i in range(6):
        table = delete_rows(table, f"id = {i * 7}").table
        deleted.append(i * 7)
        assert _manifests(table)[1] <= 2  # never three delete manifests: they merge
    keep = pc.invert(pc.is_in(model["id"], pa.array(deleted, pa.int64())))
    assert scan_table(table).to_arrow().sort_by("id").equals(model.filter(keep).sort_by("id"))
    assert _lineage(table) == {k: v for k, v in lineage.items() if k not in deleted}
    assert verify_table(table).ok, verify_table(table).problems
    assert find_orphans(table) == []


def test_merging_off_and_the_default_minimum(tmp_path: Path) -> None:
    table, _ = _v3(tmp_path / "off", **{
        "commit.manifest-merge.enabled": "false", "commit.manifest.min-count-to-merge": "2",
    })
    for i in range(4):
        table = append(table, sample_batch(5, start=10_000 + 10 * i, seed=i), statistics="none")
    assert _manifests(table)[0] == 6
    table, _ = _v3(tmp_path / "default")
    for i in range(4):
        table = append(table, sample_batch(5, start=10_000 + 10 * i, seed=i), statistics="none")
    assert _manifests(table)[0] == 6  # Java's default minimum is 100


def test_rewrite_manifests_keeps_rows_row_ids_and_statistics(tmp_path: Path) -> None:
    from puffin.iceberg import compute_table_statistics, read_table_statistics, rewrite_manifests

    table, model = _v3(tmp_path, **{"commit.manifest-merge.enabled": "false"})
    for i in range(6):
        batch = sample_batch(20, start=10_000 + 100 * i, seed=i)
        table = append(table, batch, statistics="none")
        model = pa.concat_tables([model, batch.cast(model.schema)])
    table = delete_rows(table, "id < 30").table
    model = model.filter(pc.greater_equal(model["id"], 30))
    compute_table_statistics(table, progress=False)
    table = table.refresh()
    stats = read_table_statistics(table)
    lineage = _lineage(table)
    assert _manifests(table) == (8, 1)
    result = rewrite_manifests(table)
    table = result.table
    assert (result.manifests_before, result.manifests_after) == (8, 1)
    assert result.entries == 8 and _manifests(table) == (1, 1)
    current = table.current_snapshot()
    assert current.summary.operation.value == "replace"
    assert current.summary["total-records"] == str(500 + 120)
    assert _lineage(table) == lineage
    assert scan_table(table).to_arrow().sort_by("id").equals(model.sort_by("id"))
    assert table.scan().to_arrow().num_rows == model.num_rows
    # The statistics entry stays with its snapshot; the new one carries them (no row changed).
    assert read_table_statistics(table, snapshot_id=stats.snapshot_id).columns
    assert verify_table(table).ok, verify_table(table).problems
    again = rewrite_manifests(table)  # one data manifest: nothing to do
    assert again.snapshot_id is None and again.manifests_after == 1


def test_rewrite_manifests_by_size(tmp_path: Path) -> None:
    from puffin.iceberg import rewrite_manifests

    table, _ = _v3(tmp_path, **{"commit.manifest-merge.enabled": "false"})
    for i in range(3):
        table = append(table, sample_batch(5, start=10_000 + 10 * i, seed=i), statistics="none")
    table = delete_rows(table, "id = 3").table  # the first v3 list: every row has an id
    lineage = _lineage(table)
    # A target below one entry: a manifest per data file, in partition order.
    split = rewrite_manifests(table, target_size_bytes=1)
    assert (split.manifests_before, split.manifests_after, split.entries) == (5, 5, 5)
    assert _lineage(split.table) == lineage


def test_rewrite_manifests_on_a_v2_table(tmp_path: Path) -> None:
    """v2 manifests and a v2 list, no row-lineage field: pyiceberg and DuckDB read the rows."""
    from peers import read_duckdb
    from puffin.iceberg import rewrite_manifests
    from puffin.iceberg.metadata.manifests import read_manifest_list
    from puffin.iceberg.metadata.v3 import first_row_id_of

    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=500, files=2)
    with table.transaction() as tx:
        tx.set_properties({"commit.manifest-merge.enabled": "false", "write.delete.mode":
                           "merge-on-read"})  # fmt: skip
    table = table.refresh()
    for i in range(4):
        table.append(sample_batch(10, start=10_000 + 100 * i, seed=i))
    table = delete_rows(table.refresh(), "id < 30").table
    model = sorted(scan_table(table).to_arrow()["id"].to_pylist())
    before, deletes = _manifests(table)
    assert before > 4 and deletes == 1
    result = rewrite_manifests(table)
    assert (result.manifests_before, result.manifests_after) == (before, 1)
    table = result.table
    assert table.metadata.format_version == 2 and table.current_snapshot().first_row_id is None
    assert all(first_row_id_of(m) is None for m in read_manifest_list(
        table.io, table.current_snapshot().manifest_list))  # fmt: skip
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == model
    assert sorted(read_duckdb(table.metadata_location)["id"].to_pylist()) == model
