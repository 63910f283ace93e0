"""puffin.io.locations: one way to resolve a table location for reading and writing."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import puffin
from puffin.io.locations import local_path, open_input, open_output


def _write(target: Any) -> int:
    with puffin.create(target) as writer:
        writer.add_blob(b"abc", type="x", fields=[1], snapshot_id=1, sequence_number=1)
    assert writer.file_size is not None
    return writer.file_size


def test_local_path_of_file_uris_and_plain_paths(tmp_path: Path) -> None:
    assert local_path(f"file://{tmp_path}/a.puffin") == f"{tmp_path}/a.puffin"
    assert local_path(f"file:{tmp_path}/a.puffin") == f"{tmp_path}/a.puffin"
    assert local_path("relative/a.puffin") == str(Path("relative/a.puffin").resolve())
    assert local_path("s3://bucket/a.puffin") is None


def test_open_output_local_creates_the_folder_and_yields_the_path(tmp_path: Path) -> None:
    location = f"file://{tmp_path}/new/dir/a.puffin"
    with open_output(location) as target:
        assert target == f"{tmp_path}/new/dir/a.puffin"
        size = _write(target)
    assert (tmp_path / "new/dir/a.puffin").stat().st_size == size
    with open_input(None, location) as f:  # type: ignore[arg-type]  # local: io unused
        assert puffin.verify_file(f) == []


class _Output:
    def __init__(self, store: dict[str, bytes], location: str) -> None:
        self.store, self.location = store, location

    def create(self, overwrite: bool = False) -> io.BytesIO:
        assert overwrite is False  # a new Puffin file never replaces one
        store, location = self.store, self.location

        class Stream(io.BytesIO):
            def close(self) -> None:
                store[location] = self.getvalue()
                super().close()

        return Stream()


class _FileIO:
    def __init__(self) -> None:
        self.store: dict[str, bytes] = {}

    def new_output(self, location: str) -> _Output:
        return _Output(self.store, location)


def test_open_output_remote_writes_through_the_file_io_and_closes_it() -> None:
    fio = _FileIO()
    with open_output("s3://bucket/a.puffin", fio) as target:  # type: ignore[arg-type]
        assert not isinstance(target, str)
        size = _write(target)
    data = fio.store["s3://bucket/a.puffin"]
    assert len(data) == size
    assert puffin.verify_file(data) == []


def test_open_output_remote_without_io_uses_fsspec() -> None:
    fsspec = pytest.importorskip("fsspec")
    location = "memory://puffin-locations-test/a.puffin"
    with open_output(location) as target:
        size = _write(target)
    with fsspec.open(location, "rb") as f:
        data = f.read()
    assert len(data) == size and puffin.verify_file(data) == []


# --- locations built right: nothing written outside the table, nothing added twice ---------


@pytest.mark.parametrize("name", ["my wh #1", "wh?x"])
def test_a_warehouse_pyiceberg_would_cut_short_is_refused_before_anything_is_written(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyiceberg")
    from puffin.cli import main

    wh = tmp_path / name
    assert main(["table", "sample", "db.t", "--rows", "10", "--warehouse", str(wh)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "choose a folder" in err and "internal error" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_table_location_with_a_hash_is_refused_for_writes(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    import pyarrow as pa

    from puffin.errors import UsageError
    from puffin.iceberg import append, local_catalog
    from puffin.iceberg.catalog.sample import sample_batch, sample_schema

    catalog = local_catalog(tmp_path / "wh")
    catalog.create_namespace("db")
    outside = tmp_path / "out #1"
    table = catalog.create_table("db.t", sample_schema(), location=f"file://{outside}")
    before = sorted(str(p) for p in tmp_path.rglob("*"))  # pyiceberg cut its own metadata
    data: pa.Table = sample_batch(5)
    with pytest.raises(UsageError, match="'#'"):
        append(table, data)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_add_files_makes_paths_absolute_and_finds_every_spelling_of_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyiceberg")
    import pyarrow.parquet as pq

    from puffin.errors import UsageError
    from puffin.iceberg import add_files, create_sample_table, local_catalog, upgrade_to_v3
    from puffin.iceberg.catalog.sample import sample_batch

    monkeypatch.chdir(tmp_path)
    for version in (2, 3):
        table = create_sample_table(local_catalog(tmp_path / "wh"), f"db.v{version}", rows=20)
        if version == 3:
            table = upgrade_to_v3(table)
        day = tmp_path / f"day {version}.parquet"
        pq.write_table(sample_batch(5, start=100), day)
        table = add_files(table, [day.name])
        registered = [t.file.file_path for t in table.scan().plan_files()]
        assert f"file://{day}" in registered
        for again in ([str(day)], [f"file:{day}"], [f"./{day.name}"], [day.name, str(day)]):
            with pytest.raises(UsageError, match=r"twice|once"):
                add_files(table, again)
        assert table.refresh().scan().to_arrow().num_rows == 25


def test_verify_reports_a_data_file_registered_twice_or_missing(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    import pyarrow.parquet as pq

    from puffin.iceberg import create_sample_table, local_catalog, verify_table
    from puffin.iceberg.catalog.sample import sample_batch

    table = create_sample_table(local_catalog(tmp_path / "wh"), "db.t", rows=20)
    day = tmp_path / "day.parquet"
    pq.write_table(sample_batch(5, start=100), day)
    table.add_files([str(day)])  # pyiceberg's own, which compares the text only
    table = table.refresh()
    table.add_files([f"file://{day}"])
    report = verify_table(table.refresh())
    assert [p.kind for p in report.problems] == ["data-file"]
    assert "registered 2 times" in report.problems[0].message
    day.unlink()
    report = verify_table(table.refresh())
    assert {p.kind for p in report.problems} == {"data-file"} and len(report.problems) == 2
    assert any("does not exist" in p.message for p in report.problems)
