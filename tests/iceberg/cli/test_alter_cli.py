"""``puffin table alter``: every kind of change in one commit, read back by pyiceberg (and by
Iceberg Java in ``test_java_reads_an_altered_table``); mistakes exit 2 with one line and
commit nothing."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from peers.pyiceberg_scan import read_pyiceberg, static_table
from puffin.cli import main
from puffin.iceberg import create_sample_table, local_catalog, upgrade_to_v3
from puffin.iceberg.cli.alter import parse_partition_field
from puffin.iceberg.metadata.versions import metadata_version
from puffin.io.locations import local_path
from tests.cli.test_cli import check_shape, documented_shape


def _alter(warehouse: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["table", "alter", "db.t", "--warehouse", str(warehouse), *args])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def warehouse(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    table = create_sample_table(local_catalog(tmp_path), "db.t", rows=300, files=2)
    if request.param == 3:
        upgrade_to_v3(table)
    return tmp_path


def _metadata(warehouse: Path) -> str:
    return local_path(local_catalog(warehouse).load_table("db.t").metadata_location) or ""


def test_every_change_in_one_commit(warehouse: Path) -> None:
    before = _metadata(warehouse)
    rows = read_pyiceberg(before).sort_by("id")
    snapshot = static_table(before).current_snapshot()
    assert snapshot is not None
    status, out, err = _alter(
        warehouse,
        "--add-column", "note", "string", "--rename-column", "amount", "total",
        "--promote-column", "category", "long", "--drop-column", "tag",
        "--make-optional", "id", "--set-property", "owner", "data-eng",
        "--add-partition-field", "bucket(8, id) as shard", "--add-partition-field", "days(day)",
        "--create-tag", "v1", "--create-branch", f"audit@{snapshot.snapshot_id}",
        "--json",
    )  # fmt: skip
    assert (status, err) == (0, ""), err
    doc = json.loads(out)
    check_shape(doc, documented_shape("table-alter"))
    after = _metadata(warehouse)
    assert metadata_version(after) == (metadata_version(before) or 0) + 1  # one commit
    table = static_table(after)
    schema = table.schema()
    assert schema.find_field("note").field_type.__class__.__name__ == "StringType"
    assert str(schema.find_field("category").field_type) == "long"
    assert not schema.find_field("id").required
    assert "tag" not in [f.name for f in schema.fields] and schema.find_field("total")
    assert table.properties["owner"] == "data-eng"
    fields = {f.name: str(f.transform) for f in table.spec().fields}
    assert fields == {"shard": "bucket[8]", "day_day": "day"}
    refs = table.metadata.refs
    assert refs["v1"].snapshot_ref_type.value == "tag"
    assert refs["audit"].snapshot_ref_type.value == "branch"
    assert {refs["v1"].snapshot_id, refs["audit"].snapshot_id} == {snapshot.snapshot_id}
    assert len(table.metadata.snapshots) == len(static_table(before).metadata.snapshots)
    got = read_pyiceberg(after).sort_by("id")  # same rows, under the new names
    assert got.column("total").to_pylist() == rows.column("amount").to_pylist()
    assert got.column("category").to_pylist() == rows.column("category").to_pylist()
    assert set(got.column("note").to_pylist()) == {None}
    assert doc["changes"][0] == "added column note (string)" and len(doc["changes"]) == 10

    status, _, err = _alter(warehouse, "--drop-tag", "v1", "--drop-branch", "audit")
    assert status == 0, err
    assert set(static_table(_metadata(warehouse)).metadata.refs) == {"main"}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "nothing to change"),
        (["--drop-column", "nope"], "Could not find field with name nope"),
        (["--add-column", "x", "strin"], "'strin' is not an Iceberg type"),
        (["--promote-column", "user_name", "long"], "Cannot change column type"),
        (["--drop-tag", "nope"], "cannot remove tag 'nope': there is no ref 'nope'"),
        (["--create-tag", "t@12"], "has no snapshot 12"),
        (["--create-tag", "t@x"], "give a snapshot id (digits) after @"),
        (["--create-tag", "t@"], "give a snapshot id (digits) after @"),
        (["--drop-branch", "main"], "cannot remove the main branch"),
        (["--drop-tag", "main"], "'main' is a branch"),
        (["--create-tag", "main"], "a branch named 'main' exists already"),
        (["--create-branch", "main"], "a branch named 'main' exists already"),
        (["--create-tag", "x", "--create-branch", "x"], "a tag named 'x' exists already"),
        (["--set-property", "format-version", "1"], "a format version never goes down"),
        (["--set-property", "format-version", "4"], "changed by an upgrade"),
        (["--set-property", "current-snapshot-id", "1"], "reserved by Iceberg"),
        (["--unset-property", "uuid"], "reserved by Iceberg"),
        (["--set-property", "write.delete.mode", "bogus"], "copy-on-write, merge-on-read"),
        (["--set-property", "write.delete.granularity", "row"], "one of file, partition"),
        (["--set-property", "write.wap.enabled", "yes"], "true or false"),
        (["--set-property", "write.target-file-size-bytes", "1e6"], "a whole number above 0"),
        (["--set-property", "commit.retry.num-retries", "-1"], "from 0 to 2147483647"),
        (["--set-property", "write.metadata.metrics.default", "truncate(0)"], "truncate(N)"),
        (["--set-property", "write.metadata.metrics.column.nope", "full"], "no column 'nope'"),
        (["--unset-property", "never-set"], "has no property 'never-set' to unset"),
        (["--add-partition-field", "foo(day)"], "unknown partition transform 'foo'"),
        (["--add-partition-field", "bucket(id)"], "bucket takes a number"),
        (["--rename-column", "id"], "expected 2 arguments"),
    ],
)
def test_mistakes_exit_2_and_commit_nothing(
    warehouse: Path, args: list[str], words: str
) -> None:
    before = _metadata(warehouse)
    valid = ["--set-property", "a", "b"] if args else []  # not committed either
    status, out, err = _alter(warehouse, *valid, *args)
    assert status == 2 and words.lower() in err.lower(), err
    assert _metadata(warehouse) == before and out == ""
    if args and args[0] != "--rename-column":
        assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("category", ("category", "identity", None)),
        ("category as cat", ("category", "identity", "cat")),
        ("identity(category)", ("category", "identity", None)),
        ("days(day)", ("day", "day", None)),
        ("DAY(day) AS d", ("day", "day", "d")),
        ("months(day)", ("day", "month", None)),
        ("bucket(16, id)", ("id", "bucket[16]", None)),
        ("bucket[16](id) as shard", ("id", "bucket[16]", "shard")),
        ("truncate(4, user_name)", ("user_name", "truncate[4]", None)),
        ("a.b", ("a.b", "identity", None)),
    ],
)
def test_partition_fields_read_as_spark_writes_them(text: str, parsed: Any) -> None:
    assert parse_partition_field(text) == parsed


def test_java_reads_an_altered_table(tmp_path: Path, java: Any) -> None:
    from peers.iceberg_java import read_java

    table = upgrade_to_v3(create_sample_table(local_catalog(tmp_path), "db.t", rows=300))
    before = read_pyiceberg(local_path(table.metadata_location) or "").sort_by("id")
    status, _, err = _alter(
        tmp_path, "--rename-column", "amount", "total", "--promote-column", "category", "long",
        "--add-column", "note", "string", "--add-partition-field", "bucket(4, id)",
    )  # fmt: skip
    assert status == 0, err
    rows = read_java(java, _metadata(tmp_path)).sort_by("id")
    assert rows.column("total").to_pylist() == before.column("amount").to_pylist()
    assert rows.column("category").to_pylist() == before.column("category").to_pylist()
    assert set(rows.column("note").to_pylist()) == {None}

