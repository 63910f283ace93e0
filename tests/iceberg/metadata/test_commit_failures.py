"""How a v3 commit (puffin.iceberg.metadata.v3.commit) fails and tidies up: the metadata file of
a lost race is removed and one of an unknown outcome kept; an error that is not a race passes
through; a catalog it cannot write through is named; old metadata deletion skips only what
lies outside the table and warns when it cannot delete; a pre-v3 manifest of existing rows
alone gives row ids to exactly its rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException
from pyiceberg.table import Table
from pyiceberg.table.metadata import MetadataLogEntry
from pyiceberg.table.update import SetPropertiesUpdate

from iceberg_fixtures import make_catalog
from peers import read_pyiceberg
from puffin.errors import UnsupportedTableError
from puffin.iceberg import append, upgrade_to_v3
from puffin.iceberg.metadata import metadata_file
from puffin.iceberg.metadata import v3 as _v3
from puffin.io.locations import local_path

pytest.importorskip("pyiceberg")


def _v3_table(warehouse: Path) -> Table:
    catalog = make_catalog(warehouse)
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table(
        "db.t", pa.schema([("id", pa.int64())]), properties={"format-version": "2"}
    )
    table.append(pa.table({"id": pa.array(range(50), pa.int64())}))
    return upgrade_to_v3(catalog.load_table("db.t"))


def _metadata_files(table: Table) -> set[str]:
    folder = Path(local_path(table.metadata_location) or "").parent
    return {p.name for p in folder.glob("*.metadata.json")}


def _failing_after_the_write(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> list[str]:
    """The metadata file is written, then the commit fails with ``error`` (as a compare and
    swap lost to another writer would); the paths written, in order."""
    written: list[str] = []
    real = metadata_file.write_table_metadata

    def write_then_fail(metadata: Any, io: Any, path: str) -> None:
        real(metadata, io, path)
        written.append(path)
        raise error

    monkeypatch.setattr(metadata_file, "write_table_metadata", write_then_fail)
    return written


UPDATE = [SetPropertiesUpdate(updates={"owner": "tests"})]


@pytest.mark.parametrize(
    ("error", "raised", "message"),
    [
        (CommitFailedException("another writer won"), CommitFailedException, "another"),
        (
            ValueError("Cannot add snapshot: next-row-id moved"),
            CommitFailedException,
            "row lineage moved on: Cannot add snapshot: next-row-id moved",
        ),
        (ValueError("a schema the table cannot take"), ValueError, "schema"),
    ],
)
def test_a_failed_commit_removes_its_metadata_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    raised: type,
    message: str,
) -> None:
    """Only a ``ValueError`` about ``next-row-id`` is a lost race (retried by the caller);
    any other passes through as it is. Either way the file written for it goes."""
    table = _v3_table(tmp_path)
    before = _metadata_files(table)
    written = _failing_after_the_write(monkeypatch, error)
    with pytest.raises(raised, match=message) as caught:
        _v3.commit(table, [], UPDATE)
    assert type(caught.value) is raised
    assert len(written) == 1
    assert _metadata_files(table) == before
    assert "owner" not in table.catalog.load_table("db.t").metadata.properties


def test_a_commit_of_unknown_outcome_keeps_its_metadata_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog may name the file already: it stays, and the error reaches the caller."""
    table = _v3_table(tmp_path)
    before = _metadata_files(table)
    written = _failing_after_the_write(monkeypatch, CommitStateUnknownException("no answer"))
    with pytest.raises(CommitStateUnknownException):
        _v3.commit(table, [], UPDATE)
    assert _metadata_files(table) == before | {Path(written[0]).name}


def test_another_catalog_is_refused_by_name(tmp_path: Path) -> None:
    from pyiceberg.catalog.noop import NoopCatalog

    table = _v3_table(tmp_path)
    other = Table(
        table.name(), table.metadata, table.metadata_location, table.io, NoopCatalog("noop")
    )
    with pytest.raises(UnsupportedTableError) as caught:
        _v3.commit(other, [], UPDATE)
    assert str(caught.value) == (
        "cannot commit Iceberg v3 metadata through a NoopCatalog: pyiceberg 0.12 does not "
        "write v3, and puffin writes it only for SQL (SQLite, in-memory) and REST catalogs"
    )


def _dropping(table: Table, logged: list[str]) -> tuple[Table, Table]:
    """(base, committed): ``logged`` in the base's metadata log, none in the committed one,
    which deletes what it drops."""
    entries = [MetadataLogEntry(metadata_file=p, timestamp_ms=1) for p in logged]
    base = table.metadata.model_copy(update={"metadata_log": entries})
    props = {**table.metadata.properties, "write.metadata.delete-after-commit.enabled": "true"}
    committed = table.metadata.model_copy(update={"metadata_log": [], "properties": props})
    make = lambda m: Table(table.name(), m, table.metadata_location, table.io, table.catalog)  # noqa: E731
    return make(base), make(committed)


def test_old_metadata_outside_the_table_is_skipped_not_the_rest(tmp_path: Path) -> None:
    """A log entry outside the table (first in order) stays; the ones inside still go."""
    table = _v3_table(tmp_path / "wh")
    outside = tmp_path / "a-neighbour" / "00001.metadata.json"
    outside.parent.mkdir()
    outside.write_text("{}")
    folder = Path(local_path(table.metadata_location) or "").parent
    inside = [folder / "00097-old.metadata.json", folder / "00098-old.metadata.json"]
    for p in inside:
        p.write_text("{}")
    logged = [f"file://{outside}", *(f"file://{p}" for p in inside)]
    assert sorted(logged)[0] == logged[0]
    _v3._delete_dropped_metadata(*_dropping(table, logged))
    assert outside.read_text() == "{}"
    assert not any(p.exists() for p in inside)


def test_old_metadata_that_cannot_be_deleted_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _v3_table(tmp_path)
    folder = Path(local_path(table.metadata_location) or "").parent
    old = folder / "00099-old.metadata.json"
    old.write_text("{}")
    base, committed = _dropping(table, [f"file://{old}"])

    def refuse(location: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(committed.io, "delete", refuse)
    with pytest.warns(UserWarning) as caught:
        _v3._delete_dropped_metadata(base, committed)
    assert [str(w.message) for w in caught] == [
        f"could not delete old metadata file file://{old}: [Errno 13] Permission denied"
    ]
    assert old.exists()


def test_a_manifest_of_existing_rows_only_gives_ids_to_exactly_them(tmp_path: Path) -> None:
    """A v2 manifest that holds one file as EXISTING and one as DELETED (0 added rows): the
    first v3 manifest list gives row ids to the live rows alone, so the table's
    ``next-row-id`` is the number of rows a reader sees (as Java counts: existing + added)."""
    catalog = make_catalog(tmp_path)
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table(
        "db.t",
        pa.schema([("id", pa.int64())]),
        properties={"format-version": "2", "write.target-file-size-bytes": "1"},
    )
    batch = pa.table({"id": pa.array(range(40), pa.int64())})
    table.append(pa.concat_tables([batch.slice(0, 20), batch.slice(20, 20)]))
    table = catalog.load_table("db.t")
    assert len(list(table.scan().plan_files())) >= 2
    table.delete("id < 20")  # whole files go: the other files become EXISTING entries
    table = catalog.load_table("db.t")
    manifests = table.current_snapshot().manifests(table.io)
    assert any(m.added_rows_count == 0 and m.existing_rows_count for m in manifests)
    upgraded = upgrade_to_v3(table)
    assert upgraded.metadata.next_row_id == 0  # the upgrade writes no manifest list
    # The first v3 snapshot's list gives ids to the existing rows, then to the new ones.
    appended = append(
        upgraded, pa.table({"id": pa.array([100, 101], pa.int64())}), statistics="none"
    )
    rows = read_pyiceberg(appended.metadata_location).num_rows
    assert rows == 22
    assert appended.metadata.next_row_id == rows
