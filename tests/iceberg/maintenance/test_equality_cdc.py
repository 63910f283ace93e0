"""CDC histories through equality deletes, every job held to a model computed in plain Python.

Hypothesis draws a history on a v3 table (partitioned by ``p`` or not): appends, deletes by
key (one key column or two; a null key deletes a null), upserts (a delete of the keys and
the new rows in one commit, as Flink writes them), keys repeating across commits. Each
equality delete file is written and committed by the test (a Parquet file of the key
columns with field ids, in one delete manifest, by our own snapshot writer), scoped to a
partition on a partitioned table. The model: a row is live unless an equality delete of a
later sequence number, in its partition (or global), holds its key.

Checked against the model: ``scan_table``; ``compute_table_statistics`` (the NDV of a column
unique per row is the live row count); ``delete_rows`` (it counts live rows only); then
either ``convert_equality_deletes`` (no equality delete left, rows unchanged, no ``_row_id``
changed) or ``rewrite_data_files`` (rows unchanged, equality deletes dropped with the files
they applied to).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("hypothesis")

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iceberg_fixtures import equality_delete_file, make_catalog
from puffin.iceberg import (
    append,
    compute_table_statistics,
    convert_equality_deletes,
    delete_rows,
    rewrite_data_files,
    scan_table,
    upgrade_to_v3,
    verify_table,
)

PARTITIONS = (0, 1)
#: (id, p, tag): id a key (nullable), p the partition column, tag unique per row
Row = tuple["int | None", int, int]


def _schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField

    return Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "p", IntegerType(), required=True),
        NestedField(3, "tag", LongType(), required=True),
    )


_ARROW = pa.schema(
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


def _arrow(rows: list[Row]) -> pa.Table:
    return pa.table([list(c) for c in zip(*rows, strict=True)], schema=_ARROW)


def _equality_file(table: Any, folder: Path, columns: tuple[str, ...], keys: list[Any],
                   p: int | None) -> Any:  # fmt: skip
    """An equality delete file of ``keys`` on ``columns``, in partition ``p`` (or none)."""
    schema = pa.schema([_ARROW.field(c) for c in columns])
    path = folder / f"eq-{len(list(folder.iterdir()))}.parquet"
    rows = pa.table([list(c) for c in zip(*keys, strict=True)], schema=schema)
    ids = [_schema().find_field(c).field_id for c in columns]
    return equality_delete_file(table, path, rows, ids, None if p is None else (p,))


def _commit(table: Any, deletes: list[Any], data: list[Any]) -> Any:
    from puffin.iceberg.metadata.snapshots import commit_snapshot

    written: list[str] = []
    committed, _ = commit_snapshot(
        table, written, deletes=deletes, added_data=data,
        operation="overwrite" if data else "delete",
    )  # fmt: skip
    return committed


ids = st.one_of(st.none(), st.integers(0, 6))
step = st.tuples(
    st.sampled_from(["insert", "delete", "upsert"]),
    st.lists(ids, min_size=1, max_size=6),
    st.sampled_from(PARTITIONS),
    st.sampled_from([("id",), ("id", "p")]),
)


@settings(
    max_examples=int(os.environ.get('CDC_EXAMPLES', 12)), deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(
    partitioned=st.booleans(),
    steps=st.lists(step, min_size=2, max_size=6),
    compact=st.booleans(),
    cut=st.integers(0, 40),
)
def test_cdc_history_reads_as_the_model_through_every_job(
    tmp_path_factory: pytest.TempPathFactory,
    partitioned: bool,
    steps: list[tuple[str, list[int | None], int, tuple[str, ...]]],
    compact: bool,
    cut: int,
) -> None:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    folder = tmp_path_factory.mktemp("cdc")
    eq_folder = folder / "eq"
    eq_folder.mkdir()
    catalog = make_catalog(folder)
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p"))
    created = catalog.create_table("db.cdc", _schema(), partition_spec=spec if partitioned
                                   else PartitionSpec())  # fmt: skip
    table = upgrade_to_v3(created)
    model = Model()
    table = append(table, _arrow(model.insert([0, 1, 2, None, 3], 0) + model.insert([1], 1)))
    model.sequence += 1
    for kind, keys_drawn, p, columns in steps:
        scope = p if partitioned else None  # an unpartitioned table's deletes are global
        if kind == "insert":
            table = append(table, _arrow(model.insert(keys_drawn, p)))
        else:
            keys = sorted({(k,) if columns == ("id",) else (k, p) for k in keys_drawn}, key=repr)
            deletes = [_equality_file(table, eq_folder, columns, keys, scope)]
            model.delete(columns, set(keys), scope)
            data = []
            if kind == "upsert":
                from puffin.iceberg.writes.append import write_data_files

                data = write_data_files(table, _arrow(model.insert(keys_drawn, p)))
            table = _commit(table, deletes, data)
        model.sequence += 1

    def rows(t: Any) -> list[Row]:
        got = scan_table(t).to_arrow()
        columns = (got.column(c).to_pylist() for c in ("id", "p", "tag"))
        return sorted(zip(*columns, strict=True), key=repr)

    assert rows(table) == model.live()
    stats = compute_table_statistics(table, columns=["tag"], commit=False)
    assert int(stats.blob_metadata[0].properties["ndv"]) == len(model.live())

    deleted = [r for r in model.live() if r[2] < cut]
    result = delete_rows(table, f"tag < {cut}")
    assert result.deleted_rows == len(deleted)
    table = result.table
    model.rows = [(s, r) for s, r in model.rows if r[2] >= cut]
    assert rows(table) == model.live()

    before = _row_ids(table)
    if compact:
        compacted = rewrite_data_files(table, min_deleted_fraction=0.0, min_input_files=1,
                                       statistics="none")  # fmt: skip
        table = compacted.table
        assert rows(table) == model.live()
        assert _row_ids(table) == before
        assert not _equality_files(table) or compacted.snapshot_id is None
    else:
        converted = convert_equality_deletes(table)
        table = converted.table
        assert not _equality_files(table)
        assert rows(table) == model.live()
        assert _row_ids(table) == before


def _row_ids(table: Any) -> list[tuple[int, int]]:
    got = scan_table(table, selected_fields=("tag", "_row_id")).to_arrow()
    return sorted(zip(got.column("tag").to_pylist(), got.column("_row_id").to_pylist(),
                      strict=True))  # fmt: skip


def _equality_files(table: Any) -> list[str]:
    from puffin.iceberg.metadata.delete_files import live_delete_files

    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    return [k[0] for k, d in live_delete_files(table, snapshot).items() if d.content == 2]


def test_the_command_converts_once_then_finds_nothing(tmp_path: Path) -> None:
    """``puffin table convert-equality-deletes --json`` in its documented shape; a second run
    commits nothing; a v2 table is refused with one line and exit 1 (a table error)."""
    import contextlib
    import io
    import json

    from puffin.cli import main
    from tests.cli.test_cli import check_shape, documented_shape

    catalog = make_catalog(tmp_path)
    v2 = append(catalog.create_table("db.v2", _schema()), _arrow([(1, 0, 0), (2, 0, 1)]))
    table = append(upgrade_to_v3(catalog.create_table("db.t", _schema())),
                   _arrow([(1, 0, 0), (None, 0, 1), (2, 1, 2)]))  # fmt: skip
    eq = _equality_file(table, tmp_path, ("id",), [(None,), (2,)], None)
    table = _commit(table, [eq], [])
    kinds = [w.kind for w in verify_table(table).warnings]
    assert "equality-deletes" in kinds and verify_table(table).ok

    def run(name: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = ["table", "convert-equality-deletes", name, "--warehouse", str(tmp_path)]
            status = main([*args, "--json"])
        return status, out.getvalue(), err.getvalue()

    status, out, _ = run("db.t")
    doc = json.loads(out)
    check_shape(doc, documented_shape("table-convert-equality-deletes"))
    assert (doc["equality_files"], doc["data_files"], doc["converted_rows"]) == (1, 1, 2)
    assert status == 0 and doc["snapshot_id"] is not None
    status, out, _ = run("db.t")
    assert status == 0 and json.loads(out)["snapshot_id"] is None
    converted = catalog.load_table("db.t")
    assert rows_of(converted) == [(1, 0, 0)]
    assert "equality-deletes" not in [w.kind for w in verify_table(converted).warnings]
    status, _, err = run("db.v2")
    assert status == 1 and "upgrade" in err and len(err.strip().splitlines()) == 1
    assert v2.metadata.format_version == 2


def rows_of(table: Any) -> list[Row]:
    got = scan_table(table).to_arrow()
    columns = (got.column(c).to_pylist() for c in ("id", "p", "tag"))
    return sorted(zip(*columns, strict=True), key=repr)


def test_commits_landing_during_the_conversion_keep_their_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the keys are matched, another writer deletes a row (with a vector on a file the
    conversion gives a vector too) and appends rows: the conversion's commit loses the race,
    starts again on the table as it then is, and every effect is kept."""
    from puffin.iceberg.maintenance import convert_equality as convert

    catalog = make_catalog(tmp_path)
    table = append(upgrade_to_v3(catalog.create_table("db.t", _schema())),
                   _arrow([(1, 0, 0), (2, 0, 1), (3, 0, 2), (None, 0, 3)]))  # fmt: skip
    table = _commit(table, [_equality_file(table, tmp_path, ("id",), [(2,)], None)], [])
    real, raced = convert._matched, []

    def racing(*args: Any) -> Any:
        if not raced:  # another writer, between the plan and the commit
            raced.append(delete_rows(catalog.load_table("db.t"), "tag = 2").snapshot_id)
            append(catalog.load_table("db.t"), _arrow([(2, 0, 9)]))
        return real(*args)

    monkeypatch.setattr(convert, "_matched", racing)
    result = convert_equality_deletes(table)
    assert result.attempts == 2 and raced[0] is not None
    assert rows_of(result.table) == [(1, 0, 0), (2, 0, 9), (None, 0, 3)]
    assert not _equality_files(result.table)
