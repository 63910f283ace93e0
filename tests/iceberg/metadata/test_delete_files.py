"""The one loader of a table's delete files, on an object store: each Puffin file opened once,
each deletion vector one GET of exactly its manifest range (no footer, no read-ahead), its
record_count checked; the positions equal a model computed from the conditions alone.

A real S3-compatible server (moto, tests/_s3_server.py) on 127.0.0.1 counts the requests;
the table lives on it through pyiceberg's own FileIOs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("moto.moto_server.werkzeug_app")
pytest.importorskip("s3fs")

from _s3_server import CountingS3Server, running
from puffin.iceberg import delete_rows, upgrade_to_v3
from puffin.iceberg.metadata.delete_files import DeleteIndex, deletion_vector_refs
from puffin.iceberg.scan.plan import plan_files

BUCKET = "lake"
ROWS, FILES = 3_000, 3


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with running(BUCKET) as s:
        yield s


@pytest.mark.parametrize("by_entry", [False, True])
@pytest.mark.parametrize("fileio", ["pyarrow", "fsspec"])
def test_each_vector_is_one_get_of_its_range(
    server: CountingS3Server, tmp_path: Path, fileio: str, by_entry: bool
) -> None:
    """``by_entry`` (a Spark task's index): each vector read by its own entry's range, and
    no manifest read at all."""
    from pyiceberg.catalog.sql import SqlCatalog

    impl = {
        "pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO",
        "fsspec": "pyiceberg.io.fsspec.FsspecFileIO",
    }[fileio]
    catalog = SqlCatalog(
        "s3",
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=f"s3://{BUCKET}/{fileio}",
        **{"py-io-impl": impl, **server.fileio_properties()},
    )
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.int64())])
    table = catalog.create_table("db.t", schema=schema)
    for part in range(FILES):  # one data file per append
        ids = np.arange(part * ROWS, (part + 1) * ROWS, dtype=np.int64)
        table.append(pa.table({"id": ids, "k": ids % 7}, schema=schema))
    table = upgrade_to_v3(catalog.load_table("db.t"))
    deleted: set[int] = set()  # the model: ids deleted, from the conditions alone
    for where, matches in (("k = 3", lambda i: i % 7 == 3), ("id < 10", lambda i: i < 10)):
        table = delete_rows(table, where).table
        deleted |= {i for i in range(ROWS * FILES) if matches(i)}

    snapshot = table.current_snapshot()
    assert snapshot is not None
    refs = deletion_vector_refs(table, snapshot)
    assert len(refs) == FILES
    files = {r.path for r in refs}
    assert len(files) == 2  # the second delete rewrote one vector into a file of its own
    planned_files = plan_files(table, snapshot)
    server.log.clear()
    index = DeleteIndex(table, snapshot, by_entry=by_entry)
    found: set[int] = set()
    for planned in planned_files:
        positions = index.positions(planned.path, planned.delete_files)
        assert positions is not None
        first = _first_id(table, planned.path)
        found |= {first + int(p) for p in positions}
    assert found == deleted

    puffin_gets = [r for r in server.log.snapshot() if r.method == "GET" and "puffin" in r.path]
    expected = sorted(
        f"bytes={r.content_offset}-{r.content_offset + r.content_size_in_bytes - 1}"
        for r in refs
    )
    assert sorted(r.range or "" for r in puffin_gets) == expected
    heads = [r.path for r in server.log.snapshot() if r.method == "HEAD" and "puffin" in r.path]
    # fsspec: the manifest's file_size_in_bytes stands in for a HEAD; PyArrow's input file
    # asks the size itself when opened, once per Puffin file.
    opened = len(refs) if by_entry else len(files)  # by entry: each vector's file opened
    assert len(heads) == (opened if fileio == "pyarrow" else 0)
    if by_entry:
        assert not [r for r in server.log.snapshot() if r.path.endswith(".avro")]
    else:
        assert len(set(heads)) == len(heads)


def _first_id(table: object, path: str) -> int:
    """The id of the data file's first row (each file holds ``ROWS`` consecutive ids)."""
    import pyarrow.parquet as pq

    io = table.io  # type: ignore[attr-defined]
    with io.new_input(path).open() as f:
        return int(pq.read_table(f, columns=["id"]).column("id")[0].as_py())
