"""The changelog against Iceberg Java 1.10.2's changelog view, where Java can answer.

Java's ``create_changelog_view`` refuses any snapshot with delete files, so the shared
history has none: appends by us, an ``UPDATE`` and a ``DELETE`` by Java's Spark SQL
(copy-on-write: each rewrites a file, every other row of it a carry-over), our compaction
(``replace``), pyiceberg's copy-on-write overwrite (two snapshots) and a manifest rewrite.
For ranges across it, Java's rows (the data columns and its three changelog columns) equal
ours, plain, with updates paired by ``id``, and as net changes. Then Java deletes with
merge-on-read position deletes: Java's view refuses that range, ours reads it (the model:
the row the delete names). Java's expiry keeps the parent id of the oldest snapshot it
keeps, and that expired parent is named.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa

from puffin.iceberg import append, local_catalog, overwrite, rewrite_data_files, rewrite_manifests
from puffin.iceberg.changelog.scan import changes

COLUMNS = ["id", "v", "_change_type", "_change_ordinal", "_commit_snapshot_id"]


def _rows(ids: range, tag: str) -> pa.Table:
    schema = pa.schema([pa.field("id", pa.int32(), False), pa.field("v", pa.string())])
    return pa.table({"id": pa.array(list(ids), pa.int32()), "v": [f"{tag}{i}" for i in ids]},
                    schema=schema)  # fmt: skip



@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory, java: Any) -> tuple[Path, list[int]]:
    """The warehouse, and the snapshot ids of the shared history, oldest first."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, NestedField, StringType

    warehouse = tmp_path_factory.mktemp("changes-java")
    catalog = local_catalog(warehouse)
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", IntegerType(), required=True),
                    NestedField(2, "v", StringType(), required=False))  # fmt: skip
    table = catalog.create_table("db.t", schema, properties={"format-version": "2"})
    append(table, _rows(range(10), "a"))
    java.sql("UPDATE `default`.db.t SET v = concat(v, '!') WHERE id IN (2, 3)", warehouse=warehouse)
    append(catalog.load_table("db.t"), _rows(range(10, 15), "b"))
    java.sql("DELETE FROM `default`.db.t WHERE id = 12", warehouse=warehouse)
    rewrite_data_files(catalog.load_table("db.t"), min_input_files=1, statistics="none")
    overwrite(catalog.load_table("db.t"), _rows(range(20, 22), "c"), "id = 0 or id = 11")
    rewrite_manifests(catalog.load_table("db.t"))
    table = catalog.load_table("db.t")
    snapshots = [s.snapshot_id for s in table.snapshots()]
    operations = [s.summary.operation.value for s in table.snapshots()]
    assert operations.count("replace") == 2 and len(snapshots) >= 7, operations
    return warehouse, snapshots


def _ours(warehouse: Path, start: int | None, end: int, **options: Any) -> Counter[tuple[Any, ...]]:
    table = local_catalog(warehouse, create=False).load_table("db.t")
    got = changes(table, start, end, **options).to_arrow()
    return Counter(zip(*(got.column(c).to_pylist() for c in COLUMNS), strict=True))


def _javas(
    java: Any, warehouse: Path, start: int | None, end: int, **flags: Any
) -> Counter[tuple[Any, ...]]:
    got = java.changelog(warehouse, "db.t", start, end, **flags)
    return Counter(zip(*(got.column(c).to_pylist() for c in COLUMNS), strict=True))


@pytest.mark.parametrize(("first", "last"), [(None, -1), (0, -1), (1, 3), (0, 1), (2, 5)])
def test_our_changelog_is_javas(history: tuple[Path, list[int]], java: Any, first: int | None,
                                last: int) -> None:  # fmt: skip
    warehouse, snapshots = history
    start = None if first is None else snapshots[first]
    end = snapshots[last]
    ours = _ours(warehouse, start, end)
    assert ours == _javas(java, warehouse, start, end)
    assert ours  # every range here changes rows


def test_updates_and_net_changes_are_javas(history: tuple[Path, list[int]], java: Any) -> None:
    warehouse, snapshots = history
    start, end = snapshots[0], snapshots[-1]
    updates = _ours(warehouse, start, end, compute_updates=True, identifier_columns=["id"])
    java_updates = _javas(java, warehouse, start, end, compute_updates=True,
                          identifier_columns=["id"])  # fmt: skip
    assert updates == java_updates
    kinds = Counter(row[2] for row in updates.elements())
    assert kinds["UPDATE_BEFORE"] == kinds["UPDATE_AFTER"] == 2
    # Net changes: the same rows. Java dates a row by the last commit that wrote it, a
    # copy-on-write rewrite included; here by the commit that made the change (interop.md).
    for first in (None, start):
        net = _ours(warehouse, first, end, net_changes=True)
        javas = _javas(java, warehouse, first, end, net_changes=True)
        assert _undated(net) == _undated(javas)
    appended = snapshots[0]  # the first append wrote id 1; Java's rewrites carried it over
    assert (1, "a1", "INSERT", 0, appended) in _ours(warehouse, None, end, net_changes=True)


def _undated(rows: Counter[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    return Counter(row[:3] for row in rows.elements())


def test_position_deletes_javas_view_refuses_and_an_expired_parent(
    java: Any, tmp_path: Path
) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, NestedField, StringType

    from peers._common import PeerError
    from puffin.errors import SnapshotRangeError

    catalog = local_catalog(tmp_path)
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", IntegerType(), required=True),
                    NestedField(2, "v", StringType(), required=False))  # fmt: skip
    properties = {"format-version": "2", "write.delete.mode": "merge-on-read"}
    append(catalog.create_table("db.p", schema, properties=properties), _rows(range(5), "a"))
    append(catalog.load_table("db.p"), _rows(range(5, 8), "b"))
    java.sql("DELETE FROM `default`.db.p WHERE id = 3", warehouse=tmp_path)
    table = catalog.load_table("db.p")
    first, second, end = (s.snapshot_id for s in table.snapshots())
    with pytest.raises(PeerError, match="Delete files are currently not supported"):
        java.changelog(tmp_path, "db.p", second, end)
    got = changes(table, second).to_arrow().select(COLUMNS[:3]).to_pylist()
    assert got == [{"id": 3, "v": "a3", "_change_type": "DELETE"}]
    java.sql("CALL `default`.system.expire_snapshots(table => 'db.p', older_than => "
             "TIMESTAMP '2999-01-01 00:00:00', retain_last => 2)", warehouse=tmp_path)  # fmt: skip
    table = local_catalog(tmp_path, create=False).load_table("db.p")
    assert [s.snapshot_id for s in table.snapshots()] == [second, end]
    assert table.snapshot_by_id(second).parent_snapshot_id == first  # Java keeps it
    with pytest.raises(SnapshotRangeError, match=f"{first}, the parent of {second}, was expired"):
        changes(table, None)
    assert changes(table, second).to_arrow().num_rows == 1
