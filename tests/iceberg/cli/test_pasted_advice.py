"""Every error message that suggests a command is pasted, and the command works (issue 59).

Each test provokes the error on a real table in a temporary warehouse, takes the command the
message suggests (a whole one in backquotes, or the option to add to the command that
failed), runs it as a shell would split it, and checks its effect: exit 0 and the table
changed as the message said, and the first command then going through.  The warehouse's
path has a space in it, and is not the default one, so a suggestion must quote it and name
it to work.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from puffin.cli import main
from puffin.iceberg import (
    create_sample_table,
    local_catalog,
    read_table_statistics,
    sample_schema,
    scan_table,
)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A warehouse whose path a shell must quote; ``db.t``: 300 rows in 3 files (v2)."""
    folder = tmp_path / "my warehouse"
    create_sample_table(local_catalog(folder), "db.t", rows=300, files=3)
    return folder


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def _fails(*argv: str) -> str:
    """The one error line of a command that must fail with a user's mistake (1 or 2)."""
    status, _, err = _run(*argv)
    assert status in (1, 2), (status, err)
    assert len(err.strip().splitlines()) == 1, err
    return err


def _suggested(message: str) -> list[str]:
    """The command in backquotes, split as a shell splits it."""
    found = re.findall(r"`(puffin [^`]+)`", message)
    assert len(found) == 1, message
    words = shlex.split(found[0])
    assert words[0] == "puffin", words
    return words[1:]


def _paste(message: str) -> str:
    """Run the command a message suggests; its stdout."""
    status, out, err = _run(*_suggested(message))
    assert status == 0, (message, err)
    return out


def _option(message: str) -> str:
    """The one ``--option`` a message says to add."""
    found = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", message))
    assert len(found) == 1, message
    return found.pop()


def _table(warehouse: Path, name: str = "db.t") -> Any:
    return local_catalog(warehouse).load_table(name)


def _set_unchecked(warehouse: Path, properties: dict[str, str]) -> None:
    """Table properties set through pyiceberg itself, as another engine may write them
    (the checks ``puffin table alter`` makes are not asked)."""
    tx = _table(warehouse).transaction()
    tx.set_properties(properties)
    tx.commit_transaction()


def test_a_delete_mode_neither_way_names_the_alter_that_sets_it(warehouse: Path) -> None:
    _set_unchecked(warehouse, {"write.delete.mode": "merge-or-read"})
    delete = ("table", "delete", "db.t", "--where", "id < 5", "--warehouse", str(warehouse))
    message = _fails(*delete)
    assert "--set-property write.delete.mode merge-on-read" in message
    _paste(message)
    assert _table(warehouse).properties["write.delete.mode"] == "merge-on-read"
    status, out, err = _run(*delete, "--json")
    assert status == 0, err
    assert json.loads(out)["position_delete_files"]  # merge-on-read, as it was set


def test_a_delete_granularity_neither_way_names_the_alter_that_sets_it(warehouse: Path) -> None:
    _set_unchecked(
        warehouse, {"write.delete.mode": "merge-on-read", "write.delete.granularity": "per-file"}
    )
    delete = ("table", "delete", "db.t", "--where", "id < 5", "--warehouse", str(warehouse))
    message = _fails(*delete)
    _paste(message)
    assert _table(warehouse).properties["write.delete.granularity"] == "file"
    assert _run(*delete)[0] == 0


def test_the_pasted_alter_runs_in_a_shell_too(warehouse: Path) -> None:
    """One paste through a real shell: the quoting of the warehouse's path holds."""
    _set_unchecked(warehouse, {"write.delete.mode": "sometimes"})
    message = _fails("table", "delete", "db.t", "--where", "id < 5", "--warehouse", str(warehouse))
    command = re.findall(r"`(puffin [^`]+)`", message)[0]
    assert str(warehouse) not in command.split()  # quoted: the path has a space
    puffin = shlex.quote(str(Path(sys.executable).with_name("puffin")))
    done = subprocess.run(
        f"{puffin} {command.removeprefix('puffin ')}", shell=True, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _table(warehouse).properties["write.delete.mode"] == "merge-on-read"


def test_a_v1_table_names_the_upgrade(warehouse: Path) -> None:
    catalog = local_catalog(warehouse)
    catalog.create_table("db.v1", sample_schema(), properties={"format-version": "1"})
    delete = ("table", "delete", "db.v1", "--where", "id < 5", "--warehouse", str(warehouse))
    message = _fails(*delete)
    _paste(message)
    assert _table(warehouse, "db.v1").metadata.format_version == 3
    assert _run(*delete)[0] == 0


def test_row_lineage_of_a_v2_table_names_the_upgrade(warehouse: Path) -> None:
    scan = ("table", "scan", "db.t", "--columns", "id,_row_id", "--limit", "3",
            "--warehouse", str(warehouse))  # fmt: skip
    message = _fails(*scan)
    _paste(message)
    assert _table(warehouse).metadata.format_version == 3
    status, out, err = _run(*scan)
    assert status == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))  # rows written on v2 have no id yet
    assert len(rows) == 3 and all(set(r) == {"id", "_row_id"} for r in rows), out


@pytest.mark.parametrize("snapshot", ["current", "older"])
def test_missing_statistics_name_the_compute(warehouse: Path, snapshot: str) -> None:
    table = _table(warehouse)
    chosen = table.current_snapshot().snapshot_id
    show = ["table", "stats", "show", "db.t", "--warehouse", str(warehouse)]
    if snapshot == "older":
        delete = ("table", "delete", "db.t", "--where", "id < 5", "--warehouse", str(warehouse))
        assert _run(*delete)[0] == 0
        show += ["--snapshot-id", str(chosen)]
    message = _fails(*show)
    _paste(message)
    stats = read_table_statistics(_table(warehouse), snapshot_id=chosen)
    assert stats.snapshot_id == chosen and stats.ndv()["id"] > 0
    assert _run(*show)[0] == 0


def test_statistics_left_behind_by_an_interrupt_name_the_update(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    from puffin.iceberg import sample_batch
    from puffin.iceberg.statistics import update

    assert _run("table", "stats", "compute", "db.t", "--warehouse", str(warehouse))[0] == 0
    data = tmp_path / "day2.parquet"
    pq.write_table(sample_batch(20, start=1000), data)

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(update, "update_table_statistics", interrupted)
        status, _, err = _run("table", "append", "db.t", str(data), "--warehouse", str(warehouse))
    assert status == 4, err
    current = _table(warehouse).current_snapshot().snapshot_id
    assert current not in {s.snapshot_id for s in _table(warehouse).metadata.statistics}
    _paste(err)
    stats = read_table_statistics(_table(warehouse))
    assert stats.snapshot_id == current and stats.ndv()["id"] == 320


def _ids(warehouse: Path) -> list[int]:
    rows = scan_table(_table(warehouse), selected_fields=("id",)).to_arrow()
    return sorted(rows["id"].to_pylist())


@pytest.mark.parametrize(
    ("argv", "effect"),
    [
        (["table", "delete", "db.t", "--where", "id >= 0"], "empty"),
        (["table", "remove-orphans", "db.t", "--older-than", "1h", "--delete"], "unchanged"),
        (["table", "sample", "db.t", "--rows", "7", "--files", "1"], "seven"),
    ],
    ids=["all-rows", "short-grace-period", "replace"],
)
def test_an_option_a_message_names_is_added_and_the_command_goes_through(
    warehouse: Path, argv: list[str], effect: str
) -> None:
    orphan = warehouse / "db" / "t" / "data" / "left-by-a-killed-write.parquet"
    orphan.write_bytes(b"PAR1")
    hours_ago = time.time() - 2 * 3600
    os.utime(orphan, (hours_ago, hours_ago))
    argv = [*argv, "--warehouse", str(warehouse)]
    message = _fails(*argv)
    assert _ids(warehouse) == list(range(300)) and orphan.exists()  # refused: nothing changed
    status, _, err = _run(*argv, _option(message))
    assert status == 0, err
    expected = {"empty": [], "unchanged": list(range(300)), "seven": list(range(7))}
    assert _ids(warehouse) == expected[effect]
    assert orphan.exists() == (effect != "unchanged")  # the cleanup removed it


class _Terminal(io.StringIO):
    """stdout as a terminal: text only, no binary buffer a Parquet file could go to."""

    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def _on_a_terminal() -> Iterator[io.StringIO]:
    terminal, err = _Terminal(), io.StringIO()
    with contextlib.redirect_stdout(terminal), contextlib.redirect_stderr(err):
        yield err


def test_parquet_on_a_terminal_names_the_output_option(warehouse: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    argv = ["table", "scan", "db.t", "--format", "parquet", "--warehouse", str(warehouse)]
    with _on_a_terminal() as err:
        assert main(argv) == 2
    option = _option(err.getvalue())
    target = tmp_path / "rows.parquet"
    with _on_a_terminal() as err:
        assert main([*argv, option, str(target)]) == 0, err.getvalue()
    assert sorted(pq.read_table(target)["id"].to_pylist()) == list(range(300))


def test_a_parquet_file_given_to_inspect_names_ndv(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from puffin.iceberg import sample_batch

    path = tmp_path / "my events.parquet"
    pq.write_table(sample_batch(50), path)
    out = _paste(_fails("inspect", str(path)))
    assert "50 rows in 1 file" in out


def test_a_bare_deletion_vector_names_the_dv_command(tmp_path: Path) -> None:
    from puffin import DeletionVector

    path = tmp_path / "a vector.bin"
    path.write_bytes(DeletionVector([3, 5, 8]).serialize())
    assert _paste(_fails("inspect", str(path))).split() == ["3", "5", "8"]


def test_creating_a_table_that_exists_names_the_append(warehouse: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from puffin.iceberg import sample_batch

    path = tmp_path / "day 2.parquet"
    pq.write_table(sample_batch(25, start=300), path)
    message = _fails("table", "create", "db.t", str(path), "--warehouse", str(warehouse))
    assert _ids(warehouse) == list(range(300))
    _paste(message)
    assert _ids(warehouse) == list(range(325))


# --- what `puffin table verify` advises -------------------------------------------------------


def _warnings(warehouse: Path, kind: str) -> list[str]:
    status, out, err = _run("table", "verify", "db.t", "--warehouse", str(warehouse), "--json")
    assert status == 0, err
    return [w["message"] for w in json.loads(out)["warnings"] if w["kind"] == kind]


def _aged(path: Path, days: float) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then))


def test_verify_advises_the_expiry_that_clears_its_backlog(warehouse: Path) -> None:
    _set_unchecked(warehouse, {"history.expire.max-snapshot-age-ms": "0"})
    assert _run("table", "delete", "db.t", "--where", "id < 5", "--warehouse",
                str(warehouse))[0] == 0  # fmt: skip
    [message] = _warnings(warehouse, "expire-backlog")
    _paste(message)
    assert len(_table(warehouse).snapshots()) == 1 and not _warnings(warehouse, "expire-backlog")


def test_verify_advises_the_update_of_stale_statistics(warehouse: Path) -> None:
    assert _run("table", "stats", "compute", "db.t", "--warehouse", str(warehouse))[0] == 0
    assert _run("table", "delete", "db.t", "--where", "id < 5", "--warehouse",
                str(warehouse))[0] == 0  # fmt: skip
    [message] = _warnings(warehouse, "stale-statistics")
    _paste(message)
    current = _table(warehouse).current_snapshot().snapshot_id
    assert read_table_statistics(_table(warehouse)).snapshot_id == current
    assert not _warnings(warehouse, "stale-statistics")


def test_verify_advises_the_compaction_of_heavily_deleted_files(warehouse: Path) -> None:
    assert _run("table", "upgrade", "db.t", "--warehouse", str(warehouse))[0] == 0
    assert _run("table", "delete", "db.t", "--where", "id < 60", "--warehouse",
                str(warehouse))[0] == 0  # fmt: skip
    [message] = _warnings(warehouse, "deleted-rows")
    _paste(message)
    assert not _warnings(warehouse, "deleted-rows")
    assert _ids(warehouse) == list(range(60, 300))


@pytest.mark.parametrize("days", [4, 1])
def test_verify_advises_the_cleanup_of_an_orphan(warehouse: Path, days: float) -> None:
    orphan = warehouse / "db" / "t" / "data" / "left-by-a-killed-write.parquet"
    orphan.write_bytes(b"PAR1")
    _aged(orphan, days)
    [message] = _warnings(warehouse, "orphan")
    _paste(message)
    # The cleanup's default grace period is 3 days: a younger orphan stays, as the message says.
    assert orphan.exists() == (days < 3)
    assert ("once it is 3d old" in message) == (days < 3)


def test_creating_a_ref_that_exists_names_the_drop(warehouse: Path) -> None:
    table = ["table", "alter", "db.t", "--warehouse", str(warehouse)]
    assert _run(*table, "--create-branch", "audit")[0] == 0
    message = _fails(*table, "--create-tag", "audit")
    _paste(message)  # drops the branch
    assert _run(*table, "--create-tag", "audit")[0] == 0
    refs = local_catalog(warehouse).load_table("db.t").metadata.refs
    assert refs["audit"].snapshot_ref_type.value == "tag"


def test_a_format_version_set_upward_names_the_upgrade(warehouse: Path) -> None:
    message = _fails(
        "table", "alter", "db.t", "--warehouse", str(warehouse),
        "--set-property", "format-version", "3",
    )  # fmt: skip
    _paste(message)
    assert local_catalog(warehouse).load_table("db.t").metadata.format_version == 3
