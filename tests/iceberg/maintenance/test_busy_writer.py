"""Maintenance beside a busy writer (issue 59): each job in a loop for ``SECONDS`` while
another process appends and deletes every 50 ms, on a v3 table.

Each job commits on the table as it is when its commit lands where the concurrent commits
do not conflict with what it replaces (docs/iceberg.md, "Maintenance beside writers"), so
at least 90 % of its runs must finish. Afterwards the table verifies, holds exactly the
model's rows (the sample's ids, plus each append the writer reported committed, minus each
delete it reported committed: computed here, without any reader) in our scan, pyiceberg,
DuckDB and iceberg-rust, and nothing any snapshot reaches is missing.
``PUFFIN_BUSY_SECONDS`` sets the length (30 by default).
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
JOBS = ["expire", "compact", "rewrite-deletes", "rewrite-manifests"]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _race(tmp_path: Path, name: str, seed: int) -> tuple[list[Any], list[Any], Path]:
    warehouse = tmp_path / "wh"
    table = create_sample_table(local_catalog(warehouse), "db.t", rows=FIRST_IDS, files=4)
    upgrade_to_v3(table)
    rng = random.Random(seed)
    logs = tmp_path / "writer.jsonl", tmp_path / "job.jsonl"
    base = [sys.executable, str(ACTORS)]
    procs = [
        subprocess.Popen([*base, "writer", str(warehouse), str(SECONDS),
                          str(rng.randrange(2**31)), str(logs[0])], stderr=subprocess.PIPE),
        subprocess.Popen([*base, "job", str(warehouse), name, str(SECONDS),
                          str(rng.randrange(2**31)), str(logs[1])], stderr=subprocess.PIPE),
    ]  # fmt: skip
    try:
        errors = [p.communicate(timeout=SECONDS + 180)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, err in zip(procs, errors, strict=True):
        assert p.returncode == 0, err.decode()[-3000:]
    return _lines(logs[0]), _lines(logs[1]), warehouse


def _model(rounds: list[dict[str, Any]]) -> list[int]:
    live = set(range(FIRST_IDS))
    for r in rounds:
        if r["ok"] and r["op"] == "append":
            live.update(r["ids"])
        elif r["ok"]:
            live.difference_update(r["ids"])
    return sorted(live)


def _missing_files(table: Any) -> list[str]:
    """Files any snapshot of the table reaches that are not on disk (pyiceberg's reading)."""
    missing = []
    for snapshot in table.metadata.snapshots:
        for manifest in snapshot.manifests(table.io):
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                path = local_path(entry.data_file.file_path) or ""
                if not os.path.exists(path):
                    missing.append(path)
    return missing


@pytest.mark.slow  # SECONDS a job, then four readers
@pytest.mark.parametrize("name", JOBS)
def test_a_job_beside_a_busy_writer_finishes_and_loses_nothing(tmp_path: Path, name: str) -> None:
    seed = random.randrange(2**31)
    rounds, runs, warehouse = _race(tmp_path, name, seed)
    failed = [r for r in runs if not r["ok"]]
    print(f"{name}: {len(runs) - len(failed)}/{len(runs)} runs finished, work in "
          f"{sum(1 for r in runs if r['ok'] and r['did'])}; the writer's rounds: "
          f"{sum(r['ok'] for r in rounds)}/{len(rounds)}")  # fmt: skip
    assert runs and len(failed) <= 0.1 * len(runs), f"seed {seed}: {len(failed)}/{len(runs)} " \
        f"runs failed: {failed[:3]}"  # fmt: skip
    assert sum(1 for r in runs if r["ok"] and r["did"]) >= 2, f"seed {seed}: no work: {runs}"
    writer_failed = [r for r in rounds if not r["ok"]]
    assert len(writer_failed) <= 0.1 * len(rounds), f"seed {seed}: {writer_failed[:3]}"
    expected = _model(rounds)
    table = local_catalog(warehouse).load_table("db.t")
    assert verify_table(table).problems == []
    assert _missing_files(table) == []
    ours = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    assert sorted(ours) == expected, f"seed {seed}"
    metadata = local_path(table.metadata_location) or ""
    for read in (read_pyiceberg, read_duckdb, read_iceberg_rust):
        assert sorted(read(metadata).column("id").to_pylist()) == expected, read.__name__
