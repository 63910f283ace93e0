"""``scan_table``: the live rows of a table, held to a model computed without any Iceberg reader.

The model reads each data file with pyarrow and drops the deleted positions with NumPy;
the row filter is pyarrow's compute on the literal as written. Peers (pyiceberg, DuckDB,
iceberg-rust, Iceberg Java, Sail) are held to the same model in tests/project/test_peers.py,
and Java's ``_row_id`` checks ours in tests/project/test_java_peer.py.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from iceberg_fixtures import (
    _commit_delete_snapshot,
    commit_deletion_vectors_v3,
    commit_position_deletes_v2,
    make_catalog,
)
from puffin.conformance.tables import write_position_delete_file
from puffin.errors import ColumnNotFoundError, UsageError
from puffin.iceberg import (
    append,
    create_sample_table,
    delete_rows,
    overwrite,
    sample_batch,
    scan_table,
    upgrade_to_v3,
)
from puffin.io.locations import local_path

ROWS = 300_000  # two files of 150,000 rows: deletes cross the reader's 131,072-row batches
FILES = 2
_counter = itertools.count()


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return make_catalog(tmp_path_factory.mktemp("scan"))


@pytest.fixture(scope="module")
def base(catalog: Catalog) -> Table:
    return create_sample_table(catalog, "db.scan", rows=ROWS, files=FILES, seed=5)


@pytest.fixture(scope="module")
def files(base: Table) -> dict[str, pa.Table]:
    """Each data file's rows, read with pyarrow alone."""
    paths = sorted(t.file.file_path for t in base.scan().plan_files())
    return {p: pq.read_table(local_path(p)) for p in paths}


def _model(files: dict[str, pa.Table], deleted: dict[str, np.ndarray[Any, Any]]) -> pa.Table:
    parts = []
    for path, rows in files.items():
        keep = np.ones(rows.num_rows, dtype=bool)
        keep[deleted.get(path, np.array([], dtype=np.int64))] = False
        parts.append(rows.filter(pa.array(keep)))
    return pa.concat_tables(parts)


def _sorted(table: pa.Table, columns: list[str] | None = None) -> list[dict[str, Any]]:
    table = table.select(columns) if columns else table
    return table.sort_by("id").to_pylist()


def _pattern(kind: str, n: int, draw: Any) -> np.ndarray[Any, Any]:
    if kind == "empty":
        return np.array([], dtype=np.int64)
    if kind == "full":
        return np.arange(n, dtype=np.int64)
    if kind == "every 2nd":
        return np.arange(draw(st.integers(0, 1)), n, 2, dtype=np.int64)
    if kind == "last row":
        return np.array([n - 1], dtype=np.int64)
    if kind == "runs":
        starts = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5))
        length = draw(st.integers(1, 140_000))
        return np.unique(np.concatenate([np.arange(s, min(n, s + length)) for s in starts]))
    # sparse, with the batch boundary and the file's ends likely
    edges = st.sampled_from([0, 1, 131_071, 131_072, 131_073, n - 2, n - 1])
    chosen = draw(st.lists(st.one_of(edges, st.integers(0, n - 1)), max_size=200))
    return np.unique(np.array(chosen, dtype=np.int64))


KINDS = ["empty", "full", "every 2nd", "last row", "runs", "sparse"]


@st.composite
def deletes(draw: Any, sizes: list[tuple[str, int]]) -> dict[str, np.ndarray[Any, Any]]:
    return {path: _pattern(draw(st.sampled_from(KINDS)), n, draw) for path, n in sizes}


@given(data=st.data())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_rows_are_the_model_for_any_delete_pattern(
    data: st.DataObject, catalog: Catalog, base: Table, files: dict[str, pa.Table]
) -> None:
    sizes = [(p, t.num_rows) for p, t in files.items()]
    deleted = data.draw(deletes(sizes))
    kind = data.draw(st.sampled_from(["v3", "v2"]))
    name = f"db.scan_{next(_counter)}"
    positions = {p: d for p, d in deleted.items() if len(d)}
    if not positions:
        table = base
    elif kind == "v3":
        table = commit_deletion_vectors_v3(catalog, base, positions, new_identifier=name)[0]
    else:
        table = commit_position_deletes_v2(catalog, base, positions, new_identifier=name)
    model = _model(files, deleted)
    got = scan_table(table).to_arrow()
    assert got.num_rows == model.num_rows
    assert got.column("id").to_pylist() == model.column("id").to_pylist()  # file order kept
    assert got.equals(model.cast(got.schema))
    # A filter on a column it does not return, and a limit, over the same deletes.
    bound = data.draw(st.integers(0, 200))
    filtered = scan_table(table, f"category < {bound}", ("id", "amount")).to_arrow()
    want = model.filter(pc.less(model["category"], bound))
    assert _sorted(filtered) == _sorted(want, ["id", "amount"])
    limit = data.draw(st.integers(0, 5))
    reader = scan_table(table, limit=limit).to_arrow_batch_reader()
    assert reader.read_all().column("id").to_pylist() == model.column("id").to_pylist()[:limit]


def test_stream_and_table_agree(catalog: Catalog, base: Table, files: dict[str, pa.Table]) -> None:
    """``to_arrow_batch_reader`` yields the same rows, in batches of at most one scan batch,
    with :attr:`TableScan.schema` as its schema."""
    path = next(iter(files))
    deleted = {path: np.arange(0, 150_000, 7, dtype=np.int64)}
    table = commit_deletion_vectors_v3(catalog, base, deleted, new_identifier="db.scan_stream")[0]
    scan = scan_table(table, "category >= 3")
    reader = scan.to_arrow_batch_reader()
    assert reader.schema == scan.schema
    batches = list(reader)
    assert len(batches) > 2 and max(b.num_rows for b in batches) <= 131_072
    model = _model(files, deleted)
    want = model.filter(pc.greater_equal(model["category"], 3))
    streamed = pa.Table.from_batches(batches)
    assert streamed.column("id").to_pylist() == want.column("id").to_pylist()
    assert _sorted(scan.to_arrow()) == _sorted(streamed.cast(scan.to_arrow().schema))


def test_snapshot_id_reads_the_rows_before_a_delete(catalog: Catalog, base: Table) -> None:
    table = upgrade_to_v3(catalog.register_table("db.scan_snap", base.metadata_location))
    before = table.current_snapshot()
    assert before is not None
    after = delete_rows(table, "category < 100").table
    assert scan_table(after, snapshot_id=before.snapshot_id).to_arrow().num_rows == ROWS
    live = scan_table(after).to_arrow()
    assert live.num_rows == ROWS - pc.sum(pc.less(base.scan().to_arrow()["category"], 100)).as_py()
    assert pc.min(live["category"]).as_py() >= 100


def test_schema_change_and_overwrite_read_as_pyiceberg(tmp_path: Path) -> None:
    """A renamed and an added column (older files lack it), then v3 deletes and an overwrite:
    the rows pyiceberg reads (it projects each file by field id, as we reuse)."""
    catalog = make_catalog(tmp_path)
    table = create_sample_table(catalog, "db.evolve", rows=4000, files=2, seed=3)
    base_rows = pa.concat_tables(
        pq.read_table(local_path(t.file.file_path)) for t in table.scan().plan_files()
    )
    with table.update_schema() as update:
        update.rename_column("amount", "total")
        update.add_column("note", pa_string())
    table = catalog.load_table("db.evolve")
    table = upgrade_to_v3(table)
    table = delete_rows(table, "category < 40").table
    table = overwrite(table, _batch_for(table, 300, 10_000), "id >= 3500")
    table = delete_rows(table, "total < 100").table
    ours = scan_table(table).to_arrow()
    theirs = table.scan().to_arrow()
    assert ours.schema.names == theirs.schema.names
    assert _sorted(ours) == _sorted(theirs)
    # And the model: the old rows the deletes and the overwrite left, then the new rows.
    old = base_rows.filter(
        pc.and_(
            pc.and_(_not(base_rows["category"], 40), pc.less(base_rows["id"], 3500)),
            _not(base_rows["amount"], 100),
        )
    )
    new = _batch_for(table, 300, 10_000)
    new = new.filter(_not(new["total"], 100))
    assert sorted(ours["id"].to_pylist()) == sorted(old["id"].to_pylist() + new["id"].to_pylist())
    assert ours.filter(pc.greater_equal(ours["id"], 10_000))["note"].null_count == 0
    assert ours.filter(pc.less(ours["id"], 10_000))["note"].null_count == len(old)


def _not(column: Any, bound: int) -> Any:
    """Rows a delete of ``column < bound`` keeps: a null matches no comparison."""
    return pc.invert(pc.fill_null(pc.less(column, bound), False))


def test_the_current_snapshot_reads_with_the_current_schema(tmp_path: Path) -> None:
    """A schema change commits no snapshot: the current snapshot is read with the new schema
    (renamed, added, widened columns), an older one by id with its own."""
    from pyiceberg.types import LongType

    from puffin.iceberg.metadata.v3 import commit

    catalog = make_catalog(tmp_path)
    table = upgrade_to_v3(create_sample_table(catalog, "db.now", rows=500, files=1))
    snapshot = table.current_snapshot()
    assert snapshot is not None
    tx = table.transaction()
    with tx.update_schema() as update:
        update.rename_column("amount", "total")
        update.add_column("note", pa_string())
        update.update_column("category", LongType())
    changed = commit(table, tx._requirements, tx._updates)
    now = scan_table(changed).to_arrow()
    assert now.schema.names[-1] == "note" and "total" in now.schema.names
    assert now.schema.field("category").type == pa.int64()
    assert now.column("note").null_count == now.num_rows
    assert _sorted(now) == _sorted(changed.scan().to_arrow())
    then = scan_table(changed, snapshot_id=snapshot.snapshot_id).to_arrow()
    assert "amount" in then.schema.names and "note" not in then.schema.names


def pa_string() -> Any:
    from pyiceberg.types import StringType

    return StringType()


def _batch_for(table: Table, rows: int, start: int) -> pa.Table:
    """Sample rows in the evolved schema (``total`` for ``amount``, a ``note``)."""
    batch = sample_batch(rows, start=start, seed=9)
    batch = batch.rename_columns(["total" if n == "amount" else n for n in batch.column_names])
    notes = pa.array([f"note-{i}" for i in range(rows)], pa.large_string())
    batch = batch.append_column("note", notes)
    return batch.cast(table.schema().as_arrow())


def test_row_lineage_is_first_row_id_plus_position(tmp_path: Path) -> None:
    """Every row's ``_row_id`` is its file's first row id plus its position: unique, dense,
    an append's rows in one run in file order, unchanged by a later delete."""
    catalog = make_catalog(tmp_path)
    table = upgrade_to_v3(create_sample_table(catalog, "db.lineage", rows=3000, files=3))
    next_row_id = table.metadata.next_row_id
    appended = append(table, sample_batch(500, start=3000, seed=1))
    got = scan_table(appended, selected_fields=("id", "_row_id", "_last_updated_sequence_number"))
    rows = got.to_arrow()
    assert rows.schema.names == ["id", "_row_id", "_last_updated_sequence_number"]
    ids = dict(zip(rows["id"].to_pylist(), rows["_row_id"].to_pylist(), strict=True))
    # The upgrade leaves next-row-id 0; the append's manifest list assigns ids to the new
    # manifest and to the upgraded ones (as Java's writer does): every row one id, none twice.
    assert next_row_id == 0 and appended.metadata.next_row_id == 3500
    assert sorted(ids.values()) == list(range(3500))
    new = {i: r for i, r in ids.items() if i >= 3000}
    start = min(new.values())
    assert sorted(new.values()) == list(range(start, start + 500))
    assert [new[i] for i in sorted(new)] == sorted(new.values())  # in the file's row order
    sequence = rows["_last_updated_sequence_number"].to_pylist()
    sequences = dict(zip(rows["id"].to_pylist(), sequence, strict=True))
    snapshot = appended.current_snapshot()
    assert snapshot is not None
    assert {sequences[i] for i in new} == {snapshot.sequence_number}
    deleted = delete_rows(appended, "id < 1000").table
    after = scan_table(deleted, selected_fields=("id", "_row_id")).to_arrow()
    assert dict(zip(after["id"].to_pylist(), after["_row_id"].to_pylist(), strict=True)) == {
        i: r for i, r in ids.items() if i >= 1000
    }


def test_mistakes_are_refused_with_one_clear_error(catalog: Catalog, base: Table) -> None:
    with pytest.raises(UsageError, match="not a whole number"):
        scan_table(base, "category = 9.5")
    with pytest.raises(ColumnNotFoundError, match="nope"):
        scan_table(base, selected_fields=("id", "nope"))
    with pytest.raises(UsageError, match="format version 3"):
        scan_table(base, selected_fields=("id", "_row_id"))
    with pytest.raises(UsageError, match="limit"):
        scan_table(base, limit=-1)
    from puffin.errors import SnapshotNotFoundError

    with pytest.raises(SnapshotNotFoundError):
        scan_table(base, snapshot_id=12345)


def test_an_equality_delete_without_its_key_column_is_refused_naming_the_file(
    catalog: Catalog, base: Table
) -> None:
    """A file labelled as an equality delete of field 1 that holds no such column (here a
    position-delete file's): the scan and the statistics stop naming it."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    from puffin.errors import TableMetadataError
    from puffin.iceberg import compute_table_statistics

    path = sorted(t.file.file_path for t in base.scan().plan_files())[0]
    written = write_position_delete_file(base, {path: [0]})
    delete_file = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=written.file_path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=1,
        file_size_in_bytes=written.file_size_in_bytes,
        equality_ids=[1],
    )
    delete_file.spec_id = base.spec().spec_id
    table = _commit_delete_snapshot(
        catalog, base, [delete_file], format_version=2, new_identifier="db.scan_eq"
    )
    lacking = r"no column for its equality field ids \[1\]"
    with pytest.raises(TableMetadataError, match=lacking) as caught:
        scan_table(table).to_arrow()
    assert str(written.file_path) in str(caught.value)
    with pytest.raises(TableMetadataError, match=lacking) as refused:
        compute_table_statistics(table)  # statistics read the keys through the same code
    assert str(written.file_path) in str(refused.value)


def test_an_empty_table_reads_as_no_rows(tmp_path: Path) -> None:
    from puffin.iceberg.catalog.sample import sample_schema

    catalog = make_catalog(tmp_path)
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table("db.empty", sample_schema())
    scan = scan_table(table, "category = 1")
    assert scan.to_arrow().num_rows == 0
    assert scan.to_arrow_batch_reader().read_all().num_rows == 0


def test_a_uuid_condition_matches_its_rows(
    catalog: Catalog, base: Table, files: dict[str, pa.Table]
) -> None:
    """pyiceberg 0.12's own scan fails on a uuid condition (Arrow has no comparison for its
    uuid type); ours compares the 16 bytes, with and without deletes in the file."""
    model = _model(files, {})
    wanted = model.column("session_id")[5].as_py()
    path = next(iter(files))
    table = commit_deletion_vectors_v3(
        catalog, base, {path: np.array([3], dtype=np.int64)}, new_identifier="db.scan_uuid"
    )[0]
    for t in (base, table):
        got = scan_table(t, f"session_id = '{wanted}'", ("id", "session_id")).to_arrow()
        assert got.column("session_id").to_pylist() == [wanted]


@pytest.mark.parametrize(
    "options",
    [{}, {"selected_fields": ("id", "amount")}, {"row_filter": "id >= 1000"}],
    ids=["all", "numbers", "filtered"],
)
def test_rows_already_in_shape_read_as_converted_rows(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    """Batches whose columns already have the scan's names and types skip pyiceberg's
    conversion (``rows._FileShape.as_read``); they read exactly as converted ones, schema
    metadata included, whole and streamed."""
    from puffin.iceberg.scan import rows

    name = f"db.shape_{next(_counter)}"
    table = delete_rows(
        upgrade_to_v3(create_sample_table(catalog, name, rows=3000, files=2, seed=3)), "id < 50"
    ).table
    shapes: list[bool] = []
    made = rows._FileShape.__init__

    def noting(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        shapes.append(self.as_read)

    monkeypatch.setattr(rows._FileShape, "__init__", noting)
    fast = [scan_table(table, **options).to_arrow()]
    fast.append(scan_table(table, **options).to_arrow_batch_reader().read_all())
    assert shapes and all(shapes)  # each file's columns are the scan's

    def converting(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        self.as_read = False

    monkeypatch.setattr(rows._FileShape, "__init__", converting)
    slow = [scan_table(table, **options).to_arrow()]
    slow.append(scan_table(table, **options).to_arrow_batch_reader().read_all())
    for got, expected in zip(fast, slow, strict=True):
        assert got.schema.equals(expected.schema, check_metadata=True)
        assert got.equals(expected)
        assert got.num_rows == (2000 if "row_filter" in options else 2950)
