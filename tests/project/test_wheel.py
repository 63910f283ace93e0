"""The wheel stands alone: installed in a fresh venv, away from the repository, it runs the
conformance kit with the pyiceberg adapter as a checkout does.

The repository's ``tools``, ``tests`` and ``bench`` are not in the wheel; a module that
imports one of them works in a checkout (pytest puts the root on ``sys.path``) and breaks in
the installed package.  tests/project/test_architecture.py forbids such imports in the source; this
test catches what the source rule cannot see, by running the installed code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path
from typing import Any

import pytest

from _paths import ROOT

# The pyiceberg adapter's tiers that finish in seconds (container: its own read-container
# code); the deletion-vector tier takes a minute and a half (test_conformance.py runs it).
TIERS = ("container", "theta", "captured", "table")
TIMEOUT = 120


def _env() -> dict[str, str]:
    """This environment without PYTHONPATH and the like: nothing from the checkout."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv outside the repository with this project's wheel installed (no deps);
    the dependencies come from this interpreter's site-packages through a ``.pth`` line."""
    pytest.importorskip("hatchling", reason="the build backend (extra 'test') is not installed")
    base = tmp_path_factory.mktemp("wheel")
    assert not base.resolve().is_relative_to(ROOT), base
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(base)]
    built = _run([*build, str(ROOT)], base, _env())
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = base.glob("iceberg_puffin-*.whl")
    target = base / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    install = [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)]
    installed = _run(install, base, _env())
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    # A plain path line: the folder joins sys.path, but its own .pth files (the editable
    # install of this checkout among them) are not processed, so puffin comes from the wheel.
    purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        base,
        _env(),
    ).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "_puffin_test_deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    return target


def test_puffin_comes_from_the_wheel(wheel_venv: Path, tmp_path: Path) -> None:
    code = (
        "import puffin, puffin.conformance.runner as r; print(puffin.__file__); "
        "print(r.corpus_dir())"
    )
    result = _run([str(wheel_venv / "bin" / "python"), "-c", code], tmp_path, _env())
    assert result.returncode == 0, result.stderr[-2000:]
    module, corpus = (Path(line).resolve() for line in result.stdout.split())
    assert module.is_relative_to(wheel_venv.resolve()), module
    assert corpus.is_relative_to(wheel_venv.resolve()), corpus
    tools = _run([str(wheel_venv / "bin" / "python"), "-c", "import tools"], tmp_path, _env())
    assert tools.returncode != 0, "the repository's tools/ is importable from the fresh venv"


def _conformance(puffin: Path, cwd: Path) -> dict[str, Any]:
    tiers = [arg for tier in TIERS for arg in ("--tier", tier)]
    result = _run(
        [str(puffin), "conformance", "run", "--adapter", "pyiceberg", "--json", *tiers],
        cwd,
        _env(),
    )
    assert result.stdout.startswith("{"), result.stdout[-2000:] + result.stderr[-2000:]
    report: dict[str, Any] = json.loads(result.stdout)
    # Exit status 1 when a vector fails, the known failures of pyiceberg included.
    assert result.returncode == (1 if report["failed"] else 0), result.stderr[-2000:]
    return report


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    failures = sorted((f["id"], f["known"]) for f in report["failures"])
    return {**{k: v for k, v in report.items() if k != "failures"}, "failures": failures}


@pytest.mark.slow
def test_installed_wheel_runs_the_pyiceberg_adapter(wheel_venv: Path, tmp_path: Path) -> None:
    """``puffin conformance run --adapter pyiceberg`` from the fresh venv, in a folder outside
    the repository: every failure is a known one, and the report is the checkout's."""
    puffin = wheel_venv / "bin" / "puffin"
    helped = _run([str(puffin), "conformance", "run", "--help"], tmp_path, _env())
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "--adapter" in helped.stdout and "--tier" in helped.stdout, helped.stdout
    installed = _conformance(puffin, tmp_path)
    assert installed["total"] > 0 and set(installed["tiers"]) == set(TIERS), installed["tiers"]
    unexpected = [f for f in installed["failures"] if not f["known"]]
    assert installed["unexplained"] == 0 and not unexpected, unexpected[:5]
    checkout = _conformance(Path(sys.executable).parent / "puffin", ROOT)
    assert _summary(installed) == _summary(checkout)
