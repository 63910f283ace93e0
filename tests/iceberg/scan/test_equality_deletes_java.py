"""Equality deletes written by Iceberg Java: its plan against our delete-file index; its rows,
DuckDB's (1.4.4 and 1.5.5) and ours against a model, before and after our conversion to
deletion vectors and our compaction; statistics counted from the rows as read.

The table (v2, unpartitioned, ``id`` int and ``v`` string): 100 rows appended by us, an
equality delete of ``id`` in (3, 5, 7, 200) written and committed by Java
(``GenericAppenderFactory.newEqDeleteWriter``, ``RowDelta``), then ids 0-9 appended again by
us, as an upsert re-inserts its keys. The model, in plain Python: the first rows without the
deleted ids, and every row of the second append (written after the delete, so untouched).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa

from puffin.iceberg import append, local_catalog, scan_table
from puffin.iceberg.metadata.manifests import read_manifest_entries
from puffin.iceberg.scan.delete_file_index import DeleteFileIndex
from puffin.iceberg.scan.plan import unpartitioned_specs
from puffin.io.locations import local_path

DELETED = [3, 5, 7, 200]


def _rows(ids: range, tag: str) -> pa.Table:
    return pa.table(
        {"id": pa.array(list(ids), pa.int32()), "v": [f"{tag}{i}" for i in ids]},
        schema=pa.schema([pa.field("id", pa.int32(), False), pa.field("v", pa.string())]),
    )



@pytest.fixture(scope="module")
def cdc(
    tmp_path_factory: pytest.TempPathFactory, java: Any
) -> tuple[Any, str, list[tuple[int, str]]]:
    """(the table after the second append, Java's delete file, the model's rows)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, NestedField, StringType

    from peers.iceberg_java import equality_delete_java

    warehouse = tmp_path_factory.mktemp("cdc")
    catalog = local_catalog(warehouse)
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", IntegerType(), required=True),
        NestedField(2, "v", StringType(), required=False),
    )
    table = catalog.create_table("db.cdc", schema, properties={"format-version": "2"})
    table = append(table, _rows(range(100), "a"))
    written = equality_delete_java(java, warehouse, "db.cdc", "id", DELETED)
    table = append(catalog.load_table("db.cdc"), _rows(range(10), "b"))
    model = [(i, f"a{i}") for i in range(100) if i not in DELETED]
    model += [(i, f"b{i}") for i in range(10)]
    return table, written, sorted(model)


def _pairs(rows: pa.Table) -> list[tuple[int, str]]:
    return sorted(zip(rows.column("id").to_pylist(), rows.column("v").to_pylist(), strict=True))


def test_java_and_both_duckdbs_read_the_models_rows(cdc: Any, java: Any) -> None:
    from peers.duckdb_scan import read_duckdb, read_duckdb15
    from peers.iceberg_java import read_java

    table, _, model = cdc
    metadata = local_path(table.metadata_location) or ""
    assert _pairs(read_java(java, metadata)) == model
    assert _pairs(read_duckdb(metadata)) == model
    assert _pairs(read_duckdb15(metadata)) == model


def test_our_index_applies_the_delete_where_java_plans_it(cdc: Any, java: Any) -> None:
    """Each data file's delete files: Java's plan, and our index over the same entries."""
    from peers.iceberg_java import plan_java_files

    table, written, _ = cdc
    snapshot = table.current_snapshot()
    entries = [e for m in snapshot.manifests(table.io) for e in read_manifest_entries(table.io, m)]
    index = DeleteFileIndex(unpartitioned_specs(table.metadata))
    for e in entries:
        if e.data_file.content != 0:
            index.add(e)
    ours = {
        local_path(str(e.data_file.file_path)): sorted(
            local_path(str(d.file_path)) for d in index.for_data_file(e)
        )
        for e in entries
        if e.data_file.content == 0
    }
    theirs = {
        local_path(path): sorted(local_path(d) for d in deletes)
        for path, deletes in plan_java_files(
            java, local_path(table.metadata_location) or ""
        ).items()
    }
    assert ours == theirs
    assert sorted(len(d) for d in ours.values()) == [0, 1]  # the first append's file only
    assert next(d for d in ours.values() if d) == [local_path(written)]


def test_scan_table_reads_the_models_rows(cdc: Any) -> None:
    table, _, model = cdc
    assert _pairs(scan_table(table).to_arrow()) == model
    assert _pairs(scan_table(table).to_arrow_batch_reader().read_all()) == model
    chosen = scan_table(table, "id < 10", ("v",)).to_arrow()  # the key column not selected
    assert sorted(chosen.column("v").to_pylist()) == sorted(v for i, v in model if i < 10)


def test_statistics_count_the_rows_as_read(cdc: Any) -> None:
    from puffin.iceberg import compute_table_statistics

    table, _, model = cdc
    stats = compute_table_statistics(table, commit=False)
    ndv = {b.fields[0]: int(b.properties["ndv"]) for b in stats.blob_metadata}
    assert ndv == {1: len({i for i, _ in model}), 2: len({v for _, v in model})}


def _copy(cdc: Any, folder: Path) -> Any:
    from iceberg_fixtures import copy_warehouse

    table = cdc[0]
    warehouse = Path(local_path(table.metadata_location) or "").parents[3]
    return copy_warehouse(warehouse, folder, identifier="db.cdc")


def _equality_files(table: Any) -> list[str]:
    snapshot = table.current_snapshot()
    entries = [e for m in snapshot.manifests(table.io) for e in read_manifest_entries(table.io, m)]
    return [str(e.data_file.file_path) for e in entries if e.data_file.content == 2]


def test_converted_to_deletion_vectors_every_reader_reads_the_models_rows(
    cdc: Any, java: Any, tmp_path: Path
) -> None:
    """Upgraded to v3 (the equality delete kept), then converted: one vector on the first
    append's file, no equality delete left; Java, both DuckDBs and ``scan_table`` read the
    model's rows, and the CLI finds nothing more to convert."""
    from peers.duckdb_scan import read_duckdb, read_duckdb15
    from peers.iceberg_java import read_java
    from puffin.cli import main
    from puffin.iceberg import convert_equality_deletes, upgrade_to_v3

    model = cdc[2]
    upgraded = upgrade_to_v3(_copy(cdc, tmp_path / "copy"))
    assert len(_equality_files(upgraded)) == 1
    assert _pairs(scan_table(upgraded).to_arrow()) == model
    result = convert_equality_deletes(upgraded)
    assert (result.equality_files, result.data_files, result.converted_rows) == (1, 1, 3)
    table = result.table
    assert not _equality_files(table)
    metadata = local_path(table.metadata_location) or ""
    assert _pairs(scan_table(table).to_arrow()) == model
    assert _pairs(read_java(java, metadata)) == model
    assert _pairs(read_duckdb(metadata)) == model
    assert _pairs(read_duckdb15(metadata)) == model
    warehouse = str(tmp_path / "copy")
    code = main(["table", "convert-equality-deletes", "db.cdc", "--warehouse", warehouse])
    assert code == 0


def test_our_compaction_applies_and_drops_the_delete(cdc: Any, tmp_path: Path) -> None:
    from puffin.iceberg import rewrite_data_files, upgrade_to_v3

    model = cdc[2]
    upgraded = upgrade_to_v3(_copy(cdc, tmp_path / "copy"))
    result = rewrite_data_files(upgraded, min_deleted_fraction=0.01, min_input_files=1)
    assert result.removed_equality_deletes == 1
    assert result.dropped_deleted_rows == 3  # ids 3, 5 and 7 of the first append
    assert not _equality_files(result.table)
    assert _pairs(scan_table(result.table).to_arrow()) == model


def test_after_javas_compaction_scan_table_reads_the_models_rows(
    cdc: Any, java: Any, tmp_path: Path
) -> None:
    """The refusal's way out: Java's ``rewrite_data_files`` rewrites the files the delete
    applies to, with their rows applied, and the table then reads here as the model says."""
    model = cdc[2]
    copy = _copy(cdc, tmp_path / "copy")
    java.sql(
        "CALL default.system.rewrite_data_files(table => 'db.cdc', "
        "options => map('delete-file-threshold', '1'))",
        warehouse=tmp_path / "copy",
    )
    rewritten = local_catalog(tmp_path / "copy", create=False).load_table("db.cdc")
    assert rewritten.metadata_location != copy.metadata_location
    snapshot = rewritten.current_snapshot()
    live = [
        e for m in snapshot.manifests(rewritten.io) for e in read_manifest_entries(rewritten.io, m)
    ]
    # Java 1.10.2's compaction also drops the delete file: no data file older than it is left.
    assert not any(e.data_file.content == 2 for e in live)
    assert _pairs(scan_table(rewritten).to_arrow()) == model


def test_iceberg_rust_reads_the_models_rows_before_and_after_conversion(
    cdc: Any, tmp_path: Path
) -> None:
    """iceberg-rust (``pyiceberg-core``'s DataFusion table) applies Java's equality deletes,
    and reads our conversion of them, as the model says."""
    from peers.iceberg_rust import read_iceberg_rust
    from puffin.iceberg import convert_equality_deletes, upgrade_to_v3

    table, _, model = cdc
    assert _pairs(read_iceberg_rust(local_path(table.metadata_location) or "")) == model
    converted = convert_equality_deletes(upgrade_to_v3(_copy(cdc, tmp_path / "copy"))).table
    after = read_iceberg_rust(local_path(converted.metadata_location) or "")
    assert _pairs(after) == model
