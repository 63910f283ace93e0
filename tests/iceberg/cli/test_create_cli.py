"""``puffin table create`` and ``puffin table sample --json`` on the command line (issue 59)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow.parquet as pq

from puffin.cli import main
from puffin.iceberg import local_catalog, sample_batch, scan_table
from tests.cli.test_cli import check_shape, documented_shape


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def _files(folder: Path) -> list[str]:
    paths = []
    for name, batch in (("a", sample_batch(60)), ("b", sample_batch(40, start=60))):
        paths.append(str(folder / f"{name}.parquet"))
        pq.write_table(batch, paths[-1])
    return paths


def test_create_makes_a_partitioned_v3_table_from_the_files(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    status, out, err = _run(
        "table", "create", "db.events", *_files(tmp_path), "--partition-by", "days(day)",
        "--partition-by", "bucket(4, id) as shard", "--format-version", "3",
        "--warehouse", wh, "--json",
    )  # fmt: skip
    assert status == 0, err
    doc: dict[str, Any] = json.loads(out)
    check_shape(doc, documented_shape("table-create"))
    assert doc["partition_fields"] == ["day_day", "shard"]
    assert (doc["added_records"], doc["format_version"], doc["first_row_id"]) == (100, 3, 0)
    table = local_catalog(wh).load_table("db.events")
    rows = scan_table(table, selected_fields=("id", "_row_id")).to_arrow()
    assert sorted(rows["id"].to_pylist()) == list(range(100))
    assert sorted(rows["_row_id"].to_pylist()) == list(range(100))


def test_create_says_what_it_made(tmp_path: Path) -> None:
    status, out, err = _run("table", "create", "db.t", *_files(tmp_path), "--warehouse",
                            str(tmp_path / "wh"))  # fmt: skip
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0] == "created db.t (format version 2)"
    assert lines[1].startswith("committed snapshot ") and "100 rows" in lines[1]


@pytest.mark.parametrize(
    ("extra", "status", "words"),
    [
        (["--partition-by", "days(nope)"], 2, "has no such column"),
        (["--partition-by", "weeks(day)"], 2, "unknown partition transform 'weeks'"),
        (["--partition-by", "bucket(id)"], 2, "bucket takes a number"),
        (["--format-version", "4"], 2, "invalid choice"),
        (["missing.parquet"], 1, "missing.parquet: no such file"),
    ],
)
def test_mistakes_make_nothing(tmp_path: Path, extra: list[str], status: int, words: str) -> None:
    wh = tmp_path / "wh"
    got, _, err = _run("table", "create", "db.t", *_files(tmp_path), *extra, "--warehouse",
                       str(wh))  # fmt: skip
    assert got == status and words in err, err
    assert not wh.exists()  # not even the catalog


def test_sample_prints_its_document(tmp_path: Path) -> None:
    status, out, err = _run("table", "sample", "db.s", "--rows", "30", "--files", "2",
                            "--warehouse", str(tmp_path), "--json")  # fmt: skip
    assert status == 0, err
    doc = json.loads(out)
    check_shape(doc, documented_shape("table-sample"))
    assert (doc["rows"], doc["files"], doc["format_version"]) == (30, 2, 2)
    snapshot = local_catalog(tmp_path).load_table("db.s").current_snapshot()
    assert doc["snapshot_id"] == snapshot.snapshot_id
