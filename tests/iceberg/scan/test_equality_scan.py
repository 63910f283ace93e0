"""``scan_table`` applies equality deletes, checked against a model of the rows in plain
Python: two key columns with nulls (a null deletes a null), a delete of one column, rows
written after a delete left alone, a column renamed after its delete, a deletion vector on
the same file, and a selection that leaves the key columns out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import _commit_delete_snapshot, equality_delete_file, make_catalog
from puffin.iceberg import append, scan_table
from puffin.io.locations import local_path

Row = tuple[int, "str | None", int]


def _rows(ids: range, tag: int) -> list[Row]:
    return [(i, None if i % 5 == 0 else f"k{i % 3}", tag) for i in ids]


def _arrow(rows: list[Row]) -> pa.Table:
    schema = pa.schema(
        [pa.field("id", pa.int64(), False), pa.field("k", pa.string()), pa.field("v", pa.int32())]
    )
    return pa.table(list(map(list, zip(*rows, strict=True))), schema=schema)


def _equality_delete(table: Any, folder: Path, name: str, keys: dict[str, list[Any]]) -> Any:
    """An equality delete file of ``keys`` (column name: values), written with field ids."""
    schema = table.schema()
    fields = [schema.find_field(c) for c in keys]
    arrow = pa.schema(
        [
            pa.field(f.name, pa.int64() if f.name == "id" else pa.string(),
                     metadata={b"PARQUET:field_id": str(f.field_id).encode()})
            for f in fields
        ]
    )  # fmt: skip
    rows = pa.table(list(keys.values()), schema=arrow)
    ids = [f.field_id for f in fields]
    return equality_delete_file(table, folder / f"{name}.parquet", rows, ids)


def _pairs(scanned: pa.Table) -> list[Row]:
    columns = [scanned.column(n).to_pylist() for n in scanned.column_names]
    return sorted(zip(*columns, strict=True), key=repr)


def test_scan_applies_equality_deletes_as_the_model(tmp_path: Path) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType

    catalog = make_catalog(tmp_path)
    catalog.create_namespace_if_not_exists("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "k", StringType(), required=False),
        NestedField(3, "v", IntegerType(), required=False),
    )
    table = catalog.create_table("db.eq", schema, properties={"format-version": "2"})
    first = _rows(range(30), 1)
    table = append(table, _arrow(first))
    # Seq 2: (id, k) keys, a null among them; (7, 'zz') matches nothing.
    pairs = {"id": [1, 5, 7], "k": ["k1", None, "zz"]}
    d1 = _equality_delete(table, tmp_path, "d1", pairs)
    table = _commit_delete_snapshot(catalog, table, [d1], format_version=2, new_identifier="db.e1")
    second = _rows(range(10), 2)  # the same keys again, written after the delete: they stay
    table = append(table, _arrow(second))
    # Seq 4: every row whose k is null, in both appends.
    d2 = _equality_delete(table, tmp_path, "d2", {"k": [None, "nothing"]})
    table = _commit_delete_snapshot(catalog, table, [d2], format_version=2, new_identifier="db.e2")

    gone_first = {(1, "k1"), (5, None)}
    model = [r for r in first if (r[0], r[1]) not in gone_first and r[1] is not None]
    model += [r for r in second if r[1] is not None]
    assert _pairs(scan_table(table).to_arrow()) == sorted(model, key=repr)
    got = scan_table(table, "v = 2", ("v",)).to_arrow()  # keys not selected
    assert got.num_rows == sum(1 for r in model if r[2] == 2)

    with table.update_schema() as update:  # a key column renamed after its deletes
        update.rename_column("k", "kk")
    renamed = catalog.load_table(table.name())
    assert renamed.schema().find_field(2).name == "kk"
    assert _pairs(scan_table(renamed).to_arrow()) == sorted(model, key=repr)
    assert local_path(renamed.metadata_location)


def test_a_key_nested_in_a_struct_is_matched_through_its_parent(tmp_path: Path) -> None:
    """Keys ``(id, info.region)``, the delete file holding ``info`` with only ``region`` (as
    Java's equality delete writer projects it); a null ``info`` makes its region null."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType, StructType

    catalog = make_catalog(tmp_path)
    info = StructType(
        NestedField(3, "region", StringType(), required=False),
        NestedField(4, "n", IntegerType(), required=False),
    )
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "info", info, required=False),
    )
    table = catalog.create_table("db.nested", schema, properties={"format-version": "2"})
    regions = ["eu", "us", None]
    rows = [(i, None if i % 7 == 6 else {"region": regions[i % 3], "n": i}) for i in range(21)]
    data = pa.table({"id": [r[0] for r in rows], "info": [r[1] for r in rows]},
                    schema=table.schema().as_arrow())  # fmt: skip
    table = append(table, data)

    def fid(n: int) -> dict[bytes, bytes]:
        return {b"PARQUET:field_id": str(n).encode()}

    keys = [(0, "eu"), (1, "us"), (2, None), (6, None), (4, "zz")]
    region = pa.field("region", pa.string(), metadata=fid(3))
    arrow = pa.schema([pa.field("id", pa.int64(), False, metadata=fid(1)),
                       pa.field("info", pa.struct([region]), metadata=fid(2))])  # fmt: skip
    delete_rows = {"id": [k[0] for k in keys], "info": [{"region": k[1]} for k in keys]}
    path = tmp_path / "nested-eq.parquet"
    made = equality_delete_file(table, path, pa.table(delete_rows, schema=arrow), [1, 3])
    table = _commit_delete_snapshot(catalog, table, [made], format_version=2,
                                    new_identifier="db.nested_e")  # fmt: skip

    def region_of(row: Any) -> Any:
        return None if row[1] is None else row[1]["region"]

    model = sorted(r[0] for r in rows if (r[0], region_of(r)) not in set(keys))
    assert model == [i for i in range(21) if i not in (0, 1, 2, 6)]  # id 6: a null info
    got = scan_table(table).to_arrow()
    assert sorted(got.column("id").to_pylist()) == model
