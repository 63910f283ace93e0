"""The table vectors of deletion vectors a writer got wrong (issue 48), held against
``verify_table``: every table built from such a recipe draws a problem naming what is wrong
and where, every correct table of the tier none. (What a reader must return for each, rows
or a rejection, is the vector's own expectation: ``test_conformance`` runs this library's
scan on every vector.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from puffin.conformance.runner import load_vectors
from puffin.conformance.table_mistakes import STEPS
from puffin.conformance.tables import materialize

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "testdata" / "conformance"
TABLES = [v for v in load_vectors(CORPUS) if v["tier"] == "table"]
#: The steps that commit a vector no correct writer makes.
BROKEN = STEPS - {"partition-by", "add-file"}


def _broken(vector: dict[str, Any]) -> bool:
    return any(step["action"] in BROKEN for step in vector["args"]["steps"])


def _build(vector: dict[str, Any], folder: Path) -> Any:
    from pyiceberg.table import StaticTable

    rows = json.loads((CORPUS / "table" / vector["input"]).read_text(encoding="utf-8"))
    return StaticTable.from_metadata(materialize(vector["args"], rows, folder))


def test_the_tier_holds_each_mistake() -> None:
    names = {v["id"].split("/")[1] for v in TABLES if _broken(v)}
    assert len(names) == 11
    rejected = {v["id"].split("/")[1] for v in TABLES if "error" in v["expected"]}
    assert rejected < names and len(rejected) == 8  # three are read, as the spec says


@pytest.mark.parametrize("vector", TABLES, ids=[v["id"] for v in TABLES])
def test_verify_table_reports_each_mistake_and_nothing_else(
    vector: dict[str, Any], tmp_path: Path
) -> None:
    from puffin.iceberg import verify_table

    report = verify_table(_build(vector, tmp_path))
    if not _broken(vector):
        assert report.problems == []
        return
    assert report.problems, vector["id"]
    for problem in report.problems:  # each names a file of the table (a manifest, a vector)
        assert str(tmp_path) in f"{problem.path} {problem.message}", problem


def test_the_command_line_reports_two_vectors_for_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from puffin.cli import main

    (vector,) = [v for v in TABLES if v["id"] == "table/two-live-dvs-for-one-file"]
    _build(vector, tmp_path)
    assert main(["table", "verify", "db.t", "--warehouse", str(tmp_path / "wh")]) == 1
    out = capsys.readouterr().out
    assert "two live deletion vectors" in out or "two deletion vectors" in out
