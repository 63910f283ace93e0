"""Snapshot summaries of our commits (``metadata/snapshots.snapshot_summary``), every field
computed here from what the commit wrote and from the rows, as Iceberg Java counts them: a
deletion vector is a delete file and a DV (not a position-delete file), its size is its blob's
(``content_size_in_bytes``), and the totals move on from the parent's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import commit_position_deletes_v2, make_catalog
from puffin.iceberg import create_sample_table, delete_rows, upgrade_to_v3
from puffin.iceberg.metadata.delete_files import live_delete_files
from puffin.iceberg.metadata.manifests import CONTENT_SIZE, read_manifest_list
from puffin.io.locations import local_path


def _summary(table: Any) -> dict[str, str]:
    return dict(table.current_snapshot().summary.additional_properties)


def _moved(parent: dict[str, str], **change: int) -> dict[str, str]:
    """The parent's totals moved by ``change`` (``files_size=39`` moves total-files-size);
    a total the parent lacks stays out, as in Java (its history is not known)."""
    names = ["data-files", "delete-files", "records", "files-size", "position-deletes",
             "equality-deletes"]
    return {
        f"total-{n}": str(int(parent[f"total-{n}"]) + change.get(n.replace("-", "_"), 0))
        for n in names
        if f"total-{n}" in parent
    }


def test_deletes_that_add_and_replace_vectors(tmp_path: Path) -> None:
    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=3000, files=3)
    ids = table.scan(selected_fields=("id",)).to_arrow()["id"]
    table = upgrade_to_v3(table)
    parent = _summary(table)

    first = delete_rows(table, "id < 10")
    (dv,) = first.vectors
    rows = pc.sum(pc.less(ids, 10)).as_py()
    assert dv.record_count == rows
    assert _summary(first.table) == {
        "added-files-size": str(dv.content_size_in_bytes),
        "added-delete-files": "1",
        "added-position-deletes": str(rows),
        "added-dvs": "1",
        **_moved(parent, delete_files=1, files_size=dv.content_size_in_bytes,
                 position_deletes=rows),
    }

    # The first file's vector is replaced by a larger one; a second file gets its first.
    second = delete_rows(first.table, "id < 20 or id >= 2990")
    more = pc.sum(pc.or_(pc.less(ids, 20), pc.greater_equal(ids, 2990))).as_py()
    added = sum(v.content_size_in_bytes for v in second.vectors)
    assert len(second.vectors) == 2 and sum(v.record_count for v in second.vectors) == more
    assert _summary(second.table) == {
        "added-files-size": str(added),
        "removed-files-size": str(dv.content_size_in_bytes),
        "added-delete-files": "2",
        "removed-delete-files": "1",
        "added-position-deletes": str(more),
        "removed-position-deletes": str(rows),
        "added-dvs": "2",
        "removed-dvs": "1",
        **_moved(_summary(first.table), delete_files=1,
                 files_size=added - dv.content_size_in_bytes, position_deletes=more - rows),
    }


def test_the_upgrade_replaces_position_delete_files_with_vectors(tmp_path: Path) -> None:
    catalog = make_catalog(tmp_path)
    base = create_sample_table(catalog, "db.base", rows=900, files=3)
    paths = sorted(str(t.file.file_path) for t in base.scan().plan_files())
    v2 = commit_position_deletes_v2(
        catalog, base, {paths[0]: [1, 2, 3], paths[2]: [0, 9]}, new_identifier="db.v2"
    )
    (old,) = live_delete_files(v2, v2.current_snapshot()).values()
    parent = _summary(v2)
    v3 = upgrade_to_v3(v2)
    new = list(live_delete_files(v3, v3.current_snapshot()).values())
    assert len(new) == 2
    sizes = sum(int(d[CONTENT_SIZE]) for d in new)
    assert int(old.file_size_in_bytes) == Path(local_path(str(old.file_path))).stat().st_size
    summary = _summary(v3)
    assert not any(k.startswith("total-") for k in parent)  # the fixture's v2 commit
    assert {k: v for k, v in summary.items() if not k.startswith("total-")} == {
        "added-files-size": str(sizes),
        "removed-files-size": str(old.file_size_in_bytes),
        "added-delete-files": "2",
        "removed-delete-files": "1",
        "removed-position-delete-files": "1",
        "added-position-deletes": "5",
        "removed-position-deletes": "5",
        "added-dvs": "2",
    }
    assert {k: v for k, v in summary.items() if k.startswith("total-")} == _moved(
        parent, delete_files=1, files_size=sizes - old.file_size_in_bytes
    )


def test_a_snapshot_names_its_parent_and_sequence_number(tmp_path: Path) -> None:
    # In the table metadata and in its manifest list's header, as Java's ManifestListWriter.
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.manifest import MANIFEST_LIST_FILE_SCHEMAS, ManifestFile

    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=300, files=2))
    parent = table.current_snapshot()
    table = delete_rows(table, "id < 5").table
    snapshot = table.current_snapshot()
    assert snapshot.parent_snapshot_id == parent.snapshot_id
    assert snapshot.sequence_number == parent.sequence_number + 1
    assert table.metadata.last_sequence_number == snapshot.sequence_number
    with AvroFile[ManifestFile](
        table.io.new_input(snapshot.manifest_list), MANIFEST_LIST_FILE_SCHEMAS[3],
        read_types={-1: ManifestFile},
    ) as reader:
        meta = reader.header.meta
    assert {k: meta[k] for k in ("snapshot-id", "parent-snapshot-id", "sequence-number")} == {
        "snapshot-id": str(snapshot.snapshot_id),
        "parent-snapshot-id": str(parent.snapshot_id),
        "sequence-number": str(snapshot.sequence_number),
    }


def test_the_first_commit_of_an_empty_v3_table_has_no_parent(tmp_path: Path) -> None:
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    from puffin.iceberg import append

    catalog = make_catalog(tmp_path)
    table = catalog.create_table("db.e", Schema(NestedField(1, "id", LongType(), required=False)))
    table = upgrade_to_v3(table)
    assert table.current_snapshot() is None
    table = append(table, pa.table({"id": pa.array([1, 2, 3], pa.int64())}), statistics="none")
    first = table.current_snapshot()
    (data,) = [t.file for t in table.scan().plan_files()]
    assert first.parent_snapshot_id is None and first.sequence_number == 1
    assert _summary(table) == {
        "added-files-size": str(data.file_size_in_bytes),
        "added-data-files": "1",
        "added-records": "3",
        **_moved({f"total-{n}": "0" for n in ("data-files", "delete-files", "records",
                  "files-size", "position-deletes", "equality-deletes")},
                 data_files=1, records=3, files_size=data.file_size_in_bytes),
    }
    # v3 lineage: the snapshot's rows take ids from the table's next-row-id on.
    assert (first.first_row_id, first.added_rows, table.metadata.next_row_id) == (0, 3, 3)
    assert first.schema_id == table.metadata.current_schema_id
    table = append(table, pa.table({"id": pa.array([4, 5], pa.int64())}), statistics="none")
    second = table.current_snapshot()
    assert (second.first_row_id, second.added_rows, table.metadata.next_row_id) == (3, 2, 5)
    # The new data manifest is listed first, as Java lists it.
    listed = read_manifest_list(table.io, second.manifest_list)
    assert listed[0].added_snapshot_id == second.snapshot_id
    assert [m.added_snapshot_id for m in listed[1:]] == [first.snapshot_id]


def test_a_delete_adds_no_rows_and_keeps_the_schema_id(tmp_path: Path) -> None:
    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=300, files=2))
    assert table.metadata.next_row_id == 0
    # The first commit after the upgrade gives the upgraded rows their ids (Java's rule: a
    # manifest without first_row_id gets one in the next manifest list), then no more.
    table = delete_rows(table, "id < 5").table
    first = table.current_snapshot()
    assert (first.first_row_id, first.added_rows, table.metadata.next_row_id) == (0, 300, 300)
    table = delete_rows(table, "id < 9").table
    second = table.current_snapshot()
    assert (second.first_row_id, second.added_rows, table.metadata.next_row_id) == (300, 0, 300)
    assert second.schema_id == table.metadata.current_schema_id
