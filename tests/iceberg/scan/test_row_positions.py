"""The row reader's ``_pos`` column: each row's position in its data file, after deletes and
a condition, checked against the Parquet files read with pyarrow (no Iceberg reader)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import make_catalog
from puffin.iceberg import create_sample_table, delete_rows, upgrade_to_v3
from puffin.iceberg.scan.delete_filter import DeleteFilter
from puffin.iceberg.scan.lineage import file_lineage
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.scan.rows import POSITION, RowReader
from puffin.io.locations import local_path


@pytest.mark.parametrize("batch_rows", [None, 700])
@pytest.mark.parametrize("lineage", [[], ["_row_id"]])
def test_positions_are_the_rows_places_in_their_files(
    tmp_path: Path, batch_rows: int | None, lineage: list[str]
) -> None:
    from pyiceberg.expressions import GreaterThanOrEqual

    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=6000, files=3))
    table = delete_rows(table, "category < 40").table
    snapshot = table.current_snapshot()
    assert snapshot is not None
    reader = RowReader(
        table, table.schema().select("id"), GreaterThanOrEqual("id", 1500), True,
        DeleteFilter(table, snapshot), lineage, file_lineage(table, snapshot), batch_rows,
        positions=True,
    )  # fmt: skip
    for planned in plan_files(table, snapshot):
        got = [b for b in reader.file_batches(planned)]
        pos = np.concatenate([b.column(POSITION).to_numpy() for b in got])
        ids = np.concatenate([b.column("id").to_numpy() for b in got])
        assert got[0].schema.names == ["id", *lineage, POSITION]
        data = pq.read_table(local_path(planned.path), columns=["id", "category"])
        deleted = pc.fill_null(pc.less(data["category"], 40), False)  # a null is not < 40
        keep = pc.and_(pc.greater_equal(data["id"], 1500), pc.invert(deleted))
        want = np.flatnonzero(keep.to_numpy(zero_copy_only=False))
        assert pos.tolist() == want.tolist()
        assert ids.tolist() == data["id"].to_numpy()[want].tolist()


def test_a_file_without_field_ids_needs_a_name_mapping(tmp_path: Path) -> None:
    """A data file written without Parquet field ids is read by the table's name mapping;
    without one, every job that reads rows says which file and what is missing."""
    import pyarrow as pa

    from puffin.errors import UnsupportedTableError
    from puffin.iceberg import compute_table_statistics, scan_table

    catalog = make_catalog(tmp_path)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    table = catalog.create_table("db.t", schema=data.schema)
    path = tmp_path / "no-ids.parquet"
    pq.write_table(data, path)  # pyarrow writes no field ids
    table.add_files([str(path)])  # pyiceberg sets a name mapping
    table = catalog.load_table("db.t")
    assert scan_table(table).to_arrow()["id"].to_pylist() == [1, 2, 3]
    with table.transaction() as tx:
        tx.remove_properties("schema.name-mapping.default")
    table = catalog.load_table("db.t")
    missing = r"no-ids\.parquet has no Parquet field ids"
    for job in (lambda: scan_table(table).to_arrow(), lambda: compute_table_statistics(table)):
        with pytest.raises(UnsupportedTableError, match=missing):
            job()
