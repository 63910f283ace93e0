"""Sequence-number and snapshot-id inheritance (``metadata/manifests._inherit``) against
pyiceberg 0.12's own ``_inherit_from_manifest``, which this library no longer imports: every
entry status, null or written numbers and snapshot ids, a v1 manifest's 0 and a later one."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    _inherit_from_manifest,
)
from pyiceberg.typedef import Record

from puffin.iceberg.metadata.manifests import _inherit


def _entry(status: ManifestEntryStatus, snapshot: int | None, seq: int | None,
           file_seq: int | None) -> ManifestEntry:  # fmt: skip
    data_file = DataFile.from_args(
        content=DataFileContent.DATA, file_path="s3://b/a.parquet",
        file_format=FileFormat.PARQUET, partition=Record(), record_count=1,
        file_size_in_bytes=10,
    )  # fmt: skip
    return ManifestEntry.from_args(
        status=status, snapshot_id=snapshot, sequence_number=seq,
        file_sequence_number=file_seq, data_file=data_file,
    )  # fmt: skip


def _manifest(sequence: int, added_snapshot: int | None) -> ManifestFile:
    return ManifestFile.from_args(
        manifest_path="s3://b/m.avro", manifest_length=1, partition_spec_id=3,
        content=ManifestContent.DATA, sequence_number=sequence, min_sequence_number=sequence,
        added_snapshot_id=added_snapshot,
    )  # fmt: skip


def _fields(entry: ManifestEntry) -> tuple[Any, ...]:
    return (entry.snapshot_id, entry.sequence_number, entry.file_sequence_number,
            entry.data_file.spec_id)  # fmt: skip


#: status, snapshot id, data and file sequence numbers written (or null), the manifest's
#: sequence number (a v1 manifest's 0, or later) and its added snapshot id
CASES = list(
    itertools.product(ManifestEntryStatus, (None, 7), (None, 4), (None, 5), (0, 9), (None, 11))
)


@pytest.mark.parametrize(("status", "snapshot", "seq", "file_seq", "manifest_seq", "added"), CASES)
def test_inheritance_is_pyicebergs(
    status: ManifestEntryStatus, snapshot: int | None, seq: int | None,
    file_seq: int | None, manifest_seq: int, added: int | None,
) -> None:  # fmt: skip
    manifest = _manifest(manifest_seq, added)
    ours = _inherit(_entry(status, snapshot, seq, file_seq), manifest, ManifestEntryStatus.ADDED)
    theirs = _inherit_from_manifest(_entry(status, snapshot, seq, file_seq), manifest)
    assert _fields(ours) == _fields(theirs)
