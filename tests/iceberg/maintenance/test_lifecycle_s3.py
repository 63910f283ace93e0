"""A v3 table's life on an object store (moto's S3 server on 127.0.0.1), under pyiceberg's SQL
catalog and under a REST catalog (Iceberg Java's ``CatalogHandlers``, tests/peers): appends,
deletion-vector deletes, equality deletes converted to vectors, ``changes``, statistics,
compaction, expiry and orphan cleanup, with the rows of a plain-Python model read back after
every step by ``scan_table``, pyiceberg and DuckDB 1.4.4 (its iceberg extension through
httpfs, pointed at the server)."""

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
from iceberg_fixtures import equality_delete_file
from peers.duckdb_scan import connect_duckdb
from peers.rest_catalog import RestCatalogServer
from puffin.iceberg import (
    append,
    changes,
    convert_equality_deletes,
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


def _read_everywhere(
    table: Any, duck: Any, model: set[int], step: str, pyiceberg: bool = True
) -> None:
    """``pyiceberg=False``: a table with equality deletes, which pyiceberg 0.12 refuses."""
    ours = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    theirs = ours
    if pyiceberg:
        theirs = table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
    location = table.metadata_location.replace("'", "''")
    duckdb = [r[0] for r in duck.execute(f"SELECT id FROM iceberg_scan('{location}')").fetchall()]
    expected = sorted(model)
    assert sorted(ours) == expected, f"scan_table after {step}"
    assert sorted(theirs) == expected, f"pyiceberg after {step}"
    assert sorted(duckdb) == expected, f"DuckDB after {step}"
    assert verify_table(table).problems == [], step


def _equality_deletes(table: Any, ids: list[int]) -> Any:
    """``table`` with one more snapshot: an equality delete file on ``id`` of ``ids``, written
    beside the table's data (no writer we run writes them: Flink does, in production)."""
    import pyarrow as pa

    from puffin.iceberg.metadata.snapshots import commit_snapshot

    field_id = table.schema().find_field("id").field_id
    key = pa.field("id", pa.int64(), nullable=False,
                   metadata={b"PARQUET:field_id": str(field_id).encode()})  # fmt: skip
    keys = pa.table([pa.array(ids, pa.int64())], schema=pa.schema([key]))
    location = f"{table.location()}/data/equality-{time.time_ns()}.parquet"
    made = equality_delete_file(table, location, keys, [field_id])
    return commit_snapshot(table, [], deletes=[made])[0]


@pytest.fixture(params=["sql", pytest.param("rest", marks=[pytest.mark.peer, pytest.mark.java])])
def catalog(
    request: pytest.FixtureRequest, server: CountingS3Server, tmp_path: Path
) -> Iterator[Any]:
    """A catalog of tables under ``s3://lake/<kind>``: pyiceberg's SQL catalog, or a REST
    catalog whose server (Iceberg Java) writes the metadata on the S3 server too."""
    warehouse = f"s3://{LAKE}/{request.param}-{time.time_ns()}"
    if request.param == "sql":
        yield server.sql_catalog(tmp_path / "catalog.db", warehouse)
        return
    with RestCatalogServer(tmp_path, s3=(warehouse, server.endpoint)) as rest:
        yield rest.catalog(**server.fileio_properties())


@pytest.mark.slow  # about 25 s a catalog
def test_a_v3_table_lives_on_s3_read_alike_by_three_readers(
    server: CountingS3Server, catalog: Any
) -> None:
    catalog.create_namespace("db")
    duck = _duckdb(server)
    table = upgrade_to_v3(create_sample_table(catalog, "db.t", rows=400, files=4))
    assert table.metadata_location.startswith(f"s3://{LAKE}/")
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

    equal = [1, 2, 3, 20_011, 30_012]
    table = _equality_deletes(table, equal)
    model -= set(equal)
    _read_everywhere(table, duck, model, "equality deletes", pyiceberg=False)
    converted = convert_equality_deletes(table)
    assert (converted.equality_files, converted.converted_rows) == (1, len(equal))
    table = converted.table
    _read_everywhere(table, duck, model, "equality deletes converted")

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
