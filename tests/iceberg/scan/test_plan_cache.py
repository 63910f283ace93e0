"""The plan through the process's cache of manifest entries (``scan/plan.py``,
``metadata/manifests.py``): the same tasks as pyiceberg's own ``plan_files`` (its deletion
vectors counted for the files they reference), each committed
manifest decoded once, cached entries never changed, verification reading the files, and the
cache held to its limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import commit_position_deletes_v2, make_catalog
from puffin.errors import UsageError
from puffin.iceberg import append, create_sample_table, delete_rows, upgrade_to_v3, verify_table
from puffin.iceberg.metadata import manifests
from puffin.iceberg.metadata.manifest_merge import entries_to_rewrite
from puffin.iceberg.metadata.manifests import (
    FIRST_ROW_ID,
    read_manifest_entries,
    read_manifest_list,
)
from puffin.iceberg.metadata.v3 import inherited_first_row_ids
from puffin.iceberg.scan.plan import plan_files, planned_from_tasks
from puffin.io.locations import local_path


@pytest.fixture(autouse=True)
def _empty_cache() -> Any:
    manifests.clear_entry_cache()
    yield
    manifests.clear_entry_cache()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The manifests decoded from their files, in order."""
    seen: list[str] = []
    real = manifests._read_entries

    def counting(io: Any, manifest: Any) -> Any:
        seen.append(str(manifest.manifest_path))
        return real(io, manifest)

    monkeypatch.setattr(manifests, "_read_entries", counting)
    return seen


def _tasks(tasks: Any, table: Any) -> list[tuple[str, list[str]]]:
    """pyiceberg's tasks, a Puffin file counted for a data file only when one of its
    vectors references that file: pyiceberg, planning without the v3 fields, hands every
    vector of a partition to every data file of it (scan/delete_file_index.py)."""
    from puffin.iceberg.metadata.delete_files import deletion_vector_refs

    refs: dict[str, set[str]] = {}
    for ref in deletion_vector_refs(table, table.current_snapshot()):
        refs.setdefault(ref.referenced_data_file, set()).add(ref.path)

    def applies(delete_file: Any, data_path: str) -> bool:
        path = str(delete_file.file_path)
        return not path.endswith(".puffin") or path in refs.get(data_path, set())

    return sorted(
        (
            str(t.file.file_path),
            sorted(
                str(d.file_path)
                for d in t.delete_files
                if applies(d, str(t.file.file_path))
            ),
        )
        for t in tasks
    )


def _ours(scan: Any) -> list[tuple[str, list[str]]]:
    return sorted((p.path, [str(d.file_path) for d in p.delete_files])
                  for p in planned_from_tasks(scan))


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    catalog = make_catalog(tmp_path_factory.mktemp("plans"))
    base = create_sample_table(catalog, "db.base", rows=3000, files=3, seed=5)
    paths = sorted(str(t.file.file_path) for t in base.scan().plan_files())
    v2 = commit_position_deletes_v2(
        catalog, base, {paths[0]: [1, 2, 3], paths[2]: [0, 9]}, new_identifier="db.v2"
    )
    v3 = upgrade_to_v3(catalog.load_table("db.v2"))
    v3 = delete_rows(v3, "category = 4").table
    v3 = append(v3, v3.scan(limit=5).to_arrow(), statistics="none")
    v3 = delete_rows(v3, "id < 40").table
    return {"v2 position deletes": v2, "v3 deletion vectors": v3}


@pytest.mark.parametrize("kind", ["v2 position deletes", "v3 deletion vectors"])
@pytest.mark.parametrize(
    "where",
    [None, "id < 500", "category = 3", "id > 10 and user_name is null", "id = 7",
     "id in (3, 2999)", "id >= 2000 or category = 3"],
)
def test_the_cached_plan_is_pyiceberg_plan(
    tables: dict[str, Any], kind: str, where: str | None
) -> None:
    table = tables[kind]
    scan = table.scan() if where is None else table.scan(row_filter=where)
    expected = _tasks(scan.plan_files(), table)
    assert expected  # every case plans some files
    assert _ours(scan) == expected  # cold cache
    assert _ours(scan) == expected  # warm


def test_pyicebergs_evaluator_sees_only_files_whose_bounds_may_match(
    tables: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``id = 7``, pyiceberg's metrics evaluator visits the delete files and the data
    files whose id bounds hold 7 (the rest are ruled out by ``scan/bounds.py``), and the
    plan is still pyiceberg's."""
    from pyiceberg.conversions import from_bytes
    from pyiceberg.expressions import visitors
    from pyiceberg.types import LongType

    table = tables["v3 deletion vectors"]
    visited: list[str] = []
    real = visitors._InclusiveMetricsEvaluationVisitor.__init__

    def counting(self: Any, file: Any) -> None:
        visited.append(str(file.file_path))
        real(self, file)

    live = [e.data_file for m in table.current_snapshot().manifests(table.io)
            for e in read_manifest_entries(table.io, m)]
    field_id = table.schema().find_field("id").field_id

    def holds_7(data_file: Any) -> bool:
        if data_file.content != 0:
            return True  # a delete file: no bounds on id
        lo = from_bytes(LongType(), data_file.lower_bounds[field_id])
        return bool(lo <= 7 <= from_bytes(LongType(), data_file.upper_bounds[field_id]))

    expected = sorted(str(f.file_path) for f in live if holds_7(f))
    assert len(expected) < len(live)  # some data file is ruled out by its bounds
    scan = table.scan(row_filter="id = 7")
    theirs = _tasks(scan.plan_files(), table)
    monkeypatch.setattr(visitors._InclusiveMetricsEvaluationVisitor, "__init__", counting)
    assert _ours(scan) == theirs
    assert sorted(visited) == expected


def test_each_committed_manifest_is_decoded_once(tmp_path: Path, reads: list[str]) -> None:
    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=500, files=2)
    table = delete_rows(upgrade_to_v3(table), "id < 7").table
    first = plan_files(table, table.current_snapshot())
    assert reads and len(reads) == len(set(reads))
    decoded = len(reads)
    assert plan_files(table, table.current_snapshot()) == first
    assert len(reads) == decoded  # nothing decoded again
    table = append(table, pa.table({"id": pa.array([10_000], pa.int64())}), statistics="none")
    plan_files(table, table.current_snapshot())
    new = reads[decoded:]
    listed = {str(m.manifest_path) for m in table.current_snapshot().manifests(table.io)}
    assert new and set(new) <= listed and len(new) < len(listed)  # only what is new


def test_rewritten_entries_are_copies(tmp_path: Path) -> None:
    # entries_to_rewrite writes each data file's inherited first_row_id out: into copies,
    # never into the cached entries that every later plan shares.
    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=300, files=3))
    table = append(table, table.scan(limit=3).to_arrow(), statistics="none")
    listed = read_manifest_list(table.io, table.current_snapshot().manifest_list)
    copied = 0
    for manifest in (m for m in listed if m.content == 0):
        cached = read_manifest_entries(table.io, manifest, cached=True)
        before = [e.data_file[FIRST_ROW_ID] for e in cached]
        rewritten = entries_to_rewrite(table, manifest)
        firsts = inherited_first_row_ids(manifest, cached)
        assert [e.data_file[FIRST_ROW_ID] for e in rewritten] == firsts
        again = read_manifest_entries(table.io, manifest, cached=True)
        assert [e.data_file[FIRST_ROW_ID] for e in again] == before
        copied += sum(b is None and f is not None for b, f in zip(before, firsts, strict=True))
    assert copied  # some first_row_id was only inherited, and written into a copy


def test_verification_reads_the_manifests_from_their_files(
    tmp_path: Path, reads: list[str]
) -> None:
    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=500, files=2)
    table = delete_rows(upgrade_to_v3(table), "id < 7").table
    plan_files(table, table.current_snapshot())
    warm = len(reads)
    assert verify_table(table).ok
    listed = {str(m.manifest_path) for m in table.current_snapshot().manifests(table.io)}
    assert listed <= set(reads[warm:])
    with manifests.read_from_disk():
        assert not manifests.cache_in_use()
    assert manifests.cache_in_use()


def test_the_cache_keeps_to_its_limit(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=400, files=4)
    for n in range(3):
        table = append(table, pa.table({"id": pa.array([n], pa.int64())}), statistics="none")
    listed = table.current_snapshot().manifests(table.io)
    assert len(listed) >= 4
    sizes = [manifests._estimate(read_manifest_entries(table.io, m)) for m in listed]
    budget = 4 * max(sizes)  # one manifest may take a quarter
    assert sum(sizes) > budget  # so some must go
    monkeypatch.setattr(manifests, "ENTRY_CACHE_BYTES", budget)
    for manifest in listed:
        read_manifest_entries(table.io, manifest, cached=True)
    assert manifests._cached_bytes <= budget
    assert sum(record.size for record in manifests._CACHE.values()) == manifests._cached_bytes
    assert len(manifests._CACHE) < len(listed)  # some were dropped
    kept = list(manifests._CACHE)
    assert kept and kept[-1][0] == str(listed[-1].manifest_path)  # the latest stays
    decoded = len(reads)
    read_manifest_entries(table.io, listed[0], cached=True)  # evicted: decoded again
    assert len(reads) == decoded + 1


def test_a_view_is_built_once_per_cached_manifest(tmp_path: Path, reads: list[str]) -> None:
    """``cached_view`` builds a manifest's view once and keeps it with the entries; inside
    ``read_from_disk`` it is built from the file every time; it goes with its manifest."""
    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=400, files=4)
    manifest = table.current_snapshot().manifests(table.io)[0]
    built: list[int] = []

    def count(live: list[Any]) -> list[str]:
        built.append(len(live))
        return sorted(str(e.data_file.file_path) for e in live)

    manifests.clear_entry_cache()
    first = manifests.cached_view(table.io, manifest, "paths", count)
    assert manifests.cached_view(table.io, manifest, "paths", count) is first
    assert built == [len(first)] and first
    decoded = len(reads)
    with manifests.read_from_disk():
        again = manifests.cached_view(table.io, manifest, "paths", count)
    assert again == first and again is not first and len(reads) == decoded + 1
    manifests.clear_entry_cache()
    assert manifests.cached_view(table.io, manifest, "paths", count) is not first
    assert built == [len(first)] * 3


def test_a_delete_plans_only_the_files_its_condition_may_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import puffin.iceberg.deletes.rows as rows

    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=900, files=3))
    first = min(plan_files(table, table.current_snapshot()), key=lambda p: p.path)
    planned: list[int] = []
    real = rows.plan_files

    def spy(*args: Any, **options: Any) -> Any:
        out = real(*args, **options)
        planned.append(len(out))
        return out

    monkeypatch.setattr(rows, "plan_files", spy)
    ids = pc.min_max(pq.read_table(local_path(first.path))["id"])
    low, high = ids["min"].as_py(), ids["max"].as_py()
    result = delete_rows(table, f"id >= {low} and id <= {high}")
    assert planned == [1] and result.deleted_rows == first.record_count
    # Refusing to empty the table counts every live row: then every file is planned.
    with pytest.raises(UsageError):
        delete_rows(result.table, "id >= 0", allow_all_rows=False)
    assert planned[1:] == [3]


@pytest.mark.parametrize("options", [{}, {"include_empty_files": "true"}])
@pytest.mark.parametrize("where", [None, "id >= 0"])
def test_empty_data_files_are_planned_as_pyiceberg_plans_them(
    tmp_path: Path, options: dict[str, str], where: str | None
) -> None:
    """A file of no rows is left out of a plan unless the scan asks for empty files, with a
    condition or without (where no other test runs: planning skips them)."""
    catalog = make_catalog(tmp_path)
    table = create_sample_table(catalog, "db.t", rows=100, files=1)
    empty = tmp_path / "empty.parquet"
    pq.write_table(table.scan(limit=0).to_arrow(), empty)
    table.add_files([str(empty)])  # pyiceberg's (ours commits nothing for no rows)
    scan = table.scan(options=options) if where is None else table.scan(where, options=options)
    expected = _tasks(scan.plan_files(), table)
    assert len(expected) == (2 if options else 1)
    assert _ours(scan) == expected


def test_a_plan_leaves_the_collector_as_it_found_it(tables: dict[str, Any]) -> None:
    """Planning holds full collections off (support/gc_pause.py) and gives the collector
    back as it was: on or off, its thresholds, nested holds, and after a plan that fails."""
    import gc

    from puffin.support.gc_pause import gc_paused

    table = tables["v3 deletion vectors"]
    before = gc.get_threshold()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            assert plan_files(table, table.current_snapshot())
            assert gc.isenabled() is enabled
            assert gc.get_threshold() == before
        gc.enable()
        with pytest.raises(RuntimeError), gc_paused():
            assert gc.isenabled()  # young collections still run
            assert gc.get_threshold()[:2] == before[:2]
            assert gc.get_threshold()[2] > 10**6
            with gc_paused():
                pass
            assert gc.get_threshold()[2] > 10**6  # the outer hold stays
            raise RuntimeError("a plan that fails")
        assert gc.get_threshold() == before
    finally:
        gc.enable()
        gc.set_threshold(*before)
