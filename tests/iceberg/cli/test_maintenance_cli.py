"""``puffin table rewrite-deletes``, ``compact`` and ``remove-orphans`` on the command line,
and the warnings ``verify`` gives when a table needs one of them."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from puffin.cli import main
from puffin.iceberg import (
    create_sample_table,
    delete_rows,
    local_catalog,
    scan_table,
    transaction,
    upgrade_to_v3,
    verify_table,
)
from puffin.iceberg.verify.hints import SPREAD_FILES
from tests.cli.test_cli import check_shape, documented_shape


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["table", *args])
    return status, out.getvalue(), err.getvalue()


def _json(shape: str, *args: str) -> dict[str, Any]:
    status, out, err = _run(*args, "--json")
    assert status == 0, err
    doc: dict[str, Any] = json.loads(out)
    check_shape(doc, documented_shape(shape))
    return doc


@pytest.fixture
def warehouse(tmp_path: Path) -> tuple[str, Any]:
    """A v3 table ``db.t`` of four files, one delete per file (four Puffin files), the last
    one deleting 40 % of its file."""
    catalog = local_catalog(tmp_path / "wh")
    table = upgrade_to_v3(create_sample_table(catalog, "db.t", rows=3000, files=4, seed=4))
    for where in ("id < 100", "id >= 800 and id < 850", "id = 1600", "id >= 2700"):
        table = delete_rows(table, where).table
    return str(tmp_path / "wh"), table


def _ids(warehouse: str) -> list[int]:
    table = local_catalog(warehouse).load_table("db.t")
    return sorted(scan_table(table, selected_fields=("id",)).to_arrow()["id"].to_pylist())


def test_verify_says_what_the_table_needs(warehouse: tuple[str, Any]) -> None:
    wh, table = warehouse
    kinds = {w.kind: w.message for w in verify_table(table).warnings}
    assert "deleted-rows" in kinds and "puffin table compact" in kinds["deleted-rows"]
    assert "1 data file(s)" in kinds["deleted-rows"]  # only the 40 % one
    assert "spread-deletes" not in kinds  # four Puffin files: below the threshold
    assert "expire-backlog" not in kinds  # every snapshot is younger than five days
    with transaction(table) as tx:
        tx.set_properties({"history.expire.max-snapshot-age-ms": "0"})
    table = local_catalog(wh).load_table("db.t")
    kinds = {w.kind: w.message for w in verify_table(table).warnings}
    expected = f"{len(table.snapshots()) - 1} snapshot(s) are past the table's retention"
    assert kinds["expire-backlog"].startswith(expected), kinds
    assert "puffin table expire" in kinds["expire-backlog"]


def test_rewrite_deletes_then_compact(warehouse: tuple[str, Any]) -> None:
    wh, _ = warehouse
    ids = _ids(wh)
    doc = _json("table-rewrite-deletes", "rewrite-deletes", "db.t", "--warehouse", wh)
    assert (doc["files_before"], doc["files_after"], doc["vectors"]) == (4, 1, 4)
    assert doc["snapshot_id"] is not None and doc["deleted_rows"] == 3000 - len(ids)
    again = _json("table-rewrite-deletes", "rewrite-deletes", "db.t", "--warehouse", wh)
    assert again["snapshot_id"] is None
    status, out, _ = _run("rewrite-deletes", "db.t", "--warehouse", wh)
    assert status == 0 and out.startswith("nothing to rewrite: 1 delete file(s)")
    doc = _json("table-compact", "compact", "db.t", "--warehouse", wh, "--target-size", "40KB")
    assert (doc["rewritten_files"], doc["dropped_deleted_rows"], doc["rows"]) == (1, 300, 450)
    assert doc["statistics"] == "none" and _ids(wh) == ids
    status, out, _ = _run(
        "compact", "db.t", "--warehouse", wh, "--min-deleted", "0", "--min-input-files", "2"
    )
    assert status == 0 and out.startswith("rewrote 4 data file(s) into 1:"), out
    assert _ids(wh) == ids
    table = local_catalog(wh).load_table("db.t")
    assert not [w for w in verify_table(table).warnings if w.kind == "deleted-rows"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["compact", "db.t", "--target-size", "lots"], "is not a size"),
        (["compact", "db.t", "--min-deleted", "2"], "--min-deleted must lie in [0, 1]"),
        (["compact", "db.t", "--where", "nope = 1"], "nope"),
        (["rewrite-deletes", "db.t", "--target-size", "0"], "at least one byte"),
    ],
)
def test_mistakes_exit_2_with_one_line(
    warehouse: tuple[str, Any], args: list[str], words: str
) -> None:
    wh, _ = warehouse
    status, _, err = _run(*args, "--warehouse", wh)
    assert status == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_remove_orphans_is_a_dry_run_by_default(warehouse: tuple[str, Any]) -> None:
    wh, _ = warehouse
    stray = Path(wh) / "db" / "t" / "data" / "stray.parquet"
    stray.write_bytes(b"not referenced")
    doc = _json(
        "table-remove-orphans", "remove-orphans", "db.t", "--warehouse", wh, "--older-than", "0s"
    )
    assert [Path(f["path"]).name for f in doc["files"]] == ["stray.parquet"]
    assert doc["deleted"] is False and stray.exists()
    status, out, _ = _run(
        "remove-orphans", "db.t", "--warehouse", wh, "--older-than", "0s", "--delete",
        "--allow-short-grace-period",
    )
    assert status == 0 and "removed 1 orphan file(s)" in out and not stray.exists()


def test_many_puffin_files_are_a_warning(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path / "wh")
    table = upgrade_to_v3(create_sample_table(catalog, "db.t", rows=3000, files=SPREAD_FILES))
    step = 3000 // SPREAD_FILES
    for i in range(SPREAD_FILES):  # one row of each file: one Puffin file each
        table = delete_rows(table, f"id = {i * step}").table
    kinds = {w.kind: w.message for w in verify_table(table).warnings}
    assert f"in {SPREAD_FILES} Puffin files" in kinds["spread-deletes"]
    assert "deleted-rows" not in kinds


def test_rewrite_manifests_on_the_command_line(warehouse: tuple[str, Any]) -> None:
    wh, _ = warehouse
    ids = _ids(wh)
    doc = _json("table-rewrite-manifests", "rewrite-manifests", "db.t", "--warehouse", wh)
    assert (doc["manifests_before"], doc["manifests_after"], doc["entries"]) == (4, 1, 4)
    assert _ids(wh) == ids
    status, out, _ = _run("rewrite-manifests", "db.t", "--warehouse", wh)
    assert status == 0 and out.startswith("nothing to rewrite: 1 data manifest(s)"), out
