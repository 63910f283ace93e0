"""One condition language: ``where`` is bound strictly before anything runs.

Every mistake below was once accepted or reported as an internal error (exit 3): a dangling
``and`` that Spark read as a column alias (deleting every ``category = 7`` row), a literal
of the wrong type, a decimal with one digit too few.  Each is now a ``UsageError`` or
``ColumnNotFoundError`` naming the column, its type and the literal, exit 2, and nothing is
committed.  The Spark side (the same rows as pyarrow's evaluation) is in test_spark.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from puffin.cli import main
from puffin.errors import ColumnNotFoundError, UsageError
from puffin.iceberg import create_sample_table, delete_rows, local_catalog, upgrade_to_v3
from puffin.iceberg.scan.row_filter import bind_where

ROWS = 2000


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("conditions")
    table = create_sample_table(local_catalog(wh), "db.events", rows=ROWS, files=2, seed=5)
    upgrade_to_v3(table)
    return wh


@pytest.fixture()
def table(warehouse: Path) -> Any:
    return local_catalog(warehouse).load_table("db.events")


@pytest.mark.parametrize(
    ("where", "error", "words"),
    [
        ("category = 7 and", UsageError, ["cannot parse", "column 17"]),
        ("category = 8 amount", UsageError, ["cannot parse"]),
        ("   ", UsageError, ["empty"]),
        # pyiceberg's parser fails with pydantic's ValidationError on these: not ours to crash
        ("category = 7 and false", UsageError, ["'category = 7 and false'", "true or false"]),
        ("not true", UsageError, ["'not true'", "leave the literal out"]),
        ("user_name = 7", UsageError, ["'user_name'", "string", "7"]),
        ("category = 'abc'", UsageError, ["'category'", "int", "'abc'"]),
        ("price >= 999.555", UsageError, ["999.555", "'price'", "decimal(12, 2)", "rounded"]),
        ("nope = 1", ColumnNotFoundError, ["'nope'", "columns: id, category"]),
        ("day = 'yesterday'", UsageError, ["'day'", "date", "'yesterday'"]),
    ],
)
def test_mistakes_are_refused_naming_column_type_and_literal(
    table: Any, where: str, error: type[Exception], words: list[str]
) -> None:
    with pytest.raises(error) as info:
        bind_where(table, where)
    for word in words:
        assert word in str(info.value)


def test_a_decimal_with_fewer_places_is_rescaled_exactly(table: Any) -> None:
    from decimal import Decimal

    bound = bind_where(table, "price >= 999.5")
    assert bound.literal.value == Decimal("999.50")  # type: ignore[attr-defined]
    assert bind_where(table, "price in (1.5, 2.25)").literals  # type: ignore[attr-defined]


def _cli(warehouse: Path, *args: str) -> list[str]:
    return ["table", "delete", "db.events", "--warehouse", str(warehouse), *args]


def test_cli_refuses_mistakes_with_exit_2_and_commits_nothing(
    warehouse: Path, table: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    before = table.metadata_location
    mistakes = ["category = 7 and", "user_name = 7", "price >= 999.555", "nope = 1",
                "category = 9.5", "id = 10.7", "category = '7'", "category = 99999999999"]
    for where in mistakes:
        assert main(_cli(warehouse, "--where", where)) == 2, where
        err = capsys.readouterr().err
        assert "internal error" not in err and "puffin table delete: error:" in err
    assert local_catalog(warehouse).load_table("db.events").metadata_location == before


def test_a_condition_matching_every_row_needs_all_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    upgrade_to_v3(create_sample_table(local_catalog(tmp_path), "db.t", rows=300, files=2))
    before = local_catalog(tmp_path).load_table("db.t").metadata_location
    command = ["table", "delete", "db.t", "--warehouse", str(tmp_path), "--where", "id >= 0"]
    assert main(command) == 2
    assert "every live row" in capsys.readouterr().err
    table = local_catalog(tmp_path).load_table("db.t")
    assert table.metadata_location == before
    with pytest.raises(UsageError, match="every live row"):
        delete_rows(table, "id >= 0", allow_all_rows=False)
    code = main([*command, "--all-rows", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["deleted_rows"] == 300
    assert local_catalog(tmp_path).load_table("db.t").scan().to_arrow().num_rows == 0


def test_the_decimal_from_the_report_now_deletes(tmp_path: Path) -> None:
    table = upgrade_to_v3(create_sample_table(local_catalog(tmp_path), "db.t", rows=500))
    prices = table.scan().to_arrow().column("price").to_pylist()
    expected = sum(1 for p in prices if p is not None and p >= 999.5)
    result = delete_rows(table, "price >= 999.5")
    assert result.deleted_rows == expected


@pytest.mark.parametrize("version", [2, 3])
def test_overwrite_refuses_an_inexact_literal_on_every_format_version(
    tmp_path: Path, version: int
) -> None:
    from puffin.iceberg import overwrite

    table = create_sample_table(local_catalog(tmp_path), "db.t", rows=200, files=1)
    if version == 3:
        table = upgrade_to_v3(table)
    before = table.metadata_location
    rows = table.scan().to_arrow().slice(0, 3)
    for where in ["category = 9.5", "category = '7'", "category = 99999999999"]:
        with pytest.raises(UsageError):
            overwrite(table, rows, where)
    assert local_catalog(tmp_path).load_table("db.t").metadata_location == before
