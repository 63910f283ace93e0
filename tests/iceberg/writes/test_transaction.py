"""``transaction(table)``: pyiceberg's own builders on v3 tables, committed through our v3 commit.

pyiceberg 0.12 raises ``NotImplementedError`` for each of these on a v3 table. Rows are held
to a model (the data files read with pyarrow, renamed and retyped in Python); row ids to the
ones read before the change.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.transforms import BucketTransform, IdentityTransform
from pyiceberg.types import LongType, StringType

from iceberg_fixtures import make_catalog
from puffin.errors import CommitConflictError, UsageError
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
from puffin.io.locations import local_path

LINEAGE = ("id", "_row_id", "_last_updated_sequence_number")


def _v3(tmp_path: Path, name: str = "db.t") -> Any:
    table = create_sample_table(make_catalog(tmp_path), name, rows=2000, files=2, seed=8)
    return delete_rows(upgrade_to_v3(table), "category < 30").table


def _lineage(table: Any) -> dict[int, tuple[int, int]]:
    rows = scan_table(table, selected_fields=LINEAGE).to_arrow().to_pylist()
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in rows}


def _model(table: Any) -> pa.Table:
    """The live rows from the data files alone: every row whose category is not below 30."""
    import pyarrow.compute as pc

    paths = sorted(t.file.file_path for t in table.scan().plan_files())
    data = pa.concat_tables(pq.read_table(local_path(p)) for p in paths)
    return data.filter(pc.invert(pc.fill_null(pc.less(data["category"], 30), False)))


def test_schema_spec_order_and_properties_commit_on_a_v3_table(tmp_path: Path) -> None:
    table = _v3(tmp_path)
    model = _model(table)
    lineage, next_row_id = _lineage(table), table.metadata.next_row_id
    snapshots = len(table.snapshots())
    with transaction(table) as tx:
        with tx.update_schema() as update:
            update.rename_column("amount", "total")
            update.add_column("note", StringType())
            update.delete_column("tag")
            update.update_column("category", LongType())
        with tx.update_spec() as spec:
            spec.add_field("id", BucketTransform(4), "id_bucket")
        with tx.update_sort_order() as order:
            order.asc("id", IdentityTransform())
        tx.set_properties({"owner": "data-eng", "scratch": "x"})
        tx.remove_properties("scratch")
    # The table passed in now holds the committed metadata, as after pyiceberg's own commit.
    assert table.metadata.format_version == 3
    names = [f.name for f in table.schema().fields]
    assert "total" in names and "note" in names and "tag" not in names
    assert str(table.schema().find_field("category").field_type) == "long"
    assert [f.name for f in table.spec().fields] == ["id_bucket"]
    assert table.sort_order().fields[0].source_id == table.schema().find_field("id").field_id
    assert table.properties["owner"] == "data-eng" and "scratch" not in table.properties
    assert len(table.snapshots()) == snapshots  # metadata only: no snapshot, no data rewritten
    assert table.metadata.next_row_id == next_row_id and _lineage(table) == lineage
    got = scan_table(table).to_arrow()
    want = model.drop_columns(["tag"]).rename_columns(
        ["total" if n == "amount" else n for n in model.drop_columns(["tag"]).column_names]
    )
    assert got.select(want.column_names).sort_by("id").to_pylist() == want.cast(
        got.select(want.column_names).schema
    ).sort_by("id").to_pylist()
    assert got.column("note").null_count == got.num_rows
    # The new spec and schema take writes: an append lands in bucketed files.
    batch = sample_batch(100, start=50_000, seed=2).drop_columns(["tag"])
    batch = batch.rename_columns(["total" if n == "amount" else n for n in batch.column_names])
    batch = batch.append_column("note", pa.array(["n"] * 100, pa.large_string()))
    appended = append(table, batch.cast(table.schema().as_arrow()))
    assert scan_table(appended, "note = 'n'").to_arrow().num_rows == 100
    assert verify_table(appended).ok, verify_table(appended).problems


def test_tags_and_branches(tmp_path: Path) -> None:
    table = _v3(tmp_path)
    current = table.current_snapshot().snapshot_id
    parent = table.current_snapshot().parent_snapshot_id
    with transaction(table) as tx:
        tx.manage_snapshots().create_tag(current, "v1").create_branch(parent, "audit").commit()
    assert table.metadata.refs["v1"].snapshot_id == current
    assert table.metadata.refs["audit"].snapshot_id == parent
    with transaction(table) as tx:
        tx.manage_snapshots().remove_tag("v1").commit()
    assert "v1" not in table.metadata.refs and "audit" in table.metadata.refs
    assert scan_table(table, snapshot_id=parent).to_arrow().num_rows == 2000


@pytest.mark.parametrize("name", ["_row_id", "_last_updated_sequence_number"])
def test_a_lineage_column_name_is_refused(tmp_path: Path, name: str) -> None:
    table = _v3(tmp_path)
    before = table.metadata_location
    with pytest.raises(UsageError, match="row-lineage metadata column"):
        with transaction(table) as tx:
            with tx.update_schema() as update:
                update.add_column(name, LongType())
    assert table.refresh().metadata_location == before


def test_an_error_in_the_block_commits_nothing(tmp_path: Path) -> None:
    table = _v3(tmp_path)
    before = table.metadata_location
    with pytest.raises(RuntimeError, match="changed my mind"):
        with transaction(table) as tx:
            tx.set_properties({"owner": "x"})
            raise RuntimeError("changed my mind")
    assert table.refresh().metadata_location == before
    assert "owner" not in table.properties


def test_a_concurrent_append_is_retried_a_concurrent_schema_change_is_not(
    tmp_path: Path,
) -> None:
    table = _v3(tmp_path)
    other = table.catalog.load_table("db.t")
    with transaction(table) as tx:
        tx.set_properties({"owner": "a"})
        append(other, sample_batch(10, start=90_000, seed=1))  # lands first
    assert table.properties["owner"] == "a"
    assert scan_table(table, "id >= 90000").to_arrow().num_rows == 10  # both kept

    third = table.catalog.load_table("db.t")
    with pytest.raises(CommitConflictError, match="changed underneath"):
        with transaction(table) as tx:
            with tx.update_schema() as update:
                update.add_column("mine", StringType())
            with transaction(third) as other_tx:
                with other_tx.update_schema() as update:
                    update.add_column("theirs", StringType())
    names = [f.name for f in table.refresh().schema().fields]
    assert "theirs" in names and "mine" not in names


def test_v2_tables_take_the_same_entry_point(tmp_path: Path) -> None:
    table = create_sample_table(make_catalog(tmp_path), "db.v2", rows=100, files=1)
    with transaction(table) as tx:
        tx.set_properties({"owner": "b"})
    assert table.metadata.format_version == 2 and table.properties["owner"] == "b"


def test_threads_share_nothing(tmp_path: Path) -> None:
    """Two transactions on two tables in two threads: each commits its own change."""
    tables = [_v3(tmp_path / str(i), f"db.t{i}") for i in range(2)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            with transaction(tables[i]) as tx:
                tx.set_properties({"who": str(i)})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert [t.refresh().properties["who"] for t in tables] == ["0", "1"]
