"""A ``RecordBatchReader`` appended to an unpartitioned table is streamed into Parquet data
files a row group at a time (``puffin.iceberg.writes._streaming``), with pyiceberg's file
schema, writer options, names and metrics, rolling at the target file size.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from puffin.iceberg import append, create_sample_table, local_catalog, sample_batch, upgrade_to_v3
from puffin.iceberg.writes._streaming import can_stream, stream_data_files


def _table(warehouse: Path, version: int = 3, **properties: str) -> Any:
    table = create_sample_table(
        local_catalog(warehouse), "db.t", rows=0, properties=dict(properties)
    )
    return upgrade_to_v3(table) if version == 3 else table


def _reader(rows: int, chunk: int, start: int = 0) -> pa.RecordBatchReader:
    data = sample_batch(rows, start=start, seed=7)
    return pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=chunk))


def _data_files(warehouse: Path) -> list[Path]:
    return sorted(p for p in warehouse.rglob("*.parquet") if "/data/" in p.as_posix())


def _rows(table: Any) -> list[dict[str, Any]]:
    """The table's rows by ``id``, uuids as their bytes (as :func:`sample_batch` has them)."""
    rows: list[dict[str, Any]] = table.scan().to_arrow().sort_by("id").to_pylist()
    for row in rows:
        if isinstance(row["session_id"], uuid.UUID):
            row["session_id"] = row["session_id"].bytes
    return rows


@pytest.mark.parametrize("version", [2, 3])
def test_the_rows_read_back(tmp_path: Path, version: int) -> None:
    table = _table(tmp_path, version)
    appended = append(table, _reader(5000, 700), statistics="none")
    expected = sample_batch(5000, seed=7).sort_by("id").to_pylist()
    assert _rows(appended) == expected
    assert appended.current_snapshot().summary["added-data-files"] == "1"
    [path] = _data_files(tmp_path)
    assert re.fullmatch(r"00000-0-[0-9a-f-]{36}\.parquet", path.name)


def test_metrics_and_field_ids_are_pyiceberg_own(tmp_path: Path) -> None:
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    table = _table(tmp_path)
    data = sample_batch(5000, start=100, seed=7)
    reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=700))
    [ours] = stream_data_files(table.metadata, reader, table.io, uuid.uuid4())
    [theirs] = _dataframe_to_data_files(
        table_metadata=table.metadata, df=data, io=table.io, write_uuid=uuid.uuid4()
    )
    assert ours.record_count == theirs.record_count == 5000
    for field in (
        "value_counts",
        "null_value_counts",
        "nan_value_counts",
        "lower_bounds",
        "upper_bounds",
        "column_sizes",
        "split_offsets",
    ):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert set(ours.column_sizes) == set(range(1, 10))
    assert (ours.file_format, ours.content, ours.partition) == (
        theirs.file_format,
        theirs.content,
        theirs.partition,
    )
    assert ours.file_size_in_bytes == Path(ours.file_path.removeprefix("file:")).stat().st_size
    schema = pq.read_schema(ours.file_path.removeprefix("file:"))
    ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in schema}
    assert ids == {f.name: f.field_id for f in table.schema().fields}


def test_a_small_target_rolls_into_several_files(tmp_path: Path) -> None:
    target = 64 * 1024
    table = _table(tmp_path, **{"write.target-file-size-bytes": str(target)})
    appended = append(table, _reader(30_000, 1000), statistics="none")
    files = _data_files(tmp_path)
    assert len(files) >= 4
    assert int(appended.current_snapshot().summary["added-data-files"]) == len(files)
    sizes = sorted(p.stat().st_size for p in files)
    assert sizes[-1] < 2 * target  # no file far past the target
    tasks = sorted(int(p.name.split("-")[1]) for p in files)
    assert tasks == list(range(len(files)))
    assert len({p.name.split("-", 2)[2] for p in files}) == 1  # one write uuid
    assert _rows(appended) == sample_batch(30_000, seed=7).sort_by("id").to_pylist()


def test_one_large_batch_is_split_to_the_target(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"write.target-file-size-bytes": str(64 * 1024)})
    data = sample_batch(20_000, seed=7)
    append(table, pa.RecordBatchReader.from_batches(data.schema, data.to_batches()))
    assert len(_data_files(tmp_path)) >= 3


def test_files_are_closed_while_the_reader_still_has_rows(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"write.target-file-size-bytes": str(64 * 1024)})
    data = sample_batch(20_000, seed=7)
    consumed: list[int] = []

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in data.to_batches(max_chunksize=1000):
            consumed.append(batch.num_rows)
            yield batch

    reader = pa.RecordBatchReader.from_batches(data.schema, batches())
    files = stream_data_files(table.metadata, reader, table.io, uuid.uuid4())
    first = next(files)
    assert first.record_count > 0 and sum(consumed) < 20_000
    assert sum(f.record_count for f in files) + first.record_count == 20_000


@pytest.mark.parametrize("fail_after", [2, 25])
def test_a_reader_that_fails_leaves_no_file(tmp_path: Path, fail_after: int) -> None:
    table = _table(tmp_path, **{"write.target-file-size-bytes": str(64 * 1024)})
    data = sample_batch(30_000, seed=7)
    before = {p for p in tmp_path.rglob("*") if p.is_file() and "catalog.db" not in p.name}

    def batches() -> Iterator[pa.RecordBatch]:
        for number, batch in enumerate(data.to_batches(max_chunksize=1000)):
            if number == fail_after:
                raise RuntimeError("the source went away")
            yield batch

    with pytest.raises(RuntimeError, match="went away"):
        append(table, pa.RecordBatchReader.from_batches(data.schema, batches()))
    after = {p for p in tmp_path.rglob("*") if p.is_file() and "catalog.db" not in p.name}
    assert after == before
    assert local_catalog(tmp_path).load_table("db.t").current_snapshot() is None


def test_tables_and_partitioned_tables_keep_pyiceberg_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("streamed")

    monkeypatch.setattr("puffin.iceberg.writes._streaming.stream_data_files", refuse)
    table = _table(tmp_path)
    appended = append(table, sample_batch(100, seed=7), statistics="none")
    assert len(_rows(appended)) == 100
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))
    partitioned = local_catalog(tmp_path).create_table(
        "db.p", schema=table.schema(), partition_spec=spec
    )
    assert can_stream(table.metadata) and not can_stream(partitioned.metadata)
