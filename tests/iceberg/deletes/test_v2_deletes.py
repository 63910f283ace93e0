"""Deletes on v2 tables: position-delete files (merge-on-read) and rewritten data files
(copy-on-write, the v2 default), each read by pyiceberg, DuckDB 1.4.4, iceberg-rust and
``scan_table`` and compared with a model computed from the Parquet files alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from iceberg_fixtures import make_catalog
from peers import read_duckdb, read_iceberg_rust, read_pyiceberg
from puffin.errors import UnsupportedTableError, UsageError
from puffin.iceberg import rewrite_data_files, rewrite_position_delete_files, scan_table
from puffin.iceberg.deletes.rows import delete_rows
from puffin.iceberg.metadata.delete_files import live_delete_files
from puffin.io.locations import local_path

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "part", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))
FILES, PER_FILE = 4, 250
READERS = {
    "pyiceberg": read_pyiceberg,
    "duckdb": read_duckdb,
    "iceberg-rust": read_iceberg_rust,
    "scan_table": lambda m: scan_table(_static(m)).to_arrow(),
}


def _static(metadata: str) -> Table:
    from peers import static_table

    return static_table(metadata)


def _table(catalog: Catalog, name: str, partitioned: bool = False, **props: str) -> Table:
    spec = SPEC if partitioned else PartitionSpec()
    table = catalog.create_table(
        name, SCHEMA, partition_spec=spec, properties={"format-version": "2", **props}
    )
    for f in range(FILES):
        ids = np.arange(f * PER_FILE, (f + 1) * PER_FILE, dtype=np.int64)
        parts = ["a" if f % 2 == 0 else "b"] * PER_FILE
        table.append(pa.table({"id": pa.array(ids), "part": pa.array(parts)}))
    return catalog.load_table(name)


def _model(gone: set[int]) -> list[int]:
    """The ids left: every id the appends wrote, less those deleted (no reader involved)."""
    return [i for i in range(FILES * PER_FILE) if i not in gone]


def _assert_reads(table: Table, gone: set[int]) -> None:
    for name, read in READERS.items():
        ids = sorted(read(table.metadata_location).column("id").to_pylist())
        assert ids == _model(gone), name


def _delete_files(table: Table) -> list[Any]:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return list(live_delete_files(table, snapshot).values())


def _files_in(table: Table) -> set[str]:
    folder = Path(local_path(table.location()) or "")
    return {str(p) for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return make_catalog(tmp_path / "wh")


def test_merge_on_read_writes_a_position_delete_file_per_data_file(catalog: Catalog) -> None:
    table = _table(catalog, "db.mor", **{"write.delete.mode": "merge-on-read"})
    first = delete_rows(table, "id < 300 or id = 999")
    assert first.deleted_rows == 301 and first.vectors == ()
    assert len(first.position_delete_files) == 3  # files 0, 1 and 3
    table = first.table
    again = delete_rows(table, "id >= 290 and id < 310")  # 10 of them deleted already
    assert again.deleted_rows == 10 and len(again.position_delete_files) == 1
    table = again.table
    _assert_reads(table, set(range(310)) | {999})
    deletes = _delete_files(table)
    assert len(deletes) == 4
    for d in deletes:
        assert d.content == DataFileContent.POSITION_DELETES
        assert d.file_format == FileFormat.PARQUET
        rows = pq.read_table(local_path(str(d.file_path)))
        fields = rows.schema
        assert [f.name for f in fields] == ["file_path", "pos"]
        assert [f.metadata[b"PARQUET:field_id"] for f in fields] == [b"2147483546", b"2147483545"]
        paths, pos = rows["file_path"].to_pylist(), rows["pos"].to_pylist()
        assert len(set(paths)) == 1 and pos == sorted(set(pos))
        # Java's metrics: bounds of the one data file, untruncated; no counts
        assert d.lower_bounds[2147483546] == d.upper_bounds[2147483546] == paths[0].encode()
        assert int.from_bytes(d.lower_bounds[2147483545], "little") == pos[0]
        assert int.from_bytes(d.upper_bounds[2147483545], "little") == pos[-1]
        assert not d.value_counts and not d.null_value_counts
        assert d.record_count == len(pos)
    summary = table.current_snapshot().summary  # type: ignore[union-attr]
    assert summary["added-position-deletes"] == "10"
    assert summary["total-position-deletes"] == "311"


def test_partition_granularity_writes_one_file_per_partition(catalog: Catalog) -> None:
    props = {"write.delete.mode": "merge-on-read", "write.delete.granularity": "partition"}
    table = _table(catalog, "db.part", partitioned=True, **props)
    result = delete_rows(table, "id < 600")  # files 0, 1, 2
    assert len(result.position_delete_files) == 2  # partitions a (0, 2) and b (1)
    table = result.table
    _assert_reads(table, set(range(600)))
    for d in _delete_files(table):
        rows = pq.read_table(local_path(str(d.file_path)))
        paths = rows["file_path"].to_pylist()
        pairs = list(zip(paths, rows["pos"].to_pylist(), strict=True))
        assert pairs == sorted(pairs)
        if len(set(paths)) > 1:  # Java keeps no bounds for a file of several data files
            assert not d.lower_bounds and not d.upper_bounds
        assert d.partition[0] in ("a", "b")


def test_copy_on_write_rewrites_the_files_it_deletes_from(catalog: Catalog) -> None:
    table = _table(catalog, "db.cow", partitioned=True)
    before = {str(t.file.file_path) for t in table.scan().plan_files()}
    result = delete_rows(table, "id >= 240 and id < 260")  # rows of files 0 and 1
    assert result.deleted_rows == 20 and result.vectors == ()
    assert len(result.rewritten_files) == 2 and len(result.added_files) == 2
    table = result.table
    after = {str(t.file.file_path) for t in table.scan().plan_files()}
    assert before - after == set(result.rewritten_files)
    assert after - before == set(result.added_files)
    assert not _delete_files(table)
    assert table.current_snapshot().summary.operation.value == "overwrite"  # type: ignore[union-attr]
    _assert_reads(table, set(range(240, 260)))
    whole = delete_rows(table, "id >= 750")  # the last file, every row: removed, none written
    assert whole.added_files == () and len(whole.rewritten_files) == 1
    assert whole.table.current_snapshot().summary.operation.value == "delete"  # type: ignore[union-attr]
    _assert_reads(whole.table, set(range(240, 260)) | set(range(750, 1000)))


def test_copy_on_write_applies_and_drops_the_files_position_deletes(catalog: Catalog) -> None:
    table = _table(catalog, "db.mixed", **{"write.delete.mode": "merge-on-read"})
    table = delete_rows(table, "id < 10 or id >= 990").table  # scoped to files 0 and 3
    with table.transaction() as tx:
        tx.set_properties({"write.delete.mode": "copy-on-write"})
    table = table.refresh()
    result = delete_rows(table, "id = 20")  # file 0 rewritten, its delete file dropped
    table = result.table
    left = _delete_files(table)
    assert len(left) == 1 and left[0].lower_bounds[2147483546].decode().endswith(".parquet")
    _assert_reads(table, set(range(10)) | set(range(990, 1000)) | {20})


def test_compaction_applies_position_deletes_of_a_v2_table(catalog: Catalog) -> None:
    table = _table(catalog, "db.compact", **{"write.delete.mode": "merge-on-read"})
    table = delete_rows(table, "id < 200").table
    result = rewrite_data_files(table, statistics="none")
    assert result.rewritten_files >= 1 and result.removed_vectors == 1
    assert not _delete_files(result.table)
    _assert_reads(result.table, set(range(200)))


def test_a_delete_of_nothing_commits_nothing(catalog: Catalog) -> None:
    for mode in ("merge-on-read", "copy-on-write"):
        table = _table(catalog, f"db.none_{mode[0]}", **{"write.delete.mode": mode})
        files = _files_in(table)
        result = delete_rows(table, "id > 5000")
        assert result.snapshot_id is None and result.deleted_rows == 0
        assert _files_in(table) == files


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_a_failed_commit_leaves_no_file(
    catalog: Catalog, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from puffin.iceberg.metadata import v3

    table = _table(catalog, f"db.fail_{mode[0]}", **{"write.delete.mode": mode})
    files = _files_in(table)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk on fire")

    monkeypatch.setattr(v3, "_commit", refuse)
    with pytest.raises(OSError, match="disk on fire"):
        delete_rows(table, "id < 300")
    assert _files_in(table) == files
    assert catalog.load_table(table.name()).metadata_location == table.metadata_location


def test_concurrent_deletes_keep_each_others_rows_deleted(catalog: Catalog) -> None:
    for mode in ("merge-on-read", "copy-on-write"):
        name = f"db.race_{mode[0]}"
        table = _table(catalog, name, **{"write.delete.mode": mode})
        stale = catalog.load_table(name)
        delete_rows(table, "id < 100")
        result = delete_rows(stale, "id >= 50 and id < 150")  # loses the race, retries
        assert result.attempts == 2 and result.deleted_rows == 50
        _assert_reads(catalog.load_table(name), set(range(150)))


def test_mistakes_are_named(catalog: Catalog, tmp_path: Path) -> None:
    table = _table(catalog, "db.bad", **{"write.delete.mode": "merge-on-write"})
    with pytest.raises(UsageError, match=r"write\.delete\.mode"):
        delete_rows(table, "id < 3")
    props = {"write.delete.mode": "merge-on-read", "write.delete.granularity": "row"}
    table = _table(catalog, "db.bad2", **props)
    with pytest.raises(UsageError, match=r"write\.delete\.granularity"):
        delete_rows(table, "id < 3")
    props = {"write.delete.mode": "merge-on-read", "write.delete.parquet.compression-codec": "lzo"}
    table = _table(catalog, "db.bad3", **props)
    files = _files_in(table)
    with pytest.raises(UsageError, match=r"compression-codec='lzo'.*one of brotli"):
        delete_rows(table, "id < 3")
    assert _files_in(table) == files
    props["write.delete.parquet.compression-codec"] = "UNCOMPRESSED"  # Java's name for none
    table = _table(catalog, "db.good", **props)
    assert delete_rows(table, "id < 3").deleted_rows == 3
    v1 = catalog.create_table("db.v1", SCHEMA, properties={"format-version": "1"})
    with pytest.raises(UnsupportedTableError, match="v2 or v3"):
        delete_rows(v1, "id < 3")


def test_rewrite_position_delete_files_merges_them_and_drops_dangling(catalog: Catalog) -> None:
    table = _table(catalog, "db.rw", **{"write.delete.mode": "merge-on-read"})
    for where in ("id < 10", "id >= 20 and id < 30", "id = 300", "id >= 990"):
        table = delete_rows(table, where).table
    # pyiceberg's own delete drops the whole last file, whose position-delete file dangles
    with pytest.warns(UserWarning, match="falling back to copy-on-write"):
        table.delete("id >= 750")
    table = catalog.load_table("db.rw")
    assert len(_delete_files(table)) == 4
    result = rewrite_position_delete_files(table)
    assert (result.files_before, result.files_after) == (4, 2)  # one per data file left
    assert result.dropped_dangling == 1 and result.deleted_rows == 21
    gone = set(range(10)) | set(range(20, 30)) | {300} | set(range(750, 1000))
    _assert_reads(result.table, gone)
    assert rewrite_position_delete_files(result.table).snapshot_id is None  # done already
    assert result.table.current_snapshot().summary.operation.value == "replace"  # type: ignore[union-attr]


def test_expiry_and_orphan_cleanup_know_position_delete_files(catalog: Catalog) -> None:
    """After a rewrite, expiring the old snapshots deletes the replaced position-delete
    files (and the data files copy-on-write replaced); the live ones stay, and the orphan
    cleanup finds nothing of ours to remove."""
    from datetime import timedelta

    from puffin.iceberg import expire_snapshots, remove_orphan_files

    table = _table(catalog, "db.expire", **{"write.delete.mode": "merge-on-read"})
    for where in ("id < 10", "id >= 20 and id < 30", "id = 300"):
        table = delete_rows(table, where).table
    replaced = {str(d.file_path) for d in _delete_files(table)}
    table = rewrite_position_delete_files(table).table
    live = {str(d.file_path) for d in _delete_files(table)}
    with table.transaction() as tx:
        tx.set_properties({"write.delete.mode": "copy-on-write"})
    table = delete_rows(table.refresh(), "id = 600").table  # file 2 written again
    result = expire_snapshots(table, older_than=timedelta(0), retain_last=1)
    assert result.deleted["delete"][0] == len(replaced)
    assert result.deleted["data"][0] == 1  # the data file copy-on-write replaced
    on_disk = _files_in(table)
    assert not {local_path(p) for p in replaced} & on_disk
    assert {local_path(p) for p in live} <= on_disk
    orphans = remove_orphan_files(result.table, older_than=timedelta(0), dry_run=True,
                                  allow_short_grace_period=True)  # fmt: skip
    assert orphans.orphans == []
    _assert_reads(result.table, set(range(10)) | set(range(20, 30)) | {300, 600})


def test_verify_names_the_maintenance_a_v2_table_needs(catalog: Catalog) -> None:
    from puffin.iceberg import verify_table

    table = _table(catalog, "db.hints", **{"write.delete.mode": "merge-on-read"})
    for i in range(10):  # ten files for the first data file's rows
        table = delete_rows(table, f"id >= {10 * i} and id < {10 * i + 9}").table
    kinds = {w.kind: w.message for w in verify_table(table).warnings}
    assert "10 delete files" in kinds["spread-deletes"]
    assert "rewrite_position_delete_files" in kinds["spread-deletes"]
    assert "1 data file(s)" in kinds["deleted-rows"]  # 90 of its 250 rows: 36 %
    table = rewrite_position_delete_files(table).table
    kinds = {w.kind for w in verify_table(table).warnings}
    assert "spread-deletes" not in kinds and "deleted-rows" in kinds
    assert verify_table(table).ok
