"""Every ``puffin`` command that reads a local file answers at once when the path is not a
regular file: a FIFO (which would block the open), a directory, ``/dev/zero`` (which would
read forever).  The refusal is the library's own check (``puffin.io.local.check_regular``);
the commands name the path in their one error line, or in their ``--json`` document.

Each command runs as a subprocess with a timeout, so a hang fails the test instead of
blocking the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 20
GOOD = "iceberg-java/puffin/sample-metric-data-compressed-zstd.bin"

# (id, arguments with FILE for the special path); each exits 1 or 2 with one line on stderr.
COMMANDS = [
    ("inspect", ["inspect", "FILE"]),
    ("verify", ["verify", "FILE"]),
    ("verify-q", ["verify", "-q", "FILE"]),
    ("cat", ["cat", "FILE", "0"]),
    ("cat-o", ["cat", "FILE", "0", "-o", "OUT"]),
    ("dv", ["dv", "FILE"]),
    ("dv-offset", ["dv", "FILE", "--offset", "0", "--length", "10"]),
    ("dv-format-json", ["dv", "--format", "json", "FILE"]),
    ("ndv", ["ndv", "FILE"]),
    ("ndv-json", ["ndv", "--json", "FILE"]),
    ("ndv-o", ["ndv", "FILE", "-o", "OUT"]),
]
# The commands whose --json prints an error document on stdout (docs/cli.md), not a line.
JSON_DOCUMENTS = [
    ("inspect-json", ["inspect", "--json", "FILE"]),
    ("verify-json", ["verify", "--json", "FILE"]),
]
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
KINDS = {"fifo": "a FIFO", "directory": "a directory", "dev-zero": "a character device"}


def _puffin(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PUFFIN_DEBUG")}
    return subprocess.run(
        [sys.executable, "-m", "puffin", "--color", "never", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,  # a hang fails here (TimeoutExpired), the child is killed
    )


@pytest.fixture(params=list(KINDS))
def special(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """(path, what the refusal calls it) of a FIFO, a directory or /dev/zero."""
    kind = str(request.param)
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        path = tmp_path / "stats.puffin"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path / "metadata.puffin"
        path.mkdir()
    else:
        path = Path("/dev/zero")
        if not path.exists():
            pytest.skip("no /dev/zero on this platform")
    return str(path), KINDS[kind]


def _fill(args: list[str], file: str, out: Path) -> list[str]:
    return [file if a == "FILE" else str(out) if a == "OUT" else a for a in args]


def _needs_pyarrow(args: list[str]) -> None:
    if args[0] == "ndv":
        pytest.importorskip("pyarrow", reason="ndv needs the arrow extra")


@pytest.mark.parametrize("args", [a for _, a in COMMANDS], ids=[i for i, _ in COMMANDS])
def test_command_refuses_a_special_file_at_once(
    args: list[str], special: tuple[str, str], tmp_path: Path
) -> None:
    _needs_pyarrow(args)
    path, kind = special
    out = tmp_path / "out.bin"
    result = _puffin(_fill(args, path, out), tmp_path)
    assert result.returncode in (1, 2), (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"puffin {args[0]}: error: {path}: "), lines[0]
    assert f"{kind}, not a regular file" in lines[0], lines[0]
    if "--json" in args:  # the error document every --json command prints when it fails
        doc = json.loads(result.stdout)
        assert doc["ok"] is False and f"{kind}, not a regular file" in doc["error"]["message"]
    else:
        assert result.stdout == "", result.stdout
    assert not out.exists()


@pytest.mark.parametrize(
    "args", [a for _, a in JSON_DOCUMENTS], ids=[i for i, _ in JSON_DOCUMENTS]
)
def test_json_reports_a_special_file_in_its_document(
    args: list[str], special: tuple[str, str], tmp_path: Path
) -> None:
    path, kind = special
    result = _puffin(_fill(args, path, tmp_path / "out"), tmp_path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["command"] == args[0] and doc["valid"] is False
    if args[0] == "inspect":
        assert doc["file"] == path
        error = doc["error"]
    else:
        (entry,) = doc["files"]
        assert entry["file"] == path and entry["valid"] is False
        (error,) = entry["problems"]
    assert error["type"] == "InvalidFileError"
    assert f"{kind}, not a regular file" in error["message"], error


@needs_fifo
def test_verify_checks_the_other_files(testdata: Path, tmp_path: Path) -> None:
    """A special file among others: its error line on stderr, the rest verified as usual."""
    fifo = tmp_path / "pipe.puffin"
    os.mkfifo(fifo)
    good = str(testdata / GOOD)
    result = _puffin(["verify", good, str(fifo)], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines() == [f"{good}: OK (2 blobs)", "1 of 2 files valid"]
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"puffin verify: error: {fifo}: a FIFO, not a regular file"), line


@needs_fifo
def test_file_url_of_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.puffin"
    os.mkfifo(fifo)
    url = f"file://{fifo}"
    for args in (["inspect", url], ["verify", url], ["dv", url]):
        result = _puffin(args, tmp_path)
        assert result.returncode == 1, result.stdout + result.stderr
        (line,) = result.stderr.splitlines()
        assert f"{url}: a FIFO, not a regular file" in line, line


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    pa = pytest.importorskip("pyarrow", reason="ndv needs the arrow extra")
    import pyarrow.parquet as pq

    path = tmp_path / "part-0.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3]}), path)
    return path


@pytest.mark.parametrize("use_url", [False, True], ids=["path", "file-url"])
def test_a_directory_as_output_is_a_usage_error(
    testdata: Path, parquet: Path, tmp_path: Path, use_url: bool
) -> None:
    """Refused before any input is read, naming the directory."""
    folder = tmp_path / "out"
    folder.mkdir()
    target = f"file://{folder}" if use_url else str(folder)
    commands = {
        "cat": ["cat", str(testdata / GOOD), "0", "-o", target],
        "ndv": ["ndv", str(parquet), "--output", target],
    }
    for name, args in commands.items():
        result = _puffin(args, tmp_path)
        assert result.returncode == 2, result.stdout + result.stderr
        (line,) = result.stderr.splitlines()
        assert line == (
            f"puffin {name}: error: {target}: a directory, not a file: --output names the "
            "file to write"
        ), line
        assert list(folder.iterdir()) == []


@needs_fifo
def test_an_output_check_comes_before_reading_a_special_input(tmp_path: Path) -> None:
    """With both wrong, the output is named first: nothing is read to find out."""
    fifo = tmp_path / "pipe.puffin"
    os.mkfifo(fifo)
    folder = tmp_path / "out"
    folder.mkdir()
    result = _puffin(["cat", str(fifo), "0", "-o", str(folder)], tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"{folder}: a directory, not a file" in result.stderr
