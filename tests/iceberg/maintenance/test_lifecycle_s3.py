"""A v3 table's life on an object store (moto's S3 server on 127.0.0.1, pyiceberg's SQL
catalog): appends, deletion-vector deletes, ``changes``, statistics, compaction, expiry and
orphan cleanup, with the rows of a plain-Python model read back after every step by
``scan_table``, pyiceberg and DuckDB 1.4.4 (its iceberg extension through httpfs, pointed
at the server)."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("moto")
pytest.importorskip("duckdb")

from _s3_server import KEY, REGION, SECRET, CountingS3Server, running
from peers.duckdb_scan import connect_duckdb
from puffin.iceberg import (
    append,
    changes,
    create_sample_table,
    delete_rows,
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
    sample_batch,
    scan_table,
    update_table_statistics,
    upgrade_to_v3,
    verify_table,
)

LAKE = "lake"


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with running(LAKE) as s:
        yield s


def _duckdb(server: CountingS3Server) -> Any:
    con = connect_duckdb()
    con.execute("LOAD httpfs")
    host = server.endpoint.removeprefix("http://")
    con.execute(
        f"CREATE SECRET (TYPE s3, KEY_ID '{KEY}', SECRET '{SECRET}', REGION '{REGION}', "
        f"ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)"
    )
    return con


def _read_everywhere(table: Any, duck: Any, model: set[int], step: str) -> None:
    ours = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    theirs = table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
    location = table.metadata_location.replace("'", "''")
    duckdb = [r[0] for r in duck.execute(f"SELECT id FROM iceberg_scan('{location}')").fetchall()]
    expected = sorted(model)
    assert sorted(ours) == expected, f"scan_table after {step}"
    assert sorted(theirs) == expected, f"pyiceberg after {step}"
    assert sorted(duckdb) == expected, f"DuckDB after {step}"
    assert verify_table(table).problems == [], step


@pytest.mark.slow  # about 20 s
def test_a_v3_table_lives_on_s3_read_alike_by_three_readers(
    server: CountingS3Server, tmp_path: Path
) -> None:
    catalog = server.sql_catalog(tmp_path / "catalog.db", f"s3://{LAKE}/life")
    catalog.create_namespace("db")
    duck = _duckdb(server)
    table = upgrade_to_v3(create_sample_table(catalog, "db.t", rows=400, files=4))
    model = set(range(400))
    _read_everywhere(table, duck, model, "create and upgrade")

    for round_ in range(3):
        first = 10_000 * (round_ + 1)
        table = append(table, sample_batch(50, start=first, seed=round_), statistics="none")
        model |= set(range(first, first + 50))
        _read_everywhere(table, duck, model, f"append {round_}")
    before = table.current_snapshot().snapshot_id

    sevens = [i for i in range(300) if i % 7 == 0]
    table = delete_rows(table, f"id in ({', '.join(map(str, sevens))})").table
    model -= set(sevens)
    table = delete_rows(table, "id >= 20000 and id < 20010").table
    model -= set(range(20_000, 20_010))
    _read_everywhere(table, duck, model, "deletes")
    deleted = changes(table, before, table.current_snapshot().snapshot_id).to_arrow()
    removed = sorted(
        i for i, kind in zip(deleted.column("id").to_pylist(),
                             deleted.column("_change_type").to_pylist(), strict=True)
        if kind == "DELETE"
    )  # fmt: skip
    assert removed == sorted({*sevens, *range(20_000, 20_010)})

    statistics = update_table_statistics(table)
    assert statistics.statistics_path.startswith(f"s3://{LAKE}/")
    table = rewrite_data_files(table, min_input_files=2, min_deleted_fraction=0.0).table
    _read_everywhere(table, duck, model, "compaction")

    table = expire_snapshots(table, older_than=datetime.timedelta(0)).table
    assert len(table.metadata.snapshots) == 1
    _read_everywhere(table, duck, model, "expiry")

    stray = f"{table.location().removeprefix(f's3://{LAKE}/')}/data/stray.parquet"
    server.boto3().put_object(Bucket=LAKE, Key=stray, Body=b"left by a killed write")
    time.sleep(1.1)
    done = remove_orphan_files(table, older_than=datetime.timedelta(0),
                               allow_short_grace_period=True)  # fmt: skip
    assert [o.path for o in done.removed] == [f"s3://{LAKE}/{stray}"]
    _read_everywhere(table.refresh(), duck, model, "orphan cleanup")
