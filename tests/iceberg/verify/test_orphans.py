"""Files nothing references: verify_table warns, remove-orphans lists then removes.

Before, an uncommitted deletion-vector job or a replaced statistics file left a ``.puffin``
or ``.stats`` file in the table's folders that no reader opens and nothing removed, and
``puffin table verify`` said OK without a word.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("pyiceberg")

from puffin.cli import main
from puffin.errors import UsageError
from puffin.iceberg import (
    compute_table_statistics,
    create_sample_table,
    delete_rows,
    local_catalog,
    upgrade_to_v3,
    verify_table,
    write_table_deletion_vectors,
)
from puffin.iceberg.maintenance.orphans import remove_orphan_files
from puffin.iceberg.metadata.retention import parse_age
from puffin.iceberg.verify.orphans import find_orphans
from tests.cli.test_cli import check_shape, documented_shape


def _table(warehouse: Path) -> tuple[object, set[str]]:
    """A v3 table with a committed DV and statistics, plus two orphans; the orphans' paths."""
    table = upgrade_to_v3(create_sample_table(local_catalog(warehouse), "db.t", rows=600, files=2))
    table = delete_rows(table, "category = 3").table
    first = compute_table_statistics(table, progress=False)
    compute_table_statistics(table, progress=False)  # replaces it: the first is an orphan
    data_file = next(iter(table.scan().plan_files())).file.file_path
    (entry,) = write_table_deletion_vectors(table, {data_file: [0]})  # never committed
    orphans = {first.statistics_path, str(entry.path)}
    return local_catalog(warehouse).load_table("db.t"), {p.removeprefix("file://") for p in orphans}


def test_verify_warns_and_clean_orphans_removes_only_orphans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, orphans = _table(tmp_path)
    report = verify_table(table)
    assert report.ok
    assert {w.path for w in report.warnings} == orphans
    assert all(w.kind == "orphan" and "bytes" in w.message for w in report.warnings)

    wh = ["--warehouse", str(tmp_path)]
    assert main(["table", "verify", "db.t", *wh]) == 0
    out = capsys.readouterr().out
    assert out.count("warning: orphan") == 2 and "OK" in out

    # A dry run by default, and young files are kept (a commit may be in flight).
    assert main(["table", "remove-orphans", "db.t", *wh, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    check_shape(doc, documented_shape("table-remove-orphans"))
    assert (doc["command"], doc["deleted"], doc["files"]) == ("table remove-orphans", False, [])
    assert main(["table", "remove-orphans", "db.t", *wh, "--older-than", "0s"]) == 0
    assert "would remove 2 orphan" in capsys.readouterr().out
    assert all(os.path.exists(p) for p in orphans)

    referenced = {s.statistics_path for s in table.metadata.statistics}
    before = table.scan().to_arrow().num_rows
    assert main(["table", "remove-orphans", "db.t", *wh, "--older-than", "0s", "--delete"]) == 2
    assert "allow-short-grace-period" in capsys.readouterr().err
    short = ["--older-than", "0s", "--delete", "--allow-short-grace-period"]
    assert main(["table", "remove-orphans", "db.t", *wh, *short]) == 0
    assert "removed 2 orphan" in capsys.readouterr().out
    assert not any(os.path.exists(p) for p in orphans)
    assert all(os.path.exists(p.removeprefix("file://")) for p in referenced)
    table = local_catalog(tmp_path).load_table("db.t")
    report = verify_table(table)
    assert report.ok and report.warnings == []
    assert table.scan().to_arrow().num_rows == before


def test_age_threshold_and_parsing(tmp_path: Path) -> None:
    table, orphans = _table(tmp_path)
    past = datetime.datetime.now().timestamp() - 5 * 86400
    old = sorted(orphans)[0]
    os.utime(old, (past, past))
    assert {o.path for o in find_orphans(table)} == orphans
    removed = remove_orphan_files(table).removed  # default: older than 3 days
    assert [o.path for o in removed] == [old]
    assert parse_age("90s").total_seconds() == 90 and parse_age("2w").days == 14
    with pytest.raises(UsageError, match="not an age"):
        parse_age("3 days")


def test_every_kind_of_file_is_covered_and_hidden_files_are_not(tmp_path: Path) -> None:
    """A table with history (v2 appends, the upgrade, deletes, an append, statistics) has
    no orphan; stray files of every kind are found with their kind; .crc files are not."""
    import shutil

    from puffin.iceberg import append, sample_batch

    table, _ = _table(tmp_path)
    table = append(table, sample_batch(50, start=5000))
    for o in find_orphans(table):
        os.remove(o.path)
    assert find_orphans(table) == []
    root = Path(table.location().removeprefix("file://"))
    data = next(root.joinpath("data").glob("*.parquet"))
    manifest = next(
        p for p in root.joinpath("metadata").glob("*.avro") if not p.name.startswith("snap-")
    )
    manifest_list = next(root.joinpath("metadata").glob("snap-*.avro"))
    strays = {
        "data": data.with_name("00000-0-killed.parquet"),
        "manifest": manifest.with_name("killed-m0.avro"),
        "manifest-list": manifest_list.with_name("snap-1-killed.avro"),
        "metadata": root / "metadata" / "00001-killed.metadata.json",  # below the current
        "delete": root / "data" / "killed-deletes.puffin",
        "statistics": root / "metadata" / "1-killed.stats",
    }
    for path in strays.values():
        shutil.copy(data, path)
    (root / "data" / f".{data.name}.crc").write_bytes(b"crc")
    found = {o.path: o.kind for o in find_orphans(table)}
    assert found == {str(p): kind for kind, p in strays.items()}
    removed = remove_orphan_files(
        table, older_than=datetime.timedelta(0), allow_short_grace_period=True
    ).removed
    assert len(removed) == len(strays) and (root / "data" / f".{data.name}.crc").exists()
    assert verify_table(table.refresh()).ok
    assert table.refresh().scan().to_arrow().num_rows == table.scan().to_arrow().num_rows
