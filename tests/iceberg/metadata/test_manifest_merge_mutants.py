"""Tests written against the mutants that survived mutation testing of manifest merging
(``iceberg/metadata/manifest_merge.py``; ``make mutation``, docs/testing.md).

One v3 table with merging off and four data manifests (two of 20 rows from before the
upgrade, two appends of 5): :func:`merge_manifests` is called on them directly with
policies that keep or merge each bin, and every merged entry is compared with the entry it
came from, read with pyiceberg's own manifest reader, and with the row ids the manifest list
gave each file (plain arithmetic on the list's ``first_row_id`` and the record counts).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import ManifestEntryStatus, write_manifest
from pyiceberg.table import Table

from iceberg_fixtures import make_catalog
from puffin.iceberg import (
    append,
    create_sample_table,
    delete_rows,
    sample_batch,
    transaction,
    upgrade_to_v3,
)
from puffin.iceberg.metadata.manifest_merge import MergePolicy, merge_manifests
from puffin.iceberg.metadata.manifests import (
    FIRST_ROW_ID,
    read_manifest_entries,
    read_manifest_list,
)
from puffin.iceberg.metadata.v3 import first_row_id_of

ADDED, EXISTING, DELETED = ManifestEntryStatus.ADDED, ManifestEntryStatus.EXISTING, (
    ManifestEntryStatus.DELETED
)


class Setup:
    def __init__(self, folder: Path) -> None:
        table = upgrade_to_v3(create_sample_table(make_catalog(folder), "db.t", rows=40, files=2))
        with transaction(table) as tx:
            tx.set_properties({"commit.manifest-merge.enabled": "false"})
        table = delete_rows(table.refresh(), "id = 1").table  # the first v3 list: row ids
        for i in range(2):
            table = append(table, sample_batch(5, start=1000 + 10 * i, seed=i), statistics="none")
        self.table: Table = table
        snapshot = table.current_snapshot()
        assert snapshot is not None
        self.manifests = [
            m for m in read_manifest_list(table.io, snapshot.manifest_list) if m.content == 0
        ]
        assert len(self.manifests) == 4
        self.newest = self.manifests[0].added_snapshot_id
        #: ``{data file: (status, snapshot id, sequence, file sequence, first row id)}``.
        self.entries: dict[str, tuple[Any, ...]] = {}
        for m in self.manifests:
            next_id = first_row_id_of(m)
            assert next_id is not None
            for e in m.fetch_manifest_entry(table.io, discard_deleted=False):
                self.entries[e.data_file.file_path] = (
                    e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number, next_id
                )
                next_id += e.data_file.record_count

    def merge(self, policy: MergePolicy, snapshot_id: int | None = None,
              manifests: list[Any] | None = None) -> tuple[list[Any], list[str]]:
        written: list[str] = []
        out = merge_manifests(
            self.table,
            self.manifests if manifests is None else manifests,
            self.newest if snapshot_id is None else snapshot_id,
            written,
            policy,
        )
        return out, written


def read_back(table: Table, manifest: Any) -> dict[str, tuple[Any, ...]]:
    """The manifest's entries, with ``first_row_id`` (v3: pyiceberg's reader drops it). The
    manifest is not committed: a sequence number left to inherit reads as its -1."""
    out = {}
    for e in read_manifest_entries(table.io, manifest, include_deleted=True):
        df = e.data_file
        first = df[FIRST_ROW_ID] if len(df) > FIRST_ROW_ID else None
        out[df.file_path] = (e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number,
                             first)
    return out


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return Setup(tmp_path_factory.mktemp("manifest_merge"))


def _table_with(properties: dict[str, str]) -> Any:
    return SimpleNamespace(metadata=SimpleNamespace(properties=properties))


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({}, MergePolicy(True, 100, 8 * 1024 * 1024)),
        ({"commit.manifest-merge.enabled": "FALSE"}, MergePolicy(False, 100, 8 * 1024 * 1024)),
        ({"commit.manifest-merge.enabled": "True"}, MergePolicy(True, 100, 8 * 1024 * 1024)),
        ({"commit.manifest-merge.enabled": "yes"}, MergePolicy(False, 100, 8 * 1024 * 1024)),
        (
            {"commit.manifest.min-count-to-merge": "3", "commit.manifest.target-size-bytes": "77"},
            MergePolicy(True, 3, 77),
        ),
    ],
)
def test_the_policy_is_read_from_the_table_properties(
    properties: dict[str, str], expected: MergePolicy
) -> None:
    assert MergePolicy.of(_table_with(properties)) == expected  # type: ignore[arg-type]


def test_nothing_merges_when_off_or_when_there_is_nothing(setup: Setup) -> None:
    out, written = setup.merge(MergePolicy(enabled=False, min_count=2))
    assert out == setup.manifests and written == []
    out, written = setup.merge(MergePolicy(min_count=2), manifests=[])
    assert out == [] and written == []


def test_the_bin_with_the_new_manifest_waits_for_the_minimum_count(setup: Setup) -> None:
    out, written = setup.merge(MergePolicy(min_count=5))
    assert [m.manifest_path for m in out] == [m.manifest_path for m in setup.manifests]
    assert written == []
    out, written = setup.merge(MergePolicy(min_count=4))
    assert len(out) == 1 and written == [out[0].manifest_path]
    assert out[0].manifest_path.endswith("-m0.avro")
    assert out[0].manifest_path.startswith(setup.table.location() + "/metadata/")


def test_bins_are_packed_from_the_end_and_the_others_merge_at_once(setup: Setup) -> None:
    lengths = [m.manifest_length for m in setup.manifests]
    # A target that holds exactly the last two: bins [m0], [m1], [m2, m3]; the last bin
    # does not hold the new manifest m0, so it merges whatever the minimum count.
    target = lengths[2] + lengths[3]
    assert lengths[1] + lengths[2] > target and lengths[0] + lengths[1] > target
    out, written = setup.merge(MergePolicy(min_count=100, target_size=target))
    assert [m.manifest_path for m in out[:2]] == [m.manifest_path for m in setup.manifests[:2]]
    assert len(out) == 3 and written == [out[2].manifest_path]
    merged = read_back(setup.table, out[2])
    old = [e.data_file.file_path for m in setup.manifests[2:]
           for e in m.fetch_manifest_entry(setup.table.io)]
    assert set(merged) == set(old)
    # One byte less: every manifest is a bin of its own, and none merges.
    out, written = setup.merge(MergePolicy(min_count=2, target_size=target - 1))
    assert written == []  # m2 and m3 no longer fit one bin
    assert [m.manifest_path for m in out] == [m.manifest_path for m in setup.manifests]


def test_a_merged_manifest_keeps_every_entry_and_row_id(setup: Setup) -> None:
    # Merged as the newest append's commit: its file stays ADDED (sequence numbers still to
    # inherit), the others become EXISTING with their own snapshot and sequence numbers.
    out, _ = setup.merge(MergePolicy(min_count=2))
    (merged,) = out
    expected = {}
    for path, (status, snapshot, seq, file_seq, first) in setup.entries.items():
        assert status == ADDED
        if snapshot == setup.newest:
            expected[path] = (ADDED, snapshot, -1, -1, first)
        else:
            expected[path] = (EXISTING, snapshot, seq, file_seq, first)
    assert read_back(setup.table, merged) == expected
    assert merged.added_snapshot_id == setup.newest
    # As another snapshot's commit, every entry is an earlier one: EXISTING.
    out, _ = setup.merge(MergePolicy(min_count=2), snapshot_id=7)
    (merged,) = out
    assert read_back(setup.table, merged) == {
        path: (EXISTING, snapshot, seq, file_seq, first)
        for path, (_, snapshot, seq, file_seq, first) in setup.entries.items()
    }
    assert merged.added_snapshot_id == 7


def _deleted_manifest(setup: Setup, snapshot_id: int) -> Any:
    """A v2 data manifest (pyiceberg's writer) deleting the first table file in ``snapshot_id``."""
    source = setup.manifests[-1]
    (entry,) = source.fetch_manifest_entry(setup.table.io)
    path = f"{setup.table.location()}/metadata/deleted-{snapshot_id}-m0.avro"
    io = PyArrowFileIO()
    with write_manifest(
        format_version=2,
        spec=setup.table.spec(),
        schema=setup.table.schema(),
        output_file=io.new_output(path),
        snapshot_id=snapshot_id,
        avro_compression="deflate",
    ) as writer:
        writer.delete(entry)
    return writer.to_manifest_file()


def test_deletes_of_this_commit_stay_and_earlier_ones_are_dropped(setup: Setup) -> None:
    (entry,) = setup.manifests[-1].fetch_manifest_entry(setup.table.io)
    gone = entry.data_file.file_path
    ours = _deleted_manifest(setup, 99)
    out, _ = setup.merge(MergePolicy(min_count=2), snapshot_id=99,
                         manifests=[setup.manifests[0], ours])
    (merged,) = out
    got = read_back(setup.table, merged)
    # Kept as this commit's delete, with the sequence numbers of the entry it deletes (a
    # deleted entry has no row ids to keep).
    assert got[gone] == (DELETED, 99, entry.sequence_number, entry.file_sequence_number, None)
    earlier = _deleted_manifest(setup, 98)
    out, _ = setup.merge(MergePolicy(min_count=2), snapshot_id=99,
                         manifests=[setup.manifests[0], earlier])
    (merged,) = out
    assert gone not in read_back(setup.table, merged)
    assert len(read_back(setup.table, merged)) == 1


def test_a_merged_manifest_holds_data(setup: Setup) -> None:
    from pyiceberg.manifest import ManifestContent

    out, _ = setup.merge(MergePolicy(min_count=2))
    assert out[0].content == ManifestContent.DATA
    assert (out[0].added_files_count, out[0].existing_files_count) == (1, 3)


def test_each_partition_spec_merges_apart_highest_first(tmp_path: Path) -> None:
    # Two manifests of spec 0 (the sample appends), then the spec gains a partition field
    # (pyiceberg writes v2 metadata only: before the upgrade) and one append of spec 1.
    table = create_sample_table(
        make_catalog(tmp_path), "db.t", rows=40, files=2,
        properties={"commit.manifest-merge.enabled": "false"},
    )
    with table.update_spec() as update:
        update.add_identity("category")
    table = table.refresh()
    table.append(sample_batch(5, start=1000, seed=1).cast(table.schema().as_arrow()))
    table = delete_rows(upgrade_to_v3(table.refresh()), "id = 1").table
    snapshot = table.current_snapshot()
    assert snapshot is not None
    manifests = [m for m in read_manifest_list(table.io, snapshot.manifest_list) if m.content == 0]
    assert [m.partition_spec_id for m in manifests] == [1, 0, 0]
    written: list[str] = []
    out = merge_manifests(table, manifests, 5, written, MergePolicy(min_count=100))
    # Spec 1 first (alone: kept); spec 0's two merge at once (the new manifest is not there).
    assert [m.partition_spec_id for m in out] == [1, 0]
    assert out[0].manifest_path == manifests[0].manifest_path
    assert written == [out[1].manifest_path] and written[0].endswith("-m0.avro")
    old = {e.data_file.file_path for m in manifests[1:] for e in m.fetch_manifest_entry(table.io)}
    assert set(read_back(table, out[1])) == old


def test_entries_to_rewrite_write_out_the_row_ids_and_skip_deletes_unless_asked(
    setup: Setup,
) -> None:
    from puffin.iceberg.metadata.manifest_merge import entries_to_rewrite

    for m in setup.manifests:
        got = {
            e.data_file.file_path: (e.status, e.data_file[FIRST_ROW_ID])
            for e in entries_to_rewrite(setup.table, m)
        }
        assert got == {
            e.data_file.file_path: (ADDED, setup.entries[e.data_file.file_path][4])
            for e in m.fetch_manifest_entry(setup.table.io)
        }
    deleted = _deleted_manifest(setup, 97)
    assert entries_to_rewrite(setup.table, deleted) == []
    (entry,) = entries_to_rewrite(setup.table, deleted, include_deleted=True)
    assert (entry.status, entry.snapshot_id) == (DELETED, 97)
