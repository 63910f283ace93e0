"""What the command line tells a user who takes a wrong turn (issues 15 and 23, "rough edges").

A file that is not Puffin (Parquet, ORC, Avro, a bare deletion-vector blob) is named with the
command that reads it; binary is never written to a terminal; a missing extra is one line and
exit 2 in every command; help texts show the output's line format; flags have one spelling.
Each test is written the way the user met the problem, so it fails if the edge comes back.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

import puffin
from _paths import ROOT
from tests.cli.test_cli import ZSTD_FILE, check_shape, cli, documented_shape, err, out


def test_inspect_says_what_a_file_that_is_not_puffin_is(tmp_path: Path) -> None:
    cases = {
        "data.parquet": (b"PAR1" + bytes(40) + b"PAR1", "this is a Parquet file (PAR1 magic)"),
        "data.orc": (b"ORC" + bytes(40), "this is an ORC file (ORC magic)"),
        "manifest.avro": (b"Obj\x01" + bytes(40), "this is an Avro file (Obj magic)"),
    }
    for name, (data, says) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        proc = cli("inspect", path)
        assert proc.returncode == 1 and out(proc) == ""
        assert f"{says}, not a Puffin file" in err(proc), err(proc)
    assert "`puffin ndv " in err(cli("inspect", tmp_path / "data.parquet"))
    plain = tmp_path / "notes.txt"
    plain.write_bytes(b"just some text, nothing recognizable")
    assert "this is" not in err(cli("inspect", plain))


def test_a_bare_dv_blob_gets_the_command_that_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "dv.bin"
    path.write_bytes(puffin.DeletionVector([1, 5, 9]).serialize())
    for command in ("inspect", "dv"):
        proc = cli(command, path)
        assert proc.returncode == 1
        assert "this is a bare deletion-vector-v1 blob" in err(proc), err(proc)
    import re
    import shlex

    hint = re.search(r"`puffin (dv [^`]+)`", err(cli("inspect", path)))
    assert hint is not None
    assert f"--offset 0 --length {path.stat().st_size}" in hint.group(1)
    proc = cli(*shlex.split(hint.group(1)))  # the hint, run as given, works
    assert proc.returncode == 0, err(proc)
    assert out(proc).split() == ["1", "5", "9"]


def test_inspect_json_reports_a_broken_file_as_verify_json_does(tmp_path: Path) -> None:
    import json

    shape = documented_shape("inspect-error")
    truncated = tmp_path / "truncated.puffin"
    truncated.write_bytes(ZSTD_FILE.read_bytes()[:-1])
    parquet = tmp_path / "data.parquet"
    parquet.write_bytes(b"PAR1" + bytes(20) + b"PAR1")
    for path, kind in (
        (truncated, "InvalidFileError"),
        (parquet, "InvalidFileError"),
        (tmp_path / "missing.puffin", "FileNotFoundError"),
    ):
        proc = cli("inspect", "--json", path)
        assert proc.returncode == 1 and err(proc) == "", err(proc)
        report = json.loads(out(proc))
        check_shape(report, shape)
        assert report["file"] == str(path) and report["valid"] is False
        assert report["error"]["type"] == kind
    report = json.loads(out(cli("inspect", "--json", parquet)))
    assert "Parquet" in report["error"]["message"] and report["error"]["offset"] == 0


def _on_terminal(*args: object) -> tuple[int, bytes, str]:
    """Run `puffin ARGS` with stdout on a pseudo-terminal: status, what reached it, stderr."""
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "puffin", *map(str, args)],
            stdout=follower,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=120,
        )
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO once the other side is closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        return proc.returncode, b"".join(chunks), proc.stderr.decode()
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)


def test_cat_refuses_to_write_binary_to_a_terminal(tmp_path: Path) -> None:
    status, shown, stderr = _on_terminal("cat", ZSTD_FILE, "0")
    assert status == 2 and shown == b""
    assert "refusing to write a blob's binary payload to a terminal" in stderr
    assert "--output" in stderr and "Traceback" not in stderr
    target = tmp_path / "blob0.bin"
    status, shown, stderr = _on_terminal("cat", ZSTD_FILE, "0", "--output", target)
    assert status == 0 and shown == b"" and stderr == ""
    assert target.read_bytes() == b"abcdefghi"
    assert cli("cat", ZSTD_FILE, "0").stdout == b"abcdefghi"  # a pipe still gets the bytes


def test_help_texts_show_the_line_format_of_the_output(tmp_path: Path) -> None:
    import re

    help_text = out(cli("verify", "--help"))
    assert "FILE, blob N, offset O, field F: ErrorType: message" in help_text
    assert "FILE: OK (N blobs)" in help_text
    data = bytearray(ZSTD_FILE.read_bytes())
    data[4] ^= 0xFF  # inside blob 0's zstd frame
    broken = tmp_path / "broken.puffin"
    broken.write_bytes(bytes(data))
    lines = out(cli("verify", ZSTD_FILE, broken)).splitlines()
    assert re.fullmatch(rf"{re.escape(str(ZSTD_FILE))}: OK \(\d+ blobs\)", lines[0]), lines
    problem = rf"{re.escape(str(broken))}, blob \d+, offset \d+(, field \S+)?: \w+Error: .+"
    assert re.fullmatch(problem, lines[1]), lines


_BLOCKING_MAIN = """\
import sys
blocked = sys.argv[1]
class Blocker:  # as if the extra that provides `blocked` were not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
from puffin.cli import main
raise SystemExit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize(
    ("blocked", "extra", "args"),
    [
        ("pyarrow", "arrow", ["ndv", "data.parquet"]),
        ("pyiceberg", "iceberg", ["table", "stats", "show", "db.t"]),
        ("pyspark", "spark", ["spark", "stats", "db.t"]),
        ("pyspark", "spark", ["spark", "dv", "db.t", "--where", "x = 1"]),
        ("pyiceberg", "iceberg", ["spark", "migrate-deletes", "db.t"]),
    ],
)
def test_a_missing_extra_exits_2_in_every_command(
    tmp_path: Path, blocked: str, extra: str, args: list[str]
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _BLOCKING_MAIN, blocked, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # an empty folder: nothing is found, nothing may be created
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{blocked} is not installed: pip install 'iceberg-puffin[{extra}]'" in lines[0]


def _parser_for(*words: str) -> argparse.ArgumentParser:
    import puffin.cli

    parser = puffin.cli.build_parser(command=words[0])
    for word in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


@pytest.mark.parametrize(
    "command",
    [
        ("ndv",),
        ("spark", "stats"),
        ("spark", "dv"),
        ("spark", "migrate-deletes"),
        ("table", "stats", "compute"),
    ],
)
def test_progress_flags_have_one_spelling(command: tuple[str, ...]) -> None:
    parser = _parser_for(*command)
    needed = {"ndv": ["f.parquet"], "dv": ["t", "--where", "x"]}.get(command[-1], ["t"])
    assert parser.parse_args([*needed]).progress is None  # auto: only on a terminal
    assert parser.parse_args([*needed, "--progress"]).progress is True
    assert parser.parse_args([*needed, "--no-progress"]).progress is False
    assert "--progress, --no-progress" in parser.format_help()


def test_verify_names_a_parquet_file(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "data.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), path)
    proc = subprocess.run(
        [sys.executable, "-m", "puffin", "verify", str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "this is a Parquet file" in proc.stdout and "puffin ndv" in proc.stdout
