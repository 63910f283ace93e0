"""Many writers of one table at once, each in its own process: appends of their own rows and
deletion-vector deletes of shared data files, in turn, as fast as they can. With the default
``commit.retry.*`` properties every commit lands (this library's writers take turns at the
commit: ``metadata/commit_turns.py``), and the table holds exactly what they committed, each
row id once, read alike by ``scan_table``, pyiceberg and Iceberg Java. On the embedded
SQLite catalog, on PostgreSQL, and through a REST catalog (Iceberg Java's server,
tests/peers) for a table on the local disk.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from _postgres import Postgres, postgres_server
from peers.rest_catalog import RestCatalogServer
from puffin.iceberg import (
    append,
    create_sample_table,
    delete_rows,
    local_catalog,
    sample_batch,
    scan_table,
    upgrade_to_v3,
    verify_table,
)

BASE = 400
WRITERS = 8
#: commits a writer makes: the shared catalogs' 50, the one-machine catalog's fewer (time)
COMMITS = {"postgres": 50, "rest": 50, "sqlite": 20}


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    with postgres_server() as server:
        yield server


def _open(place: tuple[str, ...]) -> Any:
    """The catalog ``place`` names: ``("sqlite", warehouse)``, ``("postgres", uri, name,
    warehouse)`` or ``("rest", uri, warehouse)``."""
    if place[0] == "sqlite":
        return local_catalog(place[1])
    if place[0] == "rest":
        from pyiceberg.catalog import load_catalog

        return load_catalog("rest", type="rest", uri=place[1], warehouse=place[2])
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(place[2], uri=place[1], warehouse=place[3])


def _writer(place: tuple[str, ...], worker: int, commits: int, out: Any) -> None:
    """Appends of its own rows and deletes of base rows (in the data files every other
    writer deletes from too) in turn; what it committed goes to ``out``."""
    table = _open(place).load_table("db.t")
    added: list[int] = []
    deleted: list[int] = []
    for k in range(commits):
        if k % 2 == 0:
            first = 1_000_000 * (worker + 1) + 100 * k
            table = append(table, sample_batch(5, start=first, seed=k), statistics="none")
            added += range(first, first + 5)
        else:
            victim = 50 * worker + k  # base rows: 50 a writer
            table = delete_rows(table, f"id in ({victim})").table
            deleted.append(victim)
    out.put((added, deleted))


def _results(procs: list[Any], out: Any, timeout: float = 600) -> list[Any]:
    """Each writer's report; a writer that ended without one fails the test at once."""
    import queue
    import time

    results: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(results) < len(procs) and time.monotonic() < deadline:
        try:
            results.append(out.get(timeout=1))
        except queue.Empty:
            ended = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            assert not ended, f"writers ended without a report, exit codes {ended}"
    assert len(results) == len(procs), f"{len(results)} of {len(procs)} writers reported"
    return results


def _ids(table: Any) -> list[int]:
    ours = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    theirs = table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
    assert sorted(theirs) == sorted(ours), "pyiceberg reads other rows than scan_table"
    return sorted(ours)


@pytest.fixture
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, ...]]:
    """Where the writers' catalog is (see :func:`_open`)."""
    kind = request.param
    if kind == "sqlite":
        yield ("sqlite", str(tmp_path))
    elif kind == "postgres":
        pg = request.getfixturevalue("pg")
        catalog = pg.catalog(tmp_path)
        yield ("postgres", pg.uri, catalog.name, catalog.properties["warehouse"])
    else:
        with RestCatalogServer(tmp_path) as rest:
            yield ("rest", rest.uri, str(rest.warehouse))


@pytest.mark.slow  # about 40 s on PostgreSQL and REST, 15 s on SQLite
@pytest.mark.parametrize(
    "place",
    ["sqlite", "postgres", pytest.param("rest", marks=[pytest.mark.peer, pytest.mark.java])],
    indirect=True,
)
def test_every_commit_of_many_writers_lands(place: tuple[str, ...], java: Any) -> None:
    kind = place[0]
    catalog = _open(place)
    catalog.create_namespace("db")
    table = upgrade_to_v3(create_sample_table(catalog, "db.t", rows=BASE, files=2))
    snapshots = len(table.metadata.snapshots)
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    commits = COMMITS[kind]
    procs = [context.Process(target=_writer, args=(place, w, commits, out)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    try:
        results = _results(procs, out)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * WRITERS, "a writer gave up (see its stderr)"
    model = set(range(BASE))
    for added, deleted in results:
        model = (model | set(added)) - set(deleted)
    table = table.refresh()
    assert len(table.metadata.snapshots) == snapshots + WRITERS * commits
    assert _ids(table) == sorted(model)
    row_ids = scan_table(table, selected_fields=("_row_id",)).to_arrow().column(0).to_pylist()
    assert len(set(row_ids)) == len(row_ids) == len(model)
    assert verify_table(table).problems == []
    theirs = java.read(table.metadata_location, ["id"]).column("id").to_pylist()
    assert sorted(theirs) == sorted(model), "Iceberg Java reads other rows"
