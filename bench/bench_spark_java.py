"""Our Spark jobs against Iceberg Java's, each in a warm session on ``local[2]`` (issue 32).

The table of bench_iceberg.py (10 million rows: long, int, double, string and ``category``,
in 8 Parquet files, an embedded SQLite catalog that Java opens through its ``JdbcCatalog``).
Two warm sessions side by side, taking turns run by run:

* ours: PySpark 4.3 ``local[2]`` in this process (``puffin.spark.local_session``);
* Java: Iceberg 1.10.2 on Spark 3.5 ``local[2]`` (tests/peers/iceberg_java.py, ``.venv-java``).

Timed, after one warm-up each: NDV statistics of the current snapshot
(``puffin.spark.compute_table_statistics(commit=False)``, both engines, against
``CALL system.compute_table_stats``), and deleting ``category = 0`` (0.5 % of the rows, in
every file) from a fresh v3 copy per run (``puffin.spark.delete_rows`` against Java's
merge-on-read ``DELETE``); both must delete the same rows.

Run (after ``make peers``):
``.venv/bin/python bench/bench_spark_java.py [--rows 10000000] [--runs 3]`` (``--smoke``:
20,000 rows in 2 files, one run)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from bench_iceberg import make_table  # noqa: E402

from peers.iceberg_java import JavaPeer  # noqa: E402
from puffin import spark as ps  # noqa: E402
from puffin.iceberg import upgrade_to_v3  # noqa: E402
from puffin.iceberg.catalog.catalogs import local_catalog  # noqa: E402

STATS = "CALL `default`.system.compute_table_stats(table => 'bench.stats4')"
MERGE_ON_READ = "('write.delete.mode' = 'merge-on-read')"
WHERE = "category = 0"


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.files, args.runs = 20_000, 2, 1
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    times: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-spark-java-") as tmp:
        folder = Path(tmp)
        make_table(folder, args.rows, args.files)
        catalog = local_catalog(folder)
        table = catalog.load_table("bench.stats4")
        base = table.metadata_location
        spark = ps.local_session("local[2]", memory="2g")
        with JavaPeer(folder / "java") as java:
            jobs: dict[str, Callable[[], object]] = {
                "ours, default (each task reads and sketches)": lambda: (
                    ps.compute_table_statistics(spark, table, commit=False, engine="auto")),
                "ours, jvm engine (rows to theta_sketch_agg)": lambda: (
                    ps.compute_table_statistics(spark, table, commit=False, engine="jvm")),
                "java compute_table_stats": lambda: java.sql(STATS, warehouse=folder),
            }  # fmt: skip
            for job in jobs.values():
                job()  # warm-up
            for _ in range(args.runs):
                for name, job in jobs.items():
                    times.setdefault(name, []).append(_timed(job))
            for run in range(-1, args.runs):  # run -1: the warm-up of each
                ours = upgrade_to_v3(catalog.register_table(f"bench.ours_{run + 1}", base))
                seconds = _timed(
                    lambda t=ours: counts.__setitem__(  # type: ignore[misc]
                        "ours", ps.delete_rows(spark, t, WHERE).deleted_rows))
                if run >= 0:
                    times.setdefault("ours, delete_rows", []).append(seconds)
                name = f"bench.java_{run + 1}"
                upgrade_to_v3(catalog.register_table(name, base))
                qualified = "`default`." + name
                java.sql(f"ALTER TABLE {qualified} SET TBLPROPERTIES {MERGE_ON_READ}",
                         warehouse=folder)
                seconds = _timed(lambda q=qualified: java.sql(  # type: ignore[misc]
                    f"DELETE FROM {q} WHERE {WHERE}", warehouse=folder))
                if run >= 0:
                    times.setdefault("java merge-on-read DELETE", []).append(seconds)
                snapshot = catalog.load_table(name).current_snapshot()
                assert snapshot is not None and snapshot.summary is not None
                counts["java"] = int(str(snapshot.summary["added-position-deletes"]))
        spark.stop()
    assert counts["ours"] == counts["java"] > 0, counts
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"\n{args.rows:,} rows, {args.files} files, warm sessions on local[2], median of "
          f"{args.runs}; rows deleted by each: {counts}")
    print("\n| job | seconds | against Java |\n|---|---|---|")
    java_stats, java_delete = medians["java compute_table_stats"], medians[
        "java merge-on-read DELETE"]
    for name, seconds in medians.items():
        against = java_delete if "delete" in name.lower() else java_stats
        print(f"| {name} | {seconds:.2f} | {seconds / against:.2f}× |")
    print(json.dumps({"medians": medians, "runs": times}))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
