"""Metadata files (puffin.iceberg.metadata.metadata_file): pyiceberg's bytes for every format
version, with each snapshot's JSON made once per snapshot object."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.typedef import IcebergBaseModel

from puffin.iceberg import append, delete_rows, local_catalog, transaction, upgrade_to_v3
from puffin.iceberg.metadata import metadata_file
from puffin.iceberg.metadata.metadata_file import metadata_json, snapshot_json

# A string that is the splice's marker; in a property or a summary it must stay a value.
MARKER = '"snapshots":[]'


def _table(folder: Path, version: int) -> Table:
    catalog = local_catalog(folder)
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table(
        f"db.v{version}",
        pa.schema([("id", pa.int64())]),
        properties={"format-version": str(version), MARKER: MARKER, "ü": 'ë\\"\n'},
    )
    for n in range(3):
        table.append(pa.table({"id": pa.array([n, n + 10], pa.int64())}))
    return catalog.load_table(f"db.v{version}")


def _pyicebergs(metadata: Any) -> str:
    """pyiceberg's serialization of the whole document (``ToOutputFile.table_metadata``)."""
    from pyiceberg.utils.config import Config

    exclude_none = not Config().get_bool("legacy-current-snapshot-id")
    return IcebergBaseModel.model_dump_json(metadata, exclude_none=exclude_none)


def _v3(folder: Path) -> Table:
    table = upgrade_to_v3(_table(folder, 2))
    table = append(table, pa.table({"id": pa.array([7], pa.int64())}), statistics="none")
    table = delete_rows(table, "id = 1").table
    with transaction(table) as tx:
        tx.set_properties({"marker-too": MARKER})
    return table.refresh()


@pytest.mark.parametrize("legacy", [False, True])
def test_bytes_are_pyicebergs_for_every_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, legacy: bool
) -> None:
    """v1 (serialized whole), v2 and v3 (snapshots spliced) give pyiceberg's exact bytes, with
    the splice's marker held in properties, and under pyiceberg's legacy snapshot-id setting."""
    if legacy:
        monkeypatch.setenv("PYICEBERG_LEGACY_CURRENT_SNAPSHOT_ID", "true")
    tables = [_table(tmp_path / "v1", 1), _table(tmp_path / "v2", 2), _v3(tmp_path / "v3")]
    for table in tables:
        metadata = table.metadata
        assert len(metadata.snapshots) >= 3
        ours = metadata_json(metadata)
        assert ours == _pyicebergs(metadata), metadata.format_version
        document = json.loads(ours)
        assert document["properties"][MARKER] == MARKER
        assert [s["snapshot-id"] for s in document["snapshots"]] == [
            s.snapshot_id for s in metadata.snapshots
        ]
        # Twice (now from the kept JSON): the same bytes.
        assert metadata_json(metadata) == ours
    catalog = local_catalog(tmp_path / "e")
    catalog.create_namespace_if_not_exists("db")
    no_snapshots = catalog.create_table(
        "db.e", pa.schema([("id", pa.int64())]), properties={"format-version": "2"}
    )
    assert metadata_json(no_snapshots.metadata) == _pyicebergs(no_snapshots.metadata)


def test_a_summary_holding_the_marker(tmp_path: Path) -> None:
    """A snapshot whose summary holds the marker as a key and a value is still spliced right."""
    metadata = _table(tmp_path, 2).metadata
    first = metadata.snapshots[0]
    summary = first.summary
    assert summary is not None
    summary[MARKER] = MARKER
    odd = first.model_copy(update={"summary": summary})
    metadata = metadata.model_copy(update={"snapshots": [odd, *metadata.snapshots[1:]]})
    assert metadata_json(metadata) == _pyicebergs(metadata)


def _dumps_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    dumped: list[int] = []
    original = Snapshot.model_dump_json

    def counted(self: Snapshot, *args: Any, **kwargs: Any) -> str:
        dumped.append(self.snapshot_id)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Snapshot, "model_dump_json", counted)
    return dumped


def test_each_commit_serializes_only_its_new_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first commit, a commit serializes its own snapshot and no older one: the
    snapshots of the table in hand are shared by the metadata it commits."""
    table = _v3(tmp_path)
    append(table, pa.table({"id": pa.array([8], pa.int64())}), statistics="none")
    dumped = _dumps_counted(monkeypatch)
    before = {s.snapshot_id for s in table.refresh().metadata.snapshots}
    table = table.refresh()
    for n in range(3):
        table = append(table, pa.table({"id": pa.array([20 + n], pa.int64())}), statistics="none")
    new = [s.snapshot_id for s in table.metadata.snapshots if s.snapshot_id not in before]
    assert len(new) == 3
    # Each new snapshot once; old ones at most once (the refreshed table's objects are new).
    assert sorted(d for d in dumped if d in new) == sorted(new)
    assert len([d for d in dumped if d not in new]) <= len(before)
    written = Path(table.metadata_location.removeprefix("file://")).read_text()
    assert written == _pyicebergs(table.metadata)


def test_the_json_goes_with_its_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept JSON is dropped with its snapshot object and never served to another one, nor
    for the other ``exclude_none``."""
    snapshot = _table(tmp_path, 2).metadata.snapshots[-1]
    copy = snapshot.model_copy(update={"parent_snapshot_id": None})
    key = id(copy)
    assert '"parent-snapshot-id":null' in snapshot_json(copy, exclude_none=False)
    assert "parent-snapshot-id" not in snapshot_json(copy, exclude_none=True)
    assert key in metadata_file._SNAPSHOT_JSON
    del copy
    gc.collect()
    assert key not in metadata_file._SNAPSHOT_JSON
    dumped = _dumps_counted(monkeypatch)
    snapshot_json(snapshot, exclude_none=True)
    snapshot_json(snapshot, exclude_none=True)
    assert len(dumped) <= 1


def test_v2_and_v3_snapshots_are_kept_and_v1_ones_are_not(tmp_path: Path) -> None:
    """The splice serves v2 and v3 (each snapshot's JSON kept); v1 is serialized whole."""
    for version in (1, 2):
        metadata = _table(tmp_path / f"v{version}", version).metadata
        metadata_json(metadata)
        kept = [id(s) in metadata_file._SNAPSHOT_JSON for s in metadata.snapshots]
        assert kept == [version == 2] * len(metadata.snapshots), version
    metadata = _v3(tmp_path / "v3").metadata
    metadata_json(metadata)
    assert all(id(s) in metadata_file._SNAPSHOT_JSON for s in metadata.snapshots)


def test_an_existing_metadata_file_is_never_overwritten(tmp_path: Path) -> None:
    from puffin.iceberg.metadata.metadata_file import write_table_metadata

    table = _v3(tmp_path)
    path = table.metadata_location
    before = Path(path.removeprefix("file://")).read_bytes()
    with pytest.raises(FileExistsError):
        write_table_metadata(table.metadata, table.io, path)
    assert Path(path.removeprefix("file://")).read_bytes() == before
