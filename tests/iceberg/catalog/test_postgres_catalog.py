"""Tables behind pyiceberg's SQL catalog on a real PostgreSQL server (Debian's, on 127.0.0.1:
``tests/_postgres.py``), the catalog teams share between machines.

Every table job keeps the rows of a plain-Python model, read back by ``scan_table`` and
pyiceberg; writers in several processes commit appends and deletion-vector deletes beside
each other, every commit lands (with the default ``commit.retry.*`` properties), and the
table holds exactly what they committed, each row id once.
"""

from __future__ import annotations

import datetime
import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from _postgres import Postgres, postgres_server
from puffin.iceberg import (
    append,
    changes,
    create_sample_table,
    delete_rows,
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
    rewrite_manifests,
    rewrite_position_delete_files,
    sample_batch,
    scan_table,
    update_table_statistics,
    upgrade_to_v3,
    verify_table,
)
from puffin.iceberg.writes.transaction import transaction

BASE = 400


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    with postgres_server() as server:
        yield server


def _ids(table: Any, pyiceberg: bool = True) -> list[int]:
    ours = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    if pyiceberg:
        theirs = table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
        assert sorted(theirs) == sorted(ours), "pyiceberg reads other rows than scan_table"
    return sorted(ours)


def _in(ids: list[int]) -> str:
    return f"id in ({', '.join(map(str, ids))})"


@pytest.mark.slow  # about 10 s
def test_every_job_keeps_the_model_rows(pg: Postgres, tmp_path: Path) -> None:
    catalog = pg.catalog(tmp_path)
    catalog.create_namespace("db")
    table = create_sample_table(catalog, "db.t", rows=BASE, files=4)
    model = set(range(BASE))
    table = delete_rows(table, _in(list(range(0, 40, 3)))).table  # v2: position deletes
    model -= set(range(0, 40, 3))
    table = upgrade_to_v3(table)  # the position deletes become vectors
    assert _ids(table) == sorted(model)

    before = table.current_snapshot().snapshot_id
    table = append(table, sample_batch(30, start=10_000, seed=1), statistics="none")
    table = delete_rows(table, _in([10_001, 10_002, 100, 101])).table
    model = (model | set(range(10_000, 10_030))) - {10_001, 10_002, 100, 101}
    assert _ids(table) == sorted(model)
    changed = changes(table, before, table.current_snapshot().snapshot_id).to_arrow()
    assert set(changed.column("id").to_pylist()) == {*range(10_000, 10_030), 100, 101}

    with transaction(table) as tx:
        tx.set_properties({"owner": "team-a"})
    update_table_statistics(table, progress=False)
    for job in (rewrite_position_delete_files, rewrite_manifests):
        table = job(table).table
        assert _ids(table) == sorted(model), job.__name__
    table = rewrite_data_files(table, min_input_files=2, min_deleted_fraction=0.0).table
    table = expire_snapshots(table, older_than=datetime.timedelta(0)).table
    assert len(table.metadata.snapshots) == 1 and table.properties["owner"] == "team-a"

    stray = tmp_path / "db" / "t" / "data" / "stray.parquet"
    stray.write_bytes(b"left by a killed write")
    time.sleep(1.1)
    done = remove_orphan_files(table, older_than=datetime.timedelta(0),
                               allow_short_grace_period=True)  # fmt: skip
    assert [Path(o.path.removeprefix("file://")) for o in done.removed] == [stray]
    table = pg.catalog(tmp_path, name=table.catalog.name).load_table("db.t")
    assert _ids(table) == sorted(model)
    assert verify_table(table).problems == []


def _writer(uri: str, name: str, warehouse: str, worker: int, commits: int, out: Any) -> None:
    """Appends of its own rows and deletes of base rows (the same data files as every other
    writer's deletes) in turn; what it committed goes to ``out``."""
    from pyiceberg.catalog.sql import SqlCatalog

    table = SqlCatalog(name, uri=uri, warehouse=warehouse).load_table("db.t")
    added: list[int] = []
    deleted: list[int] = []
    for k in range(commits):
        if k % 2 == 0:
            first = 1_000_000 * (worker + 1) + 100 * k
            table = append(table, sample_batch(10, start=first, seed=k), statistics="none")
            added += range(first, first + 10)
        else:
            victims = [n for n in range(BASE) if n % 50 == k and n // 50 % 8 == worker]
            table = delete_rows(table, _in(victims or [-1])).table
            deleted += victims
    out.put((added, deleted))


@pytest.mark.slow  # about 40 s
def test_writers_in_processes_all_land(pg: Postgres, tmp_path: Path) -> None:
    writers, commits = 4, 10
    catalog = pg.catalog(tmp_path)
    catalog.create_namespace("db")
    table = upgrade_to_v3(create_sample_table(catalog, "db.t", rows=BASE, files=2))
    snapshots = len(table.metadata.snapshots)
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    shared = (pg.uri, catalog.name, catalog.properties["warehouse"])
    procs = [
        context.Process(target=_writer, args=(*shared, w, commits, out)) for w in range(writers)
    ]
    for p in procs:
        p.start()
    try:
        results = [out.get(timeout=300) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert all(p.exitcode == 0 for p in procs)
    model = set(range(BASE))
    for added, deleted in results:
        model = (model | set(added)) - set(deleted)
    table = table.refresh()
    assert _ids(table) == sorted(model)
    row_ids = scan_table(table, selected_fields=("_row_id",)).to_arrow().column(0).to_pylist()
    assert len(set(row_ids)) == len(row_ids) == len(model)
    assert len(table.metadata.snapshots) == snapshots + writers * commits
    assert verify_table(table).problems == []
