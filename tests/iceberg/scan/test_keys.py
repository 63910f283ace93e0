"""Matching by long key lists (``scan/keys.py``, ``scan/where.py``, ``bounds.py``'s unlimited
``in``): the same tree as pyiceberg's parser, the same rows as a model computed with pyarrow on
the data files, and no file opened whose bounds hold no key."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.types import IntegerType, LongType

from iceberg_fixtures import copy_warehouse
from puffin.iceberg import create_sample_table, delete_rows, local_catalog, upgrade_to_v3
from puffin.iceberg.scan import matching, row_filter, rows
from puffin.iceberg.scan.bounds import IN_LIMIT
from puffin.iceberg.scan.keys import KeyMatch
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.scan.where import LONG_LIST, parse_where
from puffin.io.locations import local_path


def test_the_in_limit_is_pyicebergs() -> None:
    from pyiceberg.expressions.visitors import IN_PREDICATE_LIMIT

    assert IN_LIMIT == IN_PREDICATE_LIMIT


_ints = st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=150)
_texts = st.lists(st.text("abcxyz _-0123456789", max_size=8), min_size=1, max_size=150)
_decimals = st.lists(
    st.decimals(-1000, 1000, places=2, allow_nan=False).map(lambda d: d.quantize(Decimal("0.01"))),
    min_size=1,
    max_size=150,
)


@settings(max_examples=40, deadline=None)
@given(
    values=st.one_of(_ints, _texts, _decimals),
    negated=st.booleans(),
    rest=st.sampled_from(["", " and category = 3", " or id < 0"]),
)
def test_a_long_list_parses_as_pyicebergs_parser_reads_it(
    values: list[Any], negated: bool, rest: str
) -> None:
    from pyiceberg.expressions.parser import parse

    def text(v: Any) -> str:
        return f"'{v}'" if isinstance(v, str) else str(v)

    where = f"name {'not ' if negated else ''}in ({', '.join(text(v) for v in values)}){rest}"
    assert parse_where(where) == parse(where), (len(values) > LONG_LIST, where)


def _schema(*, moved: bool = False) -> Any:
    """Columns of each kind a key list meets; ``moved``: the same columns in another order,
    so that a bound reference's accessor differs."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        DateType,
        DecimalType,
        DoubleType,
        IntegerType,
        LongType,
        NestedField,
        StringType,
    )

    fields = [
        NestedField(1, "i", IntegerType(), required=False),
        NestedField(2, "l", LongType(), required=False),
        NestedField(3, "s", StringType(), required=False),
        NestedField(4, "d", DateType(), required=False),
        NestedField(5, "dec", DecimalType(10, 2), required=False),
        NestedField(6, "f", DoubleType(), required=False),
    ]
    return Schema(*(reversed(fields) if moved else fields))


@settings(max_examples=60, deadline=None)
@given(
    values=st.one_of(
        st.lists(st.integers(-(2**33), 2**33), min_size=LONG_LIST + 1, max_size=120),
        st.lists(st.integers(-100, 100), min_size=LONG_LIST + 1, max_size=120),
        st.lists(st.dates().map(str), min_size=LONG_LIST + 1, max_size=120),
        _decimals.filter(lambda v: len(v) > LONG_LIST),
    ),
    column=st.sampled_from(["i", "l", "s", "d", "dec", "f"]),
    negated=st.booleans(),
    moved=st.booleans(),
)
def test_a_long_list_binds_as_pyiceberg_binds_it(
    values: list[Any], column: str, negated: bool, moved: bool
) -> None:
    """Bound twice (the second time from the list's cache), to the schema or to one with the
    columns in another order: always pyiceberg's bound predicate, or pyiceberg's error."""
    from pyiceberg.expressions.parser import parse
    from pyiceberg.expressions.visitors import bind

    def text(v: Any) -> str:
        return f"'{v}'" if isinstance(v, str) else str(v)

    where = f"{column} {'not ' if negated else ''}in ({', '.join(text(v) for v in values)})"
    ours, theirs = parse_where(where), parse(where)
    assert ours == theirs and theirs == ours
    assert ~ours == ~theirs and ~~ours == theirs
    for schema in (_schema(), _schema(moved=moved), _schema()):
        try:
            expected = bind(schema, theirs, case_sensitive=True)
        except Exception as exc:  # what pyiceberg raises ('2000-01-01' on a decimal column:
            # InvalidOperation), ours raises too
            with pytest.raises(type(exc)):
                bind(schema, ours, case_sensitive=True)
            continue
        got = bind(schema, ours, case_sensitive=True)
        assert got == expected and got.term.ref().accessor == expected.term.ref().accessor


def test_a_long_list_is_bound_once_per_schema() -> None:
    from pyiceberg.expressions.visitors import bind

    expr = parse_where(f"l in ({', '.join(map(str, range(100)))})")
    schema = _schema()
    assert bind(schema, expr, True) is bind(schema, expr, True)
    assert bind(_schema(), expr, True) is not bind(schema, expr, True)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("keys")
    return upgrade_to_v3(create_sample_table(local_catalog(folder), "db.t", rows=4000, files=8))


def _model(table: Any, column: str, keys: list[Any]) -> set[int]:
    """The ids of the live rows whose ``column`` is one of ``keys``: pyarrow on each file."""
    wanted = set(keys)
    ids: set[int] = set()
    for task in table.scan().plan_files():
        path = local_path(str(task.file.file_path)) or ""
        rows = pq.read_table(path, columns=["id", column]).to_pylist()
        ids.update(row["id"] for row in rows if row[column] in wanted)
    return ids


def _copy(table: Any, tmp_path: Path) -> Any:
    """The table in a catalog of its own, so each test deletes from the same state."""
    source = Path(local_path(table.location()) or "").parent.parent
    return copy_warehouse(source, tmp_path / "wh")


@pytest.mark.parametrize(
    ("column", "keys"),
    [
        ("id", list(range(0, 4000, 7))),  # 572 keys, every file holds some
        ("id", [*range(100, 130), *range(10**9, 10**9 + 500)]),  # one file's, and none
        ("user_name", [f"user-{i}" for i in range(0, 50_000, 90)]),  # strings, nulls beside
    ],
)
def test_a_delete_by_many_keys_deletes_the_models_rows(
    table: Any, tmp_path: Path, column: str, keys: list[Any]
) -> None:
    from puffin.iceberg import scan_table

    copy = _copy(table, tmp_path)
    expected = _model(copy, column, keys)
    listed = ", ".join(f"'{k}'" if isinstance(k, str) else str(k) for k in keys)
    result = delete_rows(copy, f"{column} in ({listed})")
    assert result.deleted_rows == len(expected)
    left = scan_table(result.table, selected_fields=("id",)).to_arrow().column("id")
    assert set(left.to_pylist()) == set(range(4000)) - expected


@pytest.mark.parametrize("negated", [False, True], ids=["in", "not in"])
def test_a_long_list_with_the_rest_of_a_condition_matches_the_models_rows(
    table: Any, negated: bool
) -> None:
    """A long list inside a larger condition, ``in`` and ``not in`` (a null is in neither):
    the rows pyarrow selects on the data files."""
    import pyarrow.compute as pc

    names = [f"user-{i}" for i in range(0, 50_000, 37)]  # 1,352 keys
    listed = ", ".join(f"'{n}'" for n in names)
    where = f"category < 5 and user_name {'not ' if negated else ''}in ({listed})"
    bound = row_filter.bind_where(table, where)
    planned = plan_files(table, table.current_snapshot())
    found = matching.matching_by_file(table, planned, bound)
    for p in planned:
        data = pq.read_table(local_path(p.path) or "", columns=["category", "user_name"])
        listed_in = pc.is_in(data["user_name"], value_set=pa.array(names))
        keep = pc.and_(pc.less(data["category"], 5), pc.invert(listed_in) if negated else listed_in)
        expected = pc.indices_nonzero(keep.fill_null(False)).to_pylist()
        assert [int(i) for i in found.get(p.path, [])] == expected, p.path


def test_files_whose_bounds_hold_no_key_are_not_opened(
    table: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 keys, past pyiceberg's limit of 200: all outside every file's ids but for 3,
    which lie in one file; only that file is read."""
    opened: list[str] = []
    copy = _copy(table, tmp_path)
    real = rows.open_data_file

    def counting(io: Any, location: str) -> Any:
        if location.endswith(".parquet"):
            opened.append(location)
        return real(io, location)

    keys = [*range(10**9, 10**9 + 997), 5, 6, 7]
    monkeypatch.setattr(rows, "open_data_file", counting)
    bound = row_filter.bind_where(copy, f"id in ({', '.join(map(str, keys))})")
    planned = plan_files(copy, copy.current_snapshot())
    found = matching.matching_by_file(copy, planned, bound)
    assert [len(v) for v in found.values()] == [3] and len(opened) == 1
    # The sample's first file holds ids 0, 1, 2, ... in order: ids 5-7 are rows 5-7.
    assert pa.array(next(iter(found.values()))).to_pylist() == [5, 6, 7]


@pytest.mark.parametrize(
    ("where", "as_pyiceberg_reads_it"),
    [
        ("user_name = 'found in (1, 2.5)'", None),
        ("user_name = 'x in (' or id in (" + ", ".join(map(str, range(100))) + ")", None),
        (
            "user_name in ('in (1, 2.5)', 'b') and id in (1, 2.5)",
            "user_name in ('in (1, 2.5)', 'b') and id in (1.0, 2.5)",
        ),
    ],
)
def test_text_in_a_quoted_literal_is_left_as_it_is(
    where: str, as_pyiceberg_reads_it: str | None
) -> None:
    from pyiceberg.expressions.parser import parse

    assert parse_where(where) == parse(as_pyiceberg_reads_it or where)


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(st.integers(-(2**31), 2**31 - 1), min_size=16, max_size=40, unique=True),
    column=st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=60),
    file_type=st.sampled_from([pa.int32(), pa.int64()]),
    key_type=st.sampled_from([IntegerType(), LongType()]),
    string=st.booleans(),
)
def test_positions_of_matched_keys_are_the_models(
    keys: list[int], column: list[int | None], file_type: Any, key_type: Any, string: bool
) -> None:
    """A file's positions whose value is a key (NumPy's search without nulls, Arrow's is_in
    with them or on strings), any slice of the sorted keys, against Python's ``in``."""
    from pyiceberg.expressions import BoundIn, In
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField, StringType

    column = column + keys[:3]  # some values that match
    field = NestedField(1, "k", StringType() if string else key_type, required=False)
    values = [str(k) for k in keys] if string else keys
    bound = In("k", set(values)).bind(Schema(field))
    assert isinstance(bound, BoundIn)
    match = KeyMatch.of(bound)
    assert match is not None
    data = [None if v is None else (str(v) if string else v) for v in column]
    array = pa.array(data, pa.string() if string else file_type)
    for start, stop in ((0, len(match.values)), (1, len(match.values) - 2), (3, 3)):
        wanted = match.array.slice(start, stop - start)
        found = match.positions(pa.chunked_array([array[:10], array[10:]]), wanted)
        chosen = set(match.values[start:stop])
        assert found.tolist() == [i for i, v in enumerate(data) if v is not None and v in chosen]


def test_a_key_list_is_sorted_once_per_job_and_not_kept_after() -> None:
    from pyiceberg.expressions.literals import LongLiteral

    from puffin.iceberg.scan.bounds import _SORTED, sorted_values, sorting_once

    literals = {LongLiteral(v) for v in (5, 3, 9)}
    with sorting_once():
        first = sorted_values(literals)
        assert first == [3, 5, 9] and sorted_values(literals) is first
    assert _SORTED.get() is None  # the job's sorts are gone with it
    assert sorted_values(literals) == first and sorted_values(literals) is not first


def test_whether_keys_fit_a_column_is_asked_once_per_type(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyiceberg.types import StringType

    from puffin.iceberg.scan import key_list

    asked: list[Any] = []
    real = key_list.fits

    def counting(literals: Any, field_type: Any) -> bool:
        asked.append(field_type)
        return real(literals, field_type)

    monkeypatch.setattr(key_list, "fits", counting)
    pred = parse_where(f"id in ({', '.join(map(str, range(LONG_LIST + 1)))})")
    assert isinstance(pred, key_list.KeyIn)
    for _ in range(3):
        assert pred.fits(LongType()) and pred.fits(IntegerType()) and not pred.fits(StringType())
    assert asked == [LongType(), IntegerType(), StringType()]
