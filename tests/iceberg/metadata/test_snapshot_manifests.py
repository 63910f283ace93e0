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


def _header(table: Any, path: str, schema: Any) -> dict[str, str]:
    from pyiceberg.avro.file import AvroFile

    with AvroFile[Any](table.io.new_input(path), schema, read_types={}) as reader:
        return dict(reader.header.meta)


def test_manifest_list_and_delete_manifest_headers_are_javas(tmp_path: Path) -> None:
    # The Avro header keys Java's ManifestListWriter.V3Writer and ManifestWriter.V3Writer
    # write, and their record names.
    import json

    from pyiceberg.manifest import MANIFEST_ENTRY_SCHEMAS, MANIFEST_LIST_FILE_SCHEMAS

    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=300, files=3))
    table = delete_rows(table, "id < 5").table
    snapshot = table.current_snapshot()
    listed = _header(table, snapshot.manifest_list, MANIFEST_LIST_FILE_SCHEMAS[3])
    assert {k: listed[k] for k in ("format-version", "first-row-id")} == {
        "format-version": "3", "first-row-id": str(snapshot.first_row_id)}
    assert json.loads(listed["avro.schema"])["name"] == "manifest_file"
    (deletes,) = [m for m in read_manifest_list(table.io, snapshot.manifest_list)
                  if m.content == 1]
    header = _header(table, deletes.manifest_path, MANIFEST_ENTRY_SCHEMAS[3])
    assert {k: header[k] for k in ("format-version", "content", "partition-spec-id")} == {
        "format-version": "3", "content": "deletes", "partition-spec-id": "0"}
    assert json.loads(header["schema"])["fields"][0]["name"] == "id"
    assert json.loads(header["avro.schema"])["name"] == "manifest_entry"


def test_files_of_one_manifest_take_consecutive_row_ids(tmp_path: Path) -> None:
    # Java's idAssigner: each live data file, in manifest order, starts where the one before
    # ended (record_count ids each), from the manifest's first_row_id.
    from pyiceberg.manifest import DataFile, ManifestContent, ManifestEntry

    from puffin.iceberg import rewrite_manifests
    from puffin.iceberg.metadata.manifests import FIRST_ROW_ID
    from puffin.iceberg.metadata.v3 import first_row_id_of, inherited_first_row_ids

    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=900, files=3))
    table = delete_rows(table, "id < 5").table  # the upgraded rows get their ids
    table = rewrite_manifests(table).table  # the three files in one manifest
    (data,) = [m for m in read_manifest_list(table.io, table.current_snapshot().manifest_list)
               if m.content == ManifestContent.DATA]
    entries = read_manifest_entries(table.io, data)
    counts = [int(e.data_file.record_count) for e in entries]
    start = first_row_id_of(data)
    assert len(counts) == 3 and start is not None
    # The rewrite wrote out the ids the files had (0 on: the upgrade's first commit), and
    # the new manifest took a first_row_id of its own, past them.
    written = [0, counts[0], counts[0] + counts[1]]
    assert [e.data_file[FIRST_ROW_ID] for e in entries] == written
    assert inherited_first_row_ids(data, entries) == written
    assert start == sum(counts)
    expected = [start, start + counts[0], start + counts[0] + counts[1]]

    def without_id(e: Any) -> Any:
        df = DataFile(*(e.data_file[i] for i in range(len(e.data_file))))
        df[FIRST_ROW_ID] = None
        copy = ManifestEntry(*(e[i] for i in range(len(e))))
        copy.data_file = df
        return copy

    assert inherited_first_row_ids(data, [without_id(e) for e in entries]) == expected
    # Entries read with pyiceberg's own (v2) schema have no first_row_id field at all.
    v2 = list(data.fetch_manifest_entry(table.io, discard_deleted=True))
    assert inherited_first_row_ids(data, v2) == expected
