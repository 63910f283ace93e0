"""Commits per second of many writers on one table (issue 66): 1, 4 and 8 processes, each
committing ``--commits`` times as fast as it can (our ``append`` of 5 rows and ``delete_rows``
of one base row, a deletion vector in data files every writer deletes from, in turn),
through the embedded SQLite catalog, pyiceberg's SQL catalog on PostgreSQL (Debian's server
on 127.0.0.1) and a REST catalog (Iceberg Java 1.10.2's ``CatalogHandlers``, tests/peers).

Reported per catalog and number of writers: commits landed per second (wall time from the
first start to the last end), the share of commit attempts lost to a concurrent commit, the
commits that gave up after the default ``commit.retry.*`` properties, and whether the
table's rows equal the model of what landed.

Run (after ``make peers``): ``.venv/bin/python bench/bench_many_writers.py [--commits 50]``
(``--smoke``: 5 commits a writer, 1 and 4 writers)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _postgres import postgres_server
from peers.rest_catalog import RestCatalogServer

BASE = 400

# A writer: its catalog from JSON properties, then its commits; it counts the attempts it
# made and lost by wrapping the one commit function every commit of ours goes through.
_WRITER = r"""
import json, sys, time
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import CommitFailedException
from puffin.errors import CommitConflictError
from puffin.iceberg import append, delete_rows, sample_batch
from puffin.iceberg.metadata import v3

properties, worker, commits, go = json.loads(sys.argv[1]), *map(float, sys.argv[2:5])
worker, commits = int(worker), int(commits)
counts = {"attempts": 0, "lost": 0, "landed": 0, "gave_up": 0}
real = v3.commit

def counted(*args, **kwargs):
    counts["attempts"] += 1
    try:
        return real(*args, **kwargs)
    except CommitFailedException:
        counts["lost"] += 1
        raise

v3.commit = counted
table = load_catalog("bench", **properties).load_table("db.t")
added, deleted = [], []
while time.time() < go:
    time.sleep(0.005)
for k in range(commits):
    try:
        if k % 2 == 0:
            first = 1_000_000 * (worker + 1) + 100 * k
            table = append(table, sample_batch(5, start=first, seed=k), statistics="none")
            added += range(first, first + 5)
        else:
            victim = 50 * worker + k % 50
            table = delete_rows(table, f"id in ({victim})").table
            deleted.append(victim)
        counts["landed"] += 1
    except CommitConflictError:
        counts["gave_up"] += 1
        table = table.refresh()
print(json.dumps({**counts, "end": time.time(), "added": added, "deleted": deleted}))
"""


def _table(properties: dict[str, str]) -> None:
    from pyiceberg.catalog import load_catalog

    from puffin.iceberg import create_sample_table, upgrade_to_v3

    catalog = load_catalog("bench", **properties)
    if ("db",) not in catalog.list_namespaces():
        catalog.create_namespace("db")
    if catalog.table_exists("db.t"):
        catalog.purge_table("db.t")
    upgrade_to_v3(create_sample_table(catalog, "db.t", rows=BASE, files=2))


def _trial(properties: dict[str, str], writers: int, commits: int) -> dict[str, Any]:
    """``writers`` processes at once on a fresh table; their counts, the rate, the check."""
    from pyiceberg.catalog import load_catalog

    from puffin.iceberg import scan_table

    _table(properties)
    go = time.time() + 3.0 + 0.5 * writers  # every process started and its imports done
    argv = [sys.executable, "-c", _WRITER, json.dumps(properties)]
    pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    procs = [
        subprocess.Popen([*argv, str(w), str(commits), str(go)], **pipes) for w in range(writers)
    ]
    outs = [p.communicate(timeout=1800) for p in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        if proc.returncode != 0:
            raise RuntimeError(f"a writer failed: {err[-2000:]}")
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    model = set(range(BASE))
    for r in results:
        model = (model | set(r["added"])) - set(r["deleted"])
    table = load_catalog("bench", **properties).load_table("db.t")
    ids = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    total = {k: sum(r[k] for r in results) for k in ("attempts", "lost", "landed", "gave_up")}
    seconds = max(r["end"] for r in results) - go
    return {**total, "seconds": seconds, "exact": sorted(ids) == sorted(model)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=50, help="commits a writer makes")
    parser.add_argument("--smoke", action="store_true", help="5 commits a writer, 1 and 4")
    args = parser.parse_args(argv)
    counts = (1, 4) if args.smoke else (1, 4, 8)
    commits = 5 if args.smoke else args.commits
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-writers-") as tmp, postgres_server() as pg:
        folder = Path(tmp)
        sqlite = {"type": "sql", "uri": f"sqlite:///{folder / 'catalog.db'}",
                  "warehouse": f"file://{folder / 'sqlite'}"}  # fmt: skip
        postgres = {"type": "sql", "uri": pg.uri, "warehouse": f"file://{folder / 'pg'}"}
        with RestCatalogServer(folder / "rest") as rest:
            catalogs = {
                "SQLite": sqlite,
                "PostgreSQL": postgres,
                "REST": {"type": "rest", "uri": rest.uri, "warehouse": str(rest.warehouse)},
            }
            for name, properties in catalogs.items():
                for writers in counts:
                    got = _trial(properties, writers, commits)
                    rows.append((name, writers, got))
                    print(name, writers, json.dumps(got), flush=True)
    _report(rows, commits)
    return 0


def _report(rows: list[tuple[str, int, dict[str, Any]]], commits: int) -> None:
    print(f"\n{commits} commits a writer (appends and deletes in turn), default commit.retry.*")
    print("| catalog | writers | commits/s | attempts lost | gave up | rows = model |")
    print("|---|---|---|---|---|---|")
    for name, writers, got in rows:
        lost = got["lost"] / max(1, got["attempts"])
        print(f"| {name} | {writers} | {got['landed'] / got['seconds']:.1f} | {lost:.0%} "
              f"| {got['gave_up']} of {writers * commits} | {got['exact']} |")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
