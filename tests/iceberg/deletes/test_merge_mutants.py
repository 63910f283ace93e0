"""Tests written against the mutants that survived mutation testing of the deletion-vector
merge (``iceberg/deletes/merge.py``; ``make mutation``, docs/testing.md).

One v3 table of three data files (20, 30 and 10 rows): a deletion vector deletes rows 1 and
3 of the first, a Parquet position-delete file left from v2 deletes rows 0, 1 and 5 of the
second (and stray positions 30 and 50, past its end, which delete nothing); a second table
has the same vector and no Parquet deletes, and a third one more vector (row 2 of the
third file) in a later snapshot.  Every result of
:func:`merge_deletes`, :func:`live_positions`, :func:`union_with_live` and
:func:`live_rows` is compared with a model computed from those sets with plain Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.catalog import Catalog
from pyiceberg.manifest import FileFormat
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from iceberg_fixtures import commit_deletion_vectors_v3, commit_position_deletes_v2, make_catalog
from puffin.iceberg.deletes.merge import live_positions, live_rows, merge_deletes, union_with_live
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.plan import plan_files

ROWS = {"a": 20, "b": 30, "c": 10}
DV = {1, 3}  # the deletion vector of a
PARQUET = {0, 1, 5, 30, 50}  # the position-delete file of b; 30 and 50 are past its end


class Setup:
    def __init__(self, catalog: Catalog) -> None:
        schema = Schema(NestedField(1, "id", LongType(), required=False))
        base = catalog.create_table("db.t", schema, properties={"format-version": "2"})
        for start, rows in enumerate(ROWS.values()):
            ids = range(start * 100, start * 100 + rows)
            base.append(pa.table({"id": pa.array(ids, pa.int64())}))
        base = catalog.load_table("db.t")
        by_rows = {p.record_count: p.path for p in plan_files(base, base.current_snapshot())}
        self.path = {name: by_rows[rows] for name, rows in ROWS.items()}
        v2 = commit_position_deletes_v2(
            catalog, base, {self.path["b"]: sorted(PARQUET)}, new_identifier="db.v2"
        )
        self.table, _ = commit_deletion_vectors_v3(
            catalog, v2, {self.path["a"]: sorted(DV)}, new_identifier="db.v3"
        )
        self.dv_only, _ = commit_deletion_vectors_v3(
            catalog, base, {self.path["a"]: sorted(DV)}, new_identifier="db.dv"
        )
        # A later snapshot with a vector for c too: merging into the older one must not see it.
        self.later, _ = commit_deletion_vectors_v3(
            catalog, self.table, {self.path["c"]: [2]}, new_identifier="db.later"
        )
        assert self.table.metadata.format_version == 3
        self.snapshot = self.table.current_snapshot()
        self.planned = plan_files(self.table, self.snapshot)
        deletes = {d.file_format: str(d.file_path) for p in self.planned for d in p.delete_files}
        self.dv_file = deletes[FileFormat.PUFFIN]
        self.parquet_file = deletes[FileFormat.PARQUET]

    def planned_file(self, name: str) -> Any:
        return next(p for p in self.planned if p.path == self.path[name])

    def live(self) -> dict[str, set[int]]:
        """The model: each file's deleted rows (within the file)."""
        return {"a": set(DV), "b": {p for p in PARQUET if p < ROWS["b"]}, "c": set()}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return Setup(make_catalog(Path(tmp_path_factory.mktemp("merge")) / "wh"))


def _as_lists(positions: Mapping[str, Any]) -> dict[str, list[int]]:
    for found in positions.values():
        assert found.dtype == np.int64
    return {path: found.tolist() for path, found in positions.items()}


def test_live_positions_are_the_deleted_rows_within_the_file(setup: Setup) -> None:
    index = DeleteIndex(setup.table, setup.snapshot)
    for name, expected in setup.live().items():
        found = live_positions(index, setup.planned_file(name))
        assert found.dtype == np.int64
        assert found.tolist() == sorted(expected), name
    live = sum(rows - len(setup.live()[name]) for name, rows in ROWS.items())
    assert live_rows(index, setup.planned) == live == 55


def test_union_with_live_adds_the_live_deletes(setup: Setup) -> None:
    index = DeleteIndex(setup.table, setup.snapshot)
    new = np.array([7, 2, 3], dtype=np.uint32)
    got = union_with_live(index, setup.planned_file("a"), new)
    assert got.dtype == np.int64 and got.tolist() == sorted(DV | {7, 2, 3})
    got = union_with_live(index, setup.planned_file("c"), new)
    assert got.dtype == np.int64 and got.tolist() == [7, 2, 3]  # nothing live: as given


def _model(
    setup: Setup, new: Mapping[str, list[int]], *, read_live: bool, replace: bool
) -> tuple[dict[str, list[int]], set[tuple[str, str | None]], int]:
    live = setup.live() if read_live else {name: set() for name in ROWS}
    candidates = {name: set(ps) for name, ps in new.items()}
    if replace and read_live:  # every file the Parquet deletes apply to (all three here)
        for name in ROWS:
            candidates.setdefault(name, set())
    merged, newly = {}, 0
    for name, ps in candidates.items():
        union = live[name] | ps
        added = len(union) - len(live[name])
        if added or (replace and union):
            merged[setup.path[name]] = sorted(union)
            newly += added
    superseded: set[tuple[str, str | None]] = set()
    if setup.path["a"] in merged:
        superseded.add((setup.dv_file, setup.path["a"]))
    if replace:
        superseded.add((setup.parquet_file, None))
    return merged, superseded, newly


@pytest.mark.parametrize(
    "new",
    [
        {"a": [4, 3, 4], "c": [2]},  # partly live in a, new in c
        {"a": [1], "b": [5, 1]},  # all live already: nothing to write
        {"b": [29, 2]},
        {"c": [9, 0, 9]},
        {},
    ],
    ids=["partly-live", "all-live", "parquet-live", "no-live", "nothing"],
)
@pytest.mark.parametrize("read_live", [True, False])
@pytest.mark.parametrize("replace", [False, True])
def test_merge_deletes_is_the_model(
    setup: Setup, new: dict[str, list[int]], read_live: bool, replace: bool
) -> None:
    given = {setup.path[name]: np.array(ps, dtype=np.uint32) for name, ps in new.items()}
    merged = merge_deletes(
        setup.table,
        setup.snapshot,
        setup.planned,
        given,
        read_live=read_live,
        replace_position_deletes=replace,
    )
    positions, superseded, newly = _model(setup, new, read_live=read_live, replace=replace)
    assert _as_lists(merged.positions) == positions
    assert merged.superseded == frozenset(superseded)
    assert merged.newly_deleted == newly


@pytest.mark.parametrize("read_live", [True, False])
def test_without_parquet_deletes_replacing_them_rewrites_no_vector(
    setup: Setup, read_live: bool
) -> None:
    table = setup.dv_only
    planned = plan_files(table, table.current_snapshot())
    assert {d.file_format for p in planned for d in p.delete_files} == {FileFormat.PUFFIN}
    merged = merge_deletes(
        table, table.current_snapshot(), planned, {}, read_live=read_live,
        replace_position_deletes=True,
    )
    assert (merged.positions, merged.superseded, merged.newly_deleted) == ({}, frozenset(), 0)
    new = {setup.path["c"]: [4]}
    merged = merge_deletes(
        table, table.current_snapshot(), planned, new, read_live=read_live,
        replace_position_deletes=True,
    )
    assert _as_lists(merged.positions) == new and merged.newly_deleted == 1
    assert merged.superseded == frozenset()


def test_the_merge_is_with_the_given_snapshot_not_the_current_one(setup: Setup) -> None:
    table, older = setup.later, setup.snapshot
    assert table.current_snapshot().snapshot_id != older.snapshot_id
    planned = plan_files(table, older)
    new = {setup.path["c"]: [4], setup.path["a"]: [3, 6]}
    merged = merge_deletes(table, older, planned, new)
    assert _as_lists(merged.positions) == {setup.path["c"]: [4], setup.path["a"]: [1, 3, 6]}
    assert merged.superseded == {(setup.dv_file, setup.path["a"])}
    assert merged.newly_deleted == 2


def test_a_lent_index_gives_the_same_merge(setup: Setup) -> None:
    new = {setup.path["a"]: [4], setup.path["b"]: [7]}
    index = DeleteIndex(setup.table, setup.snapshot)
    lent = merge_deletes(setup.table, setup.snapshot, setup.planned, new, index=index)
    own = merge_deletes(setup.table, setup.snapshot, setup.planned, new)
    assert _as_lists(lent.positions) == _as_lists(own.positions) == {
        setup.path["a"]: [1, 3, 4],
        setup.path["b"]: [0, 1, 5, 7],
    }
    assert lent.superseded == own.superseded == {(setup.dv_file, setup.path["a"])}
    assert lent.newly_deleted == own.newly_deleted == 2


def test_merge_refuses_files_and_positions_the_snapshot_lacks(setup: Setup) -> None:
    with pytest.raises(ValueError, match=r"^position 30 is past the end of .*, which has 30 rows"):
        merge_deletes(setup.table, setup.snapshot, setup.planned, {setup.path["b"]: [3, 30]})
    elsewhere = "file:///elsewhere.parquet"
    with pytest.raises(ValueError, match=rf"^{elsewhere} is not a live data file"):
        merge_deletes(setup.table, setup.snapshot, setup.planned, {elsewhere: [0]})
