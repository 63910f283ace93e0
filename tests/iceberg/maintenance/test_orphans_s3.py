"""Orphan cleanup on an object store (moto's S3 server on 127.0.0.1, counting requests):
every object under the table's prefix is listed, orphans go in bulk deletes of up to 1,000
keys, each key the store refuses is reported, and a writer of this library waits for the
marks a cleanup puts down before it deletes."""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("moto")

from _s3_server import CountingS3Server, running
from puffin.errors import StorageError, WrittenFileGoneError
from puffin.iceberg import add_files, remove_orphan_files, scan_table, verify_table
from puffin.iceberg.metadata.cleanup_marks import MARK_PREFIX, mark_body, new_mark_location
from puffin.io.listing import object_store

LAKE = "lake"
NOW = datetime.timedelta(0)
SCHEMA = pa.schema([pa.field("id", pa.int64())])


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with running(LAKE) as s:
        yield s


@pytest.fixture
def table(server: CountingS3Server, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    server.refused_deletes = set()
    catalog = server.sql_catalog(tmp_path / "catalog.db", f"s3://{LAKE}/wh")
    catalog.create_namespace(request.node.name[:40])
    table = catalog.create_table(f"{request.node.name[:40]}.t", schema=SCHEMA)
    table.append(pa.table({"id": pa.array(range(10), pa.int64())}, schema=SCHEMA))
    return catalog.load_table(table.name())


def _key(table: Any, relative: str) -> str:
    return f"{table.location().removeprefix(f's3://{LAKE}/')}/{relative}"


def _put(server: CountingS3Server, table: Any, relatives: list[str]) -> list[str]:
    s3 = server.boto3()
    for relative in relatives:
        s3.put_object(Bucket=LAKE, Key=_key(table, relative), Body=b"left by a killed write")
    return [f"{table.location()}/{r}" for r in relatives]


def _objects(server: CountingS3Server, table: Any) -> set[str]:
    pages = server.boto3().get_paginator("list_objects_v2")
    prefix = _key(table, "")
    return {
        f"s3://{LAKE}/{o['Key']}"
        for page in pages.paginate(Bucket=LAKE, Prefix=prefix)
        for o in page.get("Contents", [])
    }


def store_get(server: CountingS3Server, location: str) -> bytes:
    key = location.removeprefix(f"s3://{LAKE}/")
    return bytes(server.boto3().get_object(Bucket=LAKE, Key=key)["Body"].read())


def _ids(table: Any) -> list[int]:
    return sorted(scan_table(table).to_arrow().column("id").to_pylist())


def test_every_orphan_is_listed_and_deleted_in_bulk(server: CountingS3Server, table: Any) -> None:
    strays = _put(server, table, [f"data/stray-{i:04}.parquet" for i in range(2345)])
    strays += _put(server, table, ["data/deep/er/stray.avro", "metadata/snap-0-stray.avro"])
    hidden = _put(server, table, ["data/_temporary/x.parquet", ".hidden", "data/.x.crc"])
    hidden += _put(server, table, ["metadata/version-hint.text"])
    time.sleep(1.1)  # the listing's times have a one-second resolution
    before = _objects(server, table)

    dry = remove_orphan_files(table, dry_run=True, older_than=NOW)
    assert sorted(o.path for o in dry.orphans) == sorted(strays)
    assert dry.requests == {"list": 3}  # about 2,360 objects: three pages of 1,000 keys
    assert _objects(server, table) == before

    server.log.clear()
    done = remove_orphan_files(table, older_than=NOW, allow_short_grace_period=True)
    bulk = [r for r in server.log.snapshot() if r.method == "POST"]
    assert sorted(o.path for o in done.removed) == sorted(strays) and done.failed == []
    kinds = {"data": (2345, 2345 * 22), "manifest": (1, 22), "manifest-list": (1, 22)}
    assert done.deleted == kinds
    # three batches of at most 1,000 keys, and each batch's mark removed (in bulk too)
    assert len(bulk) == 3 and done.requests["delete"] == 3 and done.requests["put"] == 6
    marks = [o for o in _objects(server, table) if MARK_PREFIX in o]  # kept for the writers
    assert _objects(server, table) - set(marks) == before - set(strays)
    assert set(hidden) <= _objects(server, table)
    assert len(marks) == 3 and all(json.loads(store_get(server, m))["done"] for m in marks)
    assert _ids(table) == list(range(10)) and verify_table(table).problems == []


def test_a_key_the_store_refuses_is_reported(server: CountingS3Server, table: Any) -> None:
    strays = _put(server, table, [f"data/stray-{i}.parquet" for i in range(5)])
    server.refused_deletes = {f"{LAKE}/{_key(table, 'data/stray-3.parquet')}"}
    time.sleep(1.1)
    done = remove_orphan_files(table, older_than=NOW, allow_short_grace_period=True)
    assert done.failed == [(strays[3], "AccessDenied: Access Denied")]
    assert sorted(o.path for o in done.removed) == sorted(set(strays) - {strays[3]})
    assert strays[3] in _objects(server, table) and done.deleted["data"][0] == 4


def test_an_s3a_spelling_of_a_live_file_is_no_orphan(server: CountingS3Server, table: Any) -> None:
    [written] = _put(server, table, ["data/added.parquet"])
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": pa.array([42], pa.int64())}, schema=SCHEMA), sink)
    server.boto3().put_object(
        Bucket=LAKE, Key=_key(table, "data/added.parquet"), Body=sink.getvalue().to_pybytes()
    )
    table = add_files(table, [written.replace("s3://", "s3a://")])
    time.sleep(1.1)
    done = remove_orphan_files(table, older_than=NOW, allow_short_grace_period=True)
    assert done.orphans == [] and written in _objects(server, table)
    assert _ids(table) == [*range(10), 42]


def test_a_commit_waits_for_a_mark_naming_its_file(server: CountingS3Server, table: Any) -> None:
    """A cleanup's mark names the file a commit adds: the commit waits until the mark is
    done, then commits the file that is still there, or fails when the cleanup deleted it."""
    store = object_store(table.location(), table.io)
    for deleted in (False, True):
        [written] = _put(server, table, [f"data/marked-{deleted}.parquet"])
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table({"id": pa.array([100], pa.int64())}, schema=SCHEMA), sink)
        store.put(written, sink.getvalue().to_pybytes())
        mark = new_mark_location(table.location())
        store.put(mark, mark_body([written], done=False))

        def cleanup_finishes(mark: str = mark, written: str = written, deleted: bool = deleted):
            time.sleep(1.0)
            if deleted:
                store.delete([written])
            store.put(mark, mark_body([written], done=True))

        helper = threading.Thread(target=cleanup_finishes)
        started = time.monotonic()
        helper.start()
        try:
            if deleted:
                with pytest.raises(WrittenFileGoneError, match="marked-True"):
                    add_files(table, [written])
            else:
                table = add_files(table, [written])
        finally:
            helper.join()
        assert time.monotonic() - started >= 1.0
    assert _ids(table.refresh()) == [*range(10), 100] and verify_table(table).problems == []


def test_a_location_nothing_can_list_is_an_error() -> None:
    class NoListing:  # a FileIO with no filesystem to lend
        def __init__(self) -> None:
            self.properties: dict[str, str] = {}

    with pytest.raises(StorageError, match=r"cannot list zz:// objects.*pip install"):
        object_store("zz://bucket/t", NoListing())  # exit 1 on the command line
    with pytest.raises(StorageError, match=r"cannot list zz:// objects"):
        object_store("zz://bucket/t")  # no FileIO: fsspec knows no such scheme


def test_the_command_line_reports_what_the_store_refused(
    server: CountingS3Server, table: Any, tmp_path: Path
) -> None:
    """``puffin table remove-orphans --catalog NAME`` on the S3 table: the dry run lists the
    orphans; a delete the store refuses for one key exits 1 naming it, the rest deleted."""
    import os
    import subprocess
    import sys

    strays = _put(server, table, [f"data/stray-{i}.parquet" for i in range(3)])
    time.sleep(1.1)
    env = {**os.environ, "PYICEBERG_CATALOG__S3__TYPE": "sql",
           "PYICEBERG_CATALOG__S3__URI": str(table.catalog.engine.url),
           "PYICEBERG_CATALOG__S3__WAREHOUSE": f"s3://{LAKE}/wh"}  # fmt: skip
    env.update({f"PYICEBERG_CATALOG__S3__{k.upper().replace('.', '__').replace('-', '_')}": v
                for k, v in server.fileio_properties().items()})  # fmt: skip
    command = [sys.executable, "-m", "puffin", "table", "remove-orphans",
               ".".join(table.name()), "--catalog", "s3", "--older-than", "0s"]  # fmt: skip

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*command, *extra], env=env, capture_output=True, text=True)

    dry = run()
    assert dry.returncode == 0, dry.stderr
    assert [line.split()[1] for line in dry.stdout.splitlines()[:3]] == strays
    server.refused_deletes = {strays[1].removeprefix("s3://")}
    done = run("--delete", "--allow-short-grace-period", "--json")
    assert done.returncode == 1, done.stderr
    assert "refused to delete 1 orphan(s)" in done.stderr
    doc = json.loads(done.stdout)
    assert doc["failed"] == [{"path": strays[1], "reason": "AccessDenied: Access Denied"}]
    assert sorted(f["path"] for f in doc["files"]) == [strays[0], strays[2]]
    assert doc["requests"]["delete"] >= 1 and _objects(server, table) & set(strays) == {strays[1]}


def test_a_pyarrow_filesystem_lists_and_deletes_alike(server: CountingS3Server, table: Any) -> None:
    """Without s3fs, a PyArrowFileIO's own filesystem lists the same objects (and deletes
    them one request each)."""
    from puffin.io.listing import ObjectStore

    strays = _put(server, table, ["data/a/x.parquet", "data/b.parquet", "metadata/c.avro"])
    fsspec_store = object_store(table.location(), table.io)
    arrow = ObjectStore(table.io.fs_by_scheme("s3", LAKE), "arrow")
    walked = [(e.location, e.size) for e in arrow.walk(table.location())]
    assert walked == [(e.location, e.size) for e in fsspec_store.walk(table.location())]
    assert arrow.level(table.location() + "/data") == fsspec_store.level(table.location() + "/data")
    assert arrow.delete(strays) == [] and arrow.requests["delete"] == 3
    assert not set(strays) & _objects(server, table)


@pytest.mark.slow  # about 30 s: the client's backoff between its tries
def test_the_retries_of_the_listing_are_counted(server: CountingS3Server, table: Any) -> None:
    """A store that answers 503 SlowDown now and then: the listing's client tries again, and
    the result counts those tries (``requests["retried"]``)."""
    from _s3_server import Faults

    strays = _put(server, table, [f"data/stray-{i:04}.parquet" for i in range(1500)])
    time.sleep(1.1)
    server.faults = Faults(0.5, seed=11, kinds=("503",), listings_only=True)
    try:
        dry = remove_orphan_files(table, dry_run=True, older_than=NOW)
    finally:
        faults, server.faults = server.faults, None
    assert sorted(o.path for o in dry.orphans) == sorted(strays)
    assert dry.requests["list"] == 2 and dry.requests["retried"] >= 1, (dry.requests, faults)


def test_verify_says_what_it_could_not_list(
    server: CountingS3Server, table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no client can list the table's prefix, ``verify_table`` still checks what needs
    no listing and says, in one warning, what it did not look for."""
    import puffin.io.listing as listing

    def cannot(location: str, io: Any = None) -> Any:
        raise listing.CannotListError(f"{location}: cannot list s3:// objects (a test)")

    monkeypatch.setattr(listing, "object_store", cannot)
    report = verify_table(table)
    assert report.problems == []
    assert [(w.kind, w.path) for w in report.warnings] == [("not-listed", table.location())]
