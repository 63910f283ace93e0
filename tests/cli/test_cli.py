"""The `puffin` command line, run as a subprocess: container-level commands and behaviour.

Expected values come from testdata/README.md (what Java and iceberg-go wrote), not from our
own output.  The `--json` shapes are read from docs/cli.md, so the documentation is what is
tested.  Budget: about 15 s (each subprocess costs 0.1-0.5 s).
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import subprocess
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import pytest

import puffin
import puffin.cli
import puffin.cli._plugins
from _paths import ROOT
from puffin import errors

DOCS = ROOT / "docs" / "cli.md"
JAVA = ROOT / "testdata" / "iceberg-java" / "puffin"
ZSTD_FILE = JAVA / "sample-metric-data-compressed-zstd.bin"
PLAIN_FILE = JAVA / "sample-metric-data-uncompressed.bin"
EMPTY_FILE = JAVA / "empty-puffin-uncompressed.bin"
SECOND_PAYLOAD = (
    "some blob \u0000 binary data \U0001f92f that is not very very very very very very long, is it?"
).encode()
ANSI = re.compile(r"\x1b\[")


# --- running the tool ----------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def cli(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run `python -m puffin ARGS` and return the finished process (bytes output)."""
    return subprocess.run(
        [sys.executable, "-m", "puffin", *map(str, args)],
        capture_output=True,
        env=env or _env(),
        cwd=ROOT,
        timeout=120,
    )


def out(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stdout.decode("utf-8")


def err(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stderr.decode("utf-8")


def ok(proc: subprocess.CompletedProcess[bytes]) -> str:
    assert proc.returncode == 0, err(proc)
    assert err(proc) == ""
    return out(proc)


def json_of(proc: subprocess.CompletedProcess[bytes]) -> Any:
    return json.loads(proc.stdout)


# --- the documented JSON shapes ----------------------------------------------------------------


def documented_shape(name: str) -> Any:
    """The shape block that follows `<!-- shape: NAME -->` in docs/cli.md."""
    text = DOCS.read_text("utf-8")
    match = re.search(rf"<!-- shape: {name} -->\s*```json\n(.*?)```", text, re.S)
    assert match, f"docs/cli.md has no shape block {name!r}"
    return json.loads(match.group(1))


_SCALARS: dict[str, Any] = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check_shape(value: Any, shape: Any, path: str = "$") -> None:
    """Assert that `value` has `shape` (notation: docs/cli.md, section inspect --json)."""
    if isinstance(shape, str):
        if shape.startswith("="):
            assert value == shape[1:], f"{path}: expected {shape[1:]!r}, got {value!r}"
            return
        kinds = shape.split("|")
        assert all(k in _SCALARS for k in kinds), f"bad shape {shape!r}"
        assert any(_SCALARS[k](value) for k in kinds), f"{path}: {value!r} is not {shape}"
    elif isinstance(shape, bool):
        raise AssertionError(f"bad shape {shape!r}")
    elif isinstance(shape, (int, float)):
        assert value == shape and not isinstance(value, bool), f"{path}: expected {shape!r}"
    elif isinstance(shape, list):
        assert len(shape) == 1, f"bad shape {shape!r}"
        assert isinstance(value, list), f"{path}: expected a list, got {value!r}"
        for i, item in enumerate(value):
            check_shape(item, shape[0], f"{path}[{i}]")
    elif isinstance(shape, dict) and set(shape) == {"oneOf"}:
        failures = []
        for option in shape["oneOf"]:
            try:
                check_shape(value, option, path)
                return
            except AssertionError as exc:
                failures.append(str(exc))
        raise AssertionError(f"{path}: matches no alternative: {failures}")
    elif isinstance(shape, dict) and set(shape) == {"*"}:
        assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
        for key, item in value.items():
            check_shape(item, shape["*"], f"{path}.{key}")
    elif isinstance(shape, dict):
        assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
        assert set(value) == set(shape), f"{path}: keys {sorted(value)} != {sorted(shape)}"
        for key, item in shape.items():
            check_shape(value[key], item, f"{path}.{key}")
    else:
        raise AssertionError(f"bad shape {shape!r}")


def test_shape_checker_rejects_what_it_should() -> None:
    shape = documented_shape("verify")
    good = {
        "schema_version": 1,
        "command": "verify",
        "valid": True,
        "files": [{"file": "f", "valid": True, "blob_count": 0, "problems": []}],
    }
    check_shape(good, shape)
    bad_variants = [
        {**good, "schema_version": 2},
        {**good, "command": "inspect"},
        {**good, "valid": 1},
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "files"},
        {**good, "files": [{"file": "f", "valid": True, "blob_count": "0", "problems": []}]},
        {**good, "files": [{"file": "f", "valid": True, "blob_count": True, "problems": []}]},
    ]
    for bad in bad_variants:
        with pytest.raises(AssertionError):
            check_shape(bad, shape)
    for name in ("inspect", "verify", "dv", "ndv"):
        assert documented_shape(name)["schema_version"] == 1


# --- help, usage, errors ---------------------------------------------------------------------


def test_help_lists_every_command_with_examples() -> None:
    text = ok(cli("--help"))
    for command in ("inspect", "verify", "cat", "dv", "ndv"):
        assert re.search(rf"^\s+{command}\s", text, re.M), command
    # Each subcommand's help has examples; checked in-process (argparse exits 0 on --help).
    for command in ("inspect", "verify", "cat", "dv", "ndv"):
        with pytest.raises(SystemExit) as exc:
            puffin.cli.build_parser(load_plugins=False).parse_args([command, "--help"])
        assert exc.value.code == 0
    parser = puffin.cli.build_parser(load_plugins=False)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("inspect", "verify", "cat", "dv", "ndv"):
        assert "examples:" in sub.choices[command].format_help(), command
    assert out(cli("--version")).strip() == f"puffin {puffin.__version__}"


def test_help_and_container_commands_stay_light() -> None:
    """`puffin --help` (plugins included) and `inspect` of a plain file import no heavy module."""
    heavy = ("numpy", "pyarrow", "pyiceberg", "pyspark", "pandas")
    script = (
        "import sys\n"
        "from puffin.cli import main\n"
        "status = main(sys.argv[1:])\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)\n"
        "raise SystemExit(status)\n"
    )
    for args in (["--help"], ["inspect", str(ZSTD_FILE)], ["verify", str(ZSTD_FILE)]):
        proc = subprocess.run(
            [sys.executable, "-c", script, *args], capture_output=True, env=_env(), cwd=ROOT
        )
        assert proc.returncode == 0, err(proc)
        assert err(proc).splitlines()[-1] == "[]", (args, err(proc))


def test_usage_errors_exit_2_without_traceback() -> None:
    cases = [
        ((), "usage: puffin"),  # no command: help on stderr
        (("inspect",), "the following arguments are required: FILE"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
        (("inspect", ZSTD_FILE, "--positions", "some"), "expected a count or 'all'"),
        (("cat", ZSTD_FILE, "2"), "blob index 2 is out of range"),
        (("dv", ZSTD_FILE, "--offset", "4"), "--offset and --length go together"),
        (("dv", ZSTD_FILE, "--record-count", "4"), "--record-count needs --offset"),
    ]
    for args, message in cases:
        proc = cli(*args)
        assert proc.returncode == 2, (args, err(proc))
        assert message in err(proc), (args, err(proc))
        assert "Traceback" not in err(proc)
        assert out(proc) == ""


def test_invalid_and_missing_files_exit_1_with_one_line(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.puffin"
    truncated.write_bytes(ZSTD_FILE.read_bytes()[:-1])
    missing = tmp_path / "missing.puffin"
    for command in ("inspect", "cat", "dv"):
        extra = ("0",) if command == "cat" else ()
        proc = cli(command, truncated, *extra)
        assert proc.returncode == 1
        assert out(proc) == ""
        assert err(proc).startswith(f"puffin {command}: error: {truncated}: magic mismatch")
        assert err(proc).count("\n") == 1 and "Traceback" not in err(proc)
    proc = cli("inspect", missing)
    assert proc.returncode == 1
    assert err(proc) == f"puffin inspect: error: {missing}: No such file or directory\n"
    # --debug (before or after the command) adds the traceback.
    for args in (("--debug", "inspect", truncated), ("inspect", truncated, "--debug")):
        proc = cli(*args)
        assert proc.returncode == 1
        assert "Traceback (most recent call last)" in err(proc)
        assert "InvalidFileError" in err(proc)


# --- inspect -----------------------------------------------------------------------------------


def test_inspect_java_zstd_file_human() -> None:
    text = ok(cli("inspect", ZSTD_FILE))
    assert not ANSI.search(text)  # stdout is a pipe: no colour
    lines = text.splitlines()
    assert lines[0] == str(ZSTD_FILE.relative_to(ROOT)) or lines[0].endswith(ZSTD_FILE.name)
    expect = [
        r"file size\s+417 bytes",
        r"footer size\s+314 bytes \(payload 298, uncompressed\)",
        r"properties\s+created-by = Test 1234",
        r"blobs\s+2",
        r"blob 0\s+some-blob",
        r"blob 1\s+some-other-blob",
    ]
    for pattern in expect:
        assert re.search(pattern, text), pattern
    blob0 = text.split("blob 0")[1].split("blob 1")[0]
    for pattern in (
        r"fields\s+\[1\]",
        r"snapshot-id\s+2\n",
        r"sequence-number\s+1\n",
        r"offset\s+4\n",
        r"length\s+22 bytes",
        r"codec\s+zstd",
    ):
        assert re.search(pattern, blob0), pattern
    blob1 = text.split("blob 1")[1]
    for pattern in (r"fields\s+\[2\]", r"offset\s+26\n", r"length\s+77 bytes"):
        assert re.search(pattern, blob1), pattern


def test_inspect_json_golden_files() -> None:
    shape = documented_shape("inspect")
    # (file, size, footer size, [(type, fields, snapshot, sequence, offset, length, codec)])
    golden: list[tuple[Path, int, int, dict[str, str], list[tuple[Any, ...]]]] = [
        (EMPTY_FILE, 32, 28, {}, []),
        (
            PLAIN_FILE,
            355,
            259,
            {"created-by": "Test 1234"},
            [("some-blob", [1], 2, 1, 4, 9, None), ("some-other-blob", [2], 2, 1, 13, 83, None)],
        ),
        (
            ZSTD_FILE,
            417,
            314,
            {"created-by": "Test 1234"},
            [
                ("some-blob", [1], 2, 1, 4, 22, "zstd"),
                ("some-other-blob", [2], 2, 1, 26, 77, "zstd"),
            ],
        ),
    ]
    for path, size, footer, props, blobs in golden:
        report = json_of(cli("inspect", "--json", path))
        check_shape(report, shape)
        assert report["file"] == str(path)
        assert (report["file_size"], report["footer_size"]) == (size, footer)
        assert report["footer_payload_size"] == footer - 16
        assert report["footer_compressed"] is False
        assert report["properties"] == props
        assert report["valid"] is True and report["blob_count"] == len(blobs)
        got = [
            (
                b["type"],
                b["fields"],
                b["snapshot_id"],
                b["sequence_number"],
                b["offset"],
                b["length"],
                b["compression_codec"],
            )
            for b in report["blobs"]
        ]
        assert got == blobs
        assert [b["index"] for b in report["blobs"]] == list(range(len(blobs)))


def test_inspect_escapes_control_characters(tmp_path: Path) -> None:
    path = tmp_path / "evil.puffin"
    with puffin.create(path, created_by="evil\x1b[2J\x07") as writer:
        writer.add_blob(b"x", type="t\x1b]0;title\x07", fields=[1], properties={"k": "v\x1b[31m"})
    text = ok(cli("inspect", path))
    assert "\x1b" not in text and "\x07" not in text
    assert "evil\\x1b[2J\\x07" in text and "v\\x1b[31m" in text
    report = json_of(cli("inspect", "--json", path))
    assert report["properties"]["created-by"] == "evil\x1b[2J\x07"  # JSON keeps the data


def test_colour_only_on_a_terminal_without_no_color() -> None:
    def on_tty(env: dict[str, str]) -> str:
        leader, follower = pty.openpty()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "puffin", "inspect", str(ZSTD_FILE)],
                stdout=follower,
                stderr=subprocess.PIPE,
                env=env,
                cwd=ROOT,
                timeout=60,
            )
            assert proc.returncode == 0, proc.stderr
            os.close(follower)
            follower = -1
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO once the terminal's other side is closed
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8")
        finally:
            os.close(leader)
            if follower >= 0:
                os.close(follower)

    assert ANSI.search(on_tty(_env()))
    assert not ANSI.search(on_tty(_env(NO_COLOR="1")))
    assert not ANSI.search(on_tty(_env(TERM="dumb")))
    assert ANSI.search(out(cli("--color", "always", "inspect", ZSTD_FILE)))
    assert ANSI.search(out(cli("inspect", ZSTD_FILE, "--color", "always")))


# --- verify ------------------------------------------------------------------------------------


def _corrupt(src: Path, dst: Path, offset: int, xor: int = 0x01) -> Path:
    data = bytearray(src.read_bytes())
    data[offset] ^= xor
    dst.write_bytes(bytes(data))
    return dst


def test_verify_golden_and_malformed_container_files(tmp_path: Path) -> None:
    proc = cli("verify", EMPTY_FILE, PLAIN_FILE, ZSTD_FILE)
    assert ok(proc).splitlines() == [
        f"{EMPTY_FILE}: OK (0 blobs)",
        f"{PLAIN_FILE}: OK (2 blobs)",
        f"{ZSTD_FILE}: OK (2 blobs)",
        "3 of 3 files valid",
    ]
    assert ok(cli("verify", "-q", ZSTD_FILE)) == ""

    bad_magic = _corrupt(ZSTD_FILE, tmp_path / "bad-magic.puffin", 0)
    # A byte inside blob 1's zstd frame (offset 26, length 77): the frame's checksum fails.
    bad_frame = _corrupt(ZSTD_FILE, tmp_path / "bad-frame.puffin", 26 + 40, 0xFF)
    # Blob 0's frame header: its frame magic (offset 4) is no longer zstd's.
    bad_header = _corrupt(bad_frame, tmp_path / "bad-both.puffin", 4, 0xFF)
    bad_json = tmp_path / "bad-json.puffin"
    bad_json.write_bytes(ZSTD_FILE.read_bytes().replace(b'"offset":26', b'"offset":[]'))
    proc = cli("verify", ZSTD_FILE, bad_magic, bad_frame, bad_header, bad_json)
    assert proc.returncode == 1 and err(proc) == ""
    lines = out(proc).splitlines()
    assert lines[0] == f"{ZSTD_FILE}: OK (2 blobs)"
    assert lines[1].startswith(
        f"{bad_magic}, offset 0: InvalidFileError: magic mismatch at start of file"
    )
    assert lines[2].startswith(f"{bad_frame}, blob 1, offset 26: CodecError: ")
    assert lines[3].startswith(f"{bad_header}, blob 0, offset 4: CodecError: ")
    assert lines[4].startswith(f"{bad_header}, blob 1, offset 26: CodecError: ")
    assert lines[5].startswith(
        f"{bad_json}, blob 1, field offset: InvalidFooterError: 'offset' must be a long"
    )
    assert lines[6] == "1 of 5 files valid"
    assert len(lines) == 7

    report = json_of(cli("verify", "--json", ZSTD_FILE, bad_header, tmp_path / "missing"))
    check_shape(report, documented_shape("verify"))
    assert report["valid"] is False
    assert [f["valid"] for f in report["files"]] == [True, False, False]
    problems = report["files"][1]["problems"]
    assert [(p["type"], p["blob_index"], p["offset"]) for p in problems] == [
        ("CodecError", 0, 4),
        ("CodecError", 1, 26),
    ]
    assert report["files"][2]["blob_count"] is None
    assert report["files"][2]["problems"][0]["type"] == "FileNotFoundError"
    valid = json_of(cli("verify", "--json", ZSTD_FILE))
    check_shape(valid, documented_shape("verify"))
    assert valid["valid"] is True


# --- cat ---------------------------------------------------------------------------------------


def test_cat_writes_payload_bytes(tmp_path: Path) -> None:
    raw_zstd = ZSTD_FILE.read_bytes()
    cases = [
        ((PLAIN_FILE, "0"), b"abcdefghi"),
        ((PLAIN_FILE, "1"), SECOND_PAYLOAD),
        ((ZSTD_FILE, "0"), b"abcdefghi"),
        ((ZSTD_FILE, "-1"), SECOND_PAYLOAD),
        ((ZSTD_FILE, "1", "--raw"), raw_zstd[26 : 26 + 77]),
    ]
    for args, expected in cases:
        proc = cli("cat", *args)
        assert proc.returncode == 0 and proc.stderr == b""
        assert proc.stdout == expected, args
    proc = cli("cat", _corrupt(ZSTD_FILE, tmp_path / "bad.puffin", 26 + 40, 0xFF), "1")
    assert proc.returncode == 1 and proc.stdout == b""
    assert err(proc).startswith("puffin cat: error: ") and "CodecError" not in err(proc)
    assert "blob 1" in err(proc)


# --- the plugin hook ---------------------------------------------------------------------------


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Plugins as entry points of the group ``puffin.cli``, backed by modules in tmp_path."""
    (tmp_path / "cli_plugin_ok.py").write_text(
        "import puffin.cli\n"
        "def register_cli(subparsers):\n"
        "    p = subparsers.add_parser('hello', help='say hello',"
        " parents=[puffin.cli.common_options()])\n"
        "    p.add_argument('name')\n"
        "    p.set_defaults(func=lambda args: print(f'hello {args.name} {args.debug}') or 7)\n"
    )
    (tmp_path / "cli_plugin_other.py").write_text(
        "def register_cli(subparsers):\n    subparsers.add_parser('other', help='other things')\n"
    )
    (tmp_path / "cli_plugin_broken.py").write_text("raise RuntimeError('boom')\n")
    (tmp_path / "cli_plugin_extra.py").write_text("import not_installed_package_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [
        EntryPoint(name, f"{module}:register_cli", "puffin.cli")
        for name, module in [
            ("broken", "cli_plugin_broken"),
            ("needs", "cli_plugin_extra"),
            ("hello", "cli_plugin_ok"),
            ("other", "cli_plugin_other"),
        ]
    ]

    def entry_points(*, group: str) -> list[EntryPoint]:
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)


def test_plugins_are_entry_points_loaded_by_command_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_entry_points(monkeypatch, tmp_path)
    for module in ("cli_plugin_ok", "cli_plugin_other"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    assert puffin.cli.main(["--color", "never", "hello", "world", "--debug"]) == 7
    captured = capsys.readouterr()
    assert captured.out == "hello world True\n" and captured.err == ""
    # Only the plugin named like the command word was imported.
    assert "cli_plugin_ok" in sys.modules and "cli_plugin_other" not in sys.modules
    # Built-in commands load no plugin at all.
    assert puffin.cli.main(["verify", "-q", str(ZSTD_FILE)]) == 0
    assert capsys.readouterr().err == ""
    # The top-level help loads every plugin; broken ones are one warning line each.
    assert puffin.cli.main(["--help"]) == 0
    captured = capsys.readouterr()
    assert "say hello" in captured.out and "other things" in captured.out
    assert "could not load the broken commands: RuntimeError: boom" in captured.err
    assert "pip install 'iceberg-puffin[needs]'" in captured.err
    assert "Traceback" not in captured.err


def test_a_plugin_whose_extra_is_missing_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_entry_points(monkeypatch, tmp_path)
    assert puffin.cli.main(["needs", "x"]) == 2
    lines = capsys.readouterr().err.splitlines()
    error = [line for line in lines if "error" in line]
    assert error == [
        "puffin needs: error: the needs commands need not_installed_package_xyz, which is not "
        "installed: pip install 'iceberg-puffin[needs]'"
    ]


def test_the_integrations_are_declared_as_entry_points() -> None:
    declared = {ep.name: ep.value for ep in entry_points(group="puffin.cli")}
    assert declared["iceberg"] == "puffin.iceberg.cli:register_cli"
    assert declared["spark"] == "puffin.spark.cli:register_cli"


def test_exit_status_follows_the_error_tree() -> None:
    cases: list[tuple[BaseException, int]] = [
        (puffin.PuffinError("x"), 1),
        (errors.UsageError("x"), 2),
        (errors.ColumnNotFoundError("x"), 2),
        (errors.MissingDependencyError("x"), 2),
        (errors.JavaNotFoundError("x"), 2),
        (errors.TableNotFoundError("x"), 1),
        (errors.CommitConflictError("x"), 1),
        (puffin.cli.InputError("x"), 1),
        (FileNotFoundError(2, "No such file"), 1),
        (KeyboardInterrupt(), 130),
        (BrokenPipeError(), 141),
        (ValueError("x"), 3),
        (RuntimeError("x"), 3),
    ]
    for exc, status in cases:
        assert puffin.cli.exit_status(exc) == status, exc


def test_require_names_the_extra_of_a_missing_dependency() -> None:
    from puffin.support.deps import require

    assert require("json", "arrow").__name__ == "json"
    with pytest.raises(errors.MissingDependencyError) as info:
        require("not_installed_package_xyz.sub", "arrow")
    assert str(info.value) == (
        "not_installed_package_xyz is not installed: pip install 'iceberg-puffin[arrow]'"
    )
    assert puffin.cli.exit_status(info.value) == 2
