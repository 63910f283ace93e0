"""Manifests we write hold their entries in Avro blocks of BLOCK_RECORDS, and read back whole."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry
from pyiceberg.manifest import ManifestEntryStatus as Status
from pyiceberg.typedef import Record

from puffin.iceberg import create_sample_table, local_catalog
from puffin.iceberg.metadata.manifest_writers import BLOCK_RECORDS, DataManifestWriter
from puffin.iceberg.metadata.manifests import read_from_disk, read_manifest_entries


def _entry(i: int) -> ManifestEntry:
    data_file = DataFile.from_args(
        _table_format_version=3,
        content=DataFileContent.DATA,
        file_path=f"file:///warehouse/data/f{i:05d}.parquet",
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=10 + i,
        file_size_in_bytes=1000 + i,
    )
    return ManifestEntry.from_args(
        status=Status.ADDED, snapshot_id=7, sequence_number=None, data_file=data_file
    )


@pytest.mark.parametrize("count", [1, BLOCK_RECORDS, 2 * BLOCK_RECORDS + 50])
def test_entries_in_blocks_read_back_whole(tmp_path: Path, count: int) -> None:
    table = create_sample_table(local_catalog(tmp_path), "db.blocks", rows=10)
    path = tmp_path / "m.avro"
    with DataManifestWriter(
        table.spec(), table.schema(), table.io.new_output(str(path)), 7, "deflate"
    ) as writer:
        for i in range(count):
            writer.add_entry(_entry(i))
    manifest = writer.to_manifest_file()
    manifest.sequence_number = 1
    data = path.read_bytes()
    sync = data[-16:]  # every block ends with the file's sync marker, as its header does
    blocks = -(-count // BLOCK_RECORDS)
    assert data.count(sync) == 1 + blocks
    with read_from_disk():
        read = read_manifest_entries(table.io, manifest)
    assert [str(e.data_file.file_path) for e in read] == [
        f"file:///warehouse/data/f{i:05d}.parquet" for i in range(count)
    ]
    assert [e.data_file.record_count for e in read] == [10 + i for i in range(count)]
    assert manifest.added_files_count == count


def test_a_failed_write_leaves_its_last_block_unwritten(tmp_path: Path) -> None:
    table = create_sample_table(local_catalog(tmp_path), "db.blocks", rows=10)
    path = tmp_path / "m.avro"
    with pytest.raises(RuntimeError, match="stop"):
        with DataManifestWriter(
            table.spec(), table.schema(), table.io.new_output(str(path)), 7, "deflate"
        ) as writer:
            for i in range(BLOCK_RECORDS + 5):
                writer.add_entry(_entry(i))
            raise RuntimeError("stop")
    data = path.read_bytes()
    assert data.count(data[-16:]) == 2  # the header and the one full block
