"""Orphan cleanup racing real writers, as issue 42 saw tables destroyed: a loop of small
appends and a streaming append whose files trickle in, each beside a process that runs
``remove_orphan_files`` in a loop with grace periods down to zero; and a copied warehouse
whose cleanup runs while the original is written. Timings are random (a seed per run).

After each race the table must load, verify without a problem, and hold exactly the model's
rows: the sample's first 100 ids plus every round the writer reported committed, computed
here without any reader, compared with ``scan_table``, pyiceberg and (one module of races)
Iceberg Java. ``PUFFIN_RACE_ROUNDS`` runs each race more times (default 1).
"""

from __future__ import annotations

import datetime
import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from _processes import wait_all
from peers.pyiceberg_scan import read_pyiceberg
from puffin.iceberg import (
    create_sample_table,
    local_catalog,
    scan_table,
    upgrade_to_v3,
    verify_table,
)
from puffin.io.locations import local_path

ACTORS = Path(__file__).with_name("_race_actors.py")
ROUNDS = int(os.environ.get("PUFFIN_RACE_ROUNDS", "1"))
SECONDS = float(os.environ.get("PUFFIN_RACE_SECONDS", "4"))
#: (writer mode, v3 table, cleaner's grace period in seconds)
RACES = [
    ("small", True, 0.0),
    ("small", False, 0.0),
    ("small", True, 0.3),
    ("stream", False, 0.0),
    ("stream", True, 0.0),
    ("stream", True, 1.0),
]
FIRST_IDS = 100  # the sample table's own rows: ids 0..99
STRAYS = 3  # real orphans, a day old: every cleanup must remove them


@dataclass
class Race:
    warehouse: Path
    model: set[int]
    writer: list[dict[str, Any]]
    cleaner: list[dict[str, Any]]


def _make_table(warehouse: Path, v3: bool) -> Any:
    properties = {"write.target-file-size-bytes": str(96 * 1024)}  # a stream rolls often
    table = create_sample_table(
        local_catalog(warehouse), "db.t", rows=FIRST_IDS, files=1, properties=properties
    )
    table = upgrade_to_v3(table) if v3 else table
    data = Path(local_path(table.location()) or "") / "data"
    old = (datetime.datetime.now() - datetime.timedelta(days=1)).timestamp()
    for i in range(STRAYS):
        stray = data / f"stray-{i}.parquet"
        stray.write_bytes(b"left by a killed write")
        os.utime(stray, (old, old))
    return table


def _spawn(
    role: str, warehouse: Path | str, value: str, seed: int, out: Path, seconds: float = SECONDS
) -> subprocess.Popen[str]:
    command = [sys.executable, str(ACTORS), role, str(warehouse), value, str(seconds), str(seed)]
    return subprocess.Popen([*command, str(out)], text=True, stderr=subprocess.PIPE)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def race(
    tmp_path: Path, mode: str, v3: bool, grace: float, seed: int, *, copy: bool = False
) -> Race:
    """One race; with ``copy``, the cleaner works through a copy of the warehouse made
    before the writer starts (its catalog names the original's files)."""
    warehouse = tmp_path / "wh"
    _make_table(warehouse, v3)
    cleaned = warehouse
    if copy:
        cleaned = tmp_path / "copy"
        shutil.copytree(warehouse, cleaned)
    rng = random.Random(seed)
    writer_log, cleaner_log = tmp_path / "writer.jsonl", tmp_path / "cleaner.jsonl"
    writer = _spawn("writer", warehouse, mode, rng.randrange(2**31), writer_log)
    cleaner = _spawn("cleaner", cleaned, str(grace), rng.randrange(2**31), cleaner_log)
    writer_err, cleaner_err = wait_all([writer, cleaner], SECONDS + 120)
    assert writer.returncode == 0, writer_err
    assert cleaner.returncode == 0, cleaner_err
    rounds, runs = _lines(writer_log), _lines(cleaner_log)
    model = set(range(FIRST_IDS))
    for r in rounds:
        if r.get("ok"):
            first = r["round"] * 1_000_000
            model.update(range(first, first + r["rows"]))
    return Race(warehouse, model, rounds, runs)


def check(result: Race, *, commits: bool = True) -> Any:
    """The table loads, verifies, and holds exactly the model's rows; returns it.
    ``commits``: some round must have committed (a stream beside a cleanup with no grace
    period loses its files every time: it fails, and loses nothing)."""
    writer_errors = {r["error"] for r in result.writer if "error" in r}
    assert writer_errors <= {"WrittenFileGoneError"}, result.writer
    assert not [r for r in result.cleaner if "error" in r], result.cleaner
    assert not commits or any(r.get("ok") for r in result.writer), result.writer
    table = local_catalog(result.warehouse).load_table("db.t")
    report = verify_table(table)
    assert report.problems == [], report.problems
    ours = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    assert sorted(ours) == sorted(result.model)
    theirs = read_pyiceberg(local_path(table.metadata_location) or "").column("id").to_pylist()
    assert sorted(theirs) == sorted(result.model)
    return table


@pytest.mark.slow  # about 6 s a race: two processes for SECONDS, then three reads
@pytest.mark.parametrize("round_", range(ROUNDS))
@pytest.mark.parametrize(("mode", "v3", "grace"), RACES)
def test_cleanup_beside_a_writer_loses_nothing(
    tmp_path: Path, mode: str, v3: bool, grace: float, round_: int
) -> None:
    seed = random.randrange(2**31)
    result = race(tmp_path, mode, v3, grace, seed)
    table = check(result, commits=mode == "small" or grace > 0)
    data = Path(local_path(table.location()) or "") / "data"
    refused = [r for r in result.cleaner if r.get("refused")]
    assert not refused, f"seed {seed}: a commit in flight taken for another history: {refused}"
    cleaned = [r for r in result.cleaner if "removed" in r]
    assert cleaned, f"seed {seed}: the cleaner never ran to the end: {result.cleaner}"
    assert not list(data.glob("stray-*")), f"seed {seed}: the real orphans were kept"
    assert not list(data.parent.rglob("*.puffin-orphan")), f"seed {seed}: set-aside debris"


@pytest.mark.slow
def test_cleanup_through_a_copied_warehouse_leaves_the_original_whole(tmp_path: Path) -> None:
    result = race(tmp_path, "small", True, 0.0, random.randrange(2**31), copy=True)
    check(result)
    assert any(r.get("refused") for r in result.cleaner), result.cleaner


def test_java_reads_what_the_races_left(tmp_path: Path, java: Any) -> None:
    from peers.iceberg_java import read_java

    for i, (mode, v3, grace, copy) in enumerate(
        [("small", True, 0.0, False), ("stream", False, 0.0, False), ("small", True, 0.0, True)]
    ):
        result = race(tmp_path / str(i), mode, v3, grace, random.randrange(2**31), copy=copy)
        table = check(result, commits=mode == "small")
        rows = read_java(java, local_path(table.metadata_location) or "")
        assert sorted(rows.column("id").to_pylist()) == sorted(result.model)
