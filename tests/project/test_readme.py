"""The README's Python examples run as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from _paths import ROOT

README = ROOT / "README.md"


def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile("\n".join(blocks), str(README), "exec"), namespace)
    files = ["deletes.puffin", "example.puffin", "stats.puffin", "warehouse"]
    assert sorted(os.listdir(tmp_path)) == files


def test_readme_opens_with_the_two_commands() -> None:
    head = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[:2] for line in head[:2]] == [["make", "demo"], ["make", "test"]]


def test_readme_says_how_to_install_from_source() -> None:
    import re
    from importlib.metadata import metadata

    text = (ROOT / "README.md").read_text()
    commands = [
        line.split("#")[0].strip()
        for block in re.findall(r"```sh\n(.*?)```", text, re.S)
        for line in block.splitlines()
    ]
    assert "pip install ." in commands
    editable = [c for c in commands if c.startswith("pip install -e ")]
    assert editable == ['pip install -e ".[arrow,iceberg]"']
    assert {"arrow", "iceberg"} <= set(metadata("iceberg-puffin").get_all("Provides-Extra") or [])
