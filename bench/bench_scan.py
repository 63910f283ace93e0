"""Full scans after deletes: ``puffin.iceberg.scan_table`` against pyiceberg and DuckDB (issue 30).

The table of ``bench_row_deletes.py`` (10 million rows in 20 Parquet files: id long, k int,
amount double uniform in [0, 1000), name string; ``--numeric``: without the strings),
upgraded to v3, in three states:

* ``none``: no deletes;
* ``one``: one ``delete_rows`` commit of ``amount < 1`` (0.1 % of the rows, one DV file);
* ``fifty``: 50 commits of ``amount`` in ``[i, i + 1)``, i = 0..49 (5 %; each commit merges
  the vectors before it, so one DV file is live).

For each state, one process, medians of ``--runs`` (the readers taking turns): pyiceberg 0.12's
``table.scan().to_arrow()``, ours ``scan_table(table).to_arrow()``, DuckDB 1.4.4's
``iceberg_scan`` read to Arrow and its ``count(*)``, and each scan's row count checked
against the model (rows minus the rows the filters select, counted with pyarrow on the data
as generated). Then ``to_arrow_batch_reader`` in a child process per state: its peak RSS
growth over the RSS after planning, against the Arrow size of one row group.

Run: ``.venv/bin/python bench/bench_scan.py [--rows 10000000] [--files 20] [--runs 3] [--numeric]``
(``--smoke``: 20,000 rows in 2 files, one run)
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from bench_row_deletes import _load, make_base

from puffin.conformance.adapters._tables import connect_duckdb
from puffin.iceberg import delete_rows, scan_table, upgrade_to_v3
from puffin.io.locations import local_path

# state: (the model's deleted rows are ``amount < bound``, the delete commits)
STATES = {
    "none": (0, []),
    "one": (1, ["amount < 1"]),
    "fifty": (50, [f"amount >= {i} and amount < {i + 1}" for i in range(50)]),
}

_CHILD = r"""
import json, sys

def hwm_kib():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmHWM:")).split()[1])

from puffin.iceberg import local_catalog, scan_table
table = local_catalog(sys.argv[1], create=False).load_table(sys.argv[2])
scan = scan_table(table)
scan.plan_files()
reader = scan.to_arrow_batch_reader()
first = reader.read_next_batch()  # imports, the delete files and the first file opened
# The high-water mark restarts here: a forked child inherits its parent's (Linux).
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = hwm_kib()
rows = first.num_rows
del first
for batch in reader:
    rows += batch.num_rows
print(json.dumps({"rows": rows, "base_kib": base, "peak_kib": hwm_kib()}))
"""


def _interleaved(
    readers: dict[str, Callable[[], int]], runs: int, expected: int
) -> dict[str, float]:
    """Median seconds of each reader, the readers taking turns in every run (so a busy
    moment of the machine falls on all of them), each row count checked."""
    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(runs):
        for name, read in readers.items():
            start = time.perf_counter()
            rows = read()
            times[name].append(time.perf_counter() - start)
            if rows != expected:
                raise SystemExit(f"{name}: wrong row count {rows} (model: {expected})")
    return {name: float(statistics.median(t)) for name, t in times.items()}


def _deleted(paths: list[str], bound: int) -> int:
    """The model: rows with ``amount < bound``, counted with pyarrow on the data files."""
    import pyarrow.compute as pc

    total = 0
    for path in paths:
        amount = pq.read_table(local_path(path) or path, columns=["amount"])["amount"]
        total += int(pc.sum(pc.less(amount, bound)).as_py() or 0)
    return total


def _duckdb(metadata: str) -> tuple[Callable[[], int], Callable[[], int]]:
    con = connect_duckdb()
    scan = f"iceberg_scan('{metadata}')"

    def read() -> int:
        return int(con.execute(f"SELECT * FROM {scan}").fetch_arrow_table().num_rows)

    def count() -> int:
        return int(con.execute(f"SELECT count(*) FROM {scan}").fetchone()[0])

    return read, count


def _streaming(warehouse: Path, name: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(warehouse), name],
        capture_output=True, text=True, check=True,
    )
    return dict(json.loads(out.stdout))


def _row_group_bytes(path: str) -> int:
    return int(pq.ParquetFile(local_path(path) or path).read_row_group(0).nbytes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--numeric", action="store_true", help="the table without its strings")
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.files, args.runs = 20_000, 2, 1
    print(_load(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        folder = Path(tmp)
        catalog, base, _ = make_base(folder, args.rows, args.files, numeric=args.numeric)
        paths = [t.file.file_path for t in catalog.load_table("bench.base").scan().plan_files()]
        group = _row_group_bytes(paths[0])
        results = {}
        runs = args.runs
        for state, (bound, wheres) in STATES.items():
            table = upgrade_to_v3(catalog.register_table(f"bench.{state}", base))
            for where in wheres:
                table = delete_rows(table, where).table
            expected = args.rows - _deleted(paths, bound)
            read, count = _duckdb(table.metadata_location)
            figures = _interleaved(
                {
                    "pyiceberg": lambda t=table: t.scan().to_arrow().num_rows,
                    "ours": lambda t=table: scan_table(t).to_arrow().num_rows,
                    "duckdb read": read,
                    "duckdb count": count,
                },
                runs,
                expected,
            )
            stream = _streaming(folder, f"bench.{state}")
            if stream["rows"] != expected:
                raise SystemExit(f"streaming read {stream['rows']} rows (model: {expected})")
            figures["stream growth / row group"] = (
                (stream["peak_kib"] - stream["base_kib"]) * 1024 / group
            )
            figures["stream peak MiB"] = stream["peak_kib"] / 1024
            results[state] = figures
            print(state, {k: round(v, 3) for k, v in figures.items()}, flush=True)
    _report(args, results, group)
    return 0


def _report(args: argparse.Namespace, results: dict[str, dict[str, float]], group: int) -> None:
    undeleted = results["none"]["pyiceberg"]
    kind = "numbers only (id, k, amount)" if args.numeric else "id, k, amount, name"
    print(f"\n{args.rows:,} rows ({kind}) in {args.files} files; medians of {args.runs} runs "
          "(seconds)")
    print(f"one row group in Arrow: {group / 2**20:.1f} MiB")
    head = ["state", "pyiceberg", "ours", "ours/pyi same", "ours/pyi none", "duckdb read",
            "duckdb count", "stream growth/rg", "stream peak MiB"]
    print(" | ".join(head))
    for state, f in results.items():
        print(" | ".join([
            state, f"{f['pyiceberg']:.3f}", f"{f['ours']:.3f}",
            f"{f['ours'] / f['pyiceberg']:.2f}x",
            f"{f['ours'] / undeleted:.2f}x", f"{f['duckdb read']:.3f}", f"{f['duckdb count']:.3f}",
            f"{f['stream growth / row group']:.2f}", f"{f['stream peak MiB']:.0f}",
        ]))
    print(f"{_load()}; peak RSS of this process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    sys.exit(main())
