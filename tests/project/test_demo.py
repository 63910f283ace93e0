"""``make demo`` (puffin.demo): a v3 table, statistics committed, deletes every reader sees.

The row counts the demo prints come from pyiceberg's scan and DuckDB 1.4.4; the fast test
checks those counters on a table deleted from without Spark, the slow one runs the demo
end to end on a small table (it needs Java for Spark, and is skipped without it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from iceberg_fixtures import make_catalog
from puffin import demo
from puffin.iceberg import delete_rows, upgrade_to_v3


def test_counts_drop_by_exactly_the_deleted_rows(tmp_path: Path) -> None:
    catalog = make_catalog(tmp_path / "wh")
    table = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    for f in range(2):
        table.append(pa.table({"id": pa.array(range(f * 500, (f + 1) * 500), pa.int64())}))
    table = upgrade_to_v3(catalog.load_table("db.t"))
    before = demo._counts(table)
    assert before.pyiceberg == 1000
    assert before.duckdb == 1000  # duckdb 1.4.4 is in the test extra
    result = delete_rows(table, "id < 10 or id >= 990")
    after = demo._counts(result.table)
    assert (after.pyiceberg, after.duckdb) == (980, 980)
    assert demo._Deleted(result, before, after).agree
    assert not demo._Deleted(result, before, before).agree
    assert "pyiceberg scan 980, DuckDB 1.4.4 980" == str(after)


@pytest.mark.java
def test_demo_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from puffin import spark as ps

    try:
        ps.check_java()
    except ps.JavaNotFoundError as exc:
        pytest.skip(str(exc))
    assert demo.main(["--rows", "40000", "--files", "2", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "all checks passed" in out
    assert "format version 3" in out and "(format v3)" in out
    assert out.count("$ puffin inspect") == 2
    deleted = re.search(r"deletes\s+([\d,]+) rows in (\d+) deletion vectors", out)
    assert deleted is not None and int(deleted.group(2)) == 2
    n = int(deleted.group(1).replace(",", ""))
    assert n > 0
    counts = {
        when: re.search(rf"rows {when}\s+pyiceberg scan ([\d,]+), DuckDB 1.4.4 ([\d,]+)", out)
        for when in ("before", "after")
    }
    before, after = counts["before"], counts["after"]
    assert before is not None and after is not None
    for reader in (1, 2):
        rows_before = int(before.group(reader).replace(",", ""))
        rows_after = int(after.group(reader).replace(",", ""))
        assert (rows_before, rows_before - rows_after) == (40000, n)
    # Step 5: a day of rows (a tenth) appended to the v3 table, statistics following.
    appended = re.search(r"appended\s+pyiceberg scan ([\d,]+), DuckDB 1.4.4 ([\d,]+)", out)
    assert appended is not None
    for reader in (1, 2):
        rows_after = int(after.group(reader).replace(",", ""))
        assert int(appended.group(reader).replace(",", "")) == rows_after + 4000
    assert "step 2's sketches unioned with the new rows'" in out
