"""The package as users meet it: light import, public names, typing marker, lint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import puffin

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "pyarrow", "pyiceberg", "pyspark", "pandas", "datasketches")


def test_import_puffin_stays_light() -> None:
    code = (
        "import sys, puffin\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import puffin loaded {out.stdout.strip()}"


def test_every_public_name_resolves() -> None:
    for name in puffin.__all__:
        assert getattr(puffin, name) is not None, name
    assert set(puffin.__all__) <= set(dir(puffin))
    with pytest.raises(AttributeError):
        puffin.no_such_name  # noqa: B018


def test_errors_share_one_base() -> None:
    for name in puffin.__all__:
        obj = getattr(puffin, name)
        if isinstance(obj, type) and name.endswith("Error"):
            assert issubclass(obj, puffin.PuffinError) and issubclass(obj, ValueError), name


def test_py_typed_ships() -> None:
    assert (ROOT / "src" / "puffin" / "py.typed").exists()


def test_version_matches_pyproject() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{puffin.__version__}"' in text


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        pytest.skip(f"{name} is not installed next to this interpreter")
    return path


def test_ruff_is_clean() -> None:
    result = subprocess.run(
        [_tool("ruff"), "check", "src", "tests", "bench", "fuzz"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    result = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
