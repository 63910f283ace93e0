"""The driver's environment, packed once and shipped to executors whose Python lacks it.

This library's Python tasks need it, pyiceberg (the table jobs' tasks load the table) and its
compiled dependencies (NumPy, pyarrow, pyroaring, lz4, zstandard) on every executor;
``spark.submit.pyFiles`` cannot carry compiled code.
PySpark's documented ways are a packed environment (conda-pack, venv-pack) or a PEX. We
build a PEX: ``pex --venv-repository`` resolves exactly the library's dependency closure from
the driver's own environment, offline, and builds a wheel of the library even from an
editable checkout; venv-pack refuses editable installs and packs the whole environment
(pyspark included: half a gigabyte here) with its interpreter's symlink. The PEX is one file,
sent with ``spark.files`` as PySpark's documentation does it, and run as the executors'
Python (``spark.pyspark.python``); it still needs a Python of the driver's minor version on
the nodes. ``PEX_INHERIT_PATH=fallback`` lets it see the ``pyspark.zip`` each executor puts
on ``PYTHONPATH``.

The file is cached by content (the Python version and every packed distribution's name,
version and files), so a second run reuses it; building it takes a minute or two.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from puffin.errors import MissingDependencyError, SetupError

__all__ = ["CACHE_ENV", "environment_conf", "packed_environment"]

#: Folder of the packed environments (default ``~/.cache/puffin/spark``).
CACHE_ENV = "PUFFIN_SPARK_ENV_CACHE"
_DISTRIBUTION = "iceberg-puffin"
# Imported by the Python tasks on the executors besides the library's own requirements:
# the table jobs' tasks load the table and read its files with pyiceberg's FileIO.
_TASK_EXTRAS = ("pyarrow", "pyiceberg")


def environment_conf(cache_dir: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Spark settings that ship the driver's environment to the executors (building it
    first if no cached copy matches): pass them as a session's ``conf``."""
    pex = packed_environment(cache_dir)
    return {
        "spark.files": str(pex),
        "spark.pyspark.python": f"./{pex.name}",
        "spark.executorEnv.PEX_INHERIT_PATH": "fallback",
    }


def packed_environment(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The PEX of this library and its dependencies for this Python, built when missing."""
    requirements = _requirements()
    folder = Path(cache_dir or os.environ.get(CACHE_ENV) or _default_cache())
    target = folder / f"puffin-env-{_content_key(requirements)}.pex"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    _build(requirements, target)
    return target


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "puffin" / "spark"


def _requirements() -> list[str]:
    """The library, its requirements for this Python, and what the tasks import besides."""
    try:
        requires = metadata.requires(_DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        raise SetupError(
            f"{_DISTRIBUTION} is not installed as a distribution in {sys.prefix}: install it "
            "(pip install iceberg-puffin) to ship it to the executors"
        ) from None
    names = [_DISTRIBUTION]
    for line in requires:
        if "extra ==" in line:
            continue
        names.append(re.split(r"[\s;<>=!~\[]", line, maxsplit=1)[0])
    names.extend(_TASK_EXTRAS)
    return sorted(set(names), key=str.lower)


def _content_key(requirements: Iterable[str]) -> str:
    """A hash of this Python and each packed distribution's name, version and files."""
    digest = hashlib.sha256(f"{sys.version}|{sys.platform}".encode())
    for name in requirements:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SetupError(
                f"{name} is not installed in {sys.prefix}, and the executors need it"
            ) from None
        digest.update(f"|{name}=={dist.version}".encode())
        if name == _DISTRIBUTION:  # an editable checkout changes without a new version
            for path in sorted(_library_files()):
                digest.update(path.as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _library_files() -> list[Path]:
    from puffin import version  # the package's folder, without loading its facade

    root = Path(version.__file__).resolve().parent
    return [p for p in root.rglob("*.py") if "__pycache__" not in p.parts]


def _build(requirements: list[str], target: Path) -> None:
    try:
        import pex  # noqa: F401
    except ImportError:
        raise MissingDependencyError(
            "shipping the environment needs pex: pip install 'iceberg-puffin[spark]'"
        ) from None
    partial = tempfile.NamedTemporaryFile(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False
    )
    partial.close()
    command = [
        sys.executable, "-m", "pex", "--venv-repository", sys.prefix,
        *requirements, "--output-file", partial.name,
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise SetupError(
                f"could not pack this environment for the executors (pex exit "
                f"{done.returncode}): {lines[-1] if lines else 'no output'}"
            )
        os.replace(partial.name, target)  # a complete file, or none
    finally:
        if os.path.exists(partial.name):
            os.unlink(partial.name)
