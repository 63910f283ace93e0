"""``puffin table scan``: rows out as CSV, JSON Lines and Parquet equal the model; mistakes
end in one line and exit 2; ``--output`` is written whole or not at all."""

from __future__ import annotations

import base64
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from puffin.cli import main
from puffin.iceberg import create_sample_table, delete_rows, local_catalog, upgrade_to_v3
from puffin.io.locations import local_path

WHERE = "category < 60"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("scan-cli") / "wh"
    table = create_sample_table(local_catalog(wh), "db.t", rows=3000, files=2, seed=4)
    delete_rows(upgrade_to_v3(table), WHERE)
    return wh


@pytest.fixture(scope="module")
def model(warehouse: Path) -> pa.Table:
    """The live rows from the data files alone: every row the delete's filter does not match."""
    table = local_catalog(warehouse, create=False).load_table("db.t")
    paths = sorted(t.file.file_path for t in table.scan().plan_files())  # as written
    rows = pa.concat_tables(pq.read_table(local_path(p)) for p in paths)
    keep = pc.invert(pc.fill_null(pc.less(rows["category"], 60), False))
    return rows.filter(keep)


def _puffin(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


def _scan(warehouse: Path, *args: str) -> tuple[int, str, str]:
    return _puffin("table", "scan", "db.t", "--warehouse", str(warehouse), *args)


def test_csv_is_the_model(warehouse: Path, model: pa.Table) -> None:
    status, out, err = _scan(warehouse, "--columns", "id,category,user_name,tag")
    assert (status, err) == (0, "")
    # A null is an empty unquoted field, an empty string a quoted one.
    nulls = pcsv.ConvertOptions(strings_can_be_null=True, quoted_strings_can_be_null=False)
    got = pcsv.read_csv(io.BytesIO(out.encode()), convert_options=nulls)
    assert got.column("id").to_pylist() == model.column("id").to_pylist()
    assert got.column("user_name").to_pylist() == model.column("user_name").to_pylist()
    tags = [None if t is None else base64.b64decode(t) for t in got.column("tag").to_pylist()]
    assert tags == model.column("tag").to_pylist()


def test_csv_and_json_write_timestamps_alike(warehouse: Path, model: pa.Table) -> None:
    """Both say ISO 8601: the same text, ``T`` between date and time, as Python writes it."""
    import csv

    first = ["--columns", "id,event_time", "--limit", "50"]
    _, out, _ = _scan(warehouse, *first)
    _, lines, _ = _scan(warehouse, *first, "--format", "json")
    from_csv = [row["event_time"] for row in csv.DictReader(io.StringIO(out))]
    from_json = [json.loads(line)["event_time"] for line in lines.splitlines()]
    assert from_csv == from_json and len(from_csv) == 50
    expected = [t.isoformat() for t in model.column("event_time").to_pylist()[:50]]
    assert from_json == expected and all("T" in t for t in expected)


def test_json_lines_with_a_filter_and_a_limit(warehouse: Path, model: pa.Table) -> None:
    status, out, _ = _scan(
        warehouse, "--where", "id >= 1000", "--columns", "id,price,day,session_id",
        "--limit", "25", "--format", "json",
    )
    assert status == 0
    rows = [json.loads(line) for line in out.splitlines()]
    want = model.filter(pc.greater_equal(model["id"], 1000)).slice(0, 25).to_pylist()
    assert [r["id"] for r in rows] == [w["id"] for w in want]
    assert [r["price"] for r in rows] == [str(w["price"]) for w in want]
    assert [r["day"] for r in rows] == [w["day"].isoformat() for w in want]
    assert [r["session_id"] for r in rows] == [str(w["session_id"]) for w in want]


def test_parquet_output_is_the_scan(warehouse: Path, model: pa.Table, tmp_path: Path) -> None:
    target = tmp_path / "rows.parquet"
    status, _, err = _scan(warehouse, "--format", "parquet", "--output", str(target))
    assert (status, err) == (0, "")
    got = pq.read_table(target)
    assert got.column("id").to_pylist() == model.column("id").to_pylist()
    assert got.column("amount").equals(model.column("amount"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.parquet"]


def test_lineage_columns_on_request(warehouse: Path) -> None:
    status, out, _ = _scan(warehouse, "--columns", "id,_row_id", "--format", "json")
    assert status == 0
    ids = [json.loads(line)["_row_id"] for line in out.splitlines()]
    assert len(set(ids)) == len(ids) and min(ids) >= 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--where", "category = 9.5"], "not a whole number"),
        (["--columns", "id,nope"], "nope"),
        (["--limit", "-3"], "--limit"),
        (["--snapshot-id", "42"], "no snapshot 42"),
        (["--format", "parquet"], "pass --output"),
    ],
)
def test_mistakes_exit_2_with_one_line(warehouse: Path, args: list[str], words: str) -> None:
    status, out, err = _scan(warehouse, *args)
    assert status in (1, 2), err
    assert out == "" and len(err.strip().splitlines()) == 1 and words in err, err


def test_a_directory_as_output_is_refused_before_reading(warehouse: Path, tmp_path: Path) -> None:
    status, _, err = _scan(warehouse, "--output", str(tmp_path))
    assert status == 2 and "directory" in err


def test_a_failed_write_leaves_no_file(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error while rows are written (here: at the second batch) leaves neither the target
    nor a temporary file."""
    from puffin.iceberg.scan import rows

    real = rows.RowReader.file_batches
    seen = {"n": 0}

    def failing(self: Any, planned: Any) -> Any:
        for batch in real(self, planned):
            seen["n"] += 1
            if seen["n"] == 2:
                raise OSError(28, "No space left on device")
            yield batch

    monkeypatch.setattr(rows.RowReader, "file_batches", failing)
    target = tmp_path / "rows.csv"
    status, _, err = _scan(warehouse, "--output", str(target))
    assert status == 1 and "No space left" in err, err
    assert list(tmp_path.iterdir()) == []
