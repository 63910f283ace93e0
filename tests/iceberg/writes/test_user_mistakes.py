"""The mistakes a data engineer makes end in one line and exit 1 or 2, never exit 3.

Each was once an "internal error, please report it" (exit 3), a printed table of every
field on stdout, a ``ZeroDivisionError`` or a stray commit: data that does not fit the
table, a file that is not Parquet, pyarrow's default nullable fields for a required column,
an empty input, a read-only warehouse.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa
import pyarrow.parquet as pq

from puffin.cli import main
from puffin.errors import UsageError
from puffin.iceberg import add_files, append, create_sample_table, local_catalog, upgrade_to_v3
from puffin.iceberg.catalog.sample import sample_batch
from tests.cli.test_cli import check_shape, documented_shape


def _puffin(*args: str) -> subprocess.CompletedProcess[str]:
    """``puffin ARGS`` in this process (an interpreter per call would cost a second each),
    its stdout and stderr captured as a child's would be."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return subprocess.CompletedProcess(list(args), status, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mistakes")
    t = sample_batch(10, start=5000)
    nullable = pa.schema([f.with_nullable(True) for f in t.schema])
    with_null = pa.array([None, *range(5001, 5010)], pa.int64())
    made = {
        "extra": t.append_column("extra", pa.array(range(10))),
        "wrong-type": t.set_column(1, "category", pa.array([str(i) for i in range(10)])),
        "missing-required": t.drop(["id"]),
        "nullable": t.cast(nullable),
        "nulls": t.cast(nullable).set_column(0, pa.field("id", pa.int64()), with_null),
        "empty": t.slice(0, 0),
    }
    out = {}
    for name, table in made.items():
        out[name] = root / f"{name}.parquet"
        pq.write_table(table, out[name])
    out["not-parquet"] = root / "not-parquet.parquet"
    out["not-parquet"].write_text("hello")
    return out


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def warehouse(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    table = create_sample_table(local_catalog(tmp_path), "db.t", rows=100, files=1)
    if request.param == 3:
        upgrade_to_v3(table)
    return tmp_path


@pytest.mark.parametrize("command", ["append", "add-files"])
@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("extra", ["does not fit", "extra"]),
        ("wrong-type", ["does not fit", "category", "string"]),
        ("missing-required", ["does not fit", "id", "missing"]),
        ("nulls", ["'id'", "1 null"]),
        ("not-parquet", ["Parquet"]),
    ],
)
def test_data_that_does_not_fit_is_one_line_and_exit_2(
    warehouse: Path, files: dict[str, Path], command: str, name: str, words: list[str]
) -> None:
    before = local_catalog(warehouse).load_table("db.t").metadata_location
    result = _puffin("table", command, "db.t", str(files[name]), "--warehouse", str(warehouse))
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert all(word in result.stderr for word in words), result.stderr
    assert local_catalog(warehouse).load_table("db.t").metadata_location == before


@pytest.mark.parametrize("command", ["append", "add-files"])
def test_a_nullable_required_column_without_nulls_is_checked_and_taken(
    warehouse: Path, files: dict[str, Path], command: str
) -> None:
    args = ["table", command, "db.t", str(files["nullable"]), "--warehouse", str(warehouse)]
    result = _puffin(*args, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["added_records"] == 10
    ids = local_catalog(warehouse).load_table("db.t").scan().to_arrow().column("id")
    assert ids.null_count == 0 and set(range(5000, 5010)) <= set(ids.to_pylist())


def test_an_empty_append_commits_nothing_and_says_so(
    warehouse: Path, files: dict[str, Path]
) -> None:
    table = local_catalog(warehouse).load_table("db.t")
    before = table.metadata_location
    assert append(table, sample_batch(0)).metadata_location == before  # was ZeroDivisionError
    reader = pa.RecordBatchReader.from_batches(sample_batch(0).schema, iter([]))
    assert append(table, reader).metadata_location == before
    assert add_files(table, [str(files["empty"])]).metadata_location == before
    for command in ("append", "add-files"):
        result = _puffin("table", command, "db.t", str(files["empty"]), "--warehouse",
                         str(warehouse))
        assert result.returncode == 0 and "nothing was committed" in result.stdout
    assert local_catalog(warehouse).load_table("db.t").metadata_location == before


def test_python_gets_usage_errors_naming_the_mismatch(warehouse: Path) -> None:
    table = local_catalog(warehouse).load_table("db.t")
    data = sample_batch(5, start=900)
    with pytest.raises(UsageError, match=r"does not fit table db\.t: PyArrow table contains"):
        append(table, data.append_column("extra", pa.array(range(5))))
    nulls = data.cast(pa.schema([f.with_nullable(True) for f in data.schema]))
    nulls = nulls.set_column(0, pa.field("id", pa.int64()), pa.array([None] * 5, pa.int64()))
    with pytest.raises(UsageError, match="'id' is required by the table, and the data has 5"):
        append(table, nulls)


def _read_only(warehouse: Path, *args: str, only: str = "") -> subprocess.CompletedProcess[str]:
    """``puffin ARGS`` with the warehouse (``only``: that file of it) mounted read-only in a
    private mount namespace (root only; the mount disappears with the process)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to mount the warehouse read-only")
    wh = str(warehouse / only) if only else str(warehouse)
    command = " ".join(
        ["mount --bind", repr(wh), repr(wh), "&& mount -o remount,bind,ro", repr(wh),
         "&& exec", repr(sys.executable), "-m puffin", *[repr(a) for a in args]]
    )
    result = subprocess.run(["unshare", "--mount", "sh", "-c", command],
                            capture_output=True, text=True, timeout=120)
    if "mount:" in result.stderr or "unshare:" in result.stderr:
        pytest.skip(f"cannot mount read-only here: {result.stderr.strip()}")
    return result


@pytest.mark.slow  # about 20 s: every command in a read-only mount namespace
def test_a_read_only_warehouse_serves_readers_and_refuses_writers(
    tmp_path: Path, files: dict[str, Path]
) -> None:
    # One v3 table: the refusal comes before anything that depends on the format version.
    warehouse = tmp_path
    upgrade_to_v3(create_sample_table(local_catalog(warehouse), "db.t", rows=100, files=1))
    w = ["--warehouse", str(warehouse)]
    for args in (["verify", "db.t"], ["dv", "db.t"], ["remove-orphans", "db.t"],
                 ["stats", "show", "db.t"]):
        result = _read_only(warehouse, "table", *args, *w)
        assert result.returncode in (0, 1), result.stderr  # stats show: none computed yet
        assert "internal error" not in result.stderr, result.stderr
    for args in [*_writers(files), ["remove-orphans", "db.t", "--delete"]]:
        result = _read_only(warehouse, "table", *args, *w)
        if args[0] == "upgrade" and result.returncode == 0:
            continue  # already v3: nothing to write
        assert result.returncode == 2, (args, result.stderr)
        assert "read-only" in result.stderr and len(result.stderr.splitlines()) == 1


def _writers(files: dict[str, Path]) -> list[list[str]]:
    """Every command that writes to a table, with arguments that would make it write."""
    return [
        ["delete", "db.t", "--where", "id = 1"], ["stats", "compute", "db.t"],
        ["append", "db.t", str(files["nullable"])], ["upgrade", "db.t"],
        ["add-files", "db.t", str(files["nullable"])], ["compact", "db.t"],
        ["expire", "db.t", "--older-than", "0s"], ["rewrite-deletes", "db.t"],
        ["rewrite-manifests", "db.t"], ["stats", "update", "db.t", "--full"],
        ["alter", "db.t", "--set-property", "a", "b"], ["sample", "db.s", "--rows", "10"],
    ]


@pytest.mark.slow  # about 20 s: every command in a mount namespace
def test_a_read_only_catalog_database_refuses_every_writer(
    tmp_path: Path, files: dict[str, Path]
) -> None:
    """catalog.db alone read-only, the table folders writable: every writing command exits
    2 with one line naming the database, and nothing is left in the table's folders."""
    warehouse = tmp_path
    upgrade_to_v3(create_sample_table(local_catalog(warehouse), "db.t", rows=100, files=1))
    w = ["--warehouse", str(warehouse)]
    table = warehouse / "db" / "t"
    before = sorted(p.name for p in table.rglob("*"))
    for args in (["verify", "db.t"], ["scan", "db.t", "--limit", "3"], ["stats", "show", "db.t"]):
        result = _read_only(warehouse, "table", *args, *w, only="catalog.db")
        assert result.returncode in (0, 1), result.stderr
        assert "internal error" not in result.stderr, result.stderr
    for args in _writers(files):
        result = _read_only(warehouse, "table", *args, *w, only="catalog.db")
        if args[0] == "upgrade" and result.returncode == 0:
            continue  # already v3: nothing to write
        assert result.returncode == 2, (args, result.stderr)
        assert "catalog database" in result.stderr and "read-only" in result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
    assert sorted(p.name for p in table.rglob("*")) == before


def test_json_error_documents(warehouse: Path, files: dict[str, Path]) -> None:
    result = _puffin("table", "append", "db.t", str(files["extra"]), "--warehouse",
                     str(warehouse), "--json")
    doc: dict[str, Any] = json.loads(result.stdout)
    assert result.returncode == 2 and doc["ok"] is False
    assert doc["command"] == "table append" and doc["error"]["type"] == "UsageError"
    check_shape(doc, documented_shape("error"))


def test_a_relative_table_location_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from puffin.iceberg import sample_schema

    monkeypatch.chdir(tmp_path)
    catalog = local_catalog(tmp_path / "wh")
    catalog.create_namespace("db")
    catalog.create_table("db.r", schema=sample_schema(), location="wh/db/r")
    monkeypatch.chdir("/")
    result = _puffin("table", "scan", "db.r", "--warehouse", str(tmp_path / "wh"))
    assert result.returncode == 1, result.stderr
    assert "relative metadata location 'wh/db/r/metadata/" in result.stderr
    assert "run from the folder it was created in" in result.stderr


def test_a_missing_metadata_file_names_the_newest_one_left(tmp_path: Path) -> None:
    from puffin.io.locations import local_path

    table = create_sample_table(local_catalog(tmp_path), "db.t", rows=10, files=1)
    current = Path(local_path(table.metadata_location) or "")
    current.unlink()
    result = _puffin("table", "verify", "db.t", "--warehouse", str(tmp_path))
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1, result.stderr
    assert f"names the metadata file {table.metadata_location}, which is missing" in result.stderr
    newest = sorted(current.parent.glob("*.metadata.json"))[-1]
    assert f"the newest metadata file in its folder is {newest}" in result.stderr


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("category in (1, 2.5)", "2.5 is not a whole number"),
        ("category in (1, 'a')", "mixes quoted text and numbers"),
        ("category >", "cannot parse the row filter 'category >': pyiceberg's syntax"),
    ],
)
def test_row_filter_mistakes_say_what_is_wrong(warehouse: Path, where: str, message: str) -> None:
    result = _puffin("table", "scan", "db.t", "--where", where, "--warehouse", str(warehouse))
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_a_list_of_whole_and_decimal_numbers_is_one_list(warehouse: Path) -> None:
    """pyiceberg's parser refuses ``amount in (1, 2.5)``; it means ``amount in (1.0, 2.5)``."""
    from puffin.iceberg import scan_table

    table = local_catalog(warehouse).load_table("db.t")
    mixed = scan_table(table, row_filter="id in (1, 2.0, 3)").to_arrow()
    assert sorted(mixed.column("id").to_pylist()) == [i for i in (1, 2, 3) if i < 100]


def test_v1_tables_are_refused_with_the_way_out(tmp_path: Path) -> None:
    from puffin.errors import UnsupportedTableError
    from puffin.iceberg import rewrite_manifests, sample_schema

    catalog = local_catalog(tmp_path)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", sample_schema(), properties={"format-version": "1"})
    with pytest.raises(UnsupportedTableError, match=r"v2 or v3 table.*puffin table upgrade"):
        rewrite_manifests(table)
