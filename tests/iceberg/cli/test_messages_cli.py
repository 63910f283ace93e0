"""What ``puffin table`` says when it refuses (issue 59): an expired range names the expired
snapshots, an age is printed as the user wrote it, and a load names the file and the column
that are wrong."""

from __future__ import annotations

import contextlib
import decimal
import io
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa
import pyarrow.parquet as pq

from puffin.cli import main
from puffin.iceberg import (
    append,
    create_sample_table,
    expire_snapshots,
    local_catalog,
    sample_batch,
    transaction,
)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    create_sample_table(local_catalog(tmp_path / "wh"), "db.t", rows=100, files=1)
    return tmp_path / "wh"


def _expired_middle(warehouse: Path) -> tuple[int, list[int], int]:
    """(a tagged first snapshot, the two after it, expired, the current one)."""
    table = local_catalog(warehouse).load_table("db.t")
    first = table.current_snapshot().snapshot_id
    middle = []
    for i in range(3):
        table = append(table, sample_batch(5, start=1000 + 5 * i), statistics="none")
        middle.append(table.current_snapshot().snapshot_id)
    with transaction(table) as tx:
        tx.manage_snapshots().create_tag(first, "start").commit()
    time.sleep(0.01)
    table = expire_snapshots(
        local_catalog(warehouse).load_table("db.t"), older_than="0s", retain_last=1
    ).table
    assert sorted(s.snapshot_id for s in table.snapshots()) == sorted([first, middle[-1]])
    assert table.current_snapshot().parent_snapshot_id is None  # the expiry cut the line
    return first, middle[:-1], middle[-1]


def test_a_range_whose_middle_was_expired_names_the_expired_snapshots(warehouse: Path) -> None:
    first, expired, last = _expired_middle(warehouse)
    status, _, err = _run("table", "changes", "db.t", "--from", "start", "--warehouse",
                          str(warehouse))  # fmt: skip
    assert status == 2, err
    assert "not an ancestor" not in err
    assert f"between start snapshot {first} and snapshot {last} were expired" in err
    assert f"({expired[0]}, {expired[1]})" in err  # oldest first
    assert f"start at {last} or later" in err


def test_a_range_whose_logged_metadata_is_gone_says_the_history_was_expired(
    warehouse: Path,
) -> None:
    first, _, last = _expired_middle(warehouse)
    for old in (warehouse / "db" / "t" / "metadata").glob("*.metadata.json"):
        if str(old) != local_catalog(warehouse).load_table("db.t").metadata_location[7:]:
            old.unlink()  # as write.metadata.delete-after-commit leaves the folder
    status, _, err = _run("table", "changes", "db.t", "--from", str(first), "--warehouse",
                          str(warehouse))  # fmt: skip
    assert status == 2, err
    assert f"the history before snapshot {last} was expired" in err and "ancestor" not in err


def test_start_after_end_is_still_not_an_ancestor(warehouse: Path) -> None:
    first, _, last = _expired_middle(warehouse)
    status, _, err = _run("table", "changes", "db.t", "--from", str(last), "--to", "start",
                          "--warehouse", str(warehouse))  # fmt: skip
    assert status == 2, err
    assert f"start snapshot {last} is not an ancestor of end snapshot {first}" in err


@pytest.mark.parametrize("age", ["1h", "90m", "1.5h", "0s", "23h"])
def test_a_short_grace_period_is_printed_as_written(warehouse: Path, age: str) -> None:
    status, _, err = _run("table", "remove-orphans", "db.t", "--older-than", age, "--delete",
                          "--warehouse", str(warehouse))  # fmt: skip
    assert status == 2, err
    assert f"a grace period of {age} (under 24 hours)" in err


def test_the_library_spells_a_timedelta_it_was_given(warehouse: Path) -> None:
    import datetime

    from puffin.errors import UsageError
    from puffin.iceberg import remove_orphan_files

    table = local_catalog(warehouse).load_table("db.t")
    with pytest.raises(UsageError, match=r"a grace period of 90m \(under"):
        remove_orphan_files(table, older_than=datetime.timedelta(minutes=90))
    aware = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=2)
    with pytest.raises(UsageError, match=r"a grace period of 2h \(under"):
        remove_orphan_files(table, older_than=aware)


def test_a_missing_file_says_what_is_wrong_and_what_to_do(warehouse: Path, tmp_path: Path) -> None:
    good = tmp_path / "good.parquet"
    pq.write_table(sample_batch(5, start=500), good)
    for command in ("append", "add-files"):
        status, _, err = _run("table", command, "db.t", str(good), "day2.parquet",
                              "--warehouse", str(warehouse))  # fmt: skip
        assert status == 1, err
        assert "day2.parquet: no such file" in err and "give the path of" in err, err
    assert len(local_catalog(warehouse).load_table("db.t").snapshots()) == 1


def _written(folder: Path, name: str, batch: pa.Table) -> str:
    pq.write_table(batch, folder / name)
    return str(folder / name)


def test_a_column_that_does_not_convert_names_the_file_and_the_column(
    warehouse: Path, tmp_path: Path
) -> None:
    batch = sample_batch(5, start=500)
    price = batch.schema.get_field_index("price")
    narrow = _written(tmp_path, "narrow.parquet",
                      batch.set_column(price, "price", batch["price"].cast(pa.decimal128(10, 2))))
    big = [decimal.Decimal("1234567890.12")] * 5
    wide = _written(tmp_path, "wide.parquet",
                    batch.set_column(price, "price", pa.array(big, pa.decimal128(12, 2))))
    status, _, err = _run("table", "append", "db.t", narrow, wide, "--warehouse", str(warehouse))
    assert status == 2, err
    assert f"{wide}: column 'price' (decimal128(12, 2)) does not convert" in err
    assert f"its type in {narrow}" in err
    assert len(local_catalog(warehouse).load_table("db.t").snapshots()) == 1


def test_a_file_that_does_not_fit_is_named_among_several(warehouse: Path, tmp_path: Path) -> None:
    batch = sample_batch(5, start=500)
    category = batch.schema.get_field_index("category")
    good = _written(tmp_path, "good.parquet", batch)
    text = pa.array([str(v) for v in batch["category"].to_pylist()])
    bad = _written(tmp_path, "text.parquet", batch.set_column(category, "category", text))
    status, _, err = _run("table", "append", "db.t", good, bad, "--warehouse", str(warehouse))
    assert status == 2, err
    assert f"{bad} does not fit table db.t" in err and "category" in err


def test_a_later_file_with_another_column_is_named(warehouse: Path, tmp_path: Path) -> None:
    batch: Any = sample_batch(5, start=500)
    good = _written(tmp_path, "good.parquet", batch)
    extra = _written(tmp_path, "extra.parquet", batch.append_column("note", pa.array(["x"] * 5)))
    status, _, err = _run("table", "append", "db.t", good, extra, "--warehouse", str(warehouse))
    assert status == 2, err
    assert f"{extra} has column 'note', which {good} has not" in err


# A usage error that needs no table is answered before the table is opened, with neither
# pyiceberg's catalogs nor pyarrow imported (a condition's syntax loads pyiceberg's parser
# alone): in a tenth to a third of a second, not two (bench/bench_cli_startup.py).
_EARLY = [
    ["scan", "db.t", "--limit", "-1"],
    ["scan", "db.t", "--where", "id <"],
    ["changes", "db.t", "--from", "1", "--output", "."],
    ["delete", "db.t", "--where", "id < 3 and"],
    ["compact", "db.t", "--min-deleted", "2"],
    ["compact", "db.t", "--min-input-files", "0"],
    ["compact", "db.t", "--partial-progress", "0"],
    ["compact", "db.t", "--target-size", "huge"],
    ["rewrite-deletes", "db.t", "--target-size", "0"],
    ["rewrite-manifests", "db.t", "--target-size", "0.5"],
    ["expire", "db.t", "--older-than", "yesterday"],
    ["expire", "db.t", "--retain-last", "0"],
    ["remove-orphans", "db.t", "--older-than", "1h", "--delete"],
    ["remove-orphans", "db.t", "--older-than", "-1d"],
    ["append", "db.t", "no-such-file.parquet"],
    ["add-files", "db.t", "no-such-file.parquet"],
]


def test_usage_errors_come_before_the_table_and_the_heavy_imports(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    code = (
        "import contextlib, io, json, sys\n"
        "from puffin.cli import main\n"
        f"runs = {_EARLY!r}\n"
        "out = []\n"
        "for argv in runs:\n"
        "    err = io.StringIO()\n"
        "    with contextlib.redirect_stderr(err):\n"
        f"        status = main(['table', *argv, '--warehouse', {str(tmp_path / 'wh')!r}])\n"
        "    out.append([status, err.getvalue()])\n"
        "heavy = sorted(m for m in ('pyiceberg.catalog', 'pyarrow') if m in sys.modules)\n"
        "print(json.dumps({'runs': out, 'heavy': heavy}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, check=True)  # fmt: skip
    report = json.loads(done.stdout)
    for argv, (status, err) in zip(_EARLY, report["runs"], strict=True):
        assert status in (1, 2) and len(err.strip().splitlines()) == 1, (argv, err)
        assert "not found" not in err and "catalog" not in err, (argv, err)
    assert report["heavy"] == []
    assert not (tmp_path / "wh").exists()  # no catalog was opened, none created
