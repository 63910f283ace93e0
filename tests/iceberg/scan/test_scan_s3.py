"""Planning, key deletes and scans of a table on an object store (moto's S3 server on
127.0.0.1): the remote paths of ``scan/plan.py`` (manifests read on pyiceberg's pool) and
``scan/parquet_files.py`` (files opened through the table's io, row groups pre-buffered),
each result compared with a model of the rows in plain Python."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("moto")

from _s3_server import CountingS3Server, running
from puffin.iceberg import delete_rows, scan_table, upgrade_to_v3

LAKE = "lake"
BATCHES, ROWS = 3, 2000


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with running(LAKE) as s:
        yield s


def _batch(start: int) -> pa.Table:
    ids = list(range(start, start + ROWS))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array([i % 7 for i in ids], pa.int32()),
            "v": [f"v{i}" for i in ids],
        }
    )


def _rows(table: pa.Table) -> list[tuple[int, int, str]]:
    columns = [table.column(n).to_pylist() for n in ("id", "k", "v")]
    return sorted(zip(*columns, strict=True))


def test_deletes_and_scans_on_s3_match_the_model(
    server: CountingS3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from puffin.iceberg.scan import rows

    opened: list[str] = []
    real = rows.parquet_file

    def recording(source: Any, path: str, **options: Any) -> Any:
        opened.append(path)
        return real(source, path, **options)

    monkeypatch.setattr(rows, "parquet_file", recording)

    catalog = server.sql_catalog(tmp_path / "catalog.db", f"s3://{LAKE}/wh")
    catalog.create_namespace("db")
    table: Any = catalog.create_table("db.t", schema=_batch(0).schema)
    for b in range(BATCHES):
        table.append(_batch(b * ROWS))
    table = upgrade_to_v3(catalog.load_table("db.t"))
    model = {(i, i % 7, f"v{i}") for i in range(BATCHES * ROWS)}

    keys = list(range(5, BATCHES * ROWS, 37))  # past the long-list length, in every file
    result = delete_rows(table, f"id in ({', '.join(map(str, keys))})")
    assert result.deleted_rows == len(keys)
    assert len(opened) == BATCHES and all(p.startswith(f"s3://{LAKE}/") for p in opened)
    model -= {(i, i % 7, f"v{i}") for i in keys}
    table = delete_rows(result.table, "k = 3 and id < 3000").table
    model = {r for r in model if not (r[1] == 3 and r[0] < 3000)}

    expected = sorted(model)
    assert table.io.new_input(table.metadata_location).location.startswith("s3://")
    assert _rows(scan_table(table).to_arrow()) == expected
    assert _rows(scan_table(table).to_arrow_batch_reader().read_all()) == expected
    chosen = scan_table(table, "id in (" + ", ".join(map(str, range(0, 6000, 50))) + ")")
    assert _rows(chosen.to_arrow()) == [r for r in expected if r[0] % 50 == 0]
