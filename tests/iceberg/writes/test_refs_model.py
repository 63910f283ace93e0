"""Tags, branches and properties changed through ``transaction``, held to a model of Iceberg
Java's rules (``UpdateSnapshotReferencesOperation``, ``TableMetadata.replaceProperties``).

Hypothesis draws transactions of ref and property changes; the model, written here from
Java's rules and knowing nothing of ours, says which are refused; a refused transaction
commits nothing, an accepted one leaves exactly the model's refs and properties. Afterwards
an expiry of everything it may expire never deletes a file that a ref still reaches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iceberg_fixtures import make_catalog
from puffin.errors import UsageError
from puffin.iceberg import (
    append,
    create_sample_table,
    delete_rows,
    expire_snapshots,
    sample_batch,
    transaction,
    upgrade_to_v3,
)
from puffin.io.locations import local_path

NAMES = ("main", "a", "b")
UNKNOWN_SNAPSHOT = 12
#: (key, value, whether Java's writers read it as meant): the model's own list, not ours.
VALUES = [
    ("write.delete.mode", "merge-on-read", True),
    ("write.delete.mode", "MERGE-ON-READ", True),  # Java's fromName ignores case
    ("write.delete.mode", "bogus", False),
    ("write.update.mode", "copy-on-write", True),
    ("write.delete.granularity", "partition", True),
    ("write.delete.granularity", "row", False),
    ("write.wap.enabled", "true", True),
    ("write.wap.enabled", "yes", False),  # Java reads it as false, pyiceberg as true
    ("write.target-file-size-bytes", "1048576", True),
    ("write.target-file-size-bytes", "0", False),
    ("write.target-file-size-bytes", "1 MB", False),
    ("commit.retry.num-retries", "0", True),
    ("commit.retry.num-retries", "99999999999", False),  # not an int
    ("history.expire.min-snapshots-to-keep", "0", False),
    ("write.metadata.metrics.default", "truncate(16)", True),
    ("write.metadata.metrics.column.id", "counts", True),
    ("write.metadata.metrics.column.nope", "counts", False),  # no such column
    ("owner", "data-eng", True),  # the user's own key: anything goes
    ("format-version", "1", False),  # down: Java refuses
    ("uuid", "x", False),  # reserved: Java drops it, we refuse
]


@dataclass
class Model:
    """Refs as ``name -> (kind, snapshot)`` and properties, changed by Java's rules."""

    refs: dict[str, tuple[str, int]]
    properties: dict[str, str]
    snapshots: list[int] = field(default_factory=list)

    def apply(self, op: tuple[Any, ...]) -> bool:
        """Apply ``op``; False (and nothing changed by it) where Java refuses it."""
        verb = op[0]
        if verb == "create":
            _, kind, name, snapshot = op
            if name in self.refs or snapshot not in self.snapshots:
                return False
            self.refs[name] = (kind, snapshot)
        elif verb == "drop":
            _, kind, name = op
            if (kind == "branch" and name == "main") or self.refs.get(name, ("",))[0] != kind:
                return False
            del self.refs[name]
        elif verb == "set":
            _, key, value, ok = op
            if not ok:
                return False
            self.properties[key] = value
        else:  # unset: Java ignores a key that is not set; a reserved one is refused here
            _, key = op
            if key == "uuid":
                return False
            self.properties.pop(key, None)
        return True


def _ops(snapshots: int) -> st.SearchStrategy[tuple[Any, ...]]:
    kinds = st.sampled_from(["tag", "branch"])
    names = st.sampled_from(NAMES)
    snapshot = st.integers(-1, snapshots - 1)  # -1: a snapshot the table does not have
    return st.one_of(
        st.tuples(st.just("create"), kinds, names, snapshot),
        st.tuples(st.just("drop"), kinds, names),
        st.sampled_from(VALUES).map(lambda v: ("set", *v)),
        st.tuples(st.just("unset"), st.sampled_from(["owner", "write.delete.mode", "uuid"])),
    )


def _stage(tx: Any, op: tuple[Any, ...], snapshots: list[int]) -> None:
    if op[0] == "create":
        _, kind, name, index = op
        snapshot = snapshots[index] if index >= 0 else UNKNOWN_SNAPSHOT
        manage = tx.manage_snapshots()
        (manage.create_tag if kind == "tag" else manage.create_branch)(snapshot, name)
        manage.commit()
    elif op[0] == "drop":
        manage = tx.manage_snapshots()
        (manage.remove_tag if op[1] == "tag" else manage.remove_branch)(op[2])
        manage.commit()
    elif op[0] == "set":
        tx.set_properties({op[1]: op[2]})
    else:
        tx.remove_properties(op[1])


def _table(tmp: Path) -> Any:
    table = create_sample_table(make_catalog(tmp), "db.t", rows=60, files=2, seed=3)
    table = upgrade_to_v3(table)
    table = delete_rows(table, "id < 5").table
    return append(table, sample_batch(20, start=1000, seed=4))


def _refs(table: Any) -> dict[str, tuple[str, int]]:
    return {n: (r.snapshot_ref_type.value, r.snapshot_id) for n, r in table.metadata.refs.items()}


def _files_of(table: Any, snapshot_id: int) -> set[str]:
    """Every file a snapshot reaches, read with pyiceberg alone."""
    snapshot = table.snapshot_by_id(snapshot_id)
    found = {snapshot.manifest_list}
    for manifest in snapshot.manifests(table.io):
        found.add(manifest.manifest_path)
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            found.add(entry.data_file.file_path)
    return found


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_refs_and_properties_follow_javas_rules(tmp_path_factory: Any, data: Any) -> None:
    table = _table(tmp_path_factory.mktemp("refs"))
    snapshots = [s.snapshot_id for s in table.metadata.snapshots]
    model = Model(_refs(table), dict(table.properties), snapshots)
    draws = st.lists(st.lists(_ops(len(snapshots)), min_size=1, max_size=3), max_size=5)
    for ops in data.draw(draws):
        ops = [
            (*op[:3], snapshots[op[3]] if op[3] >= 0 else UNKNOWN_SNAPSHOT)
            if op[0] == "create"
            else op
            for op in ops
        ]
        trial = Model(dict(model.refs), dict(model.properties), snapshots)
        accepted = all(trial.apply(op) for op in ops)
        before = table.metadata_location
        try:
            with transaction(table) as tx:
                for op in ops:
                    _stage(tx, _index(op, snapshots), snapshots)
        except UsageError:
            assert not accepted, f"refused what Java takes: {ops}"
            assert table.refresh().metadata_location == before  # nothing committed
            continue
        assert accepted, f"took what Java refuses: {ops}"
        model = trial
        assert _refs(table) == model.refs
        assert dict(table.properties) == model.properties
    _expire_keeps_what_refs_reach(table)


def _index(op: tuple[Any, ...], snapshots: list[int]) -> tuple[Any, ...]:
    """The drawn op with its snapshot as an index (``_stage``'s form)."""
    if op[0] != "create":
        return op
    return (*op[:3], snapshots.index(op[3]) if op[3] in snapshots else -1)


def _expire_keeps_what_refs_reach(table: Any) -> None:
    table = table.refresh()
    expire_snapshots(table, older_than=timedelta(0), retain_last=1)
    table = table.refresh()
    assert "main" in table.metadata.refs
    for name, ref in table.metadata.refs.items():
        for location in _files_of(table, ref.snapshot_id):
            path = local_path(location)
            assert path is not None and os.path.exists(path), f"{name} reaches {location}"
