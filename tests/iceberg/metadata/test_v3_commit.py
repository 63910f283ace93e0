"""The v3 commit path (puffin.iceberg.metadata): catalogs, concurrent writers, cleanup, retirement.

Concurrent deletes run in separate processes on one SQLite catalog: both must end up
applied (refresh, re-merge, retry), never two live vectors for one data file, and no Puffin
file of a lost attempt left behind.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.memory import InMemoryCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadataV3, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField

from iceberg_fixtures import make_catalog
from peers import read_pyiceberg
from puffin.errors import CommitConflictError
from puffin.iceberg import deletion_vector_refs, local_catalog, verify_table
from puffin.iceberg.deletes.rows import delete_rows
from puffin.iceberg.deletes.upgrade import upgrade_to_v3
from puffin.iceberg.metadata import snapshots
from puffin.iceberg.metadata import v3 as _v3

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
ROWS = 400


def _table(catalog: Catalog, files: int = 2) -> Table:
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    per = ROWS // files
    for f in range(files):
        table.append(pa.table({"id": pa.array(range(f * per, (f + 1) * per), pa.int64())}))
    return upgrade_to_v3(catalog.load_table("db.t"))


def _ids(table: Table) -> list[int]:
    return sorted(read_pyiceberg(table.metadata_location).column("id").to_pylist())


def _puffin_files(folder: Path) -> set[str]:
    return {p.name for p in folder.rglob("*.puffin")}


def _referenced_puffin_files(table: Table) -> set[str]:
    return {Path(r.path).name for s in table.snapshots() for r in deletion_vector_refs(table, s)}


def test_pinned_pyiceberg_still_refuses_v3() -> None:
    """When this fails, pyiceberg writes v3 itself: retire puffin/iceberg/metadata/v3.py."""
    assert not _v3.pyiceberg_writes_v3(), "pyiceberg now writes v3: retire _v3.py"
    metadata = new_table_metadata(
        SCHEMA,
        UNPARTITIONED_PARTITION_SPEC,
        UNSORTED_SORT_ORDER,
        "file:///t",
        properties={"format-version": "3"},
    )
    assert isinstance(metadata, TableMetadataV3)
    with pytest.raises(NotImplementedError, match="V3"):
        metadata.model_dump_json()


def test_in_memory_catalog(tmp_path: Path) -> None:
    catalog = InMemoryCatalog("mem", warehouse=f"file://{tmp_path}")
    table = _table(catalog)
    assert table.metadata.format_version == 3
    result = delete_rows(table, "id >= 390")
    assert _ids(catalog.load_table("db.t")) == list(range(390))
    assert verify_table(result.table).ok


def _delete_in_process(warehouse: str, lo: int, hi: int, barrier: Any) -> int:
    table = local_catalog(warehouse).load_table("db.t")
    barrier.wait()
    return delete_rows(table, f"id >= {lo} and id < {hi}", max_attempts=10).deleted_rows


def test_concurrent_deletes_from_processes_are_all_applied(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    _table(make_catalog(warehouse))
    # Every process deletes rows of both data files, so every commit conflicts on a vector.
    ranges = [(0, 10), (10, 20), (200, 210), (205, 230)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(len(ranges))
        with ctx.Pool(len(ranges)) as pool:
            counts = pool.starmap(
                _delete_in_process, [(str(warehouse), lo, hi, barrier) for lo, hi in ranges]
            )
    deleted = set().union(*(range(lo, hi) for lo, hi in ranges))
    assert sum(counts) == len(deleted)
    table = local_catalog(warehouse).load_table("db.t")
    assert _ids(table) == sorted(set(range(ROWS)) - deleted)
    refs = deletion_vector_refs(table)  # raises on two live vectors for one file
    assert len(refs) == 2
    assert _puffin_files(warehouse) == _referenced_puffin_files(table)
    assert verify_table(table).ok


def test_a_commit_that_keeps_losing_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = tmp_path / "wh"
    table = _table(make_catalog(warehouse))
    before = {p for p in warehouse.rglob("*") if p.is_file() and "metadata" not in p.parts}
    metadata_before = set((warehouse / "db" / "t" / "metadata").iterdir())

    def lose(*args: Any, **kwargs: Any) -> Any:
        raise CommitFailedException("another writer won")

    monkeypatch.setattr(_v3, "commit", lose)
    monkeypatch.setattr("puffin.iceberg.metadata.commit_retry.CommitRetry.wait_s", lambda *_: 0.0)
    with pytest.raises(CommitConflictError, match="3 times"):
        delete_rows(table, "id < 5", max_attempts=3)
    after = {p for p in warehouse.rglob("*") if p.is_file() and "metadata" not in p.parts}
    assert after == before
    assert set((warehouse / "db" / "t" / "metadata").iterdir()) == metadata_before
    assert _ids(local_catalog(warehouse).load_table("db.t")) == list(range(ROWS))


def test_a_commit_in_unknown_state_keeps_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the catalog cannot tell whether the commit went through, the table may already
    reference the new files: they must stay, and the error must reach the caller."""
    from pyiceberg.exceptions import CommitStateUnknownException

    warehouse = tmp_path / "wh"
    table = _table(make_catalog(warehouse))
    before = {p for p in warehouse.rglob("*") if p.is_file()}

    def unknown(*args: Any, **kwargs: Any) -> Any:
        raise CommitStateUnknownException("the server did not answer")

    monkeypatch.setattr(_v3, "commit", unknown)
    with pytest.raises(CommitStateUnknownException):
        delete_rows(table, "id < 5", max_attempts=3)
    added = {p for p in warehouse.rglob("*") if p.is_file()} - before
    assert any(p.name.endswith(".puffin") for p in added), added
    assert any(p.name.endswith(".avro") for p in added), added


def test_statistics_commit_on_a_v3_table(tmp_path: Path) -> None:
    from puffin.iceberg import compute_table_statistics, read_table_statistics

    catalog = make_catalog(tmp_path / "wh")
    table = delete_rows(_table(catalog), "id < 10").table
    stats = compute_table_statistics(table, progress=False)
    assert table.metadata.statistics == [stats]  # the caller's table is updated in place
    loaded = catalog.load_table("db.t")
    assert loaded.metadata.format_version == 3
    assert loaded.metadata.statistics == [stats]
    assert loaded.current_snapshot() == table.current_snapshot()
    assert read_table_statistics(loaded)["id"].ndv == ROWS - 10
    assert verify_table(loaded).ok, verify_table(loaded).problems
    assert _ids(loaded) == list(range(10, ROWS))


# -- found in review --------------------------------------------------------------------------


def _ten_row_v2_table(warehouse: Path) -> tuple[Catalog, Table, str]:
    """A v2 table of one data file with ids 0-9: (catalog, table, the data file's path)."""
    from puffin.iceberg.scan.plan import plan_files

    catalog = make_catalog(warehouse)
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    table.append(pa.table({"id": pa.array(range(10), pa.int64())}))
    table = catalog.load_table("db.t")
    return catalog, table, plan_files(table, table.current_snapshot())[0].path


def _delete_entries(table: Table) -> list[Any]:
    """Every entry of the current snapshot's delete manifests, DELETED ones included."""
    from puffin.iceberg.metadata.manifests import read_manifest_entries, read_manifest_list

    snapshot = table.current_snapshot()
    assert snapshot is not None
    return [
        e
        for m in read_manifest_list(table.io, snapshot.manifest_list)
        if m.content.name == "DELETES"
        for e in read_manifest_entries(table.io, m, include_deleted=True)
    ]


def test_a_superseded_vector_is_marked_deleted_by_the_snapshot_that_removes_it(
    tmp_path: Path,
) -> None:
    """The spec: an entry's snapshot_id is "Snapshot id where the file was added, or deleted
    if status is 2"."""
    table = _table(make_catalog(tmp_path / "wh"))
    first = delete_rows(table, "id = 1 or id = 201")
    second = delete_rows(first.table, "id = 2")
    entries = _delete_entries(second.table)
    deleted = [e for e in entries if e.status.name == "DELETED"]
    kept = [e for e in entries if e.status.name == "EXISTING"]
    assert len(deleted) == 1 and deleted[0].snapshot_id == second.snapshot_id
    assert len(kept) == 1 and kept[0].snapshot_id == first.snapshot_id


def test_upgrade_removes_position_delete_files_that_name_their_data_file(
    tmp_path: Path,
) -> None:
    """Java 1.7+ writes referenced_data_file on file-scoped Parquet position deletes too;
    such a file is removed by path like any other, not left live beside the new DV."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    from iceberg_fixtures import _commit_delete_snapshot
    from puffin.conformance.tables import write_position_delete_file

    catalog, table, data = _ten_row_v2_table(tmp_path / "wh")
    parquet = write_position_delete_file(table, {data: [1, 2]})
    record = DataFile.from_args(
        _table_format_version=3, content=DataFileContent.POSITION_DELETES,
        file_path=parquet.file_path, file_format=FileFormat.PARQUET, partition=Record(),
        record_count=2, file_size_in_bytes=parquet.file_size_in_bytes,
        referenced_data_file=data,
    )
    record.spec_id = 0
    v2 = _commit_delete_snapshot(
        catalog, table, [record], format_version=3, new_identifier="db.t2", broken="v2"
    )
    v3 = upgrade_to_v3(v2)
    live = [e for e in _delete_entries(v3) if e.status.name != "DELETED"]
    assert [e.data_file.file_format.name for e in live] == ["PUFFIN"]
    assert _ids(v3) == [0, *range(3, 10)]


def test_upgrade_refuses_positions_past_a_files_end(tmp_path: Path) -> None:
    from iceberg_fixtures import commit_position_deletes_v2

    catalog, table, data = _ten_row_v2_table(tmp_path / "wh")
    v2 = commit_position_deletes_v2(catalog, table, {data: [1]}, new_identifier="db.t2")
    with pytest.raises(ValueError, match=r"past the end of .*, which has 10 rows"):
        upgrade_to_v3(v2, positions={data: [1, 10]})
    assert catalog.load_table("db.t2").metadata.format_version == 2


def test_a_branch_commit_that_moves_next_row_id_is_a_conflict_retried(tmp_path: Path) -> None:
    """Another writer's snapshot on a branch advances next-row-id but not main: our
    snapshot's first-row-id is stale, which is a lost race, not a failure."""
    from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate

    catalog = make_catalog(tmp_path / "wh")
    table = _table(catalog)
    stale = catalog.load_table("db.t")
    staged = snapshots.write_delete_snapshot(table, [], set(), operation="append")
    branch = SetSnapshotRefUpdate.model_validate(
        {"type": "branch", "ref-name": "audit", "snapshot-id": staged.snapshot.snapshot_id}
    )
    moved = _v3.commit(table, [], [AddSnapshotUpdate(snapshot=staged.snapshot), branch])
    assert moved.metadata.next_row_id > stale.metadata.next_row_id
    result = delete_rows(stale, "id = 1")
    assert result.attempts == 2
    assert 1 not in _ids(result.table)


@pytest.mark.parametrize("operation", ["delete", "upgrade"])
def test_a_snapshot_that_fails_to_write_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    """A failure after the Puffin file and the manifests are written, before the commit
    (here: writing the manifest list), removes every file written for it."""
    from iceberg_fixtures import commit_position_deletes_v2

    warehouse = tmp_path / "wh"
    if operation == "delete":
        table = _table(make_catalog(warehouse))
    else:
        catalog, base, data = _ten_row_v2_table(warehouse)
        table = commit_position_deletes_v2(catalog, base, {data: [1]}, new_identifier="db.t2")
    before = {p for p in warehouse.rglob("*") if p.is_file()}

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_v3.ManifestListWriterV3, "add_manifests", broken)
    with pytest.raises(OSError, match="No space"):
        if operation == "delete":
            delete_rows(table, "id < 5")
        else:
            upgrade_to_v3(table)
    assert {p for p in warehouse.rglob("*") if p.is_file()} == before
