"""Tables behind pyiceberg's SQL catalog on a real PostgreSQL server (Debian's, on 127.0.0.1:
``tests/_postgres.py``), the catalog teams share between machines.

Every table job keeps the rows of a plain-Python model, read back by ``scan_table`` and
pyiceberg. Many writers at once: ``test_many_writers.py``.
"""

from __future__ import annotations

import datetime
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
