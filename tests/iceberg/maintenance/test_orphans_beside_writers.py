"""Orphan cleanup cannot break a live table: the grace-period rule, newer metadata (a commit in
flight, another catalog, a copied warehouse), set-aside files, and writers that check their
files before the catalog swap. The races themselves run in ``test_orphan_races.py``."""

from __future__ import annotations

import datetime
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from puffin.errors import NewerMetadataError, UsageError, WrittenFileGoneError
from puffin.iceberg import (
    append,
    create_sample_table,
    local_catalog,
    remove_orphan_files,
    sample_batch,
    upgrade_to_v3,
    verify_table,
)
from puffin.iceberg.metadata.versions import metadata_version, newer_metadata
from puffin.io.locations import local_path

ZERO = datetime.timedelta(0)
HOUR = datetime.timedelta(hours=1)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _table(tmp_path: Path, *, v3: bool = True) -> Any:
    table = create_sample_table(local_catalog(tmp_path / "wh"), "db.t", rows=200, files=2)
    return upgrade_to_v3(table) if v3 else table


def _age(paths: Any, delta: datetime.timedelta) -> None:
    when = (datetime.datetime.now() - delta).timestamp()
    for p in paths:
        os.utime(p, (when, when))


def _rewind(warehouse: Path, metadata_location: str) -> None:
    """Point the catalog back at an earlier metadata file, as a catalog that never took the
    commits after it sees the table (another catalog, or a copy of the warehouse)."""
    with sqlite3.connect(warehouse / "catalog.db") as db:
        db.execute("UPDATE iceberg_tables SET metadata_location = ?", (metadata_location,))


def _commit_the_catalog_never_took(tmp_path: Path) -> tuple[Any, Any, Path]:
    """A table whose folder holds an append's metadata file one version above the catalog's
    (the catalog pointed back), every file 30 days old; the table, the append's committed
    table, the table's folder."""
    table = _table(tmp_path)
    current = table.metadata_location
    committed = append(table, sample_batch(50, start=10_000), statistics="none")
    _rewind(tmp_path / "wh", current)
    root = Path(local_path(table.location()) or "")
    _age([p for p in root.rglob("*") if p.is_file()], datetime.timedelta(days=30))
    return table.refresh(), committed, root


def test_a_short_grace_period_deletes_only_when_asked(tmp_path: Path) -> None:
    table = _table(tmp_path)
    stray = Path(local_path(table.location()) or "") / "data" / "stray.parquet"
    stray.write_bytes(b"orphan")
    _age([stray], datetime.timedelta(hours=23, minutes=30))
    for short in (ZERO, datetime.timedelta(hours=23), "5s", "0s"):
        with pytest.raises(UsageError, match="allow_short_grace_period=True"):
            remove_orphan_files(table, older_than=short)
        assert stray.exists()
        dry = remove_orphan_files(table, older_than=short, dry_run=True)
        assert [o.path for o in dry.removed] == [str(stray)]
    done = remove_orphan_files(table, older_than="0s", allow_short_grace_period=True)
    assert [o.path for o in done.removed] == [str(stray)] and not stray.exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "not int 0"),
        (3.5, "not float"),
        ("3 days", "not an age such as 3d"),
        ("-1d", "negative age"),
        (-HOUR, "negative age"),
        (datetime.datetime(2026, 1, 1), "timezone-aware"),
        (None, "not NoneType"),
    ],
)
def test_older_than_takes_an_age_a_time_or_a_duration_and_nothing_else(
    tmp_path: Path, value: Any, message: str
) -> None:
    from puffin.iceberg import expire_snapshots

    table = _table(tmp_path)
    with pytest.raises(UsageError, match=message):
        remove_orphan_files(table, older_than=value, dry_run=True)
    if value is not None:  # None is expiry's "the table's configured age"
        with pytest.raises(UsageError, match=message):
            expire_snapshots(table, older_than=value)


def test_older_than_as_a_string_or_an_aware_time(tmp_path: Path) -> None:
    from puffin.iceberg import expire_snapshots

    table = _table(tmp_path)
    stray = Path(local_path(table.location()) or "") / "data" / "stray.parquet"
    stray.write_bytes(b"orphan")
    _age([stray], datetime.timedelta(days=2))
    assert remove_orphan_files(table, older_than="1d", dry_run=True).orphans[0].path == str(stray)
    since = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=3)
    assert remove_orphan_files(table, older_than=since, dry_run=True).orphans == []
    before = len(table.metadata.snapshots)
    assert expire_snapshots(table, older_than="0s").expired_snapshot_ids  # the v2 append's
    assert len(table.refresh().metadata.snapshots) < before


def test_a_commit_in_flight_keeps_every_file_it_references(tmp_path: Path) -> None:
    """A metadata file one version above the catalog's, written moments ago and based on the
    current metadata: a commit about to swap. Everything it reaches stays, however old."""
    table, committed, root = _commit_the_catalog_never_took(tmp_path)
    os.utime(local_path(committed.metadata_location) or "")  # written just now
    before = _files(root)
    table = table.refresh()
    (newer,) = newer_metadata(table)
    assert newer.path == local_path(committed.metadata_location) and newer.based_on_current
    result = remove_orphan_files(table, older_than=HOUR, allow_short_grace_period=True)
    assert result.removed == [] and _files(root) == before
    assert {w.kind for w in verify_table(table).warnings} == {"newer-metadata"}
    _rewind(tmp_path / "wh", committed.metadata_location)  # the swap lands
    assert table.refresh().scan().to_arrow().num_rows == 250


def test_a_commit_in_flight_is_one_whatever_the_grace_period(tmp_path: Path) -> None:
    """Written two minutes ago (a slow commit) with a grace period of zero: still a commit
    that may land, so it is protected and never called debris (issue 59: a cleanup with a
    short grace period refused and advised deleting a file that became current)."""
    table, committed, root = _commit_the_catalog_never_took(tmp_path)
    path = local_path(committed.metadata_location) or ""
    _age([path], datetime.timedelta(minutes=2))
    before = _files(root)
    result = remove_orphan_files(table, older_than=ZERO, allow_short_grace_period=True)
    assert result.removed == [] and _files(root) == before


def test_two_commits_between_a_refresh_and_the_listing_are_no_foreign_history(
    tmp_path: Path,
) -> None:
    """The catalog took two commits after the cleanup read it: the second file's log ends
    at the first, not at the version the cleanup knows. Read again, both are the table's."""
    from puffin.iceberg.maintenance import orphans

    table = _table(tmp_path)
    stale = local_catalog(tmp_path / "wh").load_table("db.t")
    for start in (10_000, 20_000):
        table = append(table, sample_batch(50, start=start), statistics="none")
    protected = orphans._protected(stale)
    newest = table.current_snapshot()
    assert newest is not None and local_path(newest.manifest_list) in protected


def test_newer_metadata_that_is_no_commit_in_flight_stops_the_cleanup(tmp_path: Path) -> None:
    table, committed, root = _commit_the_catalog_never_took(tmp_path)
    before = _files(root)
    name = os.path.basename(committed.metadata_location)
    short: dict[str, Any] = {"allow_short_grace_period": True}
    for grace, extra in ((datetime.timedelta(days=3), {}), (ZERO, short)):
        with pytest.raises(NewerMetadataError, match=f"{name} is numbered at or above the"):
            remove_orphan_files(table, older_than=grace, **extra)
        with pytest.raises(NewerMetadataError, match="nothing was deleted"):
            remove_orphan_files(table, older_than=grace, dry_run=True)
    assert _files(root) == before
    with pytest.raises(NewerMetadataError) as refused:
        remove_orphan_files(table, older_than=ZERO, allow_short_grace_period=True)
    message = str(refused.value)
    for words in ("(30 days ago)", "older than 10 minutes is no commit in flight",
                  "metadata-log", "check that no writer of this table runs"):  # fmt: skip
        assert words in message, message
    assert "Delete the file" not in message
    (warning,) = [w for w in verify_table(table.refresh()).warnings if w.kind == "newer-metadata"]
    assert warning.path.endswith(name) and "orphan cleanup refuses" in warning.message


def test_a_copied_warehouse_cannot_clean_up_the_original(tmp_path: Path) -> None:
    """A copy of a warehouse whose catalog still names the original's absolute paths; the
    original goes on committing. Cleanup through the copy refuses and deletes nothing."""
    table = _table(tmp_path)
    shutil.copytree(tmp_path / "wh", tmp_path / "copy")
    for start in (10_000, 20_000):
        table = append(table, sample_batch(50, start=start), statistics="none")
    root = Path(local_path(table.location()) or "")
    _age([p for p in root.rglob("*") if p.is_file()], datetime.timedelta(days=30))
    before = _files(root)
    copy = local_catalog(tmp_path / "copy").load_table("db.t")
    assert metadata_version(copy.metadata_location) == metadata_version(table.metadata_location) - 2  # type: ignore[operator]
    with pytest.raises(NewerMetadataError, match="a history the catalog does not know"):
        remove_orphan_files(copy, older_than=ZERO, allow_short_grace_period=True)
    assert _files(root) == before
    kinds = [w.kind for w in verify_table(copy).warnings]
    assert kinds.count("newer-metadata") == 2 and "orphan" not in kinds
    assert table.refresh().scan().to_arrow().num_rows == 300


def test_an_interrupted_cleanup_is_undone_by_the_next(tmp_path: Path) -> None:
    table = _table(tmp_path)
    data = next(Path(local_path(table.location()) or "").joinpath("data").glob("*.parquet"))
    aside = data.with_name(f".{data.name}.puffin-orphan")
    data.rename(aside)  # as a cleanup killed between its two steps leaves it
    report = verify_table(table)
    assert not report.ok
    assert [w.path for w in report.warnings if w.kind == "set-aside"] == [str(data)]
    dry = remove_orphan_files(table, dry_run=True)
    assert dry.restored == [str(data)] and aside.exists()  # a dry run changes nothing
    assert remove_orphan_files(table).restored == [str(data)]
    assert data.exists() and not aside.exists() and verify_table(table).ok


def test_a_file_referenced_while_the_cleanup_ran_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cleanup sets its candidates aside, then reads the references again: a commit that
    took one of them meanwhile (here: registered between the two reads) gets it back."""
    from puffin.iceberg.maintenance import orphans

    table = _table(tmp_path)
    root = Path(local_path(table.location()) or "")
    stray = root / "data" / "stray.parquet"
    stray.write_bytes(b"orphan")
    real = orphans._protected
    calls: list[int] = []

    def protected(table: Any, **kwargs: Any) -> set[str]:
        calls.append(1)
        found = real(table, **kwargs)
        return found | ({str(stray)} if len(calls) == 2 else set())

    monkeypatch.setattr(orphans, "_protected", protected)
    result = remove_orphan_files(table, older_than=ZERO, allow_short_grace_period=True)
    assert result.removed == [] and result.kept_referenced == [str(stray)] and stray.exists()
    assert not list(root.rglob("*.puffin-orphan"))


@pytest.mark.parametrize(
    ("v3", "write", "lost"),
    [
        (v3, write, lost)
        for v3 in (True, False)
        for write, lost in (
            ("append", "data/*.parquet"),
            ("append", "metadata/*-m*.avro"),
            ("append", "metadata/snap-*.avro"),
            ("delete", "data/*-deletes.puffin"),
            ("add-files", "data/*.parquet"),
        )
        if v3 or write != "delete"  # row deletes need v3
    ],
)
def test_a_writer_whose_file_vanished_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, v3: bool, write: str, lost: str
) -> None:
    """A file of the commit deleted after its metadata file is written and before the swap
    (a cleanup beside the writer): the commit fails, the table is as it was, and every file
    the write produced is gone."""
    import pyarrow.parquet as pq

    from puffin.iceberg import add_files, delete_rows
    from puffin.iceberg.metadata import metadata_file

    table = _table(tmp_path, v3=v3)
    root = Path(local_path(table.location()) or "")
    registered = root / "data" / "registered.parquet"  # add_files: the user's file
    if write == "add-files":
        pq.write_table(sample_batch(20, start=50_000), registered)
    before = set(_files(root))
    write_metadata = metadata_file.write_table_metadata

    def write_then_lose_a_file(metadata: Any, io: Any, path: str) -> None:
        write_metadata(metadata, io, path)
        for p in root.glob(lost):
            if str(p) not in before or p == registered:
                p.unlink()

    monkeypatch.setattr(metadata_file, "write_table_metadata", write_then_lose_a_file)
    with pytest.raises(WrittenFileGoneError, match="nothing was committed"):
        if write == "append":
            append(table, sample_batch(50, start=10_000), statistics="none")
        elif write == "delete":
            delete_rows(table, "id < 10")
        else:
            add_files(table, [str(registered)])
    assert table.refresh().metadata_location == table.metadata_location
    assert set(_files(root)) == before - {str(registered)}
    assert table.refresh().scan().to_arrow().num_rows == 200


def test_expiry_through_a_copied_warehouse_keeps_what_the_original_reaches(
    tmp_path: Path,
) -> None:
    """Expiring through a stale copy of the catalog: the snapshots it removes are still the
    original's, so nothing they reach may go."""
    from puffin.iceberg import expire_snapshots

    table = append(_table(tmp_path), sample_batch(50, start=10_000), statistics="none")
    shutil.copytree(tmp_path / "wh", tmp_path / "copy")
    table = append(table, sample_batch(50, start=20_000), statistics="none")
    root = Path(local_path(table.location()) or "")
    before = set(_files(root))
    copy = local_catalog(tmp_path / "copy").load_table("db.t")
    result = expire_snapshots(copy, older_than="0s", retain_last=1)
    assert result.expired_snapshot_ids and result.deleted == {}
    assert before <= set(_files(root))  # only the copy's own metadata file is new
    assert verify_table(table.refresh()).problems == []
    assert table.refresh().scan().to_arrow().num_rows == 300
