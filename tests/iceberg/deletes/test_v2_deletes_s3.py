"""v2 deletes on an object store (moto's S3 on 127.0.0.1): position-delete files and
rewritten data files go through the table's FileIO, and the rows read back are the model's;
a failed commit leaves no object behind (but pyarrow's empty directory markers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("moto")

from _s3_server import CountingS3Server, running
from puffin.iceberg import delete_rows, rewrite_position_delete_files, scan_table

LAKE = "lake"


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with running(LAKE) as s:
        yield s


def _table(server: CountingS3Server, folder: Path, name: str, mode: str) -> Any:
    catalog = server.sql_catalog(folder / "catalog.db", f"s3://{LAKE}/wh")
    catalog.create_namespace_if_not_exists("db")
    schema = pa.schema([pa.field("id", pa.int64())])
    table = catalog.create_table(
        name, schema=schema, properties={"format-version": "2", "write.delete.mode": mode}
    )
    for start in (0, 100):
        table.append(pa.table({"id": pa.array(range(start, start + 100), pa.int64())}))
    return catalog.load_table(name)


def _objects(server: CountingS3Server) -> set[str]:
    """The bucket's objects, less the empty directory markers pyarrow's S3 filesystem
    leaves when it deletes an object (docs/interop.md): no data, no file of the table."""
    listed = server.boto3().list_objects_v2(Bucket=LAKE)
    return {
        o["Key"]
        for o in listed.get("Contents", [])
        if not (o["Key"].endswith("/") and o["Size"] == 0)
    }


def _ids(table: Any) -> list[int]:
    return sorted(scan_table(table).to_arrow()["id"].to_pylist())


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_v2_deletes_on_s3_read_as_the_model(
    server: CountingS3Server, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(server, tmp_path, f"db.t_{mode[0]}", mode)
    table = delete_rows(table, "id < 10 or id >= 195").table
    table = delete_rows(table, "id >= 5 and id < 20").table
    model = [i for i in range(200) if not (i < 20 or i >= 195)]
    assert _ids(table) == model
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == model  # pyiceberg agrees
    if mode == "merge-on-read":
        table = rewrite_position_delete_files(table).table
        assert _ids(table) == model
    before = _objects(server)
    from puffin.iceberg.metadata import v3

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("the catalog is gone")

    monkeypatch.setattr(v3, "_commit", refuse)
    with pytest.raises(OSError, match="the catalog is gone"):
        delete_rows(table, "id = 50")
    assert _objects(server) == before  # nothing it wrote stays
