"""The maintenance guard on an object store: a table in one bucket whose metadata reaches an
object in another bucket (of a real S3-compatible server, moto on 127.0.0.1) never deletes
it, however its expiry comes about."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("moto")

from _s3_server import CountingS3Server, running
from puffin.iceberg import expire_snapshots, verify_table
from puffin.iceberg.maintenance.guard import normalise

LAKE, OTHER = "lake", "neighbour"


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with running(LAKE, OTHER) as s:
        yield s


def test_an_object_in_another_bucket_survives_expiry(
    server: CountingS3Server, tmp_path: Path
) -> None:
    from pyiceberg.expressions import AlwaysTrue

    s3 = server.boto3()
    schema = pa.schema([pa.field("id", pa.int64())])
    theirs = pa.table({"id": pa.array(range(100, 110), pa.int64())}, schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(theirs, sink)
    body = sink.getvalue().to_pybytes()
    s3.put_object(Bucket=OTHER, Key="tables/theirs.parquet", Body=body)
    # The same bytes under a key of the lake that climbs out of the table once decoded.
    s3.put_object(Bucket=LAKE, Key="wh/db/t/data/%2e%2e/%2e%2e/escaped.parquet", Body=body)

    catalog = server.sql_catalog(tmp_path / "catalog.db", f"s3://{LAKE}/wh")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=schema)
    table.append(pa.table({"id": pa.array(range(10), pa.int64())}, schema=schema))
    outside = [
        f"s3://{OTHER}/tables/theirs.parquet",
        f"s3://{LAKE}/wh/db/t/data/%2e%2e/%2e%2e/escaped.parquet",
    ]
    table.add_files(outside)
    table = catalog.load_table("db.t")
    table.delete(AlwaysTrue())  # copy-on-write: only the expired snapshots reach them now
    table = catalog.load_table("db.t")
    warned = {w.path for w in verify_table(table).warnings if w.kind == "outside-table"}
    assert {normalise(p) for p in warned} == {normalise(p) for p in outside}

    result = expire_snapshots(table, older_than=datetime.timedelta(0))
    assert result.expired_snapshot_ids and result.deleted_files > 0  # the lake's own files
    assert sorted(result.skipped_outside_table) == sorted(outside)
    kept = s3.get_object(Bucket=OTHER, Key="tables/theirs.parquet")["Body"].read()
    escaped = s3.get_object(Bucket=LAKE, Key="wh/db/t/data/%2e%2e/%2e%2e/escaped.parquet")
    assert kept == body and escaped["Body"].read() == body
