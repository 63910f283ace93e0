"""The changelog's rules one by one: updates by ``_row_id`` and by identifier columns, the
range (tags, branches, expired snapshots, one line of ancestry), rows without row ids, what
is read (an untouched data file never is), filters and columns. Expected rows are written
out by hand from what each commit did."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa

from cdc_history import cdc_arrow, cdc_equality_file, cdc_schema, commit_change
from iceberg_fixtures import make_catalog
from puffin.errors import SnapshotRangeError, UsageError
from puffin.iceberg import (
    append,
    delete_rows,
    expire_snapshots,
    rewrite_data_files,
    scan_table,
    transaction,
    upgrade_to_v3,
)
from puffin.iceberg.changelog.scan import changes
from puffin.io.locations import local_path


def _table(folder: Path, version: int = 3, **properties: str) -> Any:
    catalog = make_catalog(folder)
    props = {"format-version": "2", **properties}
    created = catalog.create_table("db.c", cdc_schema(), properties=props)
    table = upgrade_to_v3(created) if version == 3 else created
    return append(table, cdc_arrow([(i, 0, i) for i in range(5)]))


def _summary(rows: pa.Table, *columns: str) -> list[tuple[Any, ...]]:
    picked = [rows.column(c).to_pylist() for c in ("_change_type", *columns)]
    return list(zip(*picked, strict=True))


def _update_keeping_row_id(table: Any, position: int, row: tuple[int, int, int]) -> Any:
    """One commit as Iceberg Java's merge-on-read MERGE writes an update on v3: a DV deletes
    the row at ``position`` of the table's one data file, and a new data file holds ``row``
    with the old row's ``_row_id`` stored (its ``_last_updated_sequence_number`` null)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    from puffin.blobs.dv.format import DeletionVector
    from puffin.iceberg.deletes.vectors import write_vectors
    from puffin.iceberg.metadata.snapshots import commit_snapshot
    from puffin.iceberg.scan.plan import plan_files
    from puffin.iceberg.writes._streaming import FileTarget
    from puffin.iceberg.writes.append import write_data_files

    planned = plan_files(table, table.current_snapshot())
    (old,) = planned
    row_id = scan_table(table, f"tag = {old.record_count and row[2] - 100}", ("_row_id",))
    (stored,) = row_id.to_arrow().column("_row_id").to_pylist()
    schema = Schema(*table.schema().fields,
                    NestedField(2147483540, "_row_id", LongType(), required=False),
                    NestedField(2147483539, "_last_updated_sequence_number", LongType(),
                                required=False))  # fmt: skip
    data = cdc_arrow([row]).append_column("_row_id", pa.array([stored], pa.int64()))
    data = data.append_column("_last_updated_sequence_number", pa.nulls(1, pa.int64()))
    target = FileTarget(schema, None, None, None)
    stream = pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
    files = write_data_files(table, stream, into=target)
    written: list[str] = []
    _, dvs = write_vectors(table, planned, {old.path: DeletionVector([position])})
    committed, _ = commit_snapshot(table, written, deletes=dvs, added_data=files,
                                   operation="overwrite")  # fmt: skip
    return committed


def test_an_update_that_keeps_its_row_id_pairs_its_images(tmp_path: Path) -> None:
    table = _table(tmp_path)
    start = table.current_snapshot().snapshot_id
    table = _update_keeping_row_id(table, 2, (2, 0, 102))
    plain = changes(table, start).to_arrow()
    assert _summary(plain, "tag", "_row_id") == [("DELETE", 2, 2), ("INSERT", 102, 2)]
    paired = changes(table, start, compute_updates=True).to_arrow()
    assert _summary(paired, "tag", "_row_id") == [("UPDATE_BEFORE", 2, 2), ("UPDATE_AFTER", 102, 2)]
    (after,) = paired.filter(
        pa.compute.equal(paired.column("_change_type"), "UPDATE_AFTER")
    ).to_pylist()
    assert after["_last_updated_sequence_number"] == 2  # the update's commit
    updated = table.current_snapshot().snapshot_id
    table = delete_rows(table, "tag = 102").table
    # Net: the row as it was at the start, deleted by the last commit.
    net = changes(table, start, net_changes=True, compute_updates=True).to_arrow()
    assert _summary(net, "tag", "_row_id", "_commit_snapshot_id") == [
        ("DELETE", 2, 2, table.current_snapshot().snapshot_id)
    ]
    net = changes(table, start, updated, net_changes=True, compute_updates=True).to_arrow()
    assert _summary(net, "tag", "_row_id") == [("UPDATE_BEFORE", 2, 2), ("UPDATE_AFTER", 102, 2)]


def test_a_row_appended_and_deleted_by_one_commit_is_no_change(tmp_path: Path) -> None:
    """A commit that adds a data file and a deletion vector on it (as an engine's MERGE
    can): the deleted row was never live, so it is neither inserted nor deleted."""
    from puffin.blobs.dv.format import DeletionVector
    from puffin.iceberg.deletes.vectors import write_vectors
    from puffin.iceberg.metadata.snapshots import commit_snapshot
    from puffin.iceberg.scan.plan import PlannedFile
    from puffin.iceberg.writes.append import write_data_files

    table = _table(tmp_path)
    start = table.current_snapshot().snapshot_id
    (new,) = write_data_files(table, cdc_arrow([(7, 0, 70), (8, 0, 80), (9, 0, 90)]))
    new.spec_id = table.spec().spec_id  # what a commit's manifest gives it
    _, dvs = write_vectors(table, [PlannedFile(new)], {str(new.file_path): DeletionVector([1])})
    table, _ = commit_snapshot(table, [], deletes=dvs, added_data=[new], operation="overwrite")
    got = changes(table, start).to_arrow()
    assert _summary(got, "tag", "_pos") == [("INSERT", 70, 0), ("INSERT", 90, 2)]
    assert sorted(scan_table(table).to_arrow().column("tag").to_pylist()) == [0, 1, 2, 3, 4, 70, 90]


def test_v2_updates_pair_by_identifier_columns_in_one_commit(tmp_path: Path) -> None:
    table = _table(tmp_path, version=2)
    start = table.current_snapshot().snapshot_id
    eq = cdc_equality_file(table, tmp_path, ("id",), [(1,), (3,)], None)
    from puffin.iceberg.writes.append import write_data_files

    data = write_data_files(table, cdc_arrow([(1, 0, 11), (3, 0, 13), (7, 0, 17)]))
    table = commit_change(table, [eq], data)
    got = changes(table, start, compute_updates=True, identifier_columns=["id"]).to_arrow()
    assert _summary(got, "id", "tag") == [
        ("UPDATE_BEFORE", 1, 1), ("UPDATE_AFTER", 1, 11),
        ("UPDATE_BEFORE", 3, 3), ("UPDATE_AFTER", 3, 13),
        ("INSERT", 7, 17),
    ]  # fmt: skip
    assert "_row_id" not in got.column_names
    with pytest.raises(UsageError, match="identifier columns"):
        changes(table, start, compute_updates=True)  # the schema names none
    with pytest.raises(UsageError, match="two rows"):
        changes(table, start, compute_updates=True, identifier_columns=["p"]).to_arrow()
    with pytest.raises(UsageError, match="without row ids"):
        changes(table, start, compute_updates=True, identifier_columns=["id"],
                net_changes=True).to_arrow()  # fmt: skip


def test_the_range_takes_tags_and_branches_and_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    table = _table(tmp_path)
    first = table.current_snapshot().snapshot_id
    table = append(table, cdc_arrow([(9, 0, 9)]))
    second = table.current_snapshot().snapshot_id
    with transaction(table) as tx:
        tx.manage_snapshots().create_tag(first, "v1").create_branch(second, "audit").commit()
    table = delete_rows(table, "tag = 0").table
    assert _summary(changes(table, "v1", "audit").to_arrow(), "tag") == [("INSERT", 9)]
    assert _summary(changes(table, str(second)).to_arrow(), "tag") == [("DELETE", 0)]
    assert changes(table, second, second).to_arrow().num_rows == 0
    with pytest.raises(SnapshotRangeError, match="not an ancestor"):
        changes(table, second, first)
    with pytest.raises(SnapshotRangeError, match="neither a snapshot id nor a tag"):
        changes(table, "nope")
    with pytest.raises(SnapshotRangeError, match="no such snapshot"):
        changes(table, 12345)
    with transaction(table) as tx:
        tx.manage_snapshots().remove_tag("v1").remove_branch("audit").commit()
    table = expire_snapshots(table, older_than="0s", retain_last=2).table
    with pytest.raises(SnapshotRangeError, match=f"start snapshot {first} .* no such snapshot"):
        changes(table, first)
    # pyiceberg's expiry clears the kept snapshot's parent id; its sequence number tells.
    with pytest.raises(SnapshotRangeError, match=f"history before snapshot {second} was expired"):
        changes(table, None)
    assert _summary(changes(table, second).to_arrow(), "tag") == [("DELETE", 0)]


def test_rows_without_row_ids_are_told_by_file_and_position(tmp_path: Path) -> None:
    table = upgrade_to_v3(_table(tmp_path, version=2))  # the v2 rows have no ids yet
    start = table.current_snapshot().snapshot_id
    table = delete_rows(table, "tag = 3").table  # its commit gives the file its first_row_id
    ids = scan_table(table, selected_fields=("tag", "_row_id")).to_arrow().to_pylist()
    (kept,) = [r["_row_id"] for r in ids if r["tag"] == 1]
    table = delete_rows(table, "tag = 1").table
    got = changes(table, start).to_arrow().to_pylist()
    path = scan_table(table, "tag = 4", ("tag",)).plan_files()[0].path
    seen = [(r["_change_type"], r["tag"], r["_row_id"], r["_file"], r["_pos"]) for r in got]
    # One file, deleted from by two commits (read once per lineage): the first row had no
    # id when it was deleted, the second the id the first commit gave it.
    assert seen == [("DELETE", 3, None, path, 3), ("DELETE", 1, kept, path, 1)]
    assert kept is not None


def test_an_untouched_data_file_is_never_opened(tmp_path: Path) -> None:
    table = _table(tmp_path)
    untouched = table.current_snapshot()
    table = append(table, cdc_arrow([(i, 1, 10 + i) for i in range(4)]))
    start = table.current_snapshot().snapshot_id
    table = delete_rows(table, "tag = 11").table
    table = append(table, cdc_arrow([(5, 1, 20)]))
    (first_file,) = [
        p.path for p in scan_table(table, snapshot_id=untouched.snapshot_id).plan_files()
    ]
    os.remove(local_path(first_file))
    got = changes(table, start).to_arrow()
    assert _summary(got, "tag") == [("DELETE", 11), ("INSERT", 20)]
    with pytest.raises(OSError):
        scan_table(table).to_arrow()  # a scan needs the file


def test_a_replace_commit_yields_nothing_and_keeps_row_ids(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table = delete_rows(table, "tag = 1").table
    start = table.current_snapshot().snapshot_id
    before = scan_table(table, selected_fields=("tag", "_row_id")).to_arrow().sort_by("tag")
    table = rewrite_data_files(table, min_deleted_fraction=0.0, min_input_files=1).table
    assert table.current_snapshot().summary.operation.value == "replace"
    assert changes(table, start).to_arrow().num_rows == 0
    assert changes(table, start).plan_files() == []
    after = scan_table(table, selected_fields=("tag", "_row_id")).to_arrow().sort_by("tag")
    assert after.equals(before)
    table = delete_rows(table, "tag = 4").table  # ordinals skip the replace commit, as Java's
    assert _summary(changes(table, start).to_arrow(), "tag", "_row_id", "_change_ordinal") == [
        ("DELETE", 4, 4, 0)
    ]


def test_filters_and_columns(tmp_path: Path) -> None:
    table = _table(tmp_path)
    start = table.current_snapshot().snapshot_id
    table = append(table, cdc_arrow([(i, 1, 10 + i) for i in range(3)]))
    table = delete_rows(table, "tag < 2").table
    got = changes(table, start, row_filter="id = 1", selected_fields=("tag",)).to_arrow()
    assert got.column_names == [
        "tag", "_change_type", "_change_ordinal", "_commit_snapshot_id", "_row_id",
        "_last_updated_sequence_number", "_file", "_pos",
    ]  # fmt: skip
    assert _summary(got, "tag", "_change_ordinal") == [("INSERT", 11, 0), ("DELETE", 1, 1)]
    stream = changes(table, start).to_arrow_batch_reader()
    assert stream.read_all().num_rows == 3 + 2
    tasks = changes(table, start).plan_files()
    assert [(t.kind, t.change_ordinal) for t in tasks] == [("added-rows", 0), ("deleted-rows", 1)]


def test_a_vector_only_commit_is_planned_from_its_parents_plan(tmp_path: Path) -> None:
    """A commit that only adds and replaces deletion vectors is planned from its parent's
    plan and its own manifests: the same files and deletes as the planner's plan of it."""
    from puffin.iceberg import rewrite_deletion_vectors
    from puffin.iceberg.changelog.plan import delete_keys, vector_commit
    from puffin.iceberg.scan.plan import plan_files

    table = _table(tmp_path)
    table = append(table, cdc_arrow([(i, 1, 10 + i) for i in range(4)]))

    def plan(snapshot: Any) -> dict[str, Any]:
        return {p.path: p for p in plan_files(table, snapshot, equality=True)}

    def shape(planned: dict[str, Any]) -> dict[str, Any]:
        return {path: delete_keys(p) for path, p in planned.items()}

    # A vector, one in another Puffin file, both rewritten into one, both merged anew.
    for step in ("tag = 1", "tag = 11", "rewrite", "tag = 2 or tag = 12"):
        parent = table.current_snapshot()
        if step == "rewrite":
            rewritten = rewrite_deletion_vectors(table)
            assert rewritten.snapshot_id is not None, rewritten
            table = rewritten.table
        else:
            table = delete_rows(table, step).table
        derived = vector_commit(table, table.current_snapshot(), plan(parent))
        assert derived is not None, step
        after = plan(table.current_snapshot())
        assert shape(derived[0]) == shape(after), step
        moved = {p for p in after if shape(after)[p] != shape(plan(parent)).get(p)}
        assert derived[1] >= moved, step
    parent = table.current_snapshot()
    table = append(table, cdc_arrow([(9, 0, 99)]))
    assert vector_commit(table, table.current_snapshot(), plan(parent)) is None
