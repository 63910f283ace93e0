"""Memory of the NDV jobs (issue 23), and the batch-by-batch reading that bounds it.

The statistics job and ``puffin ndv`` each run in a fresh interpreter on a 2 M-row sample
table (9 columns, 2 data files of one 1 M-row row group each, as pyiceberg writes them),
which reports how far its peak resident set (``VmHWM``) rose during the job: the imports
and the table load before it are not the job's.  Before batches, one column at a time
and one-piece column chunks, the job rose by about 400 MiB and ``puffin ndv`` by about
225 MiB on the reference machine; now by about 90 and 135 MiB (docs/benchmarks.md has the
10 M-row figures).  Reading in batches is checked against independent oracles: the ids
each data file holds minus its position deletes, and pyiceberg's own scan.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

import puffin
from iceberg_fixtures import commit_position_deletes_v2, make_catalog
from puffin.blobs.theta.files import ThetaSketch, read_theta_blobs
from puffin.iceberg import compute_table_statistics, create_sample_table
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.arrow import to_iceberg_arrow
from puffin.iceberg.scan.read import BATCH_ROWS, read_columns
from puffin.iceberg.statistics.compute import plan_statistics
from puffin.io.locations import local_path

MiB = 1 << 20
#: Budgets for the rise of the peak RSS during each job (see the module docstring).
STATISTICS_BUDGET = 128 * MiB
NDV_BUDGET = 180 * MiB

_PEAK = """
def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
"""

_STATISTICS_CHILD = (
    _PEAK
    + """
import json, sys
import pyarrow.parquet
from puffin.iceberg import compute_table_statistics, local_catalog
import puffin.ndv.engine, puffin.ndv.parquet

table = local_catalog(sys.argv[1]).load_table("db.big")
before = peak()
stats = compute_table_statistics(table, commit=False, progress=False)
ndv = {b.fields[0]: int(b.properties["ndv"]) for b in stats.blob_metadata}
print(json.dumps({"before": before, "rise": peak() - before, "ndv": ndv}))
"""
)

_NDV_CHILD = (
    _PEAK
    + """
import contextlib, io, json, sys
import pyarrow.parquet
from puffin.cli import main
import puffin.cli._ndv, puffin.ndv.engine, puffin.ndv.parquet

before = peak()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["ndv", *sys.argv[1:], "--json"])
ndv = {c["name"]: int(c["ndv"]) for c in json.loads(out.getvalue())["columns"]}
print(json.dumps({"before": before, "rise": peak() - before, "ndv": ndv, "code": code}))
"""
)


def _run(script: str, *args: str) -> dict[str, Any]:
    if not Path("/proc/self/status").exists():
        pytest.skip("reads VmHWM from /proc")
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    print(
        f"\npeak RSS {result['before'] / MiB:.0f} MiB before the job, "
        f"rose by {result['rise'] / MiB:.0f} MiB during it"
    )
    return result


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Table]:
    folder = tmp_path_factory.mktemp("ndv-memory")
    table = create_sample_table(make_catalog(folder), "db.big", rows=2_000_000, files=2)
    return folder, table


def test_statistics_job_memory_stays_within_budget(big: tuple[Path, Table]) -> None:
    folder, _ = big
    result = _run(_STATISTICS_CHILD, str(folder))
    assert result["rise"] < STATISTICS_BUDGET, result
    ndv = {int(k): v for k, v in result["ndv"].items()}
    assert len(ndv) == 9  # every column was sketched
    assert ndv[2] == 200 and ndv[5] == 2000  # category and day, exact mode
    assert abs(ndv[1] - 2_000_000) / 2_000_000 < 0.05  # id, estimated


def test_puffin_ndv_memory_stays_within_budget(big: tuple[Path, Table]) -> None:
    _, table = big
    paths = [str(local_path(t.file.file_path)) for t in table.scan().plan_files()]
    assert len(paths) == 2
    result = _run(_NDV_CHILD, *paths)
    assert result["code"] == 0
    assert result["rise"] < NDV_BUDGET, result
    assert result["ndv"]["category"] == 200 and result["ndv"]["day"] == 2000
    assert abs(result["ndv"]["id"] - 2_000_000) / 2_000_000 < 0.05


# --- reading in batches ---------------------------------------------------------------------

ROWS_PER_FILE = 150_000  # one row group, cut into batches of 65536, 65536 and 18928 rows


@pytest.fixture(scope="module")
def deleted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table, dict[str, np.ndarray]]:
    """Three files: deletes on and around batch boundaries and a whole batch; none; all."""
    catalog: Catalog = make_catalog(tmp_path_factory.mktemp("batches"))
    sample = create_sample_table(catalog, "db.batches", rows=3 * ROWS_PER_FILE, files=3, seed=9)
    files = [t.file.file_path for t in sample.scan().plan_files()]
    assert BATCH_ROWS < ROWS_PER_FILE
    b = BATCH_ROWS
    edges = [0, b - 1, b, b + 1, 2 * b - 1, 2 * b, ROWS_PER_FILE - 1]
    first = np.union1d(
        np.union1d(edges, np.arange(b, 2 * b)),  # the whole second batch
        np.arange(2 * b + 3, ROWS_PER_FILE, 10),  # a tenth of the third
    )
    positions = {files[0]: first, files[2]: np.arange(ROWS_PER_FILE)}
    table = commit_position_deletes_v2(catalog, sample, positions, new_identifier="db.batches2")
    return table, {f: positions.get(f, np.array([], dtype=np.int64)) for f in files}


def _live_ids(path: str, deleted_positions: np.ndarray) -> np.ndarray:
    """The ids a data file holds minus its deleted positions, read with pyarrow alone."""
    local = local_path(path)
    assert local is not None
    ids: np.ndarray = pq.read_table(local, columns=["id"]).column(0).to_numpy()
    keep = np.ones(ids.shape[0], dtype=bool)
    keep[deleted_positions] = False
    return ids[keep]


def _decoded(array: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(array.type):
        return array.dictionary_decode()
    return array


def test_rows_in_batches_with_deletes_across_their_boundaries(
    deleted: tuple[Table, dict[str, np.ndarray]],
) -> None:
    table, positions = deleted
    snapshot, columns, planned = plan_statistics(table, None, None)
    deletes = DeleteIndex(table, snapshot)
    batches = list(read_columns(table, planned, columns, deletes=deletes, prefetch=False))
    assert BATCH_ROWS in {b.rows for b in batches}  # the row groups came in batches
    for path, gone in positions.items():
        mine = [b for b in batches if b.data_path == path]
        assert sum(b.rows for b in mine) == ROWS_PER_FILE
        for b in mine:
            assert {c.field_id for c in columns} == set(b.columns)
            for array in b.columns.values():
                assert array is None or len(array) == b.live_rows
        ids = [b.columns[1] for b in mine if b.columns[1] is not None]
        got = np.concatenate([a.to_numpy() for a in ids]) if ids else np.array([], np.int64)
        np.testing.assert_array_equal(got, _live_ids(path, gone))


def test_values_a_field_at_a_time_are_the_rows_values(
    deleted: tuple[Table, dict[str, np.ndarray]],
) -> None:
    table, _ = deleted
    snapshot, columns, planned = plan_statistics(table, None, None)
    deletes = DeleteIndex(table, snapshot)
    rows = list(read_columns(table, planned, columns, deletes=deletes, prefetch=False))
    values = list(
        read_columns(table, planned, columns, deletes=deletes, prefetch=False, distinct_ok=True)
    )
    assert sum(b.rows for b in values) == 3 * ROWS_PER_FILE  # each row counted once
    # One top-level field a batch (a file whose rows are all deleted is not read at all).
    assert all(len(b.columns) == 1 for b in values if b.live_rows)
    # Low-cardinality strings and binaries come as dictionaries, for the engine to hash
    # each entry once.
    user_names = [b.columns[7] for b in values if b.columns.get(7) is not None]
    assert any(pa.types.is_dictionary(a.type) for a in user_names if a is not None)
    for c in columns:
        theirs = [b.columns[c.field_id] for b in rows]
        mine = [b.columns[c.field_id] for b in values if c.field_id in b.columns]
        expected = pa.concat_arrays([a for a in theirs if a is not None])
        got = pa.concat_arrays([_decoded(a) for a in mine if a is not None])
        assert got.equals(expected), c.name  # the same values in the same order


def test_statistics_over_batches_match_pyiceberg_scan(
    deleted: tuple[Table, dict[str, np.ndarray]],
) -> None:
    table, positions = deleted
    stats = compute_table_statistics(table, commit=False, progress=False)
    path = local_path(stats.statistics_path)
    assert path is not None
    data = Path(path).read_bytes()
    scanned = table.scan().to_arrow()  # pyiceberg's reader applies the deletes itself
    assert scanned.num_rows == sum(len(_live_ids(p, gone)) for p, gone in positions.items())
    with puffin.open(data, footer_size=stats.file_footer_size_in_bytes) as reader:
        blobs = read_theta_blobs(reader)
    assert len(blobs) == 9
    for blob in blobs:
        field = table.schema().find_field(blob.field_id)
        expected = ThetaSketch.from_values(
            to_iceberg_arrow(scanned.column(field.name), field.field_type), field.field_type
        )
        assert blob.sketch.serialize() == expected.serialize(), field.name
