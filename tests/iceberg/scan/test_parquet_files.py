"""Data files read by row group, threads only for large ones: the same table as pyarrow's read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.io.pyarrow import PyArrowFileIO

from puffin.iceberg.scan import parquet_files


def _written(folder: Path, rows: int, group: int) -> str:
    path = folder / f"f-{rows}-{group}.parquet"
    data = pa.table({"id": pa.array(range(rows), pa.int64()), "s": [f"v{i}" for i in range(rows)]})
    pq.write_table(data, path, row_group_size=group)
    return str(path)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(0, 300), group=st.integers(1, 120), threads_from=st.sampled_from([0, 1 << 20])
)
def test_read_columns_equals_pyarrows_read(
    tmp_path_factory: pytest.TempPathFactory, rows: int, group: int, threads_from: int
) -> None:
    """Any number of row groups (none included), with and without threads: pyarrow's table."""
    path = _written(tmp_path_factory.mktemp("pf"), rows, group)
    patch = pytest.MonkeyPatch()
    patch.setattr(parquet_files, "THREADS_FROM", threads_from)
    try:
        for columns in (["id"], ["s", "id"], None):
            with parquet_files.open_data_file(PyArrowFileIO(), path) as f:
                got = parquet_files.read_columns(parquet_files.parquet_file(f, path), columns)
            assert got.equals(pq.read_table(path, columns=columns)), (rows, group, columns)
    finally:
        patch.undo()


def test_large_row_groups_use_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads for a row group from THREADS_FROM bytes, not below (a small file's handoff
    to Arrow's pool cost three times its decoding)."""
    path = _written(tmp_path, 100, 100)
    seen: list[bool] = []
    real = pq.ParquetFile.read_row_group

    def spy(self: Any, i: int, columns: Any = None, use_threads: bool = True, **kw: Any) -> Any:
        seen.append(use_threads)
        return real(self, i, columns=columns, use_threads=use_threads, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    with parquet_files.open_data_file(PyArrowFileIO(), path) as f:
        parquet = parquet_files.parquet_file(f, path)
        parquet_files.read_columns(parquet, None)
        size = parquet.metadata.row_group(0).total_byte_size
        monkeypatch.setattr(parquet_files, "THREADS_FROM", size)
        parquet_files.read_columns(parquet, None)
        assert parquet_files.threaded(parquet)
    assert seen == [False, True]


def test_remote_files_are_opened_through_the_tables_io(tmp_path: Path) -> None:
    """A location that is not local goes to the table's io (here: refused by a fake one)."""

    class Refusing:
        def new_input(self, location: str) -> Any:
            raise PermissionError(location)

    with pytest.raises(PermissionError, match=r"s3://bucket/x\.parquet"):
        parquet_files.open_data_file(Refusing(), "s3://bucket/x.parquet")


def test_a_file_without_row_groups_reads_as_an_empty_table(tmp_path: Path) -> None:
    path = str(tmp_path / "none.parquet")
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    pq.ParquetWriter(path, schema).close()
    with parquet_files.open_data_file(PyArrowFileIO(), path) as f:
        parquet = parquet_files.parquet_file(f, path)
        assert parquet.num_row_groups == 0
        for columns in (["s"], None):
            got = parquet_files.read_columns(parquet, columns)
            assert got.equals(pq.read_table(path, columns=columns))
