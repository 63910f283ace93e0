"""Commits through a SQL catalog (puffin.iceberg.metadata.sql_commit): the same metadata as
pyiceberg's staging, without re-reading unchanged metadata, and a moved table still seen."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.io import OutputFile
from pyiceberg.io.pyarrow import PyArrowFileIO
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


def _version(location: str) -> int:
    return int(Path(location).name.split("-", 1)[0])


def test_metadata_files_are_numbered_one_after_another(tmp_path: Path) -> None:
    """Each commit's metadata file is the next version (``00004-...`` after ``00003-...``),
    whatever the commit: an append, a delete, a property."""
    table = _v3_table(tmp_path)
    from puffin.iceberg import transaction

    versions = [_version(table.metadata_location)]
    table = append(table, pa.table({"id": pa.array([9], pa.int64())}), statistics="none")
    versions.append(_version(table.metadata_location))
    table = delete_rows(table, "id = 9").table
    versions.append(_version(table.metadata_location))
    with transaction(table) as tx:
        tx.set_properties({"owner": "tests"})
    versions.append(_version(table.refresh().metadata_location))
    assert versions == list(range(versions[0], versions[0] + 4))


def test_last_updated_is_the_snapshot_time_or_now(tmp_path: Path) -> None:
    """As Java's metadata builder: a snapshot's commit stamps its timestamp; a commit without
    one (a property, an upgrade alone) stamps the time of the commit, never the old one."""
    import time

    from puffin.iceberg import transaction

    table = _v3_table(tmp_path)
    table = append(table, pa.table({"id": pa.array([9], pa.int64())}), statistics="none")
    snapshot = table.current_snapshot()
    assert snapshot is not None
    assert table.metadata.last_updated_ms == snapshot.timestamp_ms
    before = table.metadata.last_updated_ms
    time.sleep(0.01)
    with transaction(table) as tx:
        tx.set_properties({"owner": "tests"})
    after = table.refresh().metadata.last_updated_ms
    assert before < after <= int(time.time() * 1000)

    catalog = local_catalog(tmp_path / "v2")
    catalog.create_namespace_if_not_exists("db")
    v2 = catalog.create_table(
        "db.u", pa.schema([("id", pa.int64())]), properties={"format-version": "2"}
    )
    v2.append(pa.table({"id": pa.array([1], pa.int64())}))
    v2 = catalog.load_table("db.u")
    time.sleep(0.01)
    upgraded = upgrade_to_v3(v2)
    assert v2.metadata.last_updated_ms < upgraded.metadata.last_updated_ms
    assert upgraded.metadata.last_updated_ms <= int(time.time() * 1000)
    assert upgraded.metadata.metadata_log[-1].metadata_file == v2.metadata_location


def test_an_upgrade_with_deletes_logs_the_old_file_once(tmp_path: Path) -> None:
    """An upgrade that also commits deletion vectors logs the v2 metadata file once."""
    from iceberg_fixtures import commit_position_deletes_v2, make_catalog
    from puffin.iceberg import create_sample_table

    catalog = make_catalog(tmp_path)
    base = create_sample_table(catalog, "db.base", rows=100, files=1)
    path = str(next(iter(base.scan().plan_files())).file.file_path)
    v2 = commit_position_deletes_v2(catalog, base, {path: [1, 2]}, new_identifier="db.v2")
    upgraded = upgrade_to_v3(v2)
    logged = [e.metadata_file for e in upgraded.metadata.metadata_log]
    assert len(logged) == len(set(logged))
    assert logged[-1] == v2.metadata_location
    assert upgraded.current_snapshot() is not None
    assert upgraded.current_snapshot() != v2.current_snapshot()


def test_a_sorted_table_takes_commits(tmp_path: Path) -> None:
    """The staged metadata's sort order is checked against its schema (a sorted table)."""
    from pyiceberg.schema import Schema
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField

    catalog = local_catalog(tmp_path)
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table(
        "db.s",
        Schema(NestedField(1, "id", LongType(), required=False)),
        properties={"format-version": "2"},
        sort_order=SortOrder(SortField(source_id=1, transform=IdentityTransform())),
    )
    table.append(pa.table({"id": pa.array([3, 1, 2], pa.int64())}))
    table = upgrade_to_v3(catalog.load_table("db.s"))
    table = delete_rows(table, "id = 2").table
    assert table.sort_order().fields[0].source_id == 1
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 3]


class RecordingFileIO(PyArrowFileIO):
    """pyarrow's FileIO, noting every file it is asked to write: what a table whose
    ``py-io-impl`` property names it uses instead of the catalog's."""

    written: ClassVar[list[str]] = []

    def new_output(self, location: str) -> OutputFile:
        RecordingFileIO.written.append(location)
        return super().new_output(location)


def test_the_metadata_file_is_written_by_the_tables_own_file_io(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_namespace_if_not_exists("db")
    impl = f"{RecordingFileIO.__module__}.{RecordingFileIO.__qualname__}"
    table = catalog.create_table(
        "db.t", pa.schema([("id", pa.int64())]), properties={"py-io-impl": impl}
    )
    assert isinstance(table.io, RecordingFileIO)
    RecordingFileIO.written.clear()
    table = upgrade_to_v3(table)
    table = append(table, pa.table({"id": pa.array([1, 2], pa.int64())}), statistics="none")
    table = delete_rows(table, "id = 1").table
    metadata_files = [w for w in RecordingFileIO.written if w.endswith(".metadata.json")]
    assert len(metadata_files) == 3 and metadata_files[-1] == table.metadata_location
    assert table.catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [2]
