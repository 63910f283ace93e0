"""Row-level deletes committed as deletion vectors into v3 tables, checked by other readers.

Each state of the table (after the upgrade, after each delete, a delete that merges into
existing vectors, one over v2 position deletes) is read by pyiceberg 0.12's scan, DuckDB
1.4.4 and iceberg-rust (tests/peers); every reader must return exactly the expected ids.
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.expressions import GreaterThanOrEqual, Reference
from pyiceberg.expressions.literals import literal
from pyiceberg.manifest import FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Summary
from pyiceberg.types import LongType, NestedField, StringType

from iceberg_fixtures import commit_deletion_vectors_v3, commit_position_deletes_v2, make_catalog
from peers import (
    SailServer,
    delete_with_sail,
    read_duckdb,
    read_duckdb15,
    read_iceberg_rust,
    read_pyiceberg,
    read_sail,
    static_table,
)
from puffin.errors import ColumnNotFoundError, UsageError
from puffin.iceberg import (
    deletion_vector_refs,
    local_catalog,
    read_table_deletion_vectors,
    verify_table,
)
from puffin.iceberg.deletes.rows import commit_deletion_vectors, delete_rows
from puffin.iceberg.deletes.upgrade import upgrade_to_v3
from puffin.iceberg.metadata.manifests import read_manifest_list
from puffin.iceberg.metadata.v3 import first_row_id_of
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.verify.v3_checks import check_v3

FILES, PER_FILE = 3, 100
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
)
READERS: dict[str, Callable[[str], pa.Table]] = {
    "pyiceberg": read_pyiceberg,
    "duckdb": read_duckdb,
    "iceberg-rust": read_iceberg_rust,
}


def _v2_table(catalog: Catalog, name: str = "db.t") -> Table:
    table = catalog.create_table(name, SCHEMA, properties={"format-version": "2"})
    for f in range(FILES):
        ids = list(range(f * PER_FILE, (f + 1) * PER_FILE))
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]}))
    return catalog.load_table(name)


def _file_of(table: Table, first_id: int) -> str:
    """The data file whose first row has ``first_id`` (one append per file)."""
    for p in plan_files(table, table.current_snapshot()):  # type: ignore[arg-type]
        if (
            pa.compute.min(pa.parquet.read_table(p.path[7:], columns=["id"])["id"]).as_py()
            == first_id
        ):
            return p.path
    raise AssertionError(first_id)


def _summary(table: Table) -> Summary:
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    return snapshot.summary


def _assert_ids(table: Table, expected: set[int], sail: SailServer | None = None) -> None:
    """Every reader (and Sail, when given) returns exactly ``expected`` and their names."""
    readers = dict(READERS)
    if sail is not None:
        readers["sail"] = lambda m: read_sail(sail, m)
    for name, read in readers.items():
        rows = read(table.metadata_location)
        ids = rows.column("id").to_pylist()
        assert sorted(ids) == sorted(expected), f"{name} reads other rows"
        assert sorted(rows.column("name").to_pylist()) == sorted(f"n{i}" for i in expected)


def _assert_lineage(table: Table) -> None:
    """Every data manifest of the current snapshot has a first_row_id below next-row-id."""
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.first_row_id is not None
    next_row_id = table.metadata.next_row_id  # type: ignore[union-attr]
    assert next_row_id is not None
    for m in read_manifest_list(table.io, snapshot.manifest_list):
        fri = first_row_id_of(m)
        if m.content == 0:
            assert fri is not None
            rows = int(m.added_rows_count or 0) + int(m.existing_rows_count or 0)
            assert fri + rows <= next_row_id
        else:
            assert fri is None


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return make_catalog(tmp_path / "wh")


ALL = set(range(FILES * PER_FILE))


def test_positions_given_to_a_v2_table_follow_its_delete_mode(catalog: Catalog) -> None:
    """No vector on v2: a position-delete file (merge-on-read) or the file written again
    without the rows (copy-on-write, the default)."""
    table = _v2_table(catalog)
    cow = commit_deletion_vectors(table, {_file_of(table, 0): [0, 5]})
    assert cow.vectors == () and cow.deleted_rows == 2 and len(cow.rewritten_files) == 1
    with cow.table.transaction() as tx:
        tx.set_properties({"write.delete.mode": "merge-on-read"})
    table = catalog.load_table("db.t")
    mor = commit_deletion_vectors(table, {_file_of(table, 100): [1]})
    assert mor.vectors == () and len(mor.position_delete_files) == 1
    _assert_ids(mor.table, ALL - {0, 5, 101})


def test_upgrade_merges_position_deletes_then_deletes_merge_into_vectors(catalog: Catalog) -> None:
    base = _v2_table(catalog)
    middle = _file_of(base, 100)
    v2 = commit_position_deletes_v2(catalog, base, {middle: [0, 1, 2, 50]}, new_identifier="db.v2")
    expected = ALL - {100, 101, 102, 150}
    _assert_ids(v2, expected)

    v3 = upgrade_to_v3(v2)
    assert v3.metadata.format_version == 3
    assert v3.metadata.next_row_id == FILES * PER_FILE
    assert _summary(v3).operation.value == "replace"
    planned = plan_files(v3, v3.current_snapshot())  # type: ignore[arg-type]
    assert all(d.file_format == FileFormat.PUFFIN for p in planned for d in p.delete_files)
    assert read_table_deletion_vectors(v3)[middle].to_numpy().tolist() == [0, 1, 2, 50]
    _assert_ids(v3, expected)
    _assert_lineage(v3)
    assert upgrade_to_v3(v3) is v3

    # Rows 0..9 of two files, some already deleted in the middle one: merged, not doubled.
    result = delete_rows(v3, "id < 10 or (id >= 100 and id < 110)")
    assert result.deleted_rows == 10 + 7
    expected -= set(range(10)) | set(range(100, 110))
    table = result.table
    _assert_ids(table, expected)
    _assert_lineage(table)
    refs = deletion_vector_refs(table)  # raises on two live vectors for one file
    assert {r.referenced_data_file: r.record_count for r in refs}[middle] == 11
    assert len({r.path for r in refs if r.referenced_data_file != middle}) == 1
    summary = _summary(table)
    assert summary.operation.value == "delete"
    assert summary["added-dvs"] == "2" and summary["removed-dvs"] == "1"
    assert summary["added-position-deletes"] == str(10 + 11)
    assert verify_table(table).ok

    again = delete_rows(
        catalog.load_table("db.v2"), GreaterThanOrEqual(term=Reference("id"), value=literal(295))
    )
    expected -= set(range(295, 300))
    assert again.deleted_rows == 5 and len(again.vectors) == 1
    _assert_ids(again.table, expected)
    assert verify_table(again.table).ok


def test_delete_on_a_table_created_v3_by_upgrade_without_deletes(catalog: Catalog) -> None:
    table = upgrade_to_v3(_v2_table(catalog))
    assert table.metadata.format_version == 3
    assert len(table.snapshots()) == FILES  # the upgrade alone adds no snapshot
    result = delete_rows(table, "name = 'n7'")
    assert result.deleted_rows == 1 and result.snapshot_id is not None
    assert _summary(result.table)["total-records"] == str(FILES * PER_FILE)
    assert _summary(result.table)["total-position-deletes"] == "1"
    _assert_ids(result.table, ALL - {7})
    _assert_lineage(result.table)


def test_deleting_nothing_commits_nothing(catalog: Catalog) -> None:
    table = upgrade_to_v3(_v2_table(catalog))
    delete_rows(table, "id = 5")
    table = catalog.load_table("db.t")
    before = table.metadata_location
    for where in ("id > 1000", "id = 5"):
        result = delete_rows(table, where)
        assert result.deleted_rows == 0 and result.snapshot_id is None and not result.vectors
    assert catalog.load_table("db.t").metadata_location == before


def test_commit_deletion_vectors_merges_and_checks(catalog: Catalog) -> None:
    table = upgrade_to_v3(_v2_table(catalog))
    first = _file_of(table, 0)
    result = commit_deletion_vectors(table, {first: [1, 3]})
    assert result.deleted_rows == 2
    result = commit_deletion_vectors(result.table, {first: [3, 4]})
    assert result.deleted_rows == 1
    assert read_table_deletion_vectors(result.table)[first].to_numpy().tolist() == [1, 3, 4]
    _assert_ids(result.table, ALL - {1, 3, 4})
    with pytest.raises(ValueError, match="past the end"):
        commit_deletion_vectors(result.table, {first: [PER_FILE]})
    with pytest.raises(ValueError, match="not a live data file"):
        commit_deletion_vectors(result.table, {"file:///nowhere.parquet": [0]})


def test_where_errors(catalog: Catalog) -> None:
    table = upgrade_to_v3(_v2_table(catalog))
    with pytest.raises(ColumnNotFoundError, match="nope"):
        delete_rows(table, "nope = 1")
    with pytest.raises(UsageError, match="cannot parse the row filter"):
        delete_rows(table, "id % 7 = 0")
    bad: Any = 42
    with pytest.raises(TypeError):
        delete_rows(table, bad)


# --- table-level checks (puffin.iceberg.verify.v3_checks) ----------------------------


def test_v3_checks_pass_on_our_commits(catalog: Catalog) -> None:
    table = upgrade_to_v3(_v2_table(catalog))
    table = delete_rows(table, "id < 5").table
    table = delete_rows(table, "id < 8").table
    assert check_v3(table) == []


def test_fixture_tables_follow_the_v3_rules(catalog: Catalog) -> None:
    base = _v2_table(catalog)
    first = _file_of(base, 0)
    good, _ = commit_deletion_vectors_v3(catalog, base, {first: [0, 1]}, new_identifier="db.good")
    assert check_v3(good) == []
    assert verify_table(good).ok, verify_table(good).problems
    _assert_lineage(good)
    _assert_ids(good, ALL - {0, 1})


def _record_count_5(records: list[Any]) -> None:
    records[0][4] = 5  # data_file.record_count


# Each way to break a v3 table, what check_v3 and verify_table (problem kind) say about it.
BROKEN: dict[str, tuple[dict[str, Any], str, str]] = {
    "puffin-in-v2": ({"broken": "v2"}, "in a v2 table", "table"),
    "puffin-in-data-manifest": ({"broken": "data-manifest"}, "listed in a data manifest", "table"),
    "cardinality": ({"tamper": _record_count_5}, "record_count 5", "deletion-vector"),
    "null-first-row-id": ({"broken": "lineage"}, "without first_row_id", "table"),
    "stale-sequence": ({"broken": "stale-sequence"}, "below its data file's 1", "table"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_verify_table_flags_broken_tables(catalog: Catalog, case: str) -> None:
    base = _v2_table(catalog)
    first = _file_of(base, 0)
    options, expected, kind = BROKEN[case]
    bad, _ = commit_deletion_vectors_v3(
        catalog, base, {first: [0, 1]}, new_identifier="db.bad", **options
    )
    assert any(expected in m for _, m in check_v3(bad))
    problems = verify_table(bad).problems
    assert any(p.kind == kind and expected in p.message for p in problems), problems
    assert len({(p.path, p.message) for p in problems}) == len(problems)  # each said once


def test_verify_table_flags_a_vector_in_another_partition(catalog: Catalog) -> None:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.typedef import Record

    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"))
    table = catalog.create_table("db.p", SCHEMA, partition_spec=spec)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "a"]}))
    table.append(pa.table({"id": pa.array([3], pa.int64()), "name": ["b"]}))
    table = catalog.load_table("db.p")
    first = _file_of(table, 1)

    def elsewhere(records: list[Any]) -> None:
        records[0][3] = Record("b")  # data_file.partition

    good, _ = commit_deletion_vectors_v3(catalog, table, {first: [0]}, new_identifier="db.pg")
    assert verify_table(good).ok, verify_table(good).problems
    bad, _ = commit_deletion_vectors_v3(
        catalog, table, {first: [0]}, new_identifier="db.pb", tamper=elsewhere
    )
    problems = verify_table(bad).problems
    expected = "is in partition ('b',) of spec 0, its data file in ('a',) of spec 0"
    assert any(p.kind == "table" and expected in p.message for p in problems), problems


def test_verify_table_flags_two_live_vectors_for_one_file(catalog: Catalog) -> None:
    base = _v2_table(catalog)
    first = _file_of(base, 0)
    once, _ = commit_deletion_vectors_v3(catalog, base, {first: [0]}, new_identifier="db.once")
    assert verify_table(once).ok
    twice, _ = commit_deletion_vectors_v3(catalog, once, {first: [1]}, new_identifier="db.twice")
    problems = verify_table(twice).problems
    assert any(
        p.kind == "table" and f"two live deletion vectors for {first}" in p.message
        for p in problems
    ), problems


# --- Sail: reads our deletes, deletes itself, and we read (and extend) its vectors ----------


@pytest.fixture(scope="module")
def sail(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SailServer]:
    """One Sail Spark Connect server for these tests, on 127.0.0.1."""
    with SailServer(tmp_path_factory.mktemp("sail")) as server:
        yield server


def _positions_of(ids: set[int]) -> dict[int, list[int]]:
    """``{file number: sorted positions}`` of ``ids`` (file f holds ids f*100.. in order)."""
    out: dict[int, list[int]] = {}
    for i in sorted(ids):
        out.setdefault(i // PER_FILE, []).append(i % PER_FILE)
    return out


def _assert_vectors(table: Table, deleted: set[int]) -> None:
    """Our strict reader sees one vector per data file holding exactly ``deleted``."""
    dvs = read_table_deletion_vectors(table)
    want = _positions_of(deleted)
    got = {f: dvs[_file_of(table, f * PER_FILE)].to_numpy().tolist() for f in want}
    assert got == want
    assert len(dvs) == len(want)
    report = verify_table(table)
    assert report.ok, report.problems


SAIL_WHERE = "id % 7 = 0"
SAIL_IDS = {i for i in ALL if i % 7 == 0}


def test_sail_reads_our_deletes_then_we_read_and_extend_sails(
    catalog: Catalog, sail: SailServer
) -> None:
    base = _v2_table(catalog)
    v2 = commit_position_deletes_v2(
        catalog, base, {_file_of(base, 100): [0, 1, 2, 50]}, new_identifier="db.v2"
    )
    table = delete_rows(upgrade_to_v3(v2), "id < 10 or (id >= 100 and id < 110)").table
    deleted = set(range(10)) | set(range(100, 110)) | {150}
    _assert_ids(table, ALL - deleted, sail)  # Sail reads our upgrade and our merged DVs

    sailed = static_table(delete_with_sail(sail, table.metadata_location, SAIL_WHERE))
    deleted |= SAIL_IDS
    assert sailed.metadata.format_version == 3
    _assert_vectors(sailed, deleted)  # Sail merged into our vectors: one per file
    _assert_ids(sailed, ALL - deleted, sail)

    # Our delete on Sail's commit merges into Sail's vectors.
    ours = catalog.register_table("db.after_sail", sailed.metadata_location)
    result = delete_rows(ours, "id >= 290 or id = 3 or id = 14")
    assert result.deleted_rows == 9  # 3 (ours), 14 and 294 (Sail's) were deleted already
    deleted |= set(range(290, 300))
    _assert_vectors(result.table, deleted)
    assert check_v3(result.table) == []
    _assert_ids(result.table, ALL - deleted, sail)


def _delete_in_process(warehouse: str, where: str, barrier: Any) -> int:
    table = local_catalog(warehouse).load_table("db.t")
    barrier.wait()
    return delete_rows(table, where, max_attempts=10).deleted_rows


def test_every_reader_agrees_after_concurrent_deletes_and_sails(
    tmp_path: Path, sail: SailServer
) -> None:
    warehouse = tmp_path / "wh"
    upgrade_to_v3(_v2_table(make_catalog(warehouse)))
    # Each process deletes rows of every file: each commit after the first must re-merge.
    wheres = [
        "id in (0, 1, 2, 100, 101, 102, 200, 201, 202)",
        "id in (3, 4, 103, 104, 203, 204)",
        "id in (7, 57, 107, 157, 207, 257)",
    ]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(len(wheres))
        with ctx.Pool(len(wheres)) as pool:
            counts = pool.starmap(
                _delete_in_process, [(str(warehouse), w, barrier) for w in wheres]
            )
    deleted = {i for i in ALL if i % 100 < 5 or i % 50 == 7}
    assert sum(counts) == len(deleted)
    table = local_catalog(warehouse).load_table("db.t")
    _assert_vectors(table, deleted)
    _assert_ids(table, ALL - deleted, sail)

    sailed = static_table(delete_with_sail(sail, table.metadata_location, SAIL_WHERE))
    deleted |= SAIL_IDS
    _assert_vectors(sailed, deleted)
    _assert_ids(sailed, ALL - deleted, sail)


@pytest.mark.peer  # .venv-duckdb15, called directly
def test_duckdb15_reads_a_commit_with_two_vectors() -> None:
    """Reproducer through our own commit path: a large vector, then a small one, in one file.

    DuckDB 1.5.5's known bug (docs/interop.md#v3-deletes), checked exactly: the small
    vector's file loses the large vector's positions instead of its own; every other reader
    reads the commit right. When DuckDB reads it right, the bug is fixed upstream: this
    test then fails, and the expectation and the docs must change.

    Whether DuckDB 1.5.5 misreads depends on the Puffin file's layout, which the data-file
    paths in its footer change: the warehouse is at a path of fixed length (``/tmp/dd15-`` and
    8 characters; with pytest's longer ``tmp_path`` this file reads right).
    """
    with tempfile.TemporaryDirectory(prefix="dd15-", dir="/tmp") as tmp:
        _duckdb15_two_vectors(make_catalog(Path(tmp) / "wh"))


def _duckdb15_two_vectors(catalog: Catalog) -> None:
    table = catalog.create_table("db.dd15", SCHEMA, properties={"format-version": "2"})
    rows = 1000
    for f in range(2):
        ids = list(range(f * rows, (f + 1) * rows))
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]}))
    table = upgrade_to_v3(catalog.load_table("db.dd15"))
    big, small = _file_of(table, 0), _file_of(table, rows)
    result = commit_deletion_vectors(table, {big: range(0, rows, 3), small: [5, 6]})
    assert [v.referenced_data_file for v in result.vectors] == [big, small]
    assert result.vectors[0].content_size_in_bytes > 10 * result.vectors[1].content_size_in_bytes
    expected = sorted(set(range(2 * rows)) - set(range(0, rows, 3)) - {rows + 5, rows + 6})
    location = result.table.metadata_location
    assert sorted(read_pyiceberg(location).column("id").to_pylist()) == expected
    misread = sorted(set(range(2 * rows)) - set(range(0, rows, 3)) - set(range(rows, 2 * rows, 3)))
    got = sorted(read_duckdb15(location).column("id").to_pylist())
    assert got != expected, "DuckDB 1.5.5 read two vectors in one Puffin file right: fixed?"
    assert got == misread


# --- Spark: the executors find the rows, the driver commits (puffin.spark.delete_rows) -------


@pytest.fixture(scope="module")
def spark_session() -> Iterator[Any]:
    from puffin import spark as ps

    try:
        ps.check_java()
    except ps.JavaNotFoundError as exc:
        pytest.skip(str(exc))
    session = ps.local_session("local[2]", memory="1g", shuffle_partitions=2)
    yield session
    session.stop()


def test_spark_deletes_commit(
    catalog: Catalog, tmp_path: Path, capsys: pytest.CaptureFixture[str], spark_session: Any
) -> None:
    from puffin import spark as ps
    from puffin.cli import main

    session = spark_session
    v2 = _v2_table(catalog, "db.v2")
    cow = ps.delete_rows(session, v2, "id < 3")  # v2: copy-on-write, Java's default
    assert cow.deleted_rows == 3 and len(cow.rewritten_files) == 1 and cow.vectors == ()
    _assert_ids(cow.table, ALL - {0, 1, 2})
    table = upgrade_to_v3(_v2_table(catalog))
    # The condition is pyiceberg's row filter, the same as delete_rows takes.
    sevens = ", ".join(map(str, sorted(SAIL_IDS)))
    first = ps.delete_rows(session, table, f"id < 10 OR id IN ({sevens})")
    deleted = set(range(10)) | SAIL_IDS
    assert first.deleted_rows == len(deleted) and len(first.vectors) == FILES
    _assert_vectors(first.table, deleted)
    second = ps.delete_rows(session, first.table, f"id IN ({sevens}) OR id >= 295")
    deleted |= set(range(295, 300))
    assert second.deleted_rows == 5  # the multiples of 7 were deleted already
    assert [v.referenced_data_file for v in second.vectors] == [_file_of(table, 200)]
    _assert_vectors(second.table, deleted)
    _assert_ids(second.table, ALL - deleted)
    assert ps.delete_rows(session, second.table, "id < 0").snapshot_id is None

    # The command line: `puffin spark dv --commit` on the table in the catalog.
    again = ["spark", "dv", "db.t", "--warehouse", str(tmp_path / "wh"), "--no-progress"]
    code = main([*again, "--where", "id IN (11, 12, 14)", "--commit", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["committed"] and doc["deleted_rows"] == 2  # 14 is 7 * 2
    deleted |= {11, 12}
    _assert_vectors(catalog.load_table("db.t"), deleted)
    assert main([*again, "--where", "id = 11", "--commit"]) == 0
    assert "nothing committed" in capsys.readouterr().out
    assert main([*again, "--where", "id = 11", "--commit", "--no-merge"]) == 2

    # v2, merge-on-read: position-delete files, and the command says so
    with catalog.load_table("db.v2").transaction() as tx:
        tx.set_properties({"write.delete.mode": "merge-on-read"})
    on_v2 = ["spark", "dv", "db.v2", "--warehouse", str(tmp_path / "wh"), "--no-progress"]
    assert main([*on_v2, "--where", "id < 5 or id = 150", "--commit"]) == 0
    assert "2 position-delete file(s) written" in capsys.readouterr().out  # one per data file
    _assert_ids(catalog.load_table("db.v2"), ALL - {0, 1, 2, 3, 4, 150})
    code = main([*on_v2, "--where", "id = 250", "--commit", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and len(doc["position_delete_files"]) == 1 and doc["deletion_vectors"] == []


def test_spark_migrates_position_deletes_in_the_upgrade(
    catalog: Catalog,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    spark_session: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from puffin import spark as ps
    from puffin.cli import main

    base = _v2_table(catalog)
    gone = {_file_of(base, 0): [0, 1, 99], _file_of(base, 200): [5]}
    deleted = {0, 1, 99, 205}
    v2 = commit_position_deletes_v2(catalog, base, gone, new_identifier="db.v2")

    def not_on_the_driver(*args: Any) -> None:
        raise AssertionError("the driver read the position-delete files itself")

    with monkeypatch.context() as patch:
        patch.setattr(
            "puffin.iceberg.metadata.delete_files.DeleteIndex.positions", not_on_the_driver
        )
        v3 = ps.upgrade_to_v3(spark_session, v2)
    assert v3.metadata.format_version == 3
    assert _summary(v3).operation.value == "replace"
    _assert_vectors(v3, deleted)
    _assert_lineage(v3)
    _assert_ids(v3, ALL - deleted)
    assert ps.upgrade_to_v3(spark_session, v3) is v3

    commit_position_deletes_v2(catalog, base, gone, new_identifier="db.v2cli")
    migrate = ["spark", "migrate-deletes", "db.v2cli", "--warehouse", str(tmp_path / "wh")]
    assert main([*migrate, "--no-progress", "--commit", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["committed"] and (doc["previous_format_version"], doc["format_version"]) == (2, 3)
    _assert_vectors(catalog.load_table("db.v2cli"), deleted)
