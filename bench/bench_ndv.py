"""NDV benchmark (issue 17): ``puffin ndv`` and table statistics against DuckDB.

One Parquet file of 10 M rows (int64 ``id``, int32 ``i32``, double ``x`` and a 10-14 byte
string ``s``; 1 M-row row groups, snappy, fixed seed), and an Iceberg table of the same rows
in 4 data files (SQLite catalog in a temporary folder).  Side by side, the contenders in
turns, medians of ``--runs`` (at least 5), every run a fresh process so start-up counts:

* ``puffin ndv t.parquet -o o.puffin`` against DuckDB 1.4.4 ``approx_count_distinct`` over
  the four columns (``python -c`` importing duckdb);
* ``compute_table_statistics(table, commit=False)`` against DuckDB over the table's 4
  Parquet files.

Also printed: each tool's relative error against the exact distinct count, and each
contender's median CPU seconds (user + system, all threads) and peak RSS (``ru_maxrss``),
both of the child process.

Run: ``.venv/bin/python bench/bench_ndv.py [--rows 10000000] [--runs 5] [--keep DIR]``
(``--smoke``: 20,000 rows, 2 data files, one run)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

COLUMNS = ("id", "i32", "x", "s")
ROW_GROUP = 1_000_000
SEED = 17


def make_columns(rows: int, seed: int = SEED) -> pa.Table:
    """The benchmark rows: about 10 M, 4.3 M, 3.7 M and 2.4 M distinct values at 10 M rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 1 << 62, rows, dtype=np.int64)
    i32 = rng.integers(0, rows // 2, rows, dtype=np.int32)
    x = np.round(rng.standard_normal(rows), 6)
    digits = rng.integers(5, 10, rows // 3)  # "user-" + 5..9 digits: 10..14 bytes
    pool = 10 ** (digits - 1) + rng.integers(0, 9 * 10 ** (digits - 1))
    numbers = pa.array(pool[rng.integers(0, pool.shape[0], rows)])
    s = pc.binary_join_element_wise("user-", pc.cast(numbers, pa.string()), "")
    return pa.table({"id": ids, "i32": i32, "x": x, "s": s})


def write_file(path: Path, rows: int) -> None:
    import pyarrow.parquet as pq

    pq.write_table(make_columns(rows), path, row_group_size=ROW_GROUP)


def exact_counts(path: Path) -> dict[str, int]:
    """Exact distinct counts, one column at a time (bounded memory)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out = {}
    for name in COLUMNS:
        column = pq.read_table(path, columns=[name]).column(name)
        out[name] = int(pc.count_distinct(column).as_py())
    return out


def make_table(folder: Path, path: Path, files: int) -> list[str]:
    """An Iceberg table of the file's rows in ``files`` data files; its data file paths."""
    import pyarrow.parquet as pq
    from pyiceberg.schema import Schema
    from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType

    from puffin.iceberg import local_catalog
    from puffin.io.locations import local_path

    catalog = local_catalog(folder)
    catalog.create_namespace_if_not_exists("bench")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "i32", IntegerType(), required=False),
        NestedField(3, "x", DoubleType(), required=False),
        NestedField(4, "s", StringType(), required=False),
    )
    table = catalog.create_table(
        "bench.ndv", schema=schema, properties={"write.target-file-size-bytes": str(1 << 40)}
    )
    data = pq.read_table(path)
    per_file = -(-data.num_rows // files)
    for i in range(files):
        table.append(data.slice(i * per_file, per_file))
    table = catalog.load_table("bench.ndv")
    return [str(local_path(t.file.file_path)) for t in table.scan().plan_files()]


_DUCKDB = """
import json, sys, duckdb
files = sys.argv[1:]
cols = {cols!r}
sql = "select " + ", ".join(f"approx_count_distinct({{c}})" for c in cols)
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
row = con.sql(sql + " from read_parquet(" + repr(files) + ")").fetchone()
print(json.dumps(dict(zip(cols, row))))
"""

_TABLE_STATS = """
import json, sys
from puffin.iceberg import compute_table_statistics, local_catalog
table = local_catalog(sys.argv[1]).load_table("bench.ndv")
stats = compute_table_statistics(table, commit=False, progress=False)
names = {{f.field_id: f.name for f in table.schema().fields}}
print(json.dumps({{names[b.fields[0]]: int(b.properties["ndv"]) for b in stats.blob_metadata}}))
"""


def timed(argv: list[str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS MiB, stdout) of ``argv`` run in a child."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed ({proc.returncode}): {err[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, cpu, usage.ru_maxrss / 1024, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="folder for (and reuse of) the data")
    parser.add_argument("--only", choices=("file", "table"), help="run one of the two pairs")
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.runs, args.files = 20_000, 1, 2
    if args.prepare is not None:
        prepare(args.prepare, args)
        return 0
    with tempfile.TemporaryDirectory(prefix="puffin-bench-ndv-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        bench(folder, args)
    return 0


def prepare(folder: Path, args: argparse.Namespace) -> None:
    """Write the file, its exact counts and the table (in a child: see :func:`bench`)."""
    path = folder / "t.parquet"
    if not path.exists():
        write_file(path, args.rows)
    exact_path = folder / "exact.json"
    if not exact_path.exists():
        exact_path.write_text(json.dumps(exact_counts(path)))
    listing = folder / "files.json"
    if args.only != "file" and not listing.exists():
        listing.write_text(json.dumps(make_table(folder / "iceberg", path, args.files)))


def bench(folder: Path, args: argparse.Namespace) -> None:
    # The data is made in a child process: a child's peak RSS (ru_maxrss) starts from its
    # parent's peak when it is started by vfork, so this process must never grow.
    argv = [sys.executable, __file__, "--prepare", str(folder), "--rows", str(args.rows)]
    argv += ["--files", str(args.files)] + (["--only", args.only] if args.only else [])
    subprocess.run(argv, check=True)
    path = folder / "t.parquet"
    exact = json.loads((folder / "exact.json").read_text())
    py = sys.executable
    puffin_cli = str(Path(py).with_name("puffin"))
    contenders: dict[str, list[str]] = {}
    if args.only != "table":
        out = str(folder / "o.puffin")
        contenders["puffin ndv"] = [puffin_cli, "ndv", str(path), "-o", out, "--json"]
        contenders["duckdb (file)"] = [py, "-c", _DUCKDB.format(cols=COLUMNS), str(path)]
    if args.only != "file":
        catalog = folder / "iceberg"
        files = json.loads((folder / "files.json").read_text())
        contenders["compute_table_statistics"] = [py, "-c", _TABLE_STATS.format(), str(catalog)]
        contenders["duckdb (4 files)"] = [py, "-c", _DUCKDB.format(cols=COLUMNS), *files]
    report(contenders, exact, args, path)


def _estimates(name: str, out: str) -> dict[str, int]:
    data = json.loads(out)
    if name == "puffin ndv":
        return {c["name"]: int(c["ndv"]) for c in data["columns"]}
    return {k: int(v) for k, v in data.items()}


def report(
    contenders: dict[str, list[str]], exact: dict[str, int], args: argparse.Namespace, path: Path
) -> None:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    rss: dict[str, float] = dict.fromkeys(contenders, 0.0)
    cpus: dict[str, list[float]] = {name: [] for name in contenders}
    estimates: dict[str, dict[str, int]] = {}
    load = os.getloadavg()[0]
    for argv in contenders.values():  # one untimed warm-up each (page cache, imports)
        timed(argv)
    for run in range(args.runs):
        order = list(contenders) if run % 2 == 0 else list(reversed(contenders))
        for name in order:
            seconds, cpu, peak, out = timed(contenders[name])
            times[name].append(seconds)
            cpus[name].append(cpu)
            rss[name] = max(rss[name], peak)
            estimates[name] = _estimates(name, out)
    size = path.stat().st_size / 2**20
    print(f"# {args.rows:,} rows, {size:.0f} MiB Parquet, medians of {args.runs} runs in turns, ")
    print(f"# load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at the end")
    print(f"{'contender':28}{'median s':>9}{'min s':>8}{'max s':>8}{'CPU s':>8}{'peak RSS':>10}")
    for name in contenders:
        t = times[name]
        print(
            f"{name:28}{statistics.median(t):9.2f}{min(t):8.2f}{max(t):8.2f}"
            f"{statistics.median(cpus[name]):8.2f}{rss[name]:8.0f} MiB"
        )
    pairs = [("puffin ndv", "duckdb (file)"), ("compute_table_statistics", "duckdb (4 files)")]
    for ours, theirs in pairs:
        if ours in times:
            ratio = statistics.median(times[ours]) / statistics.median(times[theirs])
            print(f"{ours} / {theirs}: {ratio:.2f}x")
    print(f"\n{'column':8}{'exact':>12}" + "".join(f"{n:>26}" for n in contenders))
    for column in COLUMNS:
        cells = []
        for name in contenders:
            est = estimates[name][column]
            cells.append(f"{est:>14,} ({(est - exact[column]) / exact[column] * 100:+6.2f} %)")
        print(f"{column:8}{exact[column]:>12,}" + "".join(f"{c:>26}" for c in cells))


if __name__ == "__main__":
    sys.exit(main())
