"""Appends keep a v3 table writable from Python, with the spec's row lineage.

pyiceberg 0.12 refuses to write a v3 manifest, so after ``upgrade_to_v3`` and a delete a
pipeline's next ``table.append(df)`` failed.  ``puffin.iceberg.append`` writes pyiceberg's
own data files and commits through the v3 metadata writer; independent readers (pyiceberg,
DuckDB 1.4.4, iceberg-rust) and our ``scan_table`` must then return exactly the model's rows
(the data files read with pyarrow, the condition applied with pyarrow's compute).
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from peers import comparable_rows, read_duckdb, read_iceberg_rust, read_pyiceberg
from puffin.errors import CommitConflictError, UsageError
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
from puffin.iceberg.metadata.manifests import read_manifest_list
from puffin.iceberg.metadata.v3 import first_row_id_of


def _v3(warehouse: Path, rows: int = 1200) -> Any:
    table = upgrade_to_v3(create_sample_table(local_catalog(warehouse), "db.t", rows=rows, files=3))
    return delete_rows(table, "category = 3").table


def _model(table: Any) -> pa.Table:
    """The rows ``_v3`` leaves, without any Iceberg reader: its data files read with pyarrow,
    the ``category = 3`` rows dropped (a null category is kept: it matches nothing)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from puffin.io.locations import local_path

    paths = sorted(t.file.file_path for t in table.scan().plan_files())
    data = pa.concat_tables(pq.read_table(local_path(p)) for p in paths)
    return data.filter(pc.invert(pc.fill_null(pc.equal(data["category"], 3), False)))


def _every_reader_reads(table: Any, model: pa.Table) -> None:
    location, schema = table.metadata_location, table.schema()
    want = comparable_rows(model, schema)
    readers = {
        "pyiceberg": read_pyiceberg, "duckdb": read_duckdb, "iceberg-rust": read_iceberg_rust,
        "scan_table": lambda _: scan_table(table).to_arrow(),
    }
    for name, read in readers.items():
        assert comparable_rows(read(location), schema) == want, name


def _ids(table: Any) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_append_after_deletes_with_row_lineage_read_by_every_peer(tmp_path: Path) -> None:
    table = _v3(tmp_path)
    model = _model(table)
    next_row_id = table.metadata.next_row_id
    batch = sample_batch(700, start=5000, seed=3)
    appended = append(table, batch)

    snapshot = appended.current_snapshot()
    assert snapshot.summary.operation.value == "append"
    assert (snapshot.first_row_id, snapshot.added_rows) == (next_row_id, 700)
    assert appended.metadata.next_row_id == next_row_id + 700
    manifests = read_manifest_list(appended.io, snapshot.manifest_list)
    assert first_row_id_of(manifests[0]) == next_row_id  # the new data manifest
    assert verify_table(appended).ok, verify_table(appended).problems

    model = pa.concat_tables([model, batch.cast(model.schema)])
    _every_reader_reads(appended, model)
    expected = sorted(model.column("id").to_pylist())

    # Deletes after the append merge as before; the appended rows are deletable too.
    deleted = delete_rows(appended, "id >= 5600")
    assert deleted.deleted_rows == 100
    assert _ids(deleted.table) == [i for i in expected if i < 5600]
    assert verify_table(deleted.table).ok


def test_a_stream_is_appended_in_batches(tmp_path: Path) -> None:
    table = _v3(tmp_path, rows=300)
    batch = sample_batch(1000, start=10_000, seed=4)
    reader = pa.RecordBatchReader.from_batches(batch.schema, batch.to_batches(max_chunksize=128))
    appended = append(table, reader)
    assert appended.current_snapshot().added_rows == 1000
    assert _ids(appended)[-1] == 10_999 and verify_table(appended).ok


def test_v2_tables_go_to_pyiceberg(tmp_path: Path) -> None:
    table = create_sample_table(local_catalog(tmp_path), "db.t", rows=100)
    appended = append(table, sample_batch(50, start=100))
    assert appended.metadata.format_version == 2
    assert _ids(appended) == list(range(150))
    from puffin.iceberg import overwrite

    replaced = overwrite(appended, sample_batch(5, start=500), "id < 10")
    assert replaced.metadata.format_version == 2
    assert _ids(replaced) == [*range(10, 150), *range(500, 505)]


def test_an_incompatible_schema_is_refused_before_writing(tmp_path: Path) -> None:
    table = _v3(tmp_path, rows=100)
    files = {p for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(UsageError, match=r"does not fit table db\.\w+: table 1: id: required long"):
        append(table, pa.table({"id": pa.array(["not a long"])}))
    assert {p for p in tmp_path.rglob("*") if p.is_file()} == files


def test_a_commit_that_keeps_losing_removes_the_data_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyiceberg.exceptions import CommitFailedException

    table = _v3(tmp_path, rows=100)
    files = {p for p in tmp_path.rglob("*") if p.is_file() and "catalog.db" not in p.name}

    def lose(*args: Any, **kwargs: Any) -> Any:
        raise CommitFailedException("another writer won")

    monkeypatch.setattr("puffin.iceberg.metadata.v3.commit", lose)
    monkeypatch.setattr("puffin.iceberg.metadata.commit_retry.CommitRetry.wait_s", lambda *_: 0.0)
    with pytest.raises(CommitConflictError):
        append(table, sample_batch(10, start=100), max_attempts=2)
    after = {p for p in tmp_path.rglob("*") if p.is_file() and "catalog.db" not in p.name}
    assert after == files


def _append_in_process(warehouse: str, start: int, barrier: Any) -> None:
    table = local_catalog(warehouse).load_table("db.t")
    barrier.wait()
    append(table, sample_batch(200, start=start, seed=start))


def test_concurrent_appends_from_processes_all_land(tmp_path: Path) -> None:
    _v3(tmp_path, rows=300)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(3)
    procs = [
        context.Process(target=_append_in_process, args=(str(tmp_path), start, barrier))
        for start in (10_000, 20_000, 30_000)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
        assert p.exitcode == 0
    table = local_catalog(tmp_path).load_table("db.t")
    ids = _ids(table)
    for start in (10_000, 20_000, 30_000):
        assert set(range(start, start + 200)) <= set(ids)
    assert verify_table(table).ok  # row-id ranges do not overlap
    assert table.metadata.next_row_id == 300 + 3 * 200


def test_overwrite_replaces_matching_rows_in_one_snapshot(tmp_path: Path) -> None:
    import pyarrow.compute as pc

    from puffin.iceberg import overwrite

    table = _v3(tmp_path)
    before = _model(table)
    keep = before.filter(pc.invert(pc.fill_null(pc.equal(before["category"], 7), False)))
    replacement = sample_batch(50, start=8000, seed=9)
    parent = table.current_snapshot().snapshot_id
    result = overwrite(table, replacement, "category = 7")
    snapshot = result.current_snapshot()
    assert snapshot.summary.operation.value == "overwrite"
    assert snapshot.parent_snapshot_id == parent  # one snapshot: no state in between
    assert snapshot.added_rows == 50
    _every_reader_reads(result, pa.concat_tables([keep, replacement.cast(keep.schema)]))
    assert verify_table(result).ok, verify_table(result).problems


def test_add_files_registers_parquet_files_with_row_ids(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from puffin.errors import UsageError
    from puffin.iceberg import add_files

    table = _v3(tmp_path, rows=300)
    batch = sample_batch(40, start=7000, seed=2)
    path = tmp_path / "outside.parquet"
    pq.write_table(batch, path)  # no field ids: matched by name through the name mapping
    next_row_id = table.metadata.next_row_id
    added = add_files(table, [str(path)])
    assert added.current_snapshot().first_row_id == next_row_id
    assert added.metadata.next_row_id == next_row_id + 40
    assert set(range(7000, 7040)) <= set(_ids(added))
    assert verify_table(added).ok
    with pytest.raises(UsageError, match="already in the table"):
        add_files(added, [str(path)])


def test_the_command_line_appends_and_adds_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import pyarrow.parquet as pq

    from puffin.cli import main
    from tests.cli.test_cli import check_shape, documented_shape

    _v3(tmp_path, rows=300)
    day = tmp_path / "day.parquet"
    pq.write_table(sample_batch(120, start=9000, seed=5), day)
    wh = ["--warehouse", str(tmp_path), "--json"]
    assert main(["table", "append", "db.t", str(day), *wh]) == 0
    doc = json.loads(capsys.readouterr().out)
    check_shape(doc, documented_shape("table-append"))
    assert (doc["command"], doc["added_records"], doc["format_version"]) == ("table append", 120, 3)
    outside = tmp_path / "outside.parquet"
    pq.write_table(sample_batch(30, start=9500, seed=6), outside)
    assert main(["table", "add-files", "db.t", str(outside), *wh]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["command"], doc["added_records"]) == ("table add-files", 30)
    table = local_catalog(tmp_path).load_table("db.t")
    assert set(range(9000, 9120)) | set(range(9500, 9530)) <= set(_ids(table))
    assert verify_table(table).ok
