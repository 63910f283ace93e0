"""``puffin conformance export``: the corpus as plain files, read back without this library's
runner: every input's size and SHA-256 as its vector records them, the index listing each
vector once, and each built table read by DuckDB 1.4.4 to the vector's expected rows."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from puffin.cli import main
from puffin.conformance.runner import corpus_dir

pytestmark = pytest.mark.peer


def test_export_writes_every_vector_and_builds_the_tables(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    from peers import read_duckdb
    from puffin.conformance.adapters._puffin import PuffinAdapter
    from puffin.conformance.tables import rows_digest

    target = tmp_path / "corpus"
    assert main(["conformance", "export", str(target)]) == 0
    shipped = json.loads((corpus_dir() / "index.json").read_text(encoding="utf-8"))
    index = json.loads((target / "index.json").read_text(encoding="utf-8"))
    assert sorted(index["vectors"]) == sorted(shipped["vectors"])
    assert index["total"] == shipped["total"] == sum(index["tiers"].values())
    tables = 0
    for rel in index["vectors"]:
        vector = json.loads((target / rel).read_text(encoding="utf-8"))
        folder = (target / rel).parent
        for name, fact in vector.get("inputs", {}).items():
            data = (folder / name).read_bytes()
            assert (len(data), hashlib.sha256(data).hexdigest()) == (fact["size"], fact["sha256"])
        if vector["op"] == "scan-table" and "error" in vector["expected"]:
            tables += 1  # a table a writer got wrong: it must still be refused as exported
            metadata = str(target / vector["materialized"]["metadata"])
            columns = [c["name"] for c in vector["args"]["schema"]]
            response = PuffinAdapter().handle(
                {"op": "scan-table", "metadata": metadata, "columns": columns}
            )
            assert response["ok"] is False and response["category"] == vector["expected"]["error"]
        elif vector["op"] == "scan-table":
            tables += 1
            rows = read_duckdb(target / vector["materialized"]["metadata"])
            columns = [c["name"] for c in vector["args"]["schema"]]
            got = [list(r) for r in zip(*(rows[c].to_pylist() for c in columns), strict=True)]
            want = vector["expected"]["result"]
            assert (len(got), rows_digest(got)) == (want["count"], want["rows-sha256"]), rel
    assert tables == index["tiers"]["table"] > 0


def test_export_refuses_a_folder_that_holds_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x").write_text("mine")
    assert main(["conformance", "export", str(tmp_path), "--tier", "theta"]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert main(["conformance", "export", str(tmp_path / "new"), "--tier", "nope"]) == 2
