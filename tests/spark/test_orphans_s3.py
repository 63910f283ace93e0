"""``puffin.spark.remove_orphan_files`` on an object store (moto's S3 server on 127.0.0.1):
the prefixes listed by Spark tasks give what the single-process listing gives, and the
orphans are deleted in bulk by the tasks (the driver deletes only its marks), each refused
key reported."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")
pytest.importorskip("moto")

import puffin.spark as ps
from _s3_server import CountingS3Server, running
from puffin.iceberg import scan_table, verify_table
from puffin.iceberg.metadata.cleanup_marks import is_mark
from puffin.iceberg.verify.orphans import table_files
from puffin.io.listing import Failed, ObjectStore
from puffin.spark.table_files import list_on_executors

LAKE = "lake"
SCHEMA = pa.schema([pa.field("id", pa.int64())])


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with running(LAKE) as s:
        yield s


def _table(server: CountingS3Server, tmp_path: Path) -> Any:
    catalog = server.sql_catalog(tmp_path / "catalog.db", f"s3://{LAKE}/{tmp_path.name}")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(pa.table({"id": pa.array(range(10), pa.int64())}, schema=SCHEMA))
    return catalog.load_table("db.t")


def _plant(server: CountingS3Server, table: Any) -> list[str]:
    """Orphans in three levels of prefixes and hidden objects beside them; the orphans."""
    prefix = table.location().removeprefix(f"s3://{LAKE}/")
    s3 = server.boto3()
    visible = [f"data/stray-{i:04}.parquet" for i in range(1500)]
    visible += [f"data/p=1/q={i}/stray.parquet" for i in range(40)] + ["metadata/x.avro"]
    for key in [*visible, "data/_temporary/a.parquet", "data/p=1/.b.crc", ".c"]:
        s3.put_object(Bucket=LAKE, Key=f"{prefix}/{key}", Body=b"orphan")
    time.sleep(1.1)  # the listing's times have a one-second resolution
    return sorted(f"{table.location()}/{k}" for k in visible)


def _deletes_marks_only(store: ObjectStore, locations: Sequence[str]) -> list[Failed]:
    assert all(is_mark(loc) for loc in locations), "the driver deleted an orphan itself"
    return _DELETE(store, locations)


_DELETE = ObjectStore.delete


def test_orphans_on_s3_listed_and_deleted_by_spark_tasks(
    spark: Any, server: CountingS3Server, tmp_path: Path
) -> None:
    table = _table(server, tmp_path)
    orphans = _plant(server, table)
    root, properties = table.location(), dict(table.io.properties)
    here = sorted(f for f, _, _ in table_files(table))
    for per_core in (0, 1, 64):  # a task lists the root; the driver opens a level; all
        there = list_on_executors(spark, per_core, properties)(root)
        assert sorted(f for f, _, _ in there) == here

    stray = orphans[7]
    server.refused_deletes = {stray.removeprefix("s3://")}
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ObjectStore, "delete", _deletes_marks_only)
            done = ps.remove_orphan_files(
                spark, table, older_than=datetime.timedelta(0), allow_short_grace_period=True
            )
    finally:
        server.refused_deletes = set()
    assert done.failed == [(stray, "AccessDenied: Access Denied")]
    assert sorted(o.path for o in done.removed) == [o for o in orphans if o != stray]
    left = {f for f, _, _ in table_files(table)}
    assert left == (set(here) - set(orphans)) | {stray}
    assert sorted(scan_table(table).to_arrow().column("id").to_pylist()) == list(range(10))
    assert verify_table(table).problems == []
