"""``expire_snapshots``: old snapshots leave the metadata and the files only they reached go,
never a file the table still reaches, never a file outside the table's locations."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import make_catalog
from puffin.errors import UsageError
from puffin.iceberg import (
    compute_table_statistics,
    create_sample_table,
    delete_rows,
    expire_snapshots,
    sample_batch,
    scan_table,
    upgrade_to_v3,
    verify_table,
)
from puffin.iceberg import overwrite as overwrite_rows
from puffin.iceberg.maintenance.guard import TableLocations, normalise
from puffin.iceberg.verify.orphans import find_orphans, reachable_files
from puffin.io.locations import local_path

NOW = datetime.timedelta(0)


def _files(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob("*") if p.is_file()}


def _history(tmp_path: Path) -> tuple[Any, pa.Table]:
    """A v3 table after six commits, and its live rows (read once, to compare with later)."""
    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=3000, files=3, seed=4)
    table = upgrade_to_v3(table)
    for where in ("category < 20", "category < 40", "id < 100"):
        table = delete_rows(table, where).table
    table = overwrite_rows(table, sample_batch(50, start=9000, seed=1), "id >= 2900")
    compute_table_statistics(table, progress=False)
    table = table.refresh()
    return table, scan_table(table).to_arrow().sort_by("id")


def test_expiring_everything_but_the_current_snapshot(tmp_path: Path) -> None:
    table, rows = _history(tmp_path)
    old_snapshots = {s.snapshot_id for s in table.snapshots()}
    everything = reachable_files(table)
    result = expire_snapshots(table, older_than=NOW)
    table = result.table
    current = table.current_snapshot()
    assert current is not None and [s.snapshot_id for s in table.snapshots()] == [
        current.snapshot_id
    ]
    assert set(result.expired_snapshot_ids) == old_snapshots - {current.snapshot_id}
    assert scan_table(table).to_arrow().sort_by("id").equals(rows)
    # Every file only the expired snapshots reached is gone; every file still reached stays.
    live = reachable_files(table, live_only=True)
    gone = everything - live
    assert gone and not any(os.path.exists(local_path(p) or "") for p in gone)
    assert all(os.path.exists(local_path(p) or "") for p in live)
    kinds = result.deleted
    assert {"manifest", "manifest-list", "delete"} <= set(kinds), kinds
    assert result.deleted_files == len(gone) and result.skipped_outside_table == []
    assert verify_table(table).ok, verify_table(table).problems
    assert find_orphans(table) == []
    # The current snapshot's statistics are kept.
    assert [s.snapshot_id for s in table.metadata.statistics] == [current.snapshot_id]
    # A second run has nothing to do.
    again = expire_snapshots(table, older_than=NOW)
    assert again.expired_snapshot_ids == [] and again.deleted == {}


def test_retain_last_branches_and_tags_keep_their_snapshots(tmp_path: Path) -> None:
    from puffin.iceberg import transaction

    table, rows = _history(tmp_path)
    chain = []
    snapshot = table.current_snapshot()
    while snapshot is not None:
        chain.append(snapshot.snapshot_id)
        parent = snapshot.parent_snapshot_id
        snapshot = table.snapshot_by_id(parent) if parent is not None else None
    tagged = chain[-1]  # the oldest
    with transaction(table) as tx:
        tx.manage_snapshots().create_tag(tagged, "first").commit()
    result = expire_snapshots(table, older_than=NOW, retain_last=3)
    kept = {s.snapshot_id for s in result.table.snapshots()}
    assert kept == {*chain[:3], tagged}
    # The oldest snapshot is the sample's first append: one of its three 1,000-row files.
    assert scan_table(result.table, snapshot_id=tagged).to_arrow().num_rows == 1000
    assert scan_table(result.table).to_arrow().sort_by("id").equals(rows)
    assert verify_table(result.table).ok


def test_nothing_younger_than_the_cutoff_expires(tmp_path: Path) -> None:
    table, _ = _history(tmp_path)
    before = table.metadata_location
    result = expire_snapshots(table, older_than=datetime.timedelta(days=1))
    assert result.expired_snapshot_ids == [] and result.table.metadata_location == before


def test_mistakes_are_usage_errors(tmp_path: Path) -> None:
    table, _ = _history(tmp_path)
    with pytest.raises(UsageError, match="retain_last"):
        expire_snapshots(table, retain_last=0)
    with pytest.raises(UsageError, match="timezone"):
        expire_snapshots(table, older_than=datetime.datetime(2020, 1, 1))
    with pytest.raises(UsageError, match="negative"):
        expire_snapshots(table, older_than=datetime.timedelta(days=-1))


# --- the guard: nothing outside the table's locations is deleted ----------------------------


def _v2_with_outside_files(tmp_path: Path, outside: list[Path]) -> Any:
    """A v2 table whose first snapshots reference ``outside`` files (pyiceberg's add_files
    takes any path), all dropped again by a copy-on-write delete: only the expired snapshots
    reach them."""
    from pyiceberg.expressions import AlwaysTrue

    catalog = make_catalog(tmp_path / "wh")
    table = create_sample_table(catalog, "db.t", rows=100, files=1, seed=2)
    for i, path in enumerate(outside):
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            pq.write_table(sample_batch(10, start=1000 + 10 * i, seed=i), path)
    table.add_files([str(p) for p in outside])
    table = catalog.load_table("db.t")
    table.delete(AlwaysTrue())  # copy-on-write: every data file leaves the current snapshot
    return catalog.load_table("db.t")


def test_files_outside_the_table_are_skipped_and_reported(tmp_path: Path) -> None:
    other = tmp_path / "wh" / "db" / "other" / "data" / "theirs.parquet"  # another table
    parent = tmp_path / "precious.parquet"  # a parent folder
    table_data = tmp_path / "wh" / "db" / "t" / "data"
    climbing = tmp_path / "wh" / "db" / "climb.parquet"  # reached through ".."
    target = tmp_path / "elsewhere" / "linked.parquet"  # a symlink out of the table
    target.parent.mkdir(parents=True)
    pq.write_table(sample_batch(10, start=5000, seed=9), target)
    link = table_data / "linked.parquet"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    dotted = table_data / ".." / ".." / "climb.parquet"
    table = _v2_with_outside_files(tmp_path, [other, parent, dotted, link])
    climbing_bytes = climbing.read_bytes()
    outside = {p: p.read_bytes() for p in (other, parent, target)}
    warned = {normalise(w.path) for w in verify_table(table).warnings if w.kind == "outside-table"}
    assert warned == {normalise(str(p)) for p in (other, parent, dotted, target)}
    result = expire_snapshots(table, older_than=NOW)
    for path, data in outside.items():
        assert path.read_bytes() == data, f"{path} was touched"
    assert climbing.read_bytes() == climbing_bytes
    skipped = {normalise(p) for p in result.skipped_outside_table}
    assert skipped == {normalise(str(p)) for p in (other, parent, dotted, target)}
    assert link.is_symlink()  # the link itself is outside too: its target is
    assert result.deleted_files > 0  # the table's own files did go


def test_an_allowed_prefix_is_deleted_from(tmp_path: Path) -> None:
    other = tmp_path / "shared" / "ours.parquet"
    table = _v2_with_outside_files(tmp_path, [other])
    result = expire_snapshots(table, older_than=NOW, allow_prefixes=[str(tmp_path / "shared")])
    assert not other.exists() and result.skipped_outside_table == []


def test_locations_are_compared_normalised(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    roots = TableLocations((normalise(str(tmp_path / "t")), normalise("s3://Bucket/wh/t")))
    assert roots.owns(f"file://{tmp_path}/t//data/x.parquet")
    assert not roots.owns(f"file://{tmp_path}/t/../u/x.parquet")
    assert not roots.owns(f"file://{tmp_path}/t2/x.parquet")  # a prefix, not a folder
    assert roots.owns("s3a://bucket/wh/t/data/x.parquet")
    assert not roots.owns("s3://bucket/wh/t/%2e%2e/u/x.parquet")
    assert not roots.owns("s3://other-bucket/wh/t/data/x.parquet")


def test_the_command_line_prints_what_it_did(tmp_path: Path) -> None:
    import contextlib
    import io
    import json

    from puffin.cli import main
    from tests.cli.test_cli import check_shape, documented_shape

    table, _ = _history(tmp_path)
    warehouse = str(local_path(table.location()) or "").split("/db/")[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(
            ["table", "expire", "db.t", "--warehouse", warehouse, "--older-than", "0s", "--json"]
        )
    assert status == 0
    doc = json.loads(out.getvalue())
    check_shape(doc, documented_shape("table-expire"))
    assert len(doc["expired_snapshot_ids"]) == 6 and doc["deleted"]["manifest-list"]["files"] == 6
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert (
            main(["table", "expire", "db.t", "--warehouse", warehouse, "--retain-last", "0"]) == 2
        )


def test_old_metadata_files_go_when_the_table_says_so(tmp_path: Path) -> None:
    """``write.metadata.delete-after-commit.enabled``: each commit deletes the metadata
    files it drops from the log (beyond ``write.metadata.previous-versions-max``), as Java
    and pyiceberg do; expire, which commits too, leaves exactly the logged ones."""
    from puffin.iceberg import transaction

    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=300))
    with transaction(table) as tx:
        tx.set_properties(
            {
                "write.metadata.delete-after-commit.enabled": "true",
                "write.metadata.previous-versions-max": "2",
            }
        )
    table = table.refresh()
    folder = Path(local_path(table.metadata_location) or "").parent
    for where in ("id < 10", "id < 20", "id < 30", "id < 40"):
        table = delete_rows(table, where).table

    def metadata_files() -> set[str]:
        return {p.name for p in folder.glob("*.metadata.json")}

    logged = {Path(local_path(e.metadata_file) or "").name for e in table.metadata.metadata_log}
    current = Path(local_path(table.metadata_location) or "").name
    assert len(logged) == 2 and metadata_files() == logged | {current}
    result = expire_snapshots(table, older_than=NOW)
    table = result.table
    logged = {Path(local_path(e.metadata_file) or "").name for e in table.metadata.metadata_log}
    current = Path(local_path(table.metadata_location) or "").name
    assert metadata_files() == logged | {current}
    assert scan_table(table).to_arrow().num_rows == 300 - 40
    assert find_orphans(table) == []


def test_failed_commit_cleanup_deletes_only_inside_the_table(tmp_path: Path) -> None:
    """The cleanup of a commit that did not happen takes the same guard: a location it is
    handed outside the table (a neighbour's file, a climb by ``..``) stays."""
    from puffin.iceberg.metadata.manifests import remove_files

    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=10)
    root = Path(local_path(table.location()) or "")
    inside = root / "data" / "written-for-a-failed-commit.parquet"
    inside.write_bytes(b"x")
    neighbour = tmp_path / "db" / "other" / "data.parquet"
    neighbour.parent.mkdir(parents=True)
    neighbour.write_bytes(b"keep me")
    climb = f"{table.location()}/data/../../other/data.parquet"
    remove_files(table, [str(inside), str(neighbour), climb])
    assert not inside.exists()
    assert neighbour.read_bytes() == b"keep me"


def test_a_commit_in_flight_that_loses_while_expiry_reads_it(tmp_path: Path) -> None:
    """Issue 59: beside a writer, expiry read a newer metadata file whose commit had lost its
    race and removed its manifest list ("Failed to open local file ...snap-....avro"), after
    its own commit, and left what it expired undeleted. A commit in flight that lost has its
    manifest list removed first and its metadata file a moment later: expiry reads again
    until the folder settles, then deletes what only the expired snapshots reached."""
    import shutil
    import sqlite3
    import threading

    from puffin.iceberg import append

    table, _ = _history(tmp_path)
    current = table.metadata_location
    other = table.catalog.load_table("db.t")
    lost = append(other, sample_batch(5, start=70_000), statistics="none")
    with sqlite3.connect(tmp_path / "catalog.db") as db:  # the catalog never took it
        db.execute("UPDATE iceberg_tables SET metadata_location = ?", (current,))
    newer = local_path(lost.metadata_location) or ""
    snapshot = lost.current_snapshot()
    assert snapshot is not None
    os.remove(local_path(snapshot.manifest_list) or "")  # what the losing writer removes first
    kept = newer + ".kept"
    shutil.copy(newer, kept)
    timer = threading.Timer(0.3, os.remove, (newer,))  # ... then its metadata file
    timer.start()
    table = table.refresh()
    reached_before = reachable_files(table)
    result = expire_snapshots(table, older_than=NOW, retain_last=1)
    timer.join()
    assert result.expired_snapshot_ids and result.left_undeleted == []
    still = reachable_files(result.table.refresh())
    gone = {local_path(p) for p in reached_before - still}
    assert gone and not any(os.path.exists(p or "") for p in gone)  # expired files deleted
    assert verify_table(result.table).problems == []
