"""The manifests our commits list (``metadata/snapshots.py``): each holds one kind of file, and
delete manifests merge by Java's rule with the new snapshot's id. Rows are checked against a
model of the deleted ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import make_catalog
from puffin.iceberg import (
    create_sample_table,
    delete_rows,
    rewrite_data_files,
    scan_table,
    transaction,
    upgrade_to_v3,
)
from puffin.iceberg.metadata.manifests import read_manifest_entries, read_manifest_list


def _kinds(table: Any) -> list[tuple[int, set[int], int | None]]:
    """Each manifest of the current snapshot: its content, its entries' contents, its
    snapshot."""
    return [
        (int(m.content), {int(e.data_file.content) for e in
                          read_manifest_entries(table.io, m, include_deleted=True)},
         m.added_snapshot_id)
        for m in read_manifest_list(table.io, table.current_snapshot().manifest_list)
    ]


def test_delete_manifests_merge_with_the_new_snapshots_id(tmp_path: Path) -> None:
    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=900, files=3))
    ids = set(scan_table(table, selected_fields=("id",)).to_arrow()["id"].to_pylist())
    with transaction(table) as tx:
        tx.set_properties({"commit.manifest.min-count-to-merge": "2"})
    table = table.refresh()
    for low in (0, 300, 600):  # one file each (the sample's ids run in file order)
        table = delete_rows(table, f"id >= {low} and id < {low + 4}").table
        ids -= set(range(low, low + 4))
    kinds = _kinds(table)
    deletes = [k for k in kinds if k[0] == 1]
    assert len(deletes) == 1  # merged: the three commits' delete manifests in one
    assert deletes[0] == (1, {1}, table.current_snapshot().snapshot_id)
    assert all(content == {0} for kind, content, _ in kinds if kind == 0)
    assert set(scan_table(table, selected_fields=("id",)).to_arrow()["id"].to_pylist()) == ids


def test_a_compaction_keeps_data_and_delete_entries_in_their_own_manifests(
    tmp_path: Path,
) -> None:
    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=900, files=3))
    ids = set(scan_table(table, selected_fields=("id",)).to_arrow()["id"].to_pylist())
    table = delete_rows(table, "id < 200").table  # two thirds of the first file
    ids -= set(range(200))
    table = rewrite_data_files(table).table
    kinds = _kinds(table)
    assert kinds and all(content <= {kind} for kind, content, _ in kinds), kinds
    assert set(scan_table(table, selected_fields=("id",)).to_arrow()["id"].to_pylist()) == ids
