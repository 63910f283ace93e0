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
    """Every error class lives in puffin.errors under one of the two documented bases."""
    import puffin.errors

    for name in puffin.errors.__all__:
        obj = getattr(puffin.errors, name)
        assert issubclass(obj, (puffin.PuffinError, puffin.IntegrationError)), name
        if issubclass(obj, puffin.PuffinError):
            assert issubclass(obj, ValueError), name
    for name in puffin.__all__:
        obj = getattr(puffin, name)
        if isinstance(obj, type) and name.endswith("Error"):
            assert obj is getattr(puffin.errors, name), name


def test_with_context_fills_only_what_is_missing() -> None:
    exc = puffin.ThetaSketchError("bad seed hash", field="seed")
    assert exc.with_context(blob_index=3, offset=10, field="other") is exc
    assert (exc.blob_index, exc.offset, exc.field) == (3, 10, "seed")
    assert str(exc) == "bad seed hash (blob 3, field 'seed', offset 10)"
    exc.with_context(offset=99, prefix="footer")
    assert exc.offset == 10 and str(exc).startswith("footer: bad seed hash (")


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
