"""The conformance kit: the committed corpus, the runner, the adapters, the verdicts."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from tools.conformance_gen.generate import build_corpus

import puffin
from _paths import ROOT
from puffin.blobs.standard import java_ndv
from puffin.conformance import TIERS, corpus_dir, load_vectors, run_vectors
from puffin.conformance.adapters import Adapter, make_adapter
from puffin.conformance.adapters._process import ProcessAdapter
from puffin.conformance.adapters._puffin import PuffinAdapter
from puffin.conformance.cli import main
from puffin.conformance.known import KNOWN_FAILURES
from puffin.errors import MissingDependencyError, SetupError

COMMITTED = ROOT / "testdata" / "conformance"
SEEDS = ROOT / "testdata" / "specs"


@pytest.fixture(scope="module")
def vectors() -> list[dict[str, Any]]:
    return load_vectors(COMMITTED)


def test_committed_corpus_equals_a_fresh_generation() -> None:
    fresh = build_corpus()
    committed = {
        str(p.relative_to(COMMITTED)): p.read_bytes() for p in COMMITTED.rglob("*") if p.is_file()
    }
    assert sorted(committed) == sorted(fresh), (
        "run: python -m tools.conformance_gen testdata/conformance"
    )
    changed = [name for name, data in fresh.items() if committed[name] != data]
    assert not changed, f"regenerate the corpus; changed: {changed[:10]}"


def test_testdata_links_the_shipped_corpus() -> None:
    assert COMMITTED.resolve() == corpus_dir()


def test_corpus_size_and_tiers(vectors: list[dict[str, Any]]) -> None:
    assert len(vectors) >= 300
    assert {v["tier"] for v in vectors} == set(TIERS)
    total = sum(p.stat().st_size for p in COMMITTED.rglob("*") if p.is_file())
    assert total < 4 << 20
    for vector in vectors:
        assert vector["spec"]["quote"] and vector["spec"]["document"]
        assert ("error" in vector["expected"]) != ("result" in vector["expected"])
        if vector["tier"] == "captured":
            assert vector["provenance"]["licence"] in {"Apache-2.0", "MIT"}
            assert (ROOT / vector["provenance"]["copied-from"]).is_file()


def test_every_quote_is_in_the_spec(vectors: list[dict[str, Any]]) -> None:
    def squash(text: str) -> str:
        return re.sub(r"\s+", "", text)

    documents = {
        "puffin-spec": squash((SEEDS / "puffin-spec.txt").read_text(encoding="utf-8")),
        "iceberg-table-spec": squash((SEEDS / "iceberg-table-spec.txt").read_text("utf-8")),
        "iceberg-table-spec-v3": squash(
            (SEEDS / "iceberg-table-spec-v3-dv.txt").read_text("utf-8")
        ),
    }
    missing = {
        v["spec"]["quote"]
        for v in vectors
        if squash(v["spec"]["quote"]) not in documents[v["spec"]["document"]]
    }
    assert not missing


def test_puffin_passes_every_vector(vectors: list[dict[str, Any]]) -> None:
    report = run_vectors(PuffinAdapter(), vectors, COMMITTED).to_json()
    assert report["failures"] == []
    assert report["passed"] == report["total"] == len(vectors)


def test_verify_file_agrees_with_every_verdict(vectors: list[dict[str, Any]]) -> None:
    judged = [v for v in vectors if "verdict" in v]
    assert len(judged) > 200
    disagreements = []
    for vector in judged:
        problems = puffin.verify_file(COMMITTED / vector["tier"] / vector["input"])
        got = problems[0].category if problems else "valid"
        if got != vector["verdict"]:
            disagreements.append((vector["id"], vector["verdict"], got))
    assert not disagreements


def test_puffin_verify_command_agrees_with_every_verdict(vectors: list[dict[str, Any]]) -> None:
    from puffin.cli import main as puffin_main

    judged = [v for v in vectors if "verdict" in v]
    paths = [str(COMMITTED / v["tier"] / v["input"]) for v in judged]
    out = io.StringIO()
    with redirect_stdout(out):
        status = puffin_main(["verify", "--json", *paths])
    files = json.loads(out.getvalue())["files"]
    assert status == 1
    assert [f["valid"] for f in files] == [v["verdict"] == "valid" for v in judged]


def test_ndv_boundary_sketch_differs_between_the_formulas_and_both_are_valid() -> None:
    sketch = puffin.ThetaSketch.deserialize((COMMITTED / "theta" / "ndv-boundary.bin").read_bytes())
    java, floor = java_ndv(sketch.num_retained, sketch.theta64), int(sketch.estimate // 1)
    assert (java, floor) == (12, 13)
    for ndv, valid in (("12", True), ("13", True), ("11", False), ("14", False)):
        problems = puffin.verify_file(COMMITTED / "theta" / f"ndv-boundary-{ndv}.puffin")
        assert (problems == []) is valid, ndv


def test_multi_dv_file_gives_each_data_file_its_own_positions() -> None:
    vector = json.loads((COMMITTED / "deletion-vector" / "multi-dv.json").read_text("utf-8"))
    expected = vector["expected"]["result"]["vectors"]
    assert len(expected) == 4
    assert len({json.dumps(v["positions"]) for v in expected.values()}) == 4
    read = puffin.read_deletion_vectors(COMMITTED / "deletion-vector" / "multi-dv.puffin")
    assert {k: v.to_numpy().tolist() for k, v in read.items()} == {
        k: v["positions"] for k, v in expected.items()
    }


class _Liar:
    """Accepts everything with an empty result, or rejects everything."""

    ops = frozenset({"read-container", "read-dv", "read-theta", "write-dv"})

    def __init__(self, accept: bool) -> None:
        self.name = "liar"
        self._accept = accept

    def handle(self, request: Any) -> dict[str, Any]:
        return {"ok": True, "result": {}} if self._accept else {"ok": False, "error": "no"}

    def close(self) -> None:
        pass


@pytest.mark.parametrize("accept", [True, False])
def test_runner_fails_wrong_answers(vectors: list[dict[str, Any]], accept: bool) -> None:
    report = run_vectors(_Liar(accept), vectors, COMMITTED).to_json()
    run = [v for v in vectors if v["op"] in _Liar.ops]
    rejections = sum("error" in v["expected"] for v in run)
    assert report["total"] == len(run)
    assert report["passed"] == (0 if accept else rejections)
    assert report["skipped"] == len(vectors) - len(run)


def test_runner_checks_the_category_a_peer_names(vectors: list[dict[str, Any]]) -> None:
    class WrongCategory(_Liar):
        def handle(self, request: Any) -> dict[str, Any]:
            return {"ok": False, "error": "x", "category": "io"}

    report = run_vectors(WrongCategory(False), vectors, COMMITTED).to_json()
    assert report["passed"] == 0


def _run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(["conformance", *args])
    return status, out.getvalue()


def test_cli_run_json_counts() -> None:
    status, text = _run_cli("run", "--tier", "captured", "--tier", "writer", "--json")
    report = json.loads(text)
    assert status == 0
    assert report["total"] == report["passed"] > 50
    assert set(report["tiers"]) == {"captured", "writer"}


def test_generator_is_deterministic_and_refuses_foreign_directories(tmp_path: Path) -> None:
    from tools.conformance_gen.__main__ import main as generate

    assert generate([str(tmp_path / "corpus")]) == 0
    assert (tmp_path / "corpus" / "index.json").read_bytes() == (
        COMMITTED / "index.json"
    ).read_bytes()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        generate([str(tmp_path / "other")])
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"
    with pytest.raises(SystemExit) as exit_info:  # not a command of the installed package
        _run_cli("generate", str(tmp_path / "x"))
    assert exit_info.value.code == 2


def test_impl_protocol_over_a_subprocess() -> None:
    command = [sys.executable, "-m", "puffin.conformance.adapters._stdio", "pyroaring"]
    adapter = ProcessAdapter(command)
    try:
        assert adapter.ops == {"read-dv", "read-bitmap", "write-dv"}
        report = run_vectors(adapter, load_vectors(COMMITTED, ["captured"]), COMMITTED)
    finally:
        adapter.close()
    doc = report.to_json()
    assert doc["total"] == 27
    assert [f["id"] for f in doc["failures"]] == ["captured/croaring-64maphighvals"]


def test_a_crashing_impl_fails_one_vector_at_a_time(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text(
        "import json, sys, os\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    if r['op'] == 'hello':\n"
        "        print(json.dumps({'ok': True, 'result': {'name': 'c', 'ops': ['read-theta']}}),"
        " flush=True)\n"
        "    else:\n"
        "        os._exit(3)\n"
    )
    adapter = ProcessAdapter([sys.executable, str(script)])
    try:
        theta = [v for v in load_vectors(COMMITTED, ["theta"]) if v["op"] == "read-theta"]
        report = run_vectors(adapter, theta[:3], COMMITTED).to_json()
    finally:
        adapter.close()
    assert report["total"] == 3
    assert all("exited" in f["reason"] for f in report["failures"])


def _peer_failures(name: str, vectors: list[dict[str, Any]]) -> dict[str, Any]:
    adapter = make_adapter(name)
    try:
        return run_vectors(adapter, vectors, COMMITTED, known_as=name).to_json()
    finally:
        adapter.close()


def _assert_known(name: str, report: dict[str, Any]) -> None:
    """Every failure is explained, and every explanation still applies to some failure."""
    assert report["unexplained"] == 0, [f for f in report["failures"] if not f["known"]]
    used = {f["known"] for f in report["failures"]}
    assert used == {why for _, why in KNOWN_FAILURES[name]}


@pytest.mark.parametrize("name", ["datasketches", "pyroaring"])
def test_fast_peers_fail_exactly_the_known_vectors(
    name: str, vectors: list[dict[str, Any]]
) -> None:
    report = _peer_failures(name, vectors)
    assert report["total"] > 100
    _assert_known(name, report)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pyiceberg", "java"])
def test_slow_peers_fail_exactly_the_known_vectors(
    name: str, vectors: list[dict[str, Any]]
) -> None:
    if name == "pyiceberg":
        pytest.importorskip("pyiceberg")
    else:
        pytest.importorskip("pyspark")
        if shutil.which("javac") is None:
            pytest.skip("no JDK")
    report = _peer_failures(name, vectors)
    assert report["total"] > 200
    _assert_known(name, report)


# --- the table tier ---------------------------------------------------------------------------

TABLE_PEERS = ["iceberg-rust", "duckdb", "duckdb-1.5.5", "sail"]


def _table_adapter(name: str) -> Adapter:
    """A table peer, or a skip (a failure under ``make test``) when it cannot run here."""
    try:
        return make_adapter(name)
    except (SetupError, MissingDependencyError) as exc:
        if os.environ.get("PUFFIN_REQUIRE_PEERS") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.mark.parametrize("name", TABLE_PEERS)
def test_table_peers_fail_exactly_the_known_vectors(
    name: str, vectors: list[dict[str, Any]]
) -> None:
    """One adapter (one process; for Sail one server on 127.0.0.1) for the whole tier."""
    table = [v for v in vectors if v["tier"] == "table"]
    adapter = _table_adapter(name)
    try:
        report = run_vectors(adapter, table, COMMITTED, known_as=name).to_json()
    finally:
        adapter.close()
    assert report["total"] == len(table) >= 8
    _assert_known(name, report)


@pytest.mark.peer
@pytest.mark.java
def test_iceberg_java_fails_exactly_the_known_vectors(vectors: list[dict[str, Any]]) -> None:
    """Iceberg Java 1.10.2's own Puffin and DV code (``.venv-java``) over every vector it can
    express; each failure is a documented leniency or gap of Java's (docs/conformance.md)."""
    adapter = _table_adapter("iceberg-java")
    try:
        report = run_vectors(adapter, vectors, COMMITTED, known_as="iceberg-java").to_json()
    finally:
        adapter.close()
    assert report["total"] > 300
    _assert_known("iceberg-java", report)


def test_duckdb15_vector_has_the_layout_it_names(tmp_path: Path) -> None:
    """Three vectors in one Puffin file, the largest first; each file gets its own positions."""
    from puffin.conformance.tables import materialize
    from puffin.iceberg import read_table_deletion_vectors
    from puffin.iceberg.catalog.catalogs import local_catalog

    vector = json.loads((COMMITTED / "table" / "dvs-in-one-puffin-larger-first.json").read_text())
    rows = json.loads((COMMITTED / "table" / vector["input"]).read_text(encoding="utf-8"))
    materialize(vector["args"], rows, tmp_path)
    (path,) = tmp_path.rglob("*.puffin")
    with puffin.open(path) as reader:
        assert [b.length for b in reader.blobs] == [1374, 39, 46]
    table = local_catalog(tmp_path / "wh").load_table("db.t")
    counts = sorted(len(dv) for dv in read_table_deletion_vectors(table).values())
    assert counts == [3, 410, 667]


def test_a_missing_side_venv_is_a_setup_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Side venvs are named by environment variables, never found by a checkout's layout."""
    monkeypatch.setenv("PUFFIN_SAIL_PYTHON", str(tmp_path / "nothing"))
    with pytest.raises(SetupError, match="PUFFIN_SAIL_PYTHON"):
        make_adapter("sail")
    monkeypatch.delenv("PUFFIN_DUCKDB15_PYTHON", raising=False)
    (tmp_path / ".venv-duckdb15" / "bin").mkdir(parents=True)
    (tmp_path / ".venv-duckdb15" / "bin" / "python").write_text("")
    monkeypatch.chdir(tmp_path)  # a venv in the working folder is not looked for
    with pytest.raises(SetupError, match="set PUFFIN_DUCKDB15_PYTHON"):
        make_adapter("duckdb-1.5.5")


def test_runner_compares_the_rows_of_a_scan(vectors: list[dict[str, Any]]) -> None:
    """A wrong row fails a table vector; rows in any order, or the digest itself, pass."""
    from puffin.conformance.runner import check
    from puffin.conformance.tables import expected_rows

    vector = next(v for v in vectors if v["id"] == "table/one-dv")
    rows = json.loads((COMMITTED / "table" / vector["input"]).read_text(encoding="utf-8"))
    want = expected_rows(rows["files"], vector["args"]["steps"])
    assert check(vector, {"ok": True, "result": {"rows": want[::-1]}}) is None
    assert check(vector, {"ok": True, "result": vector["expected"]["result"]}) is None
    changed = [[want[0][0], "other"], *want[1:]]
    assert "rows-sha256" in str(check(vector, {"ok": True, "result": {"rows": changed}}))
    assert "count" in str(check(vector, {"ok": True, "result": {"rows": want[1:]}}))
