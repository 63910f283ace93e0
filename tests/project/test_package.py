"""The package as users meet it: light import, public names, typing marker, lint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import puffin
from _paths import ROOT

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
    """Every error class lives in puffin.errors under one of the two documented bases, but
    the interrupt that came after a commit, which stays a ``KeyboardInterrupt`` (so that no
    ``except Exception`` swallows the user's Ctrl-C)."""
    import puffin.errors

    for name in puffin.errors.__all__:
        obj = getattr(puffin.errors, name)
        if obj is puffin.errors.InterruptedAfterCommit:
            assert issubclass(obj, KeyboardInterrupt) and not issubclass(obj, Exception)
            continue
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


# --- An installed wheel (issue 14: the conformance kit runs without the repository) ---

CORPUS = ROOT / "src" / "puffin" / "conformance" / "corpus"


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """This project's wheel, built offline, and the folder it is installed into (--target)."""
    pytest.importorskip("hatchling", reason="the build backend (extra 'test') is not installed")
    base = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(base)]
    subprocess.run([*build, str(ROOT)], capture_output=True, text=True, check=True, timeout=120)
    (wheel,) = base.glob("iceberg_puffin-*.whl")
    target = base / "site"
    install = [*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)]
    subprocess.run(install, capture_output=True, text=True, check=True, timeout=120)
    return wheel, target


def test_wheel_ships_the_conformance_corpus(installed_wheel: tuple[Path, Path]) -> None:
    import zipfile

    wheel, _ = installed_wheel
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    prefix = "puffin/conformance/corpus/"
    shipped = {n[len(prefix) :] for n in names if n.startswith(prefix) and not n.endswith("/")}
    on_disk = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    assert "index.json" in shipped
    assert any(n.endswith(".puffin") for n in shipped)
    assert on_disk <= shipped, sorted(on_disk - shipped)[:10]
    assert "puffin/py.typed" in names
    # The corpus generator is a repository tool (tools/conformance_gen), not shipped.
    code = [n for n in names if n.endswith(".py")]
    assert "puffin/conformance/runner.py" in code
    generator = [n for n in code if "gen" in n.rsplit("/", 1)[-1] or n.startswith("tools/")]
    assert generator == [], generator


@pytest.mark.parametrize("tier", ["container", "deletion-vector"])
def test_installed_wheel_runs_the_conformance_kit(
    installed_wheel: tuple[Path, Path], tmp_path: Path, tier: str
) -> None:
    """``puffin conformance run`` from the installed wheel, in a folder outside the repository."""
    import json
    import os

    _, target = installed_wheel
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(target)
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import puffin, puffin.conformance.runner as r; print(puffin.__file__);"
            " print(r.corpus_dir())",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    module, corpus = (Path(line).resolve() for line in where.stdout.split())
    assert module.is_relative_to(target.resolve()), module
    assert corpus.is_relative_to(target.resolve()), corpus
    for command in ([sys.executable, "-m", "puffin"], [str(target / "bin" / "puffin")]):
        result = subprocess.run(
            [*command, "conformance", "run", "--json", "--tier", tier],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        report = json.loads(result.stdout)
        assert report["total"] == report["passed"] > 0, report
        assert report["tiers"] == {tier: {"total": report["total"], "passed": report["passed"]}}


_USER_SCRIPT = '''\
"""What a user writes after reading the README."""
import numpy as np

import puffin

with puffin.create("example.puffin", created_by="my-app 1.0") as writer:
    writer.add_blob(b"hello", type="my-blob", fields=[1], snapshot_id=7, sequence_number=3)
size: int | None = writer.file_size

with puffin.open("example.puffin") as reader:
    for blob in reader.blobs:
        data: bytes = reader.read_blob(blob)

entries = puffin.write_deletion_vectors("deletes.puffin", {"s3://b/f1.parquet": [1, 3, 5]})
dv = puffin.read_deletion_vector(
    "deletes.puffin", entries[0].content_offset, entries[0].content_size_in_bytes
)
merged: puffin.DeletionVector = dv | puffin.DeletionVector([7])

sketch = puffin.ThetaSketch.from_values(np.arange(1000), "long")
union: puffin.ThetaSketch = puffin.ThetaSketch.union([sketch, sketch])
estimate: float = union.estimate + sketch.union(sketch).estimate
'''


def test_a_readme_style_user_script_passes_mypy_strict(tmp_path: Path) -> None:
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    if mypy is None:
        pytest.skip("mypy is not installed next to this interpreter")
    script = tmp_path / "user_script.py"
    script.write_text(_USER_SCRIPT)
    proc = subprocess.run(
        [mypy, "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
