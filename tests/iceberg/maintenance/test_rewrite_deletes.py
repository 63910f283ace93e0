"""``rewrite_deletion_vectors``: the live deletes of a snapshot gathered into few Puffin
files, Parquet position deletes turned into vectors, vectors of removed data files dropped;
rows and row ids unchanged, as a model computed without any Iceberg reader says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import _commit_delete_snapshot, make_catalog, write_position_delete_file
from puffin.errors import UnsupportedTableError, UsageError
from puffin.iceberg import (
    create_sample_table,
    delete_rows,
    deletion_vector_refs,
    rewrite_deletion_vectors,
    sample_schema,
    scan_table,
    upgrade_to_v3,
    verify_table,
    write_table_deletion_vectors,
)
from puffin.iceberg.deletes.vectors import deletion_vector_data_files
from puffin.iceberg.metadata.delete_files import live_delete_files
from puffin.iceberg.metadata.v3 import to_v3_data_file
from puffin.iceberg.scan.plan import plan_files
from puffin.io.locations import local_path

# Each delete as a row filter and as the same condition in pyarrow compute (the model). The
# sample table's four files hold ids 0-749, 750-1499, ...: the first four deletes touch one
# file each (four Puffin files live), the last the first file again (its vector superseded).
DELETES: list[tuple[str, Any]] = [
    ("id < 100", lambda t: pc.less(t["id"], 100)),
    (
        "id >= 800 and id < 850",
        lambda t: pc.and_(pc.greater_equal(t["id"], 800), pc.less(t["id"], 850)),
    ),
    (
        "category = 55 and id >= 1500 and id < 2250",
        lambda t: pc.and_(
            pc.equal(t["category"], 55),
            pc.and_(pc.greater_equal(t["id"], 1500), pc.less(t["id"], 2250)),
        ),
    ),
    ("id >= 2950", lambda t: pc.greater_equal(t["id"], 2950)),
    (
        "category < 10 and id < 750",
        lambda t: pc.and_(pc.less(t["category"], 10), pc.less(t["id"], 750)),
    ),
]


def _model_rows(table: Any) -> pa.Table:
    """The table's rows read from its data files with pyarrow (no delete applied yet)."""
    files = plan_files(table, table.current_snapshot())
    return pa.concat_tables(pq.read_table(local_path(p.path)) for p in files)


def _deleted_table(tmp_path: Path) -> tuple[Any, pa.Table]:
    """A v3 table after five deletes (four Puffin files live), and the model of its rows."""
    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=3000, files=4, seed=4)
    model = _model_rows(table)
    table = upgrade_to_v3(table)
    for where, condition in DELETES:
        table = delete_rows(table, where).table
        model = model.filter(pc.invert(pc.fill_null(condition(model), False)))
    return table, model.sort_by("id")


def _puffin_files(table: Any) -> set[str]:
    return {path for path, _ in live_delete_files(table, table.current_snapshot())}


def _row_ids(table: Any) -> dict[int, int]:
    got = scan_table(table, selected_fields=("id", "_row_id")).to_arrow()
    return dict(zip(got["id"].to_pylist(), got["_row_id"].to_pylist(), strict=True))


def test_four_puffin_files_become_one_with_the_same_rows_and_row_ids(tmp_path: Path) -> None:
    table, model = _deleted_table(tmp_path)
    assert len(_puffin_files(table)) == 4
    ids_before = _row_ids(table)
    result = rewrite_deletion_vectors(table)
    table = result.table
    assert (result.files_before, result.files_after, result.vectors) == (4, 1, 4)
    assert result.dropped_dangling == 0 and result.deleted_rows == 3000 - model.num_rows
    current = table.current_snapshot()
    assert current.snapshot_id == result.snapshot_id
    assert current.summary.operation.value == "replace"
    assert current.summary["added-dvs"] == "4" and current.summary["removed-dvs"] == "4"
    assert len(_puffin_files(table)) == 1
    assert scan_table(table).to_arrow().sort_by("id").equals(model)
    assert table.scan().to_arrow().sort_by("id").equals(model)  # pyiceberg's own reader
    assert _row_ids(table) == ids_before
    assert verify_table(table).ok, verify_table(table).problems
    # Nothing left to do: no snapshot.
    again = rewrite_deletion_vectors(table)
    assert again.snapshot_id is None and again.files_before == again.files_after == 1
    assert again.table.current_snapshot().snapshot_id == current.snapshot_id


def test_the_size_target_splits_files(tmp_path: Path) -> None:
    table, model = _deleted_table(tmp_path)
    # Four files of one vector each already meet a 1-byte target: nothing to do.
    kept = rewrite_deletion_vectors(table, target_file_size_bytes=1)
    assert kept.snapshot_id is None and kept.files_after == 4
    # One byte less than all four blobs: the first file takes three, the second the last.
    blobs = sum(r.content_size_in_bytes for r in deletion_vector_refs(table))
    two = rewrite_deletion_vectors(table, target_file_size_bytes=blobs - 1)
    assert (two.files_before, two.files_after, two.vectors) == (4, 2, 4)
    assert len(_puffin_files(two.table)) == 2
    assert scan_table(two.table).to_arrow().sort_by("id").equals(model)
    # A smaller target never splits files that are already few.
    again = rewrite_deletion_vectors(two.table, target_file_size_bytes=1)
    assert again.snapshot_id is None
    with pytest.raises(UsageError, match="positive number of bytes"):
        rewrite_deletion_vectors(table, target_file_size_bytes=0)


def test_position_deletes_become_vectors_and_stray_vectors_go(tmp_path: Path) -> None:
    table, model = _deleted_table(tmp_path)
    catalog = make_catalog(tmp_path)
    files = sorted(p.path for p in plan_files(table, table.current_snapshot()))
    # A Parquet position-delete file on the v3 table (as an older writer leaves it) ...
    parquet = write_position_delete_file(table, {files[0]: [500, 501], files[1]: [7]})
    table = _commit_delete_snapshot(
        catalog,
        table,
        [to_v3_data_file(parquet, table.spec().spec_id)],
        format_version=3,
        new_identifier="db.t2",
    )
    # ... and a vector of a data file that is not in the table (any more).
    gone = files[0].replace(".parquet", "-removed.parquet")
    entries = write_table_deletion_vectors(table, {gone: [1, 2]}, validate=False)
    table = _commit_delete_snapshot(
        catalog,
        table,
        deletion_vector_data_files(table, entries),
        format_version=3,
        new_identifier="db.t3",
    )
    first = pa.concat_tables(pq.read_table(local_path(f)) for f in files[:1])
    second = pq.read_table(local_path(files[1]))
    stale = set(first["id"].to_pylist()[500:502]) | {second["id"][7].as_py()}
    model = model.filter(pc.invert(pc.is_in(model["id"], pa.array(sorted(stale), pa.int64()))))
    assert scan_table(table).to_arrow().sort_by("id").equals(model)

    result = rewrite_deletion_vectors(table)
    after = live_delete_files(result.table, result.table.current_snapshot())
    assert result.dropped_dangling == 1 and result.files_after == 1 and len(after) == 4
    assert {df.file_format.value for df in after.values()} == {"PUFFIN"}
    assert all(ref in files for _, ref in after)  # no vector of the removed file
    assert scan_table(result.table).to_arrow().sort_by("id").equals(model)
    assert result.table.scan().to_arrow().sort_by("id").equals(model)
    assert verify_table(result.table).ok, verify_table(result.table).problems


def test_a_table_without_deletes_is_left_alone_and_v1_is_refused(tmp_path: Path) -> None:
    catalog = make_catalog(tmp_path)
    v1 = catalog.create_table("db.v1", sample_schema(), properties={"format-version": "1"})
    with pytest.raises(UnsupportedTableError, match="upgrade it first"):
        rewrite_deletion_vectors(v1)
    table = create_sample_table(catalog, "db.t", rows=100, files=1)
    for t in (table, upgrade_to_v3(table)):  # v2, then v3
        result = rewrite_deletion_vectors(t)
        assert result.snapshot_id is None and result.files_before == 0 and result.vectors == 0
