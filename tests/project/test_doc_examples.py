"""Every Python example in docs/*.md runs as written (the README's: ``test_readme.py``).

The examples of one page run in order in one namespace, as a reader would paste them, in a
fresh folder that the page's setup prepares: the tables, files and configuration its text
takes for granted. A block preceded by ``<!-- example: raises NAME -->`` must raise an
exception of that class name (a peer's bug, shown as it happens). A page with Python
examples and no setup here fails, so a new example cannot go unrun.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _paths import ROOT

_DIRECTIVE = re.compile(r"^\s*<!-- example: (.*?) -->\s*$")
_FENCE = re.compile(r"^(\s*)```python\s*$")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    code: str
    raises: str | None


def examples(page: Path) -> list[Example]:
    """The page's ```python blocks (indented ones in lists too), with their directives."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        indent = fence.group(1)
        previous = next((line for line in reversed(lines[:i]) if line.strip()), "")
        directive = _DIRECTIVE.match(previous)
        raises = directive.group(1).removeprefix("raises ").strip() if directive else None
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        code = "\n".join(line.removeprefix(indent) for line in lines[i + 1 : end])
        found.append(Example(page.name, i + 1, code, raises))
        i = end + 1
    return found


def run(example: Example, namespace: dict[str, Any]) -> None:
    code = compile(example.code, f"{example.page}:{example.line}", "exec")
    if example.raises is None:
        exec(code, namespace)
        return
    with pytest.raises(Exception) as caught:
        exec(code, namespace)
    assert type(caught.value).__name__ == example.raises, caught.value


# --- each page's setup ------------------------------------------------------------------------


def _iceberg(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A ./lake with the sample table db.events, a configured catalog "prod", nothing else."""
    from puffin.iceberg import create_sample_table, local_catalog

    monkeypatch.setenv("PYICEBERG_HOME", str(tmp))  # no ~/.pyiceberg.yaml of the machine's
    for key in [k for k in os.environ if k.startswith("PYICEBERG_CATALOG__")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__URI", f"sqlite:///{tmp}/prod.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__WAREHOUSE", f"file://{tmp}/prod")
    monkeypatch.delenv("PUFFIN_WAREHOUSE", raising=False)
    create_sample_table(local_catalog(tmp / "lake"), "db.events", rows=20_000, files=4)
    return {}


def _conformance(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The corpus as the working folder; the adapter example gets two requests on stdin."""
    monkeypatch.chdir(ROOT / "testdata" / "conformance")
    path = "container/one-blob-lz4-plain-footer.puffin"
    requests = [{"op": "hello"}, {"op": "read-container", "path": path}]
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    return {}


def _reliability(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import puffin

    with puffin.create(tmp / "stats.puffin") as writer:
        writer.add_blob(b"x" * 100, type="my-blob", fields=[1], snapshot_id=1, sequence_number=1)
    return {}


SETUPS: dict[str, Callable[[Path, pytest.MonkeyPatch], dict[str, Any]]] = {
    "iceberg.md": _iceberg,
    "conformance.md": _conformance,
    "reliability.md": _reliability,
}
SPARK_PAGES = {"spark.md"}  # run by test_spark_examples_run, with a Spark session


def test_every_page_with_examples_has_a_setup() -> None:
    pages = {p.name for p in (ROOT / "docs").glob("*.md") if examples(p)}
    assert pages <= set(SETUPS) | SPARK_PAGES, sorted(pages - set(SETUPS) - SPARK_PAGES)


@pytest.mark.parametrize("page", sorted(SETUPS))
def test_examples_run(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = SETUPS[page](tmp_path, monkeypatch)
    found = examples(ROOT / "docs" / page)
    assert found
    for example in found:
        run(example, namespace)
    if page == "conformance.md":  # the adapter answered both requests
        answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [a["ok"] for a in answers] == [True, True]
        assert answers[1]["result"]["blobs"][0]["sha256"]


@pytest.mark.slow  # a Spark session: about 30 s
def test_spark_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark: Any) -> None:
    from puffin.iceberg import create_sample_table, local_catalog, upgrade_to_v3

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PUFFIN_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    catalog = local_catalog(tmp_path / "warehouse")
    upgrade_to_v3(create_sample_table(catalog, "db.events", rows=20_000, files=2))
    namespace: dict[str, Any] = {}
    for page in sorted(SPARK_PAGES):
        for example in examples(ROOT / "docs" / page):
            run(example, namespace)


@pytest.fixture(scope="module")
def spark() -> Any:
    """The session the examples make themselves is this one (``local_session`` returns the
    active session when it has the same master)."""
    from puffin.spark import local_session

    session = local_session("local[2]")
    yield session
    session.stop()
