"""Tests written against the mutants that survived mutation testing of the row filter
(``iceberg/scan/row_filter.py``: binding ``where``; ``iceberg/scan/matching.py``: each data
file's matching rows; ``make mutation``, docs/testing.md).

A sample table of 200 rows in two files (nulls in ``user_name`` and ``amount``, a ``uuid``
column).  The rows :func:`matching_by_file` and :func:`scan_table` select are compared with
pyarrow's compute functions applied to each data file as Parquet holds it; mistakes are
pinned to their exact message; what is read (the files the metrics leave, the columns the
condition names) is recorded by wrapping the module's own functions.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.expressions import AlwaysFalse, AlwaysTrue, EqualTo, Not
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType, StructType

from puffin.errors import ColumnNotFoundError, UnsupportedTableError, UsageError
from puffin.iceberg import create_sample_table, local_catalog, scan_table
from puffin.iceberg.scan import matching, rows
from puffin.iceberg.scan.matching import matching_by_file, matching_positions
from puffin.iceberg.scan.plan import PlannedFile, plan_files
from puffin.iceberg.scan.row_filter import bind_where, check_where
from puffin.io.locations import local_path

ROWS, FILES, SEED = 200, 2, 3
COLUMNS = "id, category, amount, price, day, event_time, user_name, session_id, tag"


class Setup:
    def __init__(self, folder: Path) -> None:
        self.table = create_sample_table(
            local_catalog(folder), "db.t", rows=ROWS, files=FILES, seed=SEED
        )
        self.planned = plan_files(self.table, self.table.current_snapshot())
        self.data = {p.path: _storage(pq.read_table(local_path(p.path))) for p in self.planned}
        first = self.data[self.planned[0].path]
        assert first.column("user_name").null_count > 0  # the null cases below need some
        names = [n for n in first.column("user_name").to_pylist() if n is not None]
        self.names = names[:2]
        self.session = uuid.UUID(bytes=first.column("session_id")[7].as_py())


def _storage(data: pa.Table) -> pa.Table:
    """The uuid extension column as its 16 bytes (pyarrow compares those)."""
    i = data.schema.get_field_index("session_id")
    column = data.column(i)
    if isinstance(column.type, pa.BaseExtensionType):
        storage = pa.chunked_array([c.storage for c in column.chunks], type=pa.binary(16))
        data = data.set_column(i, "session_id", storage)
    return data


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return Setup(tmp_path_factory.mktemp("row_filter"))


Model = Callable[[pa.Table, Setup], Any]

#: A condition (``{names}``/``{session}``: values of the data) and its pyarrow model.
CASES: dict[str, tuple[str, Model]] = {
    "less": ("category < 100", lambda t, s: pc.less(t["category"], 100)),
    "not less": ("not (category < 100)", lambda t, s: pc.greater_equal(t["category"], 100)),
    "and": (
        "category >= 10 and category <= 60",
        lambda t, s: pc.and_(pc.greater_equal(t["category"], 10), pc.less_equal(t["category"], 60)),
    ),
    "or": (
        "id < 3 or id >= 198",
        lambda t, s: pc.or_(pc.less(t["id"], 3), pc.greater_equal(t["id"], 198)),
    ),
    "in": ("category in (150, 5, 3)", lambda t, s: pc.is_in(t["category"], pa.array([150, 5, 3]))),
    "not in": (
        "user_name not in ('{names[0]}', '{names[1]}')",
        lambda t, s: pc.and_(
            pc.invert(pc.is_in(t["user_name"], pa.array(s.names))), pc.is_valid(t["user_name"])
        ),
    ),
    "not (in)": (
        "not user_name in ('{names[0]}', '{names[1]}')",
        lambda t, s: pc.and_(
            pc.invert(pc.is_in(t["user_name"], pa.array(s.names))), pc.is_valid(t["user_name"])
        ),
    ),
    "is null": ("user_name is null", lambda t, s: pc.is_null(t["user_name"])),
    "not null": ("not (user_name is null)", lambda t, s: pc.is_valid(t["user_name"])),
    "uuid": (
        "session_id = '{session}'",
        lambda t, s: pc.equal(t["session_id"], pa.scalar(s.session.bytes, pa.binary(16))),
    ),
    "decimal": (
        "price >= 500.5",
        lambda t, s: pc.greater_equal(t["price"], pa.scalar(Decimal("500.50"), t["price"].type)),
    ),
    "true": ("true", lambda t, s: pa.array([True] * t.num_rows)),
    "false": ("false", lambda t, s: pa.array([False] * t.num_rows)),
    "nothing": ("id > 10000", lambda t, s: pc.greater(t["id"], 10000)),
}


def _where(case: str, s: Setup) -> str:
    return CASES[case][0].format(names=s.names, session=s.session)


def _kept(mask: Any) -> list[int]:
    """The positions a boolean Arrow mask (the model) keeps."""
    return [i for i, keep in enumerate(mask.to_pylist()) if keep]


def _expected(case: str, s: Setup) -> dict[str, list[int]]:
    out = {}
    for path, data in s.data.items():
        rows = _kept(CASES[case][1](data, s))
        if rows:
            out[path] = rows
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_matching_by_file_is_pyarrow_on_each_file(setup: Setup, case: str) -> None:
    bound = bind_where(setup.table, _where(case, setup))
    found = matching_by_file(setup.table, setup.planned, bound)
    for positions in found.values():
        assert positions.dtype == np.int64
    assert {path: p.tolist() for path, p in found.items()} == _expected(case, setup)


@pytest.mark.parametrize("case", ["less", "not in", "uuid", "is null", "or"])
def test_a_scan_returns_the_rows_pyarrow_selects(setup: Setup, case: str) -> None:
    got = scan_table(setup.table, _where(case, setup), ("id",)).to_arrow()
    ids = sorted(
        i
        for path, rows in _expected(case, setup).items()
        for i in setup.data[path].column("id").take(rows).to_pylist()
    )
    assert sorted(got.column("id").to_pylist()) == ids


def test_every_row_of_a_file_matches_true_and_none_false(setup: Setup) -> None:
    planned = setup.planned[1]
    assert matching_positions(setup.table, planned, AlwaysTrue()).tolist() == list(
        range(planned.record_count)
    )
    nothing = matching_positions(setup.table, planned, AlwaysFalse())
    assert nothing.dtype == np.int64 and nothing.tolist() == []


def test_bind_where_takes_expressions_and_gives_false_for_nothing(setup: Setup) -> None:
    assert bind_where(setup.table, "false") == AlwaysFalse()
    assert bind_where(setup.table, AlwaysTrue()) == AlwaysTrue()
    bound = bind_where(setup.table, Not(EqualTo("category", 7)))
    found = matching_by_file(setup.table, setup.planned, bound)
    expected = {path: [i for i, c in enumerate(d["category"].to_pylist()) if c != 7]
                for path, d in setup.data.items()}
    assert {path: p.tolist() for path, p in found.items()} == expected


def test_a_file_that_is_not_parquet_is_refused(setup: Setup) -> None:
    planned = setup.planned[0]
    avro = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path="file:///nowhere/data.avro",
        file_format=FileFormat.AVRO,
        record_count=3,
        file_size_in_bytes=10,
        spec_id=planned.data_file.spec_id,
        partition=planned.data_file.partition,
    )
    bound = bind_where(setup.table, "id < 3")
    with pytest.raises(UnsupportedTableError) as info:
        matching_positions(setup.table, PlannedFile(avro), bound)
    assert str(info.value) == "data file file:///nowhere/data.avro is FileFormat.AVRO, not Parquet"


@pytest.mark.parametrize(
    ("where", "error", "message"),
    [
        ("nope = 1", ColumnNotFoundError,
         f"the row filter 'nope = 1' names column 'nope', which the table does not have "
         f"(columns: {COLUMNS})"),
        ("id < 3 and Category = 1", ColumnNotFoundError,
         f"the row filter 'id < 3 and Category = 1' names column 'Category', which the table "
         f"does not have (columns: {COLUMNS})"),
        ("   ", UsageError, "the row filter is empty"),
        ("session_id = 'zz'", UsageError,
         "the row filter \"session_id = 'zz'\" compares column 'session_id' (uuid) with 'zz', "
         "which is not a value of type uuid"),
        ("category = 7 and", UsageError,
         "cannot parse the row filter 'category = 7 and' at column 17: pyiceberg's syntax is "
         "comparisons (=, !=, <, <=, >, >=), in (...), is null, is nan, like, between, "
         "combined with and, or, not (no arithmetic)"),
    ],
)
def test_mistakes_are_refused_with_the_exact_message(
    setup: Setup, where: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        bind_where(setup.table, where)
    assert str(info.value) == message
    with pytest.raises(error):
        check_where(setup.table, where)


def test_a_file_ruled_out_by_its_metrics_does_not_end_the_search(setup: Setup) -> None:
    # Only the second file's ids: the first file's id bounds rule it out, unread.
    ids = setup.data[setup.planned[1].path].column("id")
    low, high = pc.min(ids).as_py(), pc.max(ids).as_py()
    bound = bind_where(setup.table, f"id >= {low} and id <= {high}")
    found = matching_by_file(setup.table, setup.planned, bound)
    assert {p: f.tolist() for p, f in found.items()} == {
        setup.planned[1].path: list(range(setup.planned[1].record_count))
    }


def _empty_table(folder: Path, name: str, *columns: tuple[str, Any]) -> Any:
    """A new table ``db.<name>`` of optional columns, field ids from 1."""
    catalog = local_catalog(folder)
    catalog.create_namespace_if_not_exists("db")
    fields = [NestedField(i, n, t, required=False) for i, (n, t) in enumerate(columns, 1)]
    return catalog.create_table(f"db.{name}", Schema(*fields))


def test_columns_whose_names_differ_only_in_case_are_told_apart(tmp_path: Path) -> None:
    table = _empty_table(tmp_path, "twins", ("v", LongType()), ("V", LongType()))
    data = pa.table({"v": pa.array([1, 2, 3], pa.int64()), "V": pa.array([3, 2, 1], pa.int64())})
    table.append(data)
    table = table.catalog.load_table("db.twins")
    planned = plan_files(table, table.current_snapshot())
    for where, mask in [
        ("V = 1", pc.equal(data["V"], 1)),
        ("v = 1", pc.equal(data["v"], 1)),
        ("V < 3 and v >= 2", pc.and_(pc.less(data["V"], 3), pc.greater_equal(data["v"], 2))),
    ]:
        expected = _kept(mask)
        found = matching_by_file(table, planned, bind_where(table, where))
        assert {p: f.tolist() for p, f in found.items()} == {planned[0].path: expected}, where
        rows = scan_table(table, where).to_arrow().sort_by("v")
        assert rows.to_pydict() == data.take(expected).to_pydict(), where


def test_a_file_without_field_ids_is_read_through_the_name_mapping(
    tmp_path: Path,
) -> None:
    # add_files of a plain Parquet file (no field ids): only the table's name mapping says
    # which column is which.
    table = _empty_table(tmp_path, "imported", ("id", LongType()), ("s", StringType()))
    data = pa.table({"id": pa.array([5, 1, 7, 3], pa.int64()), "s": ["a", None, "c", "d"]})
    pq.write_table(data, tmp_path / "plain.parquet")
    table.add_files([f"file://{tmp_path / 'plain.parquet'}"])
    table = table.catalog.load_table("db.imported")
    planned = plan_files(table, table.current_snapshot())
    found = matching_by_file(table, planned, bind_where(table, "id > 2 and s != 'c'"))
    mask = pc.and_(pc.greater(data["id"], 2), pc.not_equal(data["s"], "c"))
    expected = _kept(mask)
    assert expected == [0, 3]
    assert {p: f.tolist() for p, f in found.items()} == {planned[0].path: expected}


def test_where_of_another_type_is_a_type_error(setup: Setup) -> None:
    bad: Any = 42
    with pytest.raises(TypeError) as info:
        check_where(setup.table, bad)
    assert str(info.value) == "where must be a row-filter string or BooleanExpression, got 42"


def test_a_refused_list_of_literals_is_named_in_order(setup: Setup) -> None:
    where = "session_id in ('zz', 'yy', 'xx')"
    with pytest.raises(UsageError) as info:
        bind_where(setup.table, where)
    assert str(info.value) == (
        f"the row filter {where!r} compares column 'session_id' (uuid) with 'xx', 'yy', 'zz', "
        "which is not a value of type uuid"
    )


def test_identity_partition_values_missing_from_the_files_are_matched(tmp_path: Path) -> None:
    # Files imported without their identity-partition column (a Hive-style migration): the
    # value lives only in the manifest's partition tuple, and pyiceberg projects it.
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.typedef import Record

    catalog = local_catalog(tmp_path)
    catalog.create_namespace_if_not_exists("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "category", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))
    table = catalog.create_table("db.hive", schema, partition_spec=spec)
    ids = {"a": [0, 1, 2, 3, 4], "b": [5, 6, 7, 8, 9]}
    files = []
    for category, values in ids.items():
        field = pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"})
        path = tmp_path / f"{category}.parquet"
        pq.write_table(pa.table([pa.array(values, pa.int64())], schema=pa.schema([field])), path)
        files.append(DataFile.from_args(
            content=DataFileContent.DATA, file_path=f"file://{path}",
            file_format=FileFormat.PARQUET, partition=Record(category),
            record_count=len(values), file_size_in_bytes=path.stat().st_size, spec_id=0,
        ))
    with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
        for data_file in files:
            append.append_data_file(data_file)
    table = catalog.load_table("db.hive")
    planned = plan_files(table, table.current_snapshot())
    by_category = {p.data_file.partition[0]: p.path for p in planned}
    # The model: each row is (id, category) as written above, the condition in Python.
    rows = [(i, c) for c, values in ids.items() for i in values]
    for where, keep in [
        ("category = 'a'", lambda i, c: c == "a"),
        ("category = 'a' and id > 2", lambda i, c: c == "a" and i > 2),
        ("category != 'a' or id = 1", lambda i, c: c != "a" or i == 1),
        ("category in ('b', 'c') and id < 7", lambda i, c: c in ("b", "c") and i < 7),
    ]:
        expected = {
            by_category[c]: [ids[c].index(i) for i, cc in rows if cc == c and keep(i, cc)]
            for c in ids
        }
        found = matching_by_file(table, planned, bind_where(table, where))
        got = {p: f.tolist() for p, f in found.items()}
        assert {p: v for p, v in got.items() if v} == {p: v for p, v in expected.items() if v}
        scanned = scan_table(table, where).to_arrow().sort_by("id")
        pairs = zip(scanned["id"].to_pylist(), scanned["category"].to_pylist(), strict=True)
        assert list(pairs) == [
            (i, c) for i, c in rows if keep(i, c)
        ], where


def test_the_literal_named_first_of_a_refused_set_is_the_same_every_run(setup: Setup) -> None:
    # pyiceberg keeps an in-list as a set: its order is lost, so literals are taken in the
    # order of their repr, "LongLiteral(10)" before "LongLiteral(9)" (not by value).
    with pytest.raises(UsageError) as info:
        bind_where(setup.table, "user_name in (9, 10)")
    assert str(info.value) == (
        "column 'user_name' (string) cannot be compared with 10: it takes a quoted string"
    )


# --- what is read: the files the metrics leave, the columns the condition names --------------
# The rows are held to the model above; these hold the reads to what the rows need, since a
# delete that opens every file or reads every column gets slower with each append.


def _columns_read(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The columns of each data file the row filter reads, noted as they are evaluated."""
    read: list[list[str]] = []
    rows_matching = rows.rows_matching

    def spy(data: Any, file_filter: Any) -> Any:
        read.append(data.column_names)
        return rows_matching(data, file_filter)

    monkeypatch.setattr(rows, "rows_matching", spy)
    return read


@pytest.mark.parametrize(
    ("where", "columns"),
    [
        ("id = 7", ["id"]),
        ("user_name is null or category > 3", ["category", "user_name"]),
        ("not (price >= 500.5 and day is not null)", ["day", "price"]),
        ("session_id = '{session}'", ["session_id"]),
    ],
)
def test_only_the_columns_the_condition_names_are_read(
    setup: Setup, where: str, columns: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    read = _columns_read(monkeypatch)
    bound = bind_where(setup.table, where.format(session=setup.session))
    for planned in setup.planned:
        matching_positions(setup.table, planned, bound)
    assert [sorted(r) for r in read] == [columns] * len(setup.planned)


def test_files_the_metrics_rule_out_are_not_opened(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not the twin of test_compact's delete test: delete_rows' planner drops these files
    # before matching_by_file sees them, so only this one holds matching_by_file's own filter.
    opened: list[str] = []
    positions = matching.matching_positions

    def spy(table: Any, planned: PlannedFile, bound: Any, *job: Any) -> Any:
        opened.append(planned.path)
        return positions(table, planned, bound, *job)

    monkeypatch.setattr(matching, "matching_positions", spy)
    ids = setup.data[setup.planned[1].path].column("id")
    bound = bind_where(setup.table, f"id = {pc.max(ids).as_py()}")
    assert list(matching_by_file(setup.table, setup.planned, bound)) == [setup.planned[1].path]
    assert opened == [setup.planned[1].path]


def test_a_condition_on_a_struct_field_reads_its_top_level_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    point = StructType(
        NestedField(3, "x", LongType(), required=False),
        NestedField(4, "y", LongType(), required=False),
    )
    table = _empty_table(tmp_path, "points", ("id", LongType()), ("p", point))
    xs = [5, None, 1, 5]
    struct = pa.struct([("x", pa.int64()), ("y", pa.int64())])
    data = pa.table(
        {
            "id": pa.array([0, 1, 2, 3], pa.int64()),
            "p": pa.array([{"x": x, "y": 9} for x in xs], struct),
        }
    )
    table.append(data)
    table = table.catalog.load_table("db.points")
    (planned,) = plan_files(table, table.current_snapshot())
    read = _columns_read(monkeypatch)
    found = matching_positions(table, planned, bind_where(table, "p.x = 5"))
    assert found.tolist() == [i for i, x in enumerate(xs) if x == 5]
    assert read == [["p"]]
