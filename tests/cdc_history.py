"""A CDC history on a v3 table through equality deletes, and its model in plain Python.

Appends, deletes by key (one key column or two; a null key deletes a null), upserts (a
delete of the keys and the new rows in one commit, as Flink writes them), keys repeating
across commits. Each equality delete file is written and committed here (a Parquet file of
the key columns with field ids, in one delete manifest, by our own snapshot writer), scoped
to a partition on a partitioned table. The model: a row is live unless an equality delete of
a later sequence number, in its partition (or global), holds its key. Shared by the
property test (tests/iceberg/maintenance/test_equality_cdc.py) and the Spark jobs' test.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from iceberg_fixtures import equality_delete_file, make_catalog
from puffin.iceberg import append, scan_table, upgrade_to_v3

PARTITIONS = (0, 1)
#: (id, p, tag): id a key (nullable), p the partition column, tag unique per row
Row = tuple["int | None", int, int]


def cdc_schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField

    return Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "p", IntegerType(), required=True),
        NestedField(3, "tag", LongType(), required=True),
    )


CDC_ARROW = pa.schema(
    [
        pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
        pa.field("p", pa.int32(), False, metadata={b"PARQUET:field_id": b"2"}),
        pa.field("tag", pa.int64(), False, metadata={b"PARQUET:field_id": b"3"}),
    ]
)


@dataclass
class Model:
    """Rows with the sequence number of their commit; deletes as they apply."""

    rows: list[tuple[int, Row]] = field(default_factory=list)
    sequence: int = 1  # the table's creation is not a snapshot: the first commit is 1
    tags: itertools.count[int] = field(default_factory=itertools.count)

    def insert(self, ids: list[int | None], p: int) -> list[Row]:
        made = [(i, p, next(self.tags)) for i in ids]
        self.rows += [(self.sequence, r) for r in made]
        return made

    def delete(self, columns: tuple[str, ...], keys: set[tuple[Any, ...]], p: int | None) -> None:
        """Rows of earlier commits (in partition ``p``, or all) whose key is in ``keys``."""
        pick = {"id": 0, "p": 1}
        self.rows = [
            (s, r)
            for s, r in self.rows
            if not (
                s < self.sequence
                and (p is None or r[1] == p)
                and tuple(r[pick[c]] for c in columns) in keys
            )
        ]

    def live(self) -> list[Row]:
        return sorted((r for _, r in self.rows), key=repr)


def cdc_arrow(rows: list[Row]) -> pa.Table:
    return pa.table([list(c) for c in zip(*rows, strict=True)], schema=CDC_ARROW)


def cdc_equality_file(table: Any, folder: Path, columns: tuple[str, ...], keys: list[Any],
                   p: int | None) -> Any:  # fmt: skip
    """An equality delete file of ``keys`` on ``columns``, in partition ``p`` (or none)."""
    schema = pa.schema([CDC_ARROW.field(c) for c in columns])
    path = folder / f"eq-{len(list(folder.iterdir()))}.parquet"
    rows = pa.table([list(c) for c in zip(*keys, strict=True)], schema=schema)
    ids = [cdc_schema().find_field(c).field_id for c in columns]
    return equality_delete_file(table, path, rows, ids, None if p is None else (p,))


def commit_change(table: Any, deletes: list[Any], data: list[Any]) -> Any:
    from puffin.iceberg.metadata.snapshots import commit_snapshot

    written: list[str] = []
    committed, _ = commit_snapshot(
        table, written, deletes=deletes, added_data=data,
        operation="overwrite" if data else "delete",
    )  # fmt: skip
    return committed


#: (kind: insert, delete or upsert; keys; partition; key columns)
Step = tuple[str, "list[int | None]", int, "tuple[str, ...]"]


def build_history(
    folder: Path, partitioned: bool, steps: Sequence[Step], format_version: int = 3
) -> tuple[Any, Model]:
    """The table ``db.cdc`` (at ``format_version`` 2 or 3) in a catalog under ``folder``
    after ``steps`` (on a first append of ids 0, 1, 2, null, 3 in partition 0 and 1 in
    partition 1), and its model."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    eq_folder = folder / "eq"
    eq_folder.mkdir(parents=True)
    catalog = make_catalog(folder)
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p"))
    created = catalog.create_table("db.cdc", cdc_schema(), partition_spec=spec if partitioned
                                   else PartitionSpec())  # fmt: skip
    table = upgrade_to_v3(created) if format_version == 3 else created
    model = Model()
    table = append(table, cdc_arrow(model.insert([0, 1, 2, None, 3], 0) + model.insert([1], 1)))
    model.sequence += 1
    for kind, keys_drawn, p, columns in steps:
        scope = p if partitioned else None  # an unpartitioned table's deletes are global
        if kind == "insert":
            table = append(table, cdc_arrow(model.insert(keys_drawn, p)))
        else:
            keys = sorted({(k,) if columns == ("id",) else (k, p) for k in keys_drawn}, key=repr)
            deletes = [cdc_equality_file(table, eq_folder, columns, keys, scope)]
            model.delete(columns, set(keys), scope)
            data = []
            if kind == "upsert":
                from puffin.iceberg.writes.append import write_data_files

                data = write_data_files(table, cdc_arrow(model.insert(keys_drawn, p)))
            table = commit_change(table, deletes, data)
        model.sequence += 1

    return table, model


def live_rows(table: Any) -> list[Row]:
    """The table's rows as ``scan_table`` reads them, in the model's order."""
    got = scan_table(table).to_arrow()
    columns = (got.column(c).to_pylist() for c in ("id", "p", "tag"))
    return sorted(zip(*columns, strict=True), key=repr)


def equality_files(table: Any) -> list[str]:
    """The live equality delete files of the table's current snapshot."""
    from puffin.iceberg.metadata.delete_files import live_delete_files

    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    return [k[0] for k, d in live_delete_files(table, snapshot).items() if d.content == 2]
