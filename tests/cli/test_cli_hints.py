"""The rough edges a new user hits in the first hour (issue 15, "Why"): one test per item.

Each test is written the way the user met the problem, so it fails if the edge comes back.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import puffin
from _paths import ROOT
from puffin.errors import MissingDependencyError

# --- the library API -------------------------------------------------------------------------


def test_theta_union_takes_a_list_on_the_class_and_others_on_an_instance() -> None:
    a = puffin.ThetaSketch.from_values(np.arange(0, 100), "long")
    b = puffin.ThetaSketch.from_values(np.arange(50, 200), "long")
    both = puffin.ThetaSketch.from_values(np.arange(0, 200), "long")
    assert puffin.ThetaSketch.union([a, b]) == both
    assert puffin.ThetaSketch.union(iter([a, b])) == both
    assert puffin.ThetaSketch.union(a, b) == both
    assert puffin.ThetaSketch.union([a], [b.serialize()]) == both
    assert a.union(b) == both and a.union([b]) == both
    assert puffin.ThetaSketch.union([]).is_empty
    assert puffin.ThetaSketch.union([a, b], lg_k=5).num_retained == 32
    with pytest.raises(TypeError, match="cannot union a int"):
        puffin.ThetaSketch.union([a, 42])


def test_deletion_vectors_combine_with_set_operators() -> None:
    far = 3 << 32
    a = puffin.DeletionVector([1, 2, 3, far])
    b = puffin.DeletionVector(range(3, 6))
    assert list(a | b) == [1, 2, 3, 4, 5, far]
    assert list(a & b) == [3]
    assert list(a - b) == [1, 2, far]
    assert list(a ^ b) == [1, 2, 4, 5, far]
    assert a | b == b | a and a != b
    assert list(a) == [1, 2, 3, far] and list(b) == [3, 4, 5]  # operands unchanged
    # The result serializes as the same positions built anew (Java's key count).
    assert (a - puffin.DeletionVector([far])).serialize() == puffin.DeletionVector(
        [1, 2, 3]
    ).serialize()
    assert (a | b).serialize() == puffin.DeletionVector([1, 2, 3, 4, 5, far]).serialize()
    with pytest.raises(TypeError):
        a | [1]  # type: ignore[operator]


def test_to_arrow_without_pyarrow_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` now fails
    with pytest.raises(MissingDependencyError, match=r"pip install 'iceberg-puffin\[arrow\]'"):
        puffin.DeletionVector([1, 2]).to_arrow()


def test_a_text_mode_file_object_says_open_it_in_binary_mode(tmp_path: Path) -> None:
    path = tmp_path / "f.puffin"
    with puffin.create(path) as writer:
        writer.add_blob(b"x", type="t", fields=[1], snapshot_id=1, sequence_number=1)
    with open(path) as text, pytest.raises(TypeError, match=r"open the file in binary mode"):
        puffin.open(text)

    class TextReader:  # a file-like object that is not an io.TextIOBase but returns str
        def __init__(self) -> None:
            self._data = path.read_bytes().decode("latin-1")
            self._at = 0

        def seek(self, offset: int, whence: int = 0) -> int:
            self._at = len(self._data) + offset if whence == 2 else offset
            return self._at

        def tell(self) -> int:
            return self._at

        def read(self, n: int = -1) -> str:
            chunk = self._data[self._at : self._at + n]
            self._at += len(chunk)
            return chunk

    with pytest.raises(TypeError, match=r"open the file in binary mode"):
        puffin.open(TextReader())


def test_write_errors_name_the_target_not_a_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "out.puffin"
    attempts = (
        lambda: puffin.create(target).__enter__(),
        lambda: puffin.write_deletion_vectors(target, {"s3://b/f.parquet": [1]}),
    )
    for attempt in attempts:
        with pytest.raises(FileNotFoundError) as info:
            attempt()
        assert info.value.filename == str(target)
        assert ".tmp" not in str(info.value)
    assert not (tmp_path / "no").exists()


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


# --- the command line ------------------------------------------------------------------------

from tests.cli.test_cli import ZSTD_FILE, check_shape, cli, documented_shape, err, out  # noqa: E402


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
    import os
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


# --- Spark: the JVM's output goes to a log, a progress line shows the stages ------------------


def test_the_jvms_output_goes_to_the_log(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from puffin.spark._java import jvm_output_to

    log = tmp_path / "spark.log"
    noisy = "import sys, time; print('jvm noise', file=sys.stderr, flush=True); "
    with jvm_output_to(str(log)):  # a child started here keeps the log as its stderr
        child = subprocess.Popen(
            [sys.executable, "-c", noisy + "time.sleep(0.3); print('later', file=sys.stderr)"]
        )
    print("ours", file=sys.stderr)
    assert child.wait(timeout=60) == 0
    captured = capfd.readouterr()
    assert captured.err == "ours\n"
    assert log.read_text() == "jvm noise\nlater\n"


class _Stage:
    def __init__(self, stage_id: int, tasks: int, completed: int) -> None:
        self.stageId, self.numTasks, self.numCompletedTasks = stage_id, tasks, completed


def test_the_job_progress_shows_phases_then_stage_tasks() -> None:
    import io

    from puffin.spark._progress import JobProgress

    stream = io.StringIO()
    with JobProgress(enabled=True, stream=stream) as progress:
        progress.phase("starting Spark")
        assert stream.getvalue().endswith("0/1 tasks  0 tasks/s  starting Spark\x1b[K")
        progress.record([])  # no stage yet: the phase stays
        assert stream.getvalue().endswith("starting Spark\x1b[K")
        progress.record([_Stage(0, 4, 4), _Stage(1, 4, 1)])
        assert progress.bar.done == 5 and progress.bar.total == 8
        assert progress.bar.note == "stage 1"
        progress.record([_Stage(1, 4, 4)])
        assert progress.bar.done == 8 and progress.bar.note == "2 stages done"
    assert stream.getvalue().endswith("\r\x1b[K")  # erased before the results are printed


def test_the_job_progress_polls_the_status_tracker() -> None:
    import io
    import time

    from puffin.spark._progress import JobProgress

    class Tracker:
        def getActiveStageIds(self) -> list[int]:
            return [7]

        def getStageInfo(self, stage_id: int) -> _Stage:
            return _Stage(stage_id, 10, 3)

    class Context:
        def statusTracker(self) -> Tracker:
            return Tracker()

    class Session:
        sparkContext = Context()

    with JobProgress(enabled=True, stream=io.StringIO()) as progress:
        with progress.watching(Session()):
            deadline = time.monotonic() + 10
            while progress.bar.done == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
        assert (progress.bar.done, progress.bar.total, progress.bar.note) == (3, 10, "stage 7")


@pytest.mark.slow
def test_spark_stats_keeps_the_jvm_quiet_and_shows_progress(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        pytest.skip("no Java")
    from puffin.iceberg import create_sample_table, local_catalog

    create_sample_table(local_catalog(str(tmp_path / "wh")), "db.t", rows=2000, files=2)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "puffin",
            "spark",
            "stats",
            "db.t",
            "--warehouse",
            str(tmp_path / "wh"),
            "--no-commit",
            "--progress",
            "--master",
            "local[1]",
        ],
        capture_output=True,  # bytes: text mode would turn the progress line's \r into \n
        cwd=tmp_path,
        timeout=600,
    )
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "wrote file://" in proc.stdout.decode()
    drawn = [part for part in stderr.split("\r") if part.strip("\x1b[K")]
    assert drawn and all(part.startswith("spark: [") for part in drawn), stderr
    assert "starting Spark" in stderr and "tasks" in stderr
    assert "WARNING" not in stderr and "log level" not in stderr


# --- the README --------------------------------------------------------------------------------


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


# --- Iceberg tables ----------------------------------------------------------------------------


@pytest.fixture
def sample_table(tmp_path: Path) -> tuple[Path, Any]:
    pytest.importorskip("pyiceberg")
    from puffin.iceberg import create_sample_table, local_catalog

    warehouse = tmp_path / "wh"
    table = create_sample_table(local_catalog(str(warehouse)), "db.t", rows=2000, files=1)
    return warehouse, table


def test_table_commands_in_an_empty_folder_leave_nothing_behind(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    empty = tmp_path / "empty"
    empty.mkdir()
    for args in (
        ["table", "stats", "compute", "db.t"],
        ["table", "stats", "show", "db.t"],
        ["table", "verify", "db.t"],
        ["table", "stats", "compute", "db.t", "--warehouse", str(empty / "nowhere")],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "puffin", *args],
            capture_output=True,
            text=True,
            cwd=empty,
            env={k: v for k, v in os.environ.items() if k != "PUFFIN_WAREHOUSE"},
            timeout=120,
        )
        assert proc.returncode == 1, proc.stderr
        assert "no embedded catalog in" in proc.stderr, proc.stderr
        assert list(empty.iterdir()) == [], args


def test_table_json_names_its_schema_version_and_command(
    sample_table: tuple[Path, Any],
) -> None:
    import json

    warehouse, _ = sample_table
    where = ["--warehouse", str(warehouse)]
    for args, command in (
        (["table", "stats", "compute", "db.t", "--no-commit", "--columns", "id"], "stats compute"),
        (["table", "stats", "compute", "db.t", "--columns", "id,tag"], "stats compute"),
        (["table", "stats", "show", "db.t"], "stats show"),
        (["table", "verify", "db.t"], "verify"),
    ):
        proc = cli(*args, *where, "--json")
        assert proc.returncode == 0, err(proc)
        doc = json.loads(out(proc))
        assert (doc["schema_version"], doc["command"]) == (1, f"table {command}"), doc


def test_statistics_take_a_renamed_columns_new_name(sample_table: tuple[Path, Any]) -> None:
    from puffin.iceberg import compute_table_statistics

    _, table = sample_table
    with table.update_schema() as update:
        update.rename_column("category", "kind")
    stats = compute_table_statistics(table, columns=["kind"], commit=False, progress=False)
    renamed = stats.blob_metadata[0].fields
    old = compute_table_statistics(table, columns=["category"], commit=False, progress=False)
    assert renamed == old.blob_metadata[0].fields  # the same field, by either name
