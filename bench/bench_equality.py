"""A CDC table: equality deletes read, then converted to deletion vectors (issue 44).

The table of ``bench_row_deletes.py`` (10 million rows in 20 Parquet files: id long, k int,
amount double, name string), upgraded to v3, then ``--commits`` (50) upserts as Flink writes
them: each commit holds an equality delete file of 0.2 % of the ids (drawn anew each time, so
keys repeat across commits) on ``id``, and a data file with those ids' new rows. Every
equality delete applies to the 20 base files and to every earlier upsert's file; the model,
in plain Python: the table keeps ``--rows`` rows, the last upsert of each id winning.

For the table with its equality deletes (``equality``) and for the same state after
:func:`puffin.iceberg.convert_equality_deletes` (``converted``), medians of ``--runs`` with
the readers taking turns: our ``scan_table().to_arrow()``, DuckDB 1.4.4's ``iceberg_scan`` to
Arrow, and Iceberg Java 1.10.2 (Spark 3.5 ``local[2]``, warm session) running ``SELECT
count(*), sum(k), sum(amount), max(name), max(id)``; every reader's row count is checked
against the model, and our rows' ``k`` sum against the model's. The conversion runs in a
child process (its time and peak RSS, and the interpreter's own peak before it starts);
Java's ``rewrite_data_files`` (``delete-file-threshold`` 1, the way Java gets rid of
equality deletes) runs on another copy of the same state, in the warm session.

Run (after ``make peers``, on an idle machine):
``.venv/bin/python bench/bench_equality.py [--rows 10000000] [--commits 50] [--runs 3]
[--fraction 0.002] [--duckdb-cap 180]`` (``--fraction 0.02``: 10 million delete keys)
(``--smoke``: 20,000 rows in 4 files, 5 commits, one run)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from bench_row_deletes import _batch, _load, make_base  # noqa: E402

from peers.iceberg_java import JavaPeer  # noqa: E402
from puffin.iceberg import scan_table, upgrade_to_v3  # noqa: E402

FRACTION = 0.002
JAVA_SCAN = "SELECT count(*), sum(k), sum(amount), max(name), max(id) FROM `default`.{name}"
JAVA_COMPACT = (
    "CALL `default`.system.rewrite_data_files(table => '{name}', options => "
    "map('delete-file-threshold', '1', 'min-input-files', '1'))"
)

_CONVERT_CHILD = r"""
import json, sys, time
from puffin.iceberg import convert_equality_deletes, local_catalog
def peak():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmHWM:")).split()[1])
table = local_catalog(sys.argv[1], create=False).load_table(sys.argv[2])
before = peak()
start = time.perf_counter()
result = convert_equality_deletes(table)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_kib": peak(), "before_kib": before,
                  "files": result.equality_files, "data_files": result.data_files,
                  "rows": result.converted_rows}))
"""


def upserts(table: Any, rows: int, commits: int, folder: Path, fraction: float) -> Any:
    """``commits`` upserts on ``table``, each one commit of an equality delete file of ids
    and the new rows of those ids; the table as committed."""
    from iceberg_fixtures import equality_delete_file
    from puffin.iceberg.metadata.snapshots import commit_snapshot
    from puffin.iceberg.writes.append import write_data_files

    rng = np.random.default_rng(44)
    field = pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})
    for c in range(commits):
        ids = np.sort(rng.choice(rows, size=max(1, int(rows * fraction)), replace=False))
        keys = pa.table([pa.array(ids)], schema=pa.schema([field]))
        eq = equality_delete_file(table, folder / f"eq-{c}.parquet", keys, [1])
        new = _batch(0, len(ids), rng).set_column(0, "id", pa.array(ids))
        data = write_data_files(table, new)
        table, _ = commit_snapshot(table, [], deletes=[eq], added_data=data, operation="overwrite")
    return table


def _model_k(table: Any, rows: int) -> int:
    """The model's sum of ``k``: per id, the row of the latest commit that wrote it (read
    from the data files with pyarrow, sequence numbers from the manifests: no delete file
    is read)."""
    from puffin.iceberg.metadata.manifests import read_manifest_entries

    snapshot = table.current_snapshot()
    files = []
    for m in snapshot.manifests(table.io):
        for e in read_manifest_entries(table.io, m):
            if e.data_file.content == 0:
                files.append((e.sequence_number, str(e.data_file.file_path)))
    winner = np.full(rows, -1, dtype=np.int64)
    for _, path in sorted(files):
        part = pq.read_table(path.removeprefix("file://"), columns=["id", "k"])
        ids, ks = part["id"].to_numpy(), part["k"].to_numpy()
        winner[ids] = ks  # a later commit's row of an id replaces the earlier ones
    assert (winner >= 0).all()
    return int(winner.sum())


_DUCKDB_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[2])
from bench_scan import _duckdb
import time
read, _ = _duckdb(sys.argv[1])
start = time.perf_counter()
rows = read()
print(rows, time.perf_counter() - start)
"""


def _duckdb_capped(metadata: str, cap: float) -> Callable[[], tuple[int, float]]:
    """DuckDB 1.4.4's read in a child process stopped after ``cap`` seconds (it read the
    10 M-row table with 50 equality deletes for over 8 minutes without finishing):
    (the row count, the read's seconds), or (-1, inf) when stopped."""

    def read() -> tuple[int, float]:
        try:
            out = subprocess.run(
                [sys.executable, "-c", _DUCKDB_CHILD, metadata, str(HERE)],
                capture_output=True, text=True, check=True, timeout=cap,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return -1, float("inf")
        rows, seconds = out.stdout.split()[-2:]
        return int(rows), float(seconds)  # the read alone, timed in the child

    return read


def _readers(
    table: Any, name: str, java: JavaPeer, folder: Path, cap: float
) -> dict[str, Callable[[], Any]]:
    read = _duckdb_capped(table.metadata_location, cap)

    def java_scan() -> int:
        result = java.sql(JAVA_SCAN.format(name=name), warehouse=folder)
        return int(result.column(0)[0].as_py())

    return {
        "ours": lambda: int(scan_table(table).to_arrow().num_rows),
        "duckdb": read,
        "java": java_scan,
    }


def _timed(readers: dict[str, Callable[[], Any]], runs: int, expected: int) -> dict[str, float]:
    """Median seconds of each reader taking turns, each row count checked against the model;
    a capped read that was stopped counts as infinite (and is read once only)."""
    import statistics

    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(runs):
        for name, read in readers.items():
            if times[name] and times[name][-1] == float("inf"):
                continue
            start = time.perf_counter()
            rows = read()
            if isinstance(rows, tuple):  # timed by the reader itself
                rows, seconds = rows
            else:
                seconds = time.perf_counter() - start
            times[name].append(seconds)
            if rows not in (expected, -1):
                raise SystemExit(f"{name}: wrong row count {rows} (model: {expected})")
    return {name: float(statistics.median(t)) for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    from _child import run_child

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--fraction", type=float, default=FRACTION,
                        help="of the ids each upsert writes again (0.002)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duckdb-cap", type=float, default=180.0, metavar="SECONDS",
                        help="stop a DuckDB read after this long (reported as '>')")
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.files, args.commits, args.runs = 20_000, 4, 5, 1
    print(_load(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-eq-") as tmp:
        folder = Path(tmp)
        (folder / "eq").mkdir()
        catalog, base, _ = make_base(folder, args.rows, args.files)
        start = time.perf_counter()
        table = upgrade_to_v3(catalog.register_table("bench.equality", base))
        table = upserts(table, args.rows, args.commits, folder / "eq", args.fraction)
        built = time.perf_counter() - start
        state = table.metadata_location
        want_k = _model_k(table, args.rows)
        got = scan_table(table).to_arrow()
        assert got.num_rows == args.rows == pa.compute.count_distinct(got["id"]).as_py()
        assert int(pa.compute.sum(got["k"]).as_py()) == want_k, "rows differ from the model"
        del got
        catalog.register_table("bench.converted", state)
        catalog.register_table("bench.java_compact", state)
        convert = run_child(_CONVERT_CHILD, folder, "bench.converted")
        converted = catalog.load_table("bench.converted")
        assert int(pa.compute.sum(scan_table(converted).to_arrow()["k"]).as_py()) == want_k
        results: dict[str, dict[str, float]] = {}
        with (
            tempfile.TemporaryDirectory(prefix="bench-java-") as jtmp,
            JavaPeer(Path(jtmp)) as java,
        ):
            java.sql(JAVA_SCAN.format(name="bench.converted"), warehouse=folder)  # warm up
            for name, t in (("equality", table), ("converted", converted)):
                readers = _readers(t, f"bench.{name}", java, folder, args.duckdb_cap)
                results[name] = _timed(readers, args.runs, args.rows)
                print(name, {k: round(v, 3) for k, v in results[name].items()}, flush=True)
            start = time.perf_counter()
            java.sql(JAVA_COMPACT.format(name="bench.java_compact"), warehouse=folder)
            java_seconds = time.perf_counter() - start
        compacted = catalog.load_table("bench.java_compact")
        assert scan_table(compacted).to_arrow().num_rows == args.rows
    _report(args, built, results, convert, java_seconds)
    return 0




def _report(
    args: argparse.Namespace,
    built: float,
    results: dict[str, dict[str, float]],
    convert: dict[str, Any],
    java_seconds: float,
) -> None:
    keys = int(args.rows * args.fraction) * args.commits
    print(
        f"\n{args.rows:,} rows in {args.files} files, {args.commits} upserts of "
        f"{args.fraction:.1%} of the ids ({keys:,} delete keys; built in {built:.0f} s); "
        f"medians of {args.runs} runs (seconds)"
    )
    print("| state | ours | DuckDB 1.4.4 | Java (warm) |")
    print("| --- | --- | --- | --- |")
    for state, f in results.items():
        duck = f"> {args.duckdb_cap:.0f}" if f["duckdb"] == float("inf") else f"{f['duckdb']:.2f}"
        print(f"| {state} | {f['ours']:.2f} | {duck} | {f['java']:.2f} |")
    ratio = results["equality"]["ours"] / results["converted"]["ours"]
    print(f"\nours with equality deletes / after conversion: {ratio:.2f}x (goal <= 2x)")
    peak = (convert["peak_kib"] - convert["before_kib"]) / 1024
    print(
        f"convert_equality_deletes: {convert['seconds']:.2f} s ({convert['files']} files, "
        f"{convert['rows']:,} rows into {convert['data_files']} vectors), peak RSS "
        f"{convert['peak_kib'] / 1024:.0f} MiB ({peak:.0f} MiB above the interpreter's); "
        f"Java rewrite_data_files (warm): {java_seconds:.2f} s, ratio "
        f"{convert['seconds'] / java_seconds:.2f}x"
    )
    print(_load())


if __name__ == "__main__":
    sys.exit(main())
