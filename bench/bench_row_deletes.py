"""Row-level deletes: deletion vectors (merge-on-read, v3) against copy-on-write (v2), issue 13.

One set of data, 10 million rows in 20 Parquet data files (id long, k int uniform in
0..99, amount double, name string), committed once to a v2 table.  Each run registers two
fresh tables on that same metadata (no data copied) and deletes ``k = 0``, about 1 % of
the rows, spread over every file:

* v3: :func:`puffin.iceberg.upgrade_to_v3` (not timed), then
  :func:`puffin.iceberg.delete_rows`: one Puffin file of 20 deletion vectors, one commit;
* v2: pyiceberg 0.12's ``table.delete("k = 0")``, copy-on-write: every data file is read
  and rewritten without the deleted rows.

Reported, medians over ``--runs``: the delete's wall time, the bytes it wrote (every new
file under the warehouse: data, delete files, manifests, metadata), and the time of a full
``table.scan().to_arrow()`` afterwards (deletion vectors applied vs the rewritten files),
beside the same scan of the table before any delete.
The load average is printed before and after: the figures mean little on a busy machine.

Run: ``.venv/bin/python bench/bench_row_deletes.py [--rows 10000000] [--files 20] [--runs 3]``
(``--smoke``: 20,000 rows in 2 files, one run)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog import Catalog
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType

from puffin.iceberg import delete_rows, local_catalog, upgrade_to_v3

WHERE = "k = 0"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "k", IntegerType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
    NestedField(4, "name", StringType(), required=False),
)


def _batch(start: int, rows: int, rng: np.random.Generator) -> pa.Table:
    ids = pa.array(np.arange(start, start + rows, dtype=np.int64))
    names = pc.binary_join_element_wise(
        "user-", pc.cast(pc.bit_wise_and(ids, 0xFFFF), pa.string()), ""
    )
    return pa.table(
        {
            "id": ids,
            "k": pa.array(rng.integers(0, 100, rows, dtype=np.int32)),
            "amount": pa.array(rng.random(rows) * 1000),
            "name": names,
        }
    )


def make_base(
    folder: Path, rows: int, files: int, *, numeric: bool = False
) -> tuple[Catalog, str, int]:
    """The v2 table of ``files`` appends; (catalog, its metadata location, rows to delete).
    ``numeric``: without the ``name`` column (numbers only)."""
    catalog = local_catalog(folder)
    catalog.create_namespace_if_not_exists("bench")
    schema = Schema(*SCHEMA.fields[:3]) if numeric else SCHEMA
    table = catalog.create_table(
        "bench.base",
        schema,
        properties={"format-version": "2", "write.target-file-size-bytes": str(1 << 40)},
    )
    rng = np.random.default_rng(13)
    per_file = rows // files
    to_delete = 0
    for f in range(files):
        batch = _batch(f * per_file, per_file, rng)
        batch = batch.drop_columns(["name"]) if numeric else batch
        to_delete += int(pc.sum(pc.equal(batch["k"], 0)).as_py())
        table.append(batch)
    table = catalog.load_table("bench.base")
    assert len(list(table.scan().plan_files())) == files
    return catalog, table.metadata_location, to_delete


def _files(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_size for p in folder.rglob("*") if p.is_file()}


@dataclass(frozen=True)
class Run:
    """One delete: wall time, bytes of new files, scan time afterwards, rows left."""

    seconds: float
    written: int
    scan_seconds: float
    rows_after: int


def _measure(folder: Path, table: Any, delete: Callable[[Any], Any]) -> Run:
    before = _files(folder)
    start = time.perf_counter()
    table = delete(table)
    seconds = time.perf_counter() - start
    written = sum(size for p, size in _files(folder).items() if p not in before)
    start = time.perf_counter()
    rows = table.scan().to_arrow().num_rows
    return Run(seconds, written, time.perf_counter() - start, rows)


def _v3_delete(table: Any) -> Any:
    return delete_rows(table, WHERE).table


def _v2_delete(table: Any) -> Any:
    table.delete(WHERE)
    return table


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cpus"


def _median(runs: list[Run], name: str) -> float:
    return float(statistics.median(getattr(r, name) for r in runs))


def _fmt(value: float, unit: str) -> str:
    return f"{value:,.0f} {unit}" if unit == "B" else f"{value:.3f} {unit}"


def _report(rows: int, files: int, deleted: int, v3: list[Run], v2: list[Run]) -> None:
    print(f"\n{rows:,} rows in {files} files; delete {WHERE!r}: {deleted:,} rows", end="")
    print(f" ({deleted / rows:.2%}); medians of {len(v3)} runs")
    print(f"{'':<32}{'v3 delete_rows (DVs)':>22}{'v2 CoW table.delete':>22}{'ratio':>10}")
    for label, name, unit in (
        ("delete wall time", "seconds", "s"),
        ("bytes written", "written", "B"),
        ("full scan afterwards", "scan_seconds", "s"),
    ):
        a, b = _median(v3, name), _median(v2, name)
        print(f"{label:<32}{_fmt(a, unit):>22}{_fmt(b, unit):>22}{b / a:>9.1f}x")
    print(
        "each run, v3 (s, bytes, scan s):",
        [(round(r.seconds, 3), r.written, round(r.scan_seconds, 3)) for r in v3],
    )
    print(
        "each run, v2 (s, bytes, scan s):",
        [(round(r.seconds, 3), r.written, round(r.scan_seconds, 3)) for r in v2],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.files, args.runs = 20_000, 2, 1
    print(_load())
    with tempfile.TemporaryDirectory(prefix="bench-row-deletes-") as tmp:
        folder = Path(tmp)
        catalog, base, deleted = make_base(folder, args.rows, args.files)
        v3: list[Run] = []
        v2: list[Run] = []
        base_scans: list[float] = []
        for i in range(args.runs):
            t3 = upgrade_to_v3(catalog.register_table(f"bench.v3_{i}", base))
            v3.append(_measure(folder, t3, _v3_delete))
            t2 = catalog.register_table(f"bench.v2_{i}", base)
            v2.append(_measure(folder, t2, _v2_delete))
            start = time.perf_counter()
            catalog.load_table("bench.base").scan().to_arrow()
            base_scans.append(time.perf_counter() - start)
            for r in (v3[-1], v2[-1]):
                if r.rows_after != args.rows - deleted:
                    print(f"wrong row count after the delete: {r}", file=sys.stderr)
                    return 1
            print(f"run {i + 1}: v3 {v3[-1].seconds:.2f} s, v2 {v2[-1].seconds:.2f} s", flush=True)
    _report(args.rows, args.files, deleted, v3, v2)
    print(f"full scan before any delete (the v2 base table): {statistics.median(base_scans):.3f} s")
    print(_load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
