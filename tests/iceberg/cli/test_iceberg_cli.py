"""``puffin table ...`` and catalog loading: pyiceberg's configuration or the embedded default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from puffin.cli import main
from puffin.iceberg import (
    CatalogNotFoundError,
    TableNotFoundError,
    load_catalog,
    load_table,
)
from puffin.io.locations import local_path
from tests.cli.test_cli import cli, err, out


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home and working folder: no ~/.pyiceberg.yaml, no PYICEBERG_* variables."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    monkeypatch.delenv("PUFFIN_WAREHOUSE", raising=False)
    for name in list(__import__("os").environ):
        if name.startswith("PYICEBERG_CATALOG") or name == "PYICEBERG_DEFAULT_CATALOG":
            monkeypatch.delenv(name)
    return tmp_path


def test_default_catalog_is_embedded_sqlite(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = load_catalog()
    assert isinstance(catalog, SqlCatalog)
    assert (home / "warehouse" / "catalog.db").is_file()
    monkeypatch.setenv("PUFFIN_WAREHOUSE", str(home / "elsewhere"))
    load_catalog()
    assert (home / "elsewhere" / "catalog.db").is_file()
    with pytest.raises(CatalogNotFoundError, match="no catalog named 'prod'"):
        load_catalog("prod")
    with pytest.raises(TableNotFoundError, match=r"'db\.nope' not found"):
        load_table(catalog, "db.nope")


def test_errors_are_the_puffin_errors_tree() -> None:
    import puffin.errors as errors
    import puffin.iceberg as iceberg

    for name in (
        "CatalogNotFoundError",
        "TableNotFoundError",
        "SnapshotNotFoundError",
        "StatisticsNotFoundError",
        "ColumnNotFoundError",
        "UnsupportedTableError",
    ):
        assert getattr(iceberg, name) is getattr(errors, name), name
    assert issubclass(iceberg.TableNotFoundError, errors.NotFoundError)
    assert issubclass(iceberg.ColumnNotFoundError, errors.UsageError)
    assert not hasattr(iceberg, "register")  # the plugin: cli.commands


def test_catalog_from_pyiceberg_configuration(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = home / "lab"
    lab.mkdir()
    monkeypatch.setenv("PYICEBERG_CATALOG__LAB__URI", f"sqlite:///{lab}/lab.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAB__WAREHOUSE", f"file://{lab}")
    catalog = load_catalog("lab")
    assert isinstance(catalog, SqlCatalog) and catalog.name == "lab"
    catalog.create_namespace("ns")
    assert (lab / "lab.db").is_file()

    # ~/.pyiceberg.yaml with a default catalog is used when no name is given.
    monkeypatch.delenv("PYICEBERG_CATALOG__LAB__URI")
    monkeypatch.delenv("PYICEBERG_CATALOG__LAB__WAREHOUSE")
    (home / ".pyiceberg.yaml").write_text(
        f"default-catalog: team\ncatalog:\n  team:\n    uri: sqlite:///{lab}/team.db\n"
        f"    warehouse: file://{lab}\n"
    )
    catalog = load_catalog()
    assert catalog.name == "team"
    assert (lab / "team.db").is_file()
    assert not (home / "warehouse").exists()


def test_table_commands_end_to_end(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", "sample", "demo.events", "--rows", "20000", "--files", "3"]) == 0
    assert "20000 rows in 3 file(s)" in capsys.readouterr().out
    assert (home / "warehouse" / "catalog.db").is_file()
    assert main(["table", "sample", "demo.events"]) == 1
    assert "already exists" in capsys.readouterr().err

    assert main(["table", "stats", "compute", "demo.events"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("committed file://") and ".stats" in out
    assert "category" in out and "ndv 200" in out
    assert "\r" not in err  # no progress bar when stderr is not a terminal

    assert main(["table", "stats", "show", "demo.events", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_name = {c["name"]: c for c in doc["columns"]}
    assert by_name["category"]["ndv"] == 200 and by_name["category"]["exact"] is True
    assert by_name["day"]["ndv"] == 2000
    assert by_name["id"]["exact"] is False
    assert by_name["id"]["lower_bound"] <= 20000 <= by_name["id"]["upper_bound"]
    assert main(["table", "stats", "show", "demo.events"]) == 0
    assert "category" in capsys.readouterr().out

    assert main(["table", "verify", "demo.events"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("OK")

    # Break the statistics file: verify reports it and exits 1.
    path = local_path(doc["statistics_path"])
    assert path is not None
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-3])
    assert main(["table", "verify", "demo.events", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["problems"][0]["kind"] == "statistics"


def test_table_command_errors(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", "stats", "compute", "db.missing"]) == 1
    assert "'db.missing' not found" in capsys.readouterr().err
    assert main(["table", "verify", "x.y", "--catalog", "prod"]) == 1
    assert "no catalog named 'prod'" in capsys.readouterr().err
    assert main(["table", "sample", "db.t", "--rows", "100", "--files", "1"]) == 0
    capsys.readouterr()
    # An unknown column is the caller's mistake (a UsageError): exit status 2.
    assert main(["table", "stats", "compute", "db.t", "--columns", "nope"]) == 2
    assert "no column 'nope'" in capsys.readouterr().err
    assert main(["table", "stats", "compute", "db.t", "--snapshot-id", "5"]) == 1
    assert "no snapshot 5" in capsys.readouterr().err
    assert main(["table", "stats", "show", "db.t"]) == 1
    assert "no statistics file" in capsys.readouterr().err
    assert main(["table", "stats", "compute", "db.t", "--no-commit", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["committed"] is False and len(doc["blob-metadata"]) == 9
    assert main(["table", "stats", "show", "db.t"]) == 1  # nothing was committed
    capsys.readouterr()
    assert main(["table", "sample", "db.u", "--files", "0"]) == 2


def test_entry_point_lists_table_commands(home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "puffin", "table", "stats", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "compute" in result.stdout and "show" in result.stdout


def _puffin(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m puffin table ARGS --warehouse HOME/wh`` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "puffin", "table", *args, "--warehouse", str(home / "wh")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=home,
    )


def _json(result: subprocess.CompletedProcess[str], shape: str) -> dict[str, Any]:
    """The command's ``--json`` output, checked against its shape block in docs/cli.md."""
    from tests.cli.test_cli import check_shape, documented_shape

    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    check_shape(doc, documented_shape(shape))
    return doc


def _live_ids(home: Path) -> list[int]:
    from puffin.iceberg import local_catalog

    table = local_catalog(home / "wh").load_table("db.t")
    return sorted(table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist())


def _v1_table(home: Path) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    from puffin.iceberg import local_catalog

    schema = Schema(NestedField(1, "id", LongType(), required=False))
    local_catalog(home / "wh").create_table("db.v1", schema, properties={"format-version": "1"})


@pytest.mark.slow  # about 25 s: a dozen `puffin table` processes
def test_upgrade_delete_and_dv_commands(home: Path) -> None:
    result = _puffin(home, "sample", "db.t", "--rows", "3000", "--files", "3")
    assert result.returncode == 0, result.stderr
    ids = _live_ids(home)

    # v2, copy-on-write (the default): the file with the rows is written again without them
    cow = _json(_puffin(home, "delete", "db.t", "--where", "id < 3", "--json"), "table-delete")
    assert cow["vectors"] == [] and cow["position_delete_files"] == []
    assert len(cow["rewritten_files"]) == 1 and len(cow["added_files"]) == 1
    ids = [i for i in ids if i >= 3]
    assert _live_ids(home) == ids
    _v1_table(home)
    refused = _puffin(home, "delete", "db.v1", "--where", "id < 10")
    assert refused.returncode == 1 and "puffin table upgrade" in refused.stderr
    # The command line's way out comes first; the library call is named after it.
    assert refused.stderr.index("puffin table upgrade") < refused.stderr.index("upgrade_to_v3")

    doc = _json(_puffin(home, "upgrade", "db.t", "--json"), "table-upgrade")
    assert (doc["previous_format_version"], doc["format_version"]) == (2, 3)
    again = _puffin(home, "upgrade", "db.t")
    assert again.returncode == 0 and "already format version 3" in again.stdout

    doc = _json(_puffin(home, "delete", "db.t", "--where", "id < 10", "--json"), "table-delete")
    deleted = {i for i in ids if i < 10}
    assert doc["deleted_rows"] == len(deleted) > 0 and doc["snapshot_id"] is not None
    assert sum(v["cardinality"] for v in doc["vectors"]) == len(deleted)
    # Overlaps the first delete: merged into the live vectors, counted once.
    second = _puffin(home, "delete", "db.t", "--where", "id < 20")
    assert second.returncode == 0, second.stderr
    deleted |= {i for i in ids if i < 20}
    assert f"deleted {len(deleted) - doc['deleted_rows']} row(s)" in second.stdout
    nothing = _puffin(home, "delete", "db.t", "--where", "id < 20")
    assert nothing.returncode == 0 and "nothing committed" in nothing.stdout
    none = _json(_puffin(home, "delete", "db.t", "--where", "id < 5", "--json"), "table-delete")
    assert none["deleted_rows"] == 0 and none["snapshot_id"] is None and none["vectors"] == []
    assert _live_ids(home) == sorted(set(ids) - deleted)

    doc = _json(_puffin(home, "dv", "db.t", "--json"), "table-dv")
    assert doc["rows"] == len(ids) and doc["deleted_rows"] == len(deleted)
    files = [v["referenced_data_file"] for v in doc["vectors"]]
    assert len(files) == len(set(files))  # one live vector per data file
    assert all(v["cardinality"] <= v["data_file_rows"] for v in doc["vectors"])
    text = _puffin(home, "dv", "db.t")
    assert f"{len(deleted)} of {len(ids)} row(s) deleted" in text.stdout
    assert _puffin(home, "verify", "db.t").stdout.rstrip().endswith("OK")

    bad = _puffin(home, "delete", "db.t", "--where", "nope = 1")
    assert bad.returncode == 2 and "nope" in bad.stderr
    missing = _puffin(home, "delete", "db.t")
    assert missing.returncode == 2 and "--where" in missing.stderr


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
