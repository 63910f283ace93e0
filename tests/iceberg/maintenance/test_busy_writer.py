"""Maintenance beside a busy writer (issue 59): each job in a loop for ``SECONDS`` on a v3
table while another process appends and deletes every 50 ms, two races at a time (four
processes on two cores, beside whatever else the test run does).

Each job commits on the table as it is when its commit lands where the concurrent commits
do not conflict with what it replaces (docs/iceberg.md, "Maintenance beside writers"), so
at least 90 % of each job's runs must finish, and each must have committed work. Afterwards
the table verifies, nothing any snapshot reaches is missing, and it holds exactly the
model's rows (the sample's ids, plus each append the writer reported committed, minus each
delete it reported committed: computed here, without any reader) in our scan, pyiceberg,
DuckDB and iceberg-rust. ``PUFFIN_BUSY_SECONDS`` sets the length (30 by default).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from _processes import wait_all
from peers import read_duckdb, read_iceberg_rust, read_pyiceberg
from puffin.iceberg import (
    create_sample_table,
    local_catalog,
    scan_table,
    upgrade_to_v3,
    verify_table,
)
from puffin.io.locations import local_path

ACTORS = Path(__file__).with_name("_busy_actors.py")
SECONDS = float(os.environ.get("PUFFIN_BUSY_SECONDS", "30"))
FIRST_IDS = 200
#: The races run a pair at a time, the heavier jobs together.
PAIRS = [("compact", "rewrite-deletes"), ("expire", "rewrite-manifests")]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _race(
    tmp_path: Path, seed: int, jobs: tuple[str, ...]
) -> dict[str, tuple[list[Any], list[Any], Path]]:
    """Each of ``jobs`` beside a writer of its own table, the races at once for SECONDS;
    each job's writer log, its own log and its warehouse."""
    rng = random.Random(seed)
    base = [sys.executable, str(ACTORS)]
    procs, logs = [], {}
    for name in jobs:
        warehouse = tmp_path / name
        # Files of 16 KiB: a compaction leaves files big enough to stay, whose deletes then
        # pile up for the delete-file rewrite (with the default 512 MiB every file is small
        # and each compaction takes every file, and their vectors with them).
        properties = {"write.target-file-size-bytes": str(16 * 1024)}
        table = create_sample_table(
            local_catalog(warehouse), "db.t", rows=FIRST_IDS, files=4, properties=properties
        )
        upgrade_to_v3(table)
        logs[name] = tmp_path / f"{name}-writer.jsonl", tmp_path / f"{name}.jsonl", warehouse
        for command in (["writer", str(warehouse)], ["job", str(warehouse), name]):
            log = logs[name][0 if command[0] == "writer" else 1]
            argv = [*base, *command, str(SECONDS), str(rng.randrange(2**31)), str(log)]
            procs.append(subprocess.Popen(argv, stderr=subprocess.PIPE))
    errors = wait_all(procs, SECONDS + 300)
    for p, err in zip(procs, errors, strict=True):
        assert p.returncode == 0, err.decode()[-3000:]
    return {name: (_lines(w), _lines(j), wh) for name, (w, j, wh) in logs.items()}


def _model(rounds: list[dict[str, Any]]) -> list[int]:
    live = set(range(FIRST_IDS))
    for r in rounds:
        if r["ok"] and r["op"] == "append":
            live.update(r["ids"])
        elif r["ok"]:
            live.difference_update(r["ids"])
    return sorted(live)


def _missing_files(table: Any) -> list[str]:
    """Files any snapshot of the table reaches that are not on disk (pyiceberg's reading,
    each manifest once)."""
    manifests = {}
    for snapshot in table.metadata.snapshots:
        manifests.update((m.manifest_path, m) for m in snapshot.manifests(table.io))
    missing = []
    for manifest in manifests.values():
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            path = local_path(entry.data_file.file_path) or ""
            if not os.path.exists(path):
                missing.append(path)
    return missing


@pytest.mark.slow  # SECONDS a pair of races, then four readers of each table
@pytest.mark.parametrize("jobs", PAIRS, ids="+".join)
def test_each_job_beside_a_busy_writer_finishes_and_loses_nothing(
    tmp_path: Path, jobs: tuple[str, ...]
) -> None:
    seed = random.randrange(2**31)
    for name, (rounds, done, warehouse) in _race(tmp_path, seed, jobs).items():
        failed = [r for r in done if not r["ok"]]
        worked = sum(1 for r in done if r["ok"] and r["did"])
        writer_failed = [r for r in rounds if not r["ok"]]
        committed = len(rounds) - len(writer_failed)
        print(f"{name}: {len(done) - len(failed)}/{len(done)} runs finished, {worked} "
              f"committed; the writer's rounds: {committed}/{len(rounds)}")  # fmt: skip
        assert done and len(failed) <= 0.1 * len(done), f"seed {seed}, {name}: {failed[:3]}"
        assert worked >= 2, f"seed {seed}, {name} committed no work: {done[:5]}"
        assert len(writer_failed) <= 0.1 * len(rounds), f"seed {seed}: {writer_failed[:3]}"
        _check(warehouse, _model(rounds), f"seed {seed}, {name}")


def _check(warehouse: Path, expected: list[int], what: str) -> None:
    """The table verifies, reaches no missing file and holds ``expected`` in every reader."""
    table = local_catalog(warehouse).load_table("db.t")
    assert verify_table(table).problems == [], what
    assert _missing_files(table) == [], what
    ours = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    assert sorted(ours) == expected, what
    metadata = local_path(table.metadata_location) or ""
    for read in (read_pyiceberg, read_duckdb, read_iceberg_rust):
        assert sorted(read(metadata).column("id").to_pylist()) == expected, (what, read)
