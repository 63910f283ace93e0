"""The changelog's cost grows with the change, not the table (issue 45).

``changes(table, start, end).to_arrow()`` against what one does without it: scan both
snapshots (``scan_table``) and diff them by the unique ``id`` (Arrow's hash anti-joins, both
ways; the rows of a table upgraded from v2 have no ``_row_id`` until a commit gives them
one). Each run checks the changelog's row count against the model (the rows the deletes'
filters select, counted with pyarrow on the data as generated) and, once, its ids against
the diff's.

The table of ``bench_row_deletes.py`` (10 million rows in 20 files, one row group each: id
long, k int, amount double uniform in [0, 1000), name string), upgraded to v3, then:

* ``one, spread``: one ``delete_rows`` of ``amount < 1`` (0.1 %, in every row group);
* ``one, clustered``: one ``delete_rows`` of ``id < rows / 1000`` (0.1 %, one row group);
* ``fifty``: 50 commits of ``amount`` in ``[i, i + 1)`` (5 % in all), the changes of all 50.

And the 20,000-file v3 table of ``bench_planning.py`` (200 rows a file, 5,000 vectors): one
more ``delete_rows`` of one row, then 49 more (each in another file): the changes of the
first commit, and of all fifty, against the diff of both scans.

Medians of ``--runs`` in one process, the two ways taking turns; then the peak RSS growth
of each in a child process (VmHWM over the RSS after imports and loading the table).

Run: ``.venv/bin/python bench/bench_changes.py [--rows 10000000] [--runs 3] [--wide 20000]``
(``--smoke``: 20,000 rows in 2 files, 200 files, one run, peak memory of the first state)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from bench_row_deletes import _load, make_base

from puffin.iceberg import changes, delete_rows, local_catalog, scan_table, upgrade_to_v3
from puffin.io.locations import local_path

_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from bench_changes import diff, ours

def hwm_kib():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmHWM:")).split()[1])

from puffin.iceberg import local_catalog
table = local_catalog(sys.argv[2], create=False).load_table(sys.argv[3])
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = hwm_kib()
rows = (ours if sys.argv[4] == "ours" else diff)(table, int(sys.argv[5]), int(sys.argv[6]))
print(json.dumps({"rows": rows, "growth_kib": hwm_kib() - base}))
"""


def ours(table: Any, start: int, end: int) -> int:
    """Rows of the changelog of ``start`` (exclusive) to ``end``."""
    return int(changes(table, start, end).to_arrow().num_rows)


def diff(table: Any, start: int, end: int) -> int:
    """Rows gone and rows new between the two snapshots, by scanning both and diffing."""
    before, after = (scan_table(table, snapshot_id=s).to_arrow() for s in (start, end))
    gone = before.join(after.select(["id"]), "id", join_type="left anti")
    new = after.join(before.select(["id"]), "id", join_type="left anti")
    return int(gone.num_rows + new.num_rows)


def _deleted_ids(table: Any, start: int, end: int) -> list[int]:
    got = changes(table, start, end, selected_fields=("id",)).to_arrow()
    return sorted(got.column("id").to_pylist())


def _diff_ids(table: Any, start: int, end: int) -> list[int]:
    before, after = (
        scan_table(table, selected_fields=("id",), snapshot_id=s).to_arrow() for s in (start, end)
    )
    return sorted(before.join(after, "id", join_type="left anti").column("id").to_pylist())


def _model(paths: list[str], where: Callable[[pa.Table], pa.Array]) -> int:
    """The rows a delete's filter selects, counted with pyarrow on the data files."""
    total = 0
    for path in paths:
        rows = pq.read_table(local_path(path) or path, columns=["id", "amount"])
        total += int(pc.sum(where(rows)).as_py() or 0)
    return total


def _interleaved(table: Any, start: int, end: int, runs: int, expected: int) -> dict[str, float]:
    times: dict[str, list[float]] = {"changes": [], "scan both + diff": []}
    for _ in range(runs):
        for name, way in (("changes", ours), ("scan both + diff", diff)):
            began = time.perf_counter()
            rows = way(table, start, end)
            times[name].append(time.perf_counter() - began)
            if rows != expected:
                raise SystemExit(f"{name}: {rows} changed rows (model: {expected})")
    return {name: float(statistics.median(t)) for name, t in times.items()}


def _peak(folder: Path, name: str, way: str, start: int, end: int, expected: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(Path(__file__).parent), str(folder), name, way,
         str(start), str(end)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    got = json.loads(out.stdout)
    if got["rows"] != expected:
        raise SystemExit(f"{way} in a child: {got['rows']} rows (model: {expected})")
    return float(got["growth_kib"]) / 1024


def _measure(
    folder: Path, name: str, start: int, runs: int, expected: int, peaks: bool = True
) -> dict[str, float]:
    """The medians, and (``peaks``) each way's peak RSS growth in a child process."""
    table = local_catalog(folder, create=False).load_table(name)
    end = table.current_snapshot().snapshot_id
    if _deleted_ids(table, start, end) != _diff_ids(table, start, end):
        raise SystemExit(f"{name}: the changelog's deleted ids are not the diff's")
    figures = _interleaved(table, start, end, runs, expected)
    for way in ("ours", "diff"):
        growth = _peak(folder, name, way, start, end, expected) if peaks else float("nan")
        figures[f"{way} peak growth MiB"] = growth
    return figures


def _narrow(
    folder: Path, rows: int, files: int, runs: int, smoke: bool
) -> dict[str, dict[str, float]]:
    catalog, base, _ = make_base(folder, rows, files)
    paths = [t.file.file_path for t in catalog.load_table("bench.base").scan().plan_files()]
    states: dict[str, tuple[list[str], Callable[[pa.Table], pa.Array]]] = {
        "one, spread": (["amount < 1"], lambda t: pc.less(t["amount"], 1)),
        "one, clustered": ([f"id < {rows // 1000}"], lambda t: pc.less(t["id"], rows // 1000)),
        "fifty": ([f"amount >= {i} and amount < {i + 1}" for i in range(50)],
                  lambda t: pc.less(t["amount"], 50)),
    }  # fmt: skip
    results = {}
    for i, (state, (wheres, where)) in enumerate(states.items()):
        table = upgrade_to_v3(catalog.register_table(f"bench.s{i}", base))
        start = table.current_snapshot().snapshot_id
        for w in wheres:
            table = delete_rows(table, w).table
        expected = _model(paths, where)
        # --smoke: a child process (2 s of imports each) for the first state only.
        peaks = not smoke or i == 0
        results[state] = _measure(folder, f"bench.s{i}", start, runs, expected, peaks)
        print(state, {k: round(v, 3) for k, v in results[state].items()}, flush=True)
    return results


def _wide(folder: Path, files: int, runs: int, smoke: bool) -> dict[str, dict[str, float]]:
    """One commit deleting one row of the wide table, then 50 such commits (one file each):
    the changelog plans every snapshot of the range, the diff two."""
    from bench_planning import ROWS, build

    table = build(folder, files)
    start = table.current_snapshot().snapshot_id
    table = delete_rows(table, "id = 7").table
    results = {f"one row, {files:,} files": _measure(folder, "db.t", start, runs, 1)}
    step = max(1, files * ROWS // 50)
    for i in range(1, 50):
        row = i * step + 7
        row += row % 7 == 3  # not a row the table's first delete (k = id % 7 = 3) took
        table = delete_rows(table, f"id = {row}").table
    results[f"fifty rows in fifty commits, {files:,} files"] = _measure(
        folder, "db.t", start, runs, 50, peaks=not smoke
    )
    for name, figures in results.items():
        print(name, {k: round(v, 3) for k, v in figures.items()}, flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--wide", type=int, default=20_000, help="files of the wide table")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.files, args.wide, args.runs = 20_000, 2, 200, 1
    print(_load(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-changes-") as tmp:
        results = _narrow(Path(tmp) / "narrow", args.rows, args.files, args.runs, args.smoke)
        results.update(_wide(Path(tmp) / "wide", args.wide, args.runs, args.smoke))
    print(f"\n{args.rows:,} rows in {args.files} files, and {args.wide:,} files of 200 rows; "
          f"medians of {args.runs} runs (seconds)")
    print("| changes of | changes | scan both + diff | diff / changes | peak growth MiB, "
          "changes | peak growth MiB, diff |")
    print("|---|---|---|---|---|---|")
    for state, f in results.items():
        ratio = f["scan both + diff"] / f["changes"]
        print(f"| {state} | {f['changes']:.3f} | {f['scan both + diff']:.3f} | {ratio:.1f}x | "
              f"{f['ours peak growth MiB']:.0f} | {f['diff peak growth MiB']:.0f} |")
    print(_load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
