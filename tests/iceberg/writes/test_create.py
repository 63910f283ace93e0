"""``create_table_from_parquet`` (``puffin table create``): a table made from Parquet files,
its rows those of the files, its spec the one asked for, and nothing made when it fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa
import pyarrow.parquet as pq

from puffin.errors import UsageError
from puffin.iceberg import create_table_from_parquet, local_catalog, sample_batch, scan_table


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    """Two files of the sample schema: ids 0-99 and 100-149."""
    paths = []
    for name, batch in (("a", sample_batch(100)), ("b", sample_batch(50, start=100))):
        paths.append(str(tmp_path / f"{name}.parquet"))
        pq.write_table(batch, paths[-1])
    return paths


def _ids(table: Any) -> list[int]:
    return sorted(scan_table(table, selected_fields=("id",)).to_arrow()["id"].to_pylist())


def test_the_table_holds_the_files_rows_in_the_spec_asked(tmp_path: Path, files: list[str]) -> None:
    table = create_table_from_parquet(
        local_catalog(tmp_path / "wh"), "db.events", files,
        partition_by=[("day", "day"), ("id", "bucket[4]", "shard")],
    )  # fmt: skip
    assert _ids(table) == list(range(150))
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == [
        ("day_day", "day"), ("shard", "bucket[4]"),
    ]  # fmt: skip
    assert table.schema().find_field("id").required  # the file's non-null column
    assert len(table.snapshots()) == 1 and table.metadata.format_version == 2
    data = [t.file for t in table.scan().plan_files()]
    partitions = {(f.partition[0], f.partition[1]) for f in data}
    assert len(data) == len(partitions) > 4  # one file a partition: the rows were partitioned
    expected = pq.read_table(files[0]).schema.field("price").type
    assert scan_table(table).to_arrow().schema.field("price").type == expected


def test_a_v3_table_gives_every_row_an_id(tmp_path: Path, files: list[str]) -> None:
    table = create_table_from_parquet(local_catalog(tmp_path), "db.t", files, format_version=3)
    assert table.metadata.format_version == 3
    rows = scan_table(table, selected_fields=("id", "_row_id")).to_arrow()
    assert sorted(rows["_row_id"].to_pylist()) == list(range(150))


def test_files_without_rows_make_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"
    pq.write_table(sample_batch(0), path)
    table = create_table_from_parquet(local_catalog(tmp_path), "db.t", [str(path)])
    assert table.current_snapshot() is None and table.schema().find_field("tag")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda t: t.set_column(1, "category", t["category"].cast(pa.int64())),
         ["b.parquet: column 'category' is int64, and int32 in", "a.parquet"]),
        (lambda t: t.drop(["tag"]), ["b.parquet has no column 'tag'"]),
        (lambda t: t.append_column("note", pa.array(["x"] * len(t))),
         ["b.parquet has column 'note', which", "a.parquet has not"]),
    ],
    ids=["type", "missing", "extra"],
)  # fmt: skip
def test_files_that_differ_are_named_and_nothing_is_made(
    tmp_path: Path, files: list[str], change: Any, words: list[str]
) -> None:
    pq.write_table(change(pq.read_table(files[1])), files[1])
    catalog = local_catalog(tmp_path / "wh")
    with pytest.raises(UsageError) as raised:
        create_table_from_parquet(catalog, "db.t", files)
    assert all(w in str(raised.value) for w in words), raised.value
    assert not catalog.table_exists("db.t")


def test_an_existing_table_is_refused_with_the_append_that_adds_the_rows(
    tmp_path: Path, files: list[str]
) -> None:
    catalog = local_catalog(tmp_path)
    before = create_table_from_parquet(catalog, "db.t", files[:1]).metadata_location
    with pytest.raises(UsageError, match=r"already exists.*`puffin table append db.t "):
        create_table_from_parquet(catalog, "db.t", files[1:])
    assert catalog.load_table("db.t").metadata_location == before


@pytest.mark.parametrize(
    ("field", "words"),
    [(("nope", "day"), "no such column"), (("user_name", "day"), "cannot transform string")],
)
def test_a_partition_field_that_cannot_be_is_refused(
    tmp_path: Path, files: list[str], field: tuple[str, str], words: str
) -> None:
    catalog = local_catalog(tmp_path)
    with pytest.raises(UsageError, match=words):
        create_table_from_parquet(catalog, "db.t", files, partition_by=[field])
    assert not catalog.table_exists("db.t")


def test_a_load_that_fails_after_the_creation_drops_the_table(
    tmp_path: Path, files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from puffin.iceberg.writes import append as appending

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(appending, "append", failing)
    catalog = local_catalog(tmp_path / "wh")
    with pytest.raises(OSError, match="disk full"):
        create_table_from_parquet(catalog, "db.t", files)
    assert not catalog.table_exists("db.t")
    assert not list((tmp_path / "wh" / "db" / "t").rglob("*.json"))  # its metadata removed
    monkeypatch.undo()
    assert _ids(create_table_from_parquet(catalog, "db.t", files)) == list(range(150))
