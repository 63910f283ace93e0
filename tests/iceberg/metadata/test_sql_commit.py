"""Commits through a SQL catalog (puffin.iceberg.metadata.sql_commit): the same metadata as
pyiceberg's staging, without re-reading unchanged metadata, and a moved table still seen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import Table
from pyiceberg.table.update import (
    RemovePropertiesUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    update_table_metadata,
)

from puffin.iceberg import append, delete_rows, local_catalog, upgrade_to_v3
from puffin.iceberg.metadata import sql_commit
from puffin.iceberg.metadata.commits import snapshot_updates
from puffin.iceberg.metadata.v3 import commit

pytest.importorskip("pyiceberg")


def _v3_table(folder: Path) -> Table:
    catalog = local_catalog(folder)
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table(
        "db.t", pa.schema([("id", pa.int64())]), properties={"format-version": "2", "p": "1"}
    )
    table.append(pa.table({"id": pa.array(range(100), pa.int64())}))
    table = upgrade_to_v3(catalog.load_table("db.t"))
    for n in range(3):
        table = append(table, pa.table({"id": pa.array([1000 + n], pa.int64())}), statistics="none")
    return delete_rows(table, "id < 10").table


def _metadata_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from pyiceberg.serializers import FromInputFile

    reads: list[str] = []
    original = FromInputFile.table_metadata

    def counted(input_file: Any, encoding: str = "utf-8") -> Any:
        reads.append(input_file.location)
        return original(input_file, encoding)

    monkeypatch.setattr(FromInputFile, "table_metadata", staticmethod(counted))
    return reads


def _untimed(metadata: Any) -> dict[str, Any]:
    """The metadata without what each stager stamps with "now"."""
    fields = dict(metadata)
    del fields["last_updated_ms"]
    fields["snapshot_log"] = [entry.snapshot_id for entry in metadata.snapshot_log]
    return fields


def test_staging_equals_pyicebergs(tmp_path: Path) -> None:
    """For a ref moved to an older snapshot and for property changes, the metadata staged
    without the deep copy is the one pyiceberg's ``update_table_metadata`` stages."""
    table = _v3_table(tmp_path)
    older = table.metadata.snapshots[1].snapshot_id
    cases: list[tuple[Any, ...]] = [
        (SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=older),),
        (SetPropertiesUpdate(updates={"a": "1", "commit.retry.num-retries": "9"}),),
        (RemovePropertiesUpdate(removals=["p"]),),
        (),
    ]
    for updates in cases:
        ours = sql_commit.apply_updates(table.metadata, updates, table.metadata_location)
        theirs = update_table_metadata(
            table.metadata, updates, metadata_location=table.metadata_location
        )
        assert _untimed(ours) == _untimed(theirs), updates
        assert abs(ours.last_updated_ms - theirs.last_updated_ms) < 5_000
        assert (ours.metadata_log[-1].metadata_file == table.metadata_location) == bool(updates)


def test_a_commit_on_the_current_table_does_not_read_its_metadata_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _v3_table(tmp_path)
    reads = _metadata_reads(monkeypatch)
    table = append(table, pa.table({"id": pa.array([7], pa.int64())}), statistics="none")
    table = delete_rows(table, "id = 7").table
    assert reads == []
    assert not {"_convert_orm_to_iceberg", "_update_and_stage_table", "_write_metadata"} & set(
        vars(table.catalog)
    ), "the catalog keeps no replaced method after the commit"
    fresh = table.catalog.load_table("db.t")
    assert fresh.metadata == table.metadata and fresh.metadata_location == table.metadata_location


def test_a_stale_table_reads_the_moved_metadata_and_loses_the_race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit based on a table another writer has moved on reads the current metadata
    (a different file) and fails its requirement, as without the shortcut."""
    stale = _v3_table(tmp_path)
    moved = append(stale, pa.table({"id": pa.array([5], pa.int64())}), statistics="none")
    reads = _metadata_reads(monkeypatch)
    snapshot = moved.current_snapshot()
    assert snapshot is not None
    requirements, updates = snapshot_updates(stale, snapshot)
    with pytest.raises(CommitFailedException):
        commit(stale, requirements, updates)
    assert reads == [moved.metadata_location]
    assert stale.catalog.load_table("db.t").metadata_location == moved.metadata_location
