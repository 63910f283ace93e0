"""The changelog held to a model computed in plain Python, over drawn histories.

Hypothesis draws histories on v2 and v3 tables (partitioned or not): appends, deletes by
condition (deletion vectors; on v2 position-delete files or copy-on-write, drawn), overwrites
(v3: DV and append in one commit; v2: pyiceberg's copy-on-write, two snapshots), upserts
through equality deletes (a delete of the keys and the new rows in one commit, as Flink
writes them), compactions, DV rewrites, manifest rewrites and equality-delete conversions.
The model tracks each row (``tag`` is unique per row) and what each commit inserted and
deleted. For pairs of snapshots the changelog must give, commit by commit, exactly the
model's changes with the values each row had; applied to the rows of ``start`` it gives the
rows of ``end``; net changes are the difference of the two; on v3 a row's ``_row_id`` at
its delete is the one it had when inserted, through every compaction.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("hypothesis")

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_history import Row, cdc_arrow, cdc_equality_file, cdc_schema, commit_change, equality_files
from iceberg_fixtures import make_catalog
from puffin.iceberg import (
    append,
    convert_equality_deletes,
    delete_rows,
    overwrite,
    rewrite_data_files,
    rewrite_manifests,
    rewrite_position_delete_files,
    scan_table,
    upgrade_to_v3,
)
from puffin.iceberg.changelog.scan import changes

keys = st.integers(0, 5)
parts = st.sampled_from([0, 1])
step = st.one_of(
    st.tuples(st.just("append"), st.lists(keys, min_size=1, max_size=5), parts),
    st.tuples(st.just("delete"), keys, st.just(0)),
    st.tuples(st.just("overwrite"), st.lists(keys, min_size=1, max_size=3), parts),
    st.tuples(st.just("upsert"), st.lists(keys, min_size=1, max_size=3), parts),
    st.tuples(st.sampled_from(["compact", "rewrite-deletes", "rewrite-manifests", "convert"]),
              st.just([]), st.just(0)),
)  # fmt: skip


class History:
    """The table, and in plain Python: its rows after each snapshot, and each snapshot's
    deleted and inserted rows (nothing for a ``replace``)."""

    def __init__(self, folder: Path, version: int, partitioned: bool, mode: str) -> None:
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.transforms import IdentityTransform

        self.folder, self.partitioned = folder, partitioned
        (folder / "eq").mkdir(parents=True)
        catalog = make_catalog(folder)
        spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p"))
        properties = {"format-version": "2", "write.delete.mode": mode}
        created = catalog.create_table("db.c", cdc_schema(), partition_spec=spec if partitioned
                                       else PartitionSpec(), properties=properties)  # fmt: skip
        self.table = upgrade_to_v3(created) if version == 3 else created
        self.version = version
        self.tags = iter(range(10**6))
        self.live: dict[int, Row] = {}
        self.snapshots: list[int] = []  # every snapshot, in order
        self.steps: list[tuple[tuple[int, ...], set[Row], set[Row]]] = []
        self.states: dict[int, frozenset[Row]] = {}  # after each step's last snapshot
        self.replaced: set[int] = set()

    def rows(self, ids: list[int], p: int) -> list[Row]:
        return [(i, p, next(self.tags)) for i in ids]

    def record(self, gone: set[Row], new: set[Row], replace: bool = False) -> None:
        """The snapshots the last step committed, with its changes (pyiceberg's overwrite
        on v2 commits up to three: whole files deleted, files rewritten, the append)."""
        current = self.table.current_snapshot()
        chain = []
        snapshot = current
        last = self.snapshots[-1] if self.snapshots else None
        while snapshot is not None and snapshot.snapshot_id != last:
            chain.append(snapshot.snapshot_id)
            parent = snapshot.parent_snapshot_id
            snapshot = None if parent is None else self.table.snapshot_by_id(parent)
        chain.reverse()
        if not chain:
            assert not gone and not new, "the step changed rows but committed nothing"
            return
        for row in gone:
            del self.live[row[2]]
        for row in new:
            self.live[row[2]] = row
        self.snapshots += chain
        self.steps.append((tuple(chain), set(gone), set(new)))
        self.states[chain[-1]] = frozenset(self.live.values())
        if replace:
            self.replaced.update(chain)

    def run(self, kind: str, ids: Any, p: int) -> None:
        table = self.table
        matching = {r for r in self.live.values() if kind in ("delete",) and r[0] == ids}
        if kind == "append":
            made = self.rows(ids, p)
            self.table = append(table, cdc_arrow(made))
            self.record(set(), set(made))
        elif kind == "delete":
            self.table = delete_rows(table, f"id = {ids}").table
            self.record(matching, set())
        elif kind == "overwrite":
            if self.version == 2 and equality_files(table):  # pyiceberg's overwrite refuses
                self.maintain("convert")
                table = self.table
            made = self.rows(ids, p)
            where = " or ".join(f"id = {i}" for i in sorted(set(ids)))
            gone = {r for r in self.live.values() if r[0] in set(ids)}
            self.table = overwrite(table, cdc_arrow(made), where, statistics="none")
            self.record(gone, set(made))
        elif kind == "upsert":  # an equality delete of the keys and the new rows, one commit
            self.upsert(ids, p)
        else:
            self.maintain(kind)

    def upsert(self, ids: list[int], p: int) -> None:
        from puffin.iceberg.writes.append import write_data_files

        scope = p if self.partitioned else None
        keys = sorted({(k,) for k in ids})
        deletes = [cdc_equality_file(self.table, self.folder / "eq", ("id",), keys, scope)]
        gone = {r for r in self.live.values()
                if (r[0],) in keys and (scope is None or r[1] == scope)}  # fmt: skip
        made = self.rows(ids, p)
        data = write_data_files(self.table, cdc_arrow(made))
        self.table = commit_change(self.table, deletes, data)
        self.record(gone, set(made))

    def maintain(self, kind: str) -> None:
        table = self.table
        if kind == "compact":
            self.table = rewrite_data_files(table, min_deleted_fraction=0.0, min_input_files=1,
                                            statistics="none").table  # fmt: skip
        elif kind == "rewrite-deletes":
            self.table = rewrite_position_delete_files(table).table
        elif kind == "rewrite-manifests":
            self.table = rewrite_manifests(table).table
        elif kind == "convert":
            self.table = convert_equality_deletes(table).table
        self.record(set(), set(), replace=True)


def _rows(table: pa.Table, kind: str) -> Counter[Row]:
    picked = table.filter(pa.compute.equal(table.column("_change_type"), kind))
    columns = (picked.column(c).to_pylist() for c in ("id", "p", "tag"))
    return Counter(zip(*columns, strict=True))


def _check_range(history: History, i: int | None, j: int) -> None:
    """changes(after step i, to step j) against the model, step by step and as a whole."""
    steps = history.steps
    start = None if i is None else steps[i][0][-1]
    end = steps[j][0][-1]
    inside = steps[(0 if i is None else i + 1) : j + 1]
    got = changes(history.table, start, end).to_arrow()
    snapshots = [s for chain, _, _ in inside for s in chain]
    counted = [s for s in snapshots if s not in history.replaced]
    for chain, gone, new in inside:  # each change carries the snapshot that made it
        mine = got.filter(pa.compute.is_in(got.column("_commit_snapshot_id"), pa.array(chain)))
        assert _rows(mine, "DELETE") == Counter(gone), chain
        assert _rows(mine, "INSERT") == Counter(new), chain
    made = zip(got.column("_commit_snapshot_id").to_pylist(),
               got.column("_change_ordinal").to_pylist(), strict=True)  # fmt: skip
    assert all(counted.index(s) == o for s, o in made)
    assert got.num_rows == sum(len(g) + len(n) for _, g, n in inside)
    before = history.states[start] if start is not None else frozenset()
    after = Counter(before) + _rows(got, "INSERT") - _rows(got, "DELETE")
    assert after == Counter(history.states[end])  # the changes applied to start give end
    # A filter keeps exactly the changes of the rows it matches.
    kept = changes(history.table, start, end, row_filter="id < 3").to_arrow()
    for kind in ("DELETE", "INSERT"):
        assert _rows(kept, kind) == Counter(r for r in _rows(got, kind).elements() if r[0] < 3)
    net = changes(history.table, start, end, net_changes=True).to_arrow()
    assert _rows(net, "DELETE") == Counter(before - history.states[end])
    assert _rows(net, "INSERT") == Counter(history.states[end] - before)


def _check_row_ids(history: History) -> None:
    """Every row deleted in the history has the ``_row_id`` it was inserted with."""
    got = changes(history.table, None).to_arrow().to_pylist()
    inserted = {r["tag"]: r["_row_id"] for r in got if r["_change_type"] == "INSERT"}
    assert None not in inserted.values()
    assert len(set(inserted.values())) == len(inserted)  # ids are unique
    for r in got:
        if r["_change_type"] == "DELETE":
            assert r["_row_id"] == inserted[r["tag"]], r
    # The rows live at the end carry the ids the changelog gave them when inserted.
    live = scan_table(history.table, selected_fields=("tag", "_row_id")).to_arrow().to_pylist()
    assert {r["tag"]: r["_row_id"] for r in live} == {r["tag"]: inserted[r["tag"]] for r in live}


@settings(
    max_examples=int(os.environ.get("CHANGES_EXAMPLES", 30)), deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(
    mode=st.sampled_from(["dv", "merge-on-read", "copy-on-write"]),
    partitioned=st.booleans(),
    steps=st.lists(step, min_size=1, max_size=7),
    pairs=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=3),
)
def test_the_changelog_is_the_models_changes(
    tmp_path_factory: pytest.TempPathFactory,
    mode: str,
    partitioned: bool,
    steps: list[tuple[str, Any, int]],
    pairs: list[tuple[int, int]],
) -> None:
    version = 3 if mode == "dv" else 2
    history = History(tmp_path_factory.mktemp("changes"), version, partitioned, mode)
    history.run("append", [0, 1, 2, 3], 0)
    for kind, ids, p in steps:
        history.run(kind, ids, p)
    tags = sorted(r[2] for r in history.live.values())
    assert sorted(scan_table(history.table).to_arrow().column("tag").to_pylist()) == tags
    last = len(history.steps) - 1
    _check_range(history, None, last)
    for a, b in pairs:
        i, j = sorted((a % (last + 1), b % (last + 1)))
        _check_range(history, i, j)
    if version == 3:
        _check_row_ids(history)
