"""Deletion vectors in Iceberg tables: written for a table, read back from v3 delete manifests.

Peers: pyiceberg 0.12's own Puffin reader (``PuffinFile`` + ``deletion_vectors_from_puffin_file``)
reads the files we write, and pyiceberg's scan applies the v3 table's deletion vectors on its
own; our ``read_table_deletion_vectors`` + ``apply_deletion_vector`` must give the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.table import Table
from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile

import puffin
from iceberg_fixtures import commit_deletion_vectors_v3, make_catalog
from puffin.blobs.dv.files import DeletionVector
from puffin.iceberg import (
    DeletionVectorRef,
    apply_deletion_vector,
    compute_table_statistics,
    create_sample_table,
    deletion_vector_refs,
    read_table_deletion_vectors,
    verify_table,
    write_table_deletion_vectors,
)
from puffin.io.locations import local_path

ROWS = 60_000
FILES = 3


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return make_catalog(tmp_path_factory.mktemp("dv-warehouse"))


@pytest.fixture(scope="module")
def base(catalog: Catalog) -> Table:
    return create_sample_table(catalog, "db.base", rows=ROWS, files=FILES, seed=7)


def _data_files(table: Table) -> list[Any]:
    return sorted((t.file for t in table.scan().plan_files()), key=lambda f: f.file_path)


def _positions(table: Table) -> dict[str, np.ndarray[Any, Any]]:
    """Deletes across key-free and dense patterns: every 3rd row, a run, a few singles."""
    files = _data_files(table)
    return {
        files[0].file_path: np.arange(0, files[0].record_count, 3, dtype=np.int64),
        files[1].file_path: np.arange(100, 5100, dtype=np.int64),
        files[2].file_path: np.array([0, 7, files[2].record_count - 1], dtype=np.int64),
    }


def _read_file(path: str) -> pa.Table:
    local = local_path(path)
    assert local is not None
    return pq.read_table(local)


def test_pyiceberg_reads_our_dv_file(base: Table) -> None:
    positions = _positions(base)
    entries = write_table_deletion_vectors(base, positions)
    assert [e.referenced_data_file for e in entries] == list(positions)
    path = local_path(entries[0].path or "")
    assert path is not None and path.startswith(local_path(base.location()) or "?")
    data = Path(path).read_bytes()
    assert all(e.file_size_in_bytes == len(data) for e in entries)

    theirs = deletion_vectors_from_puffin_file(PuffinFile(data))
    assert [dv.referenced_data_file for dv in theirs] == list(positions)
    for dv in theirs:
        got = dv.to_vector().to_numpy()
        np.testing.assert_array_equal(np.sort(got), positions[dv.referenced_data_file])
    # The manifest ranges locate exactly the footer's blobs.
    with puffin.open(data) as reader:
        assert [(b.offset, b.length) for b in reader.blobs] == [
            (e.content_offset, e.content_size_in_bytes) for e in entries
        ]
    assert [e.record_count for e in entries] == [len(p) for p in positions.values()]


def test_write_validates_targets(base: Table) -> None:
    files = _data_files(base)
    with pytest.raises(ValueError, match="not a live data file"):
        write_table_deletion_vectors(base, {"file:///nowhere/x.parquet": [1]})
    with pytest.raises(ValueError, match="past the end"):
        write_table_deletion_vectors(base, {files[0].file_path: [files[0].record_count]})
    # DataFile keys work as well as paths; validate=False skips the table lookup.
    entries = write_table_deletion_vectors(base, {files[0]: [1, 2]})
    assert entries[0].referenced_data_file == files[0].file_path
    entries = write_table_deletion_vectors(base, {"s3://other/file.parquet": [5]}, validate=False)
    assert entries[0].record_count == 1


@pytest.fixture(scope="module")
def v3(catalog: Catalog, base: Table) -> tuple[Table, dict[str, np.ndarray[Any, Any]]]:
    positions = _positions(base)
    commit_deletion_vectors_v3(catalog, base, positions, new_identifier="db.v3dv")
    return catalog.load_table("db.v3dv"), positions


def test_read_v3_table_deletion_vectors(v3: tuple[Table, dict[str, Any]]) -> None:
    table, positions = v3
    assert table.metadata.format_version == 3
    dvs = read_table_deletion_vectors(table)
    assert set(dvs) == set(positions)
    for path, dv in dvs.items():
        np.testing.assert_array_equal(dv.to_numpy(), positions[path])
    refs = deletion_vector_refs(table)
    assert all(isinstance(r, DeletionVectorRef) for r in refs)
    assert len({r.path for r in refs}) == 1  # one Puffin file holds all three


def test_apply_matches_pyiceberg_scan(v3: tuple[Table, dict[str, Any]]) -> None:
    table, _ = v3
    dvs = read_table_deletion_vectors(table)
    ours = []
    for data_file in _data_files(table):
        data = _read_file(data_file.file_path)
        dv = dvs.get(data_file.file_path)
        ours.append(apply_deletion_vector(data, dv) if dv is not None else data)
    our_ids = np.sort(pa.concat_tables(ours).column("id").to_numpy())
    # pyiceberg applies the v3 table's deletion vectors by itself: the independent peer.
    their_ids = np.sort(table.scan(selected_fields=("id",)).to_arrow().column("id").to_numpy())
    np.testing.assert_array_equal(our_ids, their_ids)
    assert len(our_ids) == ROWS - sum(len(v) for v in dvs.values())


def test_apply_with_offset_and_plain_positions() -> None:
    data = pa.table({"x": list(range(10))})
    assert apply_deletion_vector(data, [0, 9]).column("x").to_pylist() == list(range(1, 9))
    batch = pa.record_batch({"x": list(range(10, 15))})
    kept = apply_deletion_vector(batch, DeletionVector([3, 11, 14, 99]), offset=10)
    assert kept.column("x").to_pylist() == [10, 12, 13]
    assert apply_deletion_vector(data, []) is data


def test_verify_v3_table_ok(v3: tuple[Table, dict[str, Any]]) -> None:
    report = verify_table(v3[0])
    assert report.ok, report.problems
    assert report.deletion_vectors == 3


def test_verify_catches_wrong_record_count(catalog: Catalog, base: Table) -> None:
    from puffin.iceberg.metadata.manifests import CONTENT_SIZE

    positions = _positions(base)

    def tamper(records: list[Any]) -> None:
        records[1][4] = records[1].record_count + 1  # data_file.record_count disagrees

    def shrink(records: list[Any]) -> None:
        records[2][CONTENT_SIZE] = records[2][CONTENT_SIZE] - 1  # a range one byte short

    commit_deletion_vectors_v3(catalog, base, positions, new_identifier="db.v3bad", tamper=tamper)
    report = verify_table(catalog.load_table("db.v3bad"))
    assert not report.ok
    messages = " | ".join(p.message for p in report.problems)
    expected = len(positions[_data_files(base)[1].file_path])
    footer_says = f"footer says cardinality '{expected}', the manifest record_count {expected + 1}"
    assert footer_says in messages
    assert f"holds {expected} positions, expected {expected + 1}" in messages
    assert all(p.kind == "deletion-vector" for p in report.problems)
    # Reading the table's vectors refuses the same disagreement.
    with pytest.raises(puffin.DeletionVectorError):
        read_table_deletion_vectors(catalog.load_table("db.v3bad"))

    commit_deletion_vectors_v3(catalog, base, positions, new_identifier="db.v3short", tamper=shrink)
    report = verify_table(catalog.load_table("db.v3short"))
    assert not report.ok
    assert any("no blob at that range" in p.message for p in report.problems)


def test_verify_catches_corrupt_vector(catalog: Catalog, base: Table) -> None:
    positions = _positions(base)
    _, entries = commit_deletion_vectors_v3(catalog, base, positions, new_identifier="db.v3crc")
    path = local_path(entries[2].path or "")
    assert path is not None
    data = bytearray(Path(path).read_bytes())
    data[entries[2].content_offset + 12] ^= 0x01  # one bit inside the third vector's bitmap
    Path(path).write_bytes(bytes(data))
    report = verify_table(catalog.load_table("db.v3crc"))
    assert len(report.problems) == 1, report.problems
    assert "CRC" in report.problems[0].message
    assert entries[2].referenced_data_file in report.problems[0].message
    with pytest.raises(puffin.DeletionVectorError, match="CRC"):
        read_table_deletion_vectors(catalog.load_table("db.v3crc"))


def test_partitioned_table(catalog: Catalog) -> None:
    """DVs on a partitioned v3 table: pyiceberg's scan and ours agree partition by partition."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    from puffin.iceberg import sample_batch, sample_schema

    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category")
    )
    table = catalog.create_table("db.parts", schema=sample_schema(), partition_spec=spec)
    data = sample_batch(4000, seed=2)
    bucket = pc.cast(pc.divide(data.column("category"), 50), pa.int32())  # 4 partitions
    data = data.set_column(1, "category", bucket)
    table.append(data)
    table = catalog.load_table("db.parts")
    files = _data_files(table)
    assert len(files) == 4  # one per partition
    stats = compute_table_statistics(table, columns=["category", "id"])
    assert [(b.fields, (b.properties or {}).get("ndv")) for b in stats.blob_metadata] == [
        ([2], "4"),
        ([1], "4000"),
    ]
    positions = {f.file_path: np.arange(0, f.record_count, 2) for f in files[:3]}
    commit_deletion_vectors_v3(catalog, table, positions, new_identifier="db.parts3")
    v3 = catalog.load_table("db.parts3")
    dvs = read_table_deletion_vectors(v3)
    ours = []
    for data_file in files:
        rows = _read_file(data_file.file_path)
        dv = dvs.get(data_file.file_path)
        ours.append(apply_deletion_vector(rows, dv) if dv is not None else rows)
    our_ids = np.sort(pa.concat_tables(ours).column("id").to_numpy())
    their_ids = np.sort(v3.scan(selected_fields=("id",)).to_arrow().column("id").to_numpy())
    np.testing.assert_array_equal(our_ids, their_ids)
    assert verify_table(v3).ok
