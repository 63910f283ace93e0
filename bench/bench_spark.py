"""NDV of 4 columns (long, int, double, string) over 20 million rows on Spark local[2].

Compares, in one Spark session over the same Parquet data:

* ``approx_count_distinct`` (Spark's HyperLogLog++, the target: we aim at <= 1.5x its time),
* ``theta_sketch_agg`` on the raw columns (Spark 4.1+; hashes ints as 8-byte longs, so its
  int sketch is not Iceberg's),
* our ``compute_ndv_sketches`` with each engine: ``jvm`` (Iceberg bytes rewritten in Spark
  SQL, hashed by Spark's datasketches, canonicalized by our union), ``arrow`` (our vectorized
  builder on Arrow batches in the Python workers) and ``auto`` (the default),
* a ``mapInArrow`` that only counts rows: the cost of moving the columns to Python, which
  bounds the ``arrow`` engine from below,

interleaving the contenders within each round so drifting machine load hits all alike, and
reports medians.  The data is generated once with Spark into ``bench/results/spark-20m``
(gitignored) and reused.

    python bench/bench_spark.py                 # 20M rows, 5 rounds
    python bench/bench_spark.py --rows 2000000 --rounds 3
    python bench/bench_spark.py --smoke         # 20,000 rows in a temporary folder, 1 round
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

COLUMNS = ["l", "i", "d", "s"]


def _generate(spark: Any, path: Path, rows: int) -> None:
    # long: all distinct; int: ~3M distinct; double: ~1M distinct; string: ~5M distinct.
    (
        spark.range(rows, numPartitions=8)
        .selectExpr(
            "id * 7919 % 100000007 AS l",
            "CAST(id % 3000017 AS INT) AS i",
            "CAST(id % 1000003 AS DOUBLE) / 7.0 AS d",
            "CONCAT('user-', CAST(id % 5000011 AS STRING)) AS s",
        )
        .write.mode("overwrite")
        .parquet(str(path))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--data", default=str(Path(__file__).parent / "results"), help="folder for the data"
    )
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory(prefix="bench-spark-") if args.smoke else None
    if scratch is not None:
        args.rows, args.rounds, args.data = 20_000, 1, scratch.name

    from pyspark.sql import functions as F

    from puffin import spark as ps

    spark = ps.local_session(args.master, memory="2g", app_name="bench-spark")
    millions, rest = divmod(args.rows, 1_000_000)
    path = Path(args.data) / (f"spark-{millions}m" if not rest else f"spark-{args.rows}")
    marker = path / "_SUCCESS"
    if not marker.exists():
        print(f"generating {args.rows:,} rows into {path} ...", flush=True)
        _generate(spark, path, args.rows)
    df = spark.read.parquet(str(path))
    if df.count() != args.rows:
        print(f"{path} does not hold {args.rows} rows; delete it and rerun", file=sys.stderr)
        return 1

    def ours(engine: str) -> Callable[[], list[int]]:
        return lambda: [s.ndv for s in ps.compute_ndv_sketches(df, COLUMNS, engine=engine).values()]

    def noop_arrow() -> list[int]:
        # The floor of the arrow engine: Spark's rows -> Arrow batches -> Python worker, no work.
        def count(batches: Any) -> Any:
            import pyarrow as pa

            n = sum(b.num_rows for b in batches)
            yield pa.record_batch({"n": pa.array([n], pa.int64())})

        return [sum(r.n for r in df.select(*COLUMNS).mapInArrow(count, "n long").collect())]

    contenders: dict[str, Callable[[], Any]] = {
        "approx_count_distinct": lambda: list(
            df.agg(*[F.approx_count_distinct(c) for c in COLUMNS]).collect()[0]
        ),
        "theta_sketch_agg (raw)": lambda: list(
            df.agg(*[F.theta_sketch_estimate(F.theta_sketch_agg(c)) for c in COLUMNS]).collect()[0]
        ),
        "puffin engine=jvm": ours("jvm"),
        "puffin engine=arrow": ours("arrow"),
        "puffin engine=auto": ours("auto"),
        "mapInArrow no-op": noop_arrow,
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    results: dict[str, Any] = {}
    # One untimed warm-up round (JIT, Python workers), then interleaved timed rounds.
    for name, run in contenders.items():
        results[name] = run()
    for r in range(args.rounds):
        order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
        for name in order:
            start = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - start)
        print(f"round {r + 1}/{args.rounds} done", flush=True)

    base = statistics.median(times["approx_count_distinct"])
    cores = os.cpu_count()
    print()
    print(
        f"NDV of {len(COLUMNS)} columns (long, int, double, string), {args.rows:,} rows, "
        f"{args.master} on {cores} CPUs, Spark {spark.version}; medians of {args.rounds}"
    )
    print(f"{'contender':<24} {'median s':>9} {'vs acd':>7}  {'runs (s)':<40} estimates")
    for name, ts in times.items():
        med = statistics.median(ts)
        runs = " ".join(f"{t:.2f}" for t in ts)
        print(f"{name:<24} {med:>9.2f} {med / base:>6.2f}x  {runs:<40} {results[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
