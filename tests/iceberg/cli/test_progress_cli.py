"""Progress lines of the long ``puffin table`` jobs (issue 59): ``delete``, ``expire``,
``remove-orphans`` and ``append`` draw one on stderr when it is a terminal, ``--progress``
forces it, and ``--quiet`` (or ``--no-progress``) and ``--json`` turn it off.

The one progress display waits a second before its first line; here it draws at once, so
that a table of a few hundred rows shows it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow.parquet as pq

from puffin.cli import main
from puffin.iceberg import append, create_sample_table, local_catalog, sample_batch
from puffin.support.progress import Progress


@pytest.fixture(autouse=True)
def at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every progress line drawn without the display's one-second wait."""
    original = Progress.__init__

    def init(self: Progress, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **{**kwargs, "delay": 0.0})

    monkeypatch.setattr(Progress, "__init__", init)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(*argv: str, terminal: bool = True) -> tuple[int, str, str]:
    out, err = io.StringIO(), (_Terminal() if terminal else io.StringIO())
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    table = create_sample_table(local_catalog(tmp_path / "wh"), "db.t", rows=400, files=4)
    for i in range(3):  # snapshots to expire, files only they reach
        table = append(table, sample_batch(10, start=1000 + 10 * i), statistics="none")
    return tmp_path / "wh"


def _job(name: str, warehouse: Path, tmp_path: Path) -> tuple[list[str], str]:
    """The command line of a job, and the label its progress line starts with."""
    wh = ["--warehouse", str(warehouse)]
    if name == "delete":
        return ["table", "delete", "db.t", "--where", "id < 5", *wh], "delete ["
    if name == "expire":
        time.sleep(0.01)
        return ["table", "expire", "db.t", "--older-than", "0s", *wh], "expire ["
    if name == "remove-orphans":
        orphan = warehouse / "db" / "t" / "data" / "left-by-a-killed-write.parquet"
        orphan.write_bytes(b"PAR1")
        hours_ago = time.time() - 2 * 3600
        os.utime(orphan, (hours_ago, hours_ago))
        argv = ["table", "remove-orphans", "db.t", "--older-than", "1h", "--delete",
                "--allow-short-grace-period", *wh]  # fmt: skip
        return argv, "remove-orphans ["
    data = tmp_path / "more.parquet"
    pq.write_table(sample_batch(300, start=5000), data)
    return ["table", "append", "db.t", str(data), *wh], "append ["


_JOBS = ["delete", "expire", "remove-orphans", "append"]


@pytest.mark.parametrize("job", _JOBS)
def test_a_terminal_gets_a_progress_line(warehouse: Path, tmp_path: Path, job: str) -> None:
    argv, label = _job(job, warehouse, tmp_path)
    status, out, err = _run(*argv)
    assert status == 0, err
    assert label in err and "100%" in err, err
    final = re.findall(r"(\d+)/(\d+) (rows|files)", err)[-1]  # the last state drawn
    assert final[0] == final[1] and int(final[0]) > 0, err  # all of something was counted
    assert label not in out


@pytest.mark.parametrize("job", _JOBS)
@pytest.mark.parametrize("off", ["--quiet", "--no-progress", "--json"])
def test_quiet_and_json_turn_it_off(warehouse: Path, tmp_path: Path, job: str, off: str) -> None:
    argv, label = _job(job, warehouse, tmp_path)
    status, out, err = _run(*argv, off)
    assert status == 0, err
    assert label not in err and "%" not in err, err
    if off == "--json":
        assert json.loads(out)["command"] == f"table {job}"


def test_progress_forces_it_off_a_terminal_and_beside_json(
    warehouse: Path, tmp_path: Path
) -> None:
    argv, label = _job("delete", warehouse, tmp_path)
    status, out, err = _run(*argv, "--json", "--progress", terminal=False)
    assert status == 0 and label in err, err
    assert json.loads(out)["deleted_rows"] == 5  # stdout stays one document


def test_a_pipe_gets_none(warehouse: Path, tmp_path: Path) -> None:
    argv, _ = _job("append", warehouse, tmp_path)
    status, _, err = _run(*argv, terminal=False)
    assert status == 0 and err == "", err
