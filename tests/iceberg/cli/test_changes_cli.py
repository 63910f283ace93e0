"""``puffin table changes``: the rows a delete removed, as JSON Lines and Parquet, equal the
model read from the data files alone; a range it cannot read ends in one line and exit 2."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from puffin.cli import main
from puffin.iceberg import create_sample_table, delete_rows, local_catalog, upgrade_to_v3
from puffin.io.locations import local_path

WHERE = "category < 60"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The table, and the snapshot before its delete."""
    wh = tmp_path_factory.mktemp("changes-cli") / "wh"
    table = upgrade_to_v3(create_sample_table(local_catalog(wh), "db.t", rows=3000, files=2))
    start = table.current_snapshot().snapshot_id
    delete_rows(table, WHERE)
    return wh, start


def _deleted_ids(warehouse: Path) -> list[int]:
    """The ids of the rows the delete's filter matches, from the data files alone."""
    table = local_catalog(warehouse, create=False).load_table("db.t")
    paths = sorted(t.file.file_path for t in table.scan().plan_files())
    rows = pa.concat_tables(pq.read_table(local_path(p)) for p in paths)
    return sorted(rows.filter(pc.fill_null(pc.less(rows["category"], 60), False))["id"].to_pylist())


def _changes(warehouse: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["table", "changes", "db.t", "--warehouse", str(warehouse), *args])
    return status, out.getvalue(), err.getvalue()


def test_json_lines_are_the_deleted_rows(warehouse: tuple[Path, int]) -> None:
    wh, start = warehouse
    status, out, err = _changes(wh, "--from", str(start), "--columns", "id,category",
                                "--format", "json")  # fmt: skip
    assert (status, err) == (0, "")
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["id"] for r in rows) == _deleted_ids(wh)
    assert {r["_change_type"] for r in rows} == {"DELETE"}
    assert {r["_change_ordinal"] for r in rows} == {0}
    assert set(rows[0]) == {
        "id", "category", "_change_type", "_change_ordinal", "_commit_snapshot_id", "_row_id",
        "_last_updated_sequence_number", "_file", "_pos",
    }  # fmt: skip


def test_parquet_output_and_net_changes(warehouse: tuple[Path, int], tmp_path: Path) -> None:
    wh, start = warehouse
    out = tmp_path / "changes.parquet"
    status, _, err = _changes(wh, "--from", str(start), "--net", "--where", "category < 10",
                              "--format", "parquet", "-o", str(out))  # fmt: skip
    assert (status, err) == (0, "")
    got = pq.read_table(out)
    expected = [i for i in _deleted_ids(wh)]
    assert set(got["id"].to_pylist()) <= set(expected)
    assert all(c < 10 for c in got["category"].to_pylist())
    assert got.num_rows > 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--from", "12345"], "no such snapshot"),
        (["--from", "nope"], "neither a snapshot id nor a tag"),
        (["--from", "{start}", "--identifier-columns", "nosuch"], "identifier column nosuch"),
        (["--from", "{start}", "--to", "12345"], "no such snapshot"),
    ],
)
def test_mistakes_exit_2_with_one_line(
    warehouse: tuple[Path, int], args: list[str], says: str
) -> None:
    wh, start = warehouse
    status, _, err = _changes(wh, *(a.format(start=start) for a in args))
    assert status == 2 and says in err and err.count("\n") == 1, err
