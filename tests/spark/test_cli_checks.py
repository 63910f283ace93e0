"""``puffin spark`` answers a mistake in its arguments before it starts Spark (issue 59).

Starting Spark takes 12 to 15 s on 2 cores; a misspelled column, a condition that does not
parse, a snapshot the table does not have or a short grace period is told first, in one
line and exit 2 (1 for a snapshot), with no session started: here starting one fails the
test, so none of these needs Java.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")

from puffin.cli import main
from puffin.iceberg import create_sample_table, local_catalog


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("spark-checks")
    create_sample_table(local_catalog(folder), "db.t", rows=50, files=1)
    return folder


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    import puffin.spark.cli as cli

    def started(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(cli, "local_session", started)
    monkeypatch.setattr(cli, "check_java", lambda *args, **kwargs: 17)  # no Java needed


@pytest.mark.parametrize(
    ("argv", "status", "words"),
    [
        (["dv", "db.t", "--where", "id <"], 2, ["cannot parse the row filter"]),
        (["dv", "db.t", "--where", "categroy = 3"], 2, ["'categroy'", "does not have"]),
        (["dv", "db.t", "--where", "user_name = 7"], 2, ["user_name"]),
        (["dv", "db.t", "--where", "id < 3", "--snapshot-id", "5"], 1, ["no snapshot 5"]),
        (["dv", "db.t", "--where", "id < 3", "--commit", "--no-merge"], 2, ["--commit"]),
        (["stats", "db.t", "--columns", "id,nope"], 2, ["no column 'nope'"]),
        (["stats", "db.t", "--engine", "fast"], 2, ["invalid choice"]),
        (["migrate-deletes", "db.t", "--snapshot-id", "5"], 1, ["no snapshot 5"]),
        (["migrate-deletes", "db.t", "--commit", "--output", "x.puffin"], 2, ["--output"]),
        (["convert-equality-deletes", "db.t", "--snapshot-id", "5"], 2, ["current snapshot"]),
        (["compact", "db.t", "--where", "id <"], 2, ["cannot parse"]),
        (["compact", "db.t", "--where", "nope > 1"], 2, ["'nope'"]),
        (["compact", "db.t", "--min-deleted", "1.5"], 2, ["--min-deleted must lie in [0, 1]"]),
        (["compact", "db.t", "--target-size", "big"], 2, ["not a size"]),
        (["expire", "db.t", "--older-than", "5 days"], 2, ["not an age"]),
        (["expire", "db.t", "--retain-last", "0"], 2, ["--retain-last must be at least 1"]),
        (["remove-orphans", "db.t", "--older-than", "2h", "--delete"], 2, ["grace period of 2h"]),
        (["rewrite-deletes", "db.t", "--target-size", "0"], 2, ["at least one byte"]),
        (["expire", "db.nope"], 1, ["'db.nope' not found"]),
    ],
)
def test_a_mistake_is_told_before_spark_starts(
    warehouse: Path, argv: list[str], status: int, words: list[str]
) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        got = main(["spark", *argv, "--warehouse", str(warehouse)])
    assert got == status, err.getvalue()
    assert all(word in err.getvalue() for word in words), err.getvalue()
    assert "Spark was started" not in err.getvalue()


def test_a_valid_command_does_go_on_to_start_spark(warehouse: Path) -> None:
    """The checks let a good command through (here to the session this test refuses)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["spark", "dv", "db.t", "--where", "id < 3", "--warehouse",
                     str(warehouse)]) == 3  # fmt: skip
    assert "Spark was started" in err.getvalue()
