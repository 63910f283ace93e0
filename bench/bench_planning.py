"""Planning and key matching whose cost grows with the work, not the table (issue 43).

Tables of N unpartitioned Parquet files of 200 rows (``id`` long, ``k`` int = id % 7),
registered with ``add_files`` 1,000 at a time:

* v3, ``delete_rows("k = 3 and id < N * 50")``: a deletion vector on each of the first
  quarter of the files (N = 2,000 and 20,000: 500 and 5,000 vectors);
* v2, one Parquet position-delete file for each of the first quarter (N = 20,000: 5,000
  files, each naming its data file in its ``file_path`` bounds, as Java writes them).

Planned by ``scan_table(t).plan_files()`` (the first, cold, the median of the next runs, warm,
and the median of runs that each decode the manifests again, as Java's plans do),
pyiceberg's ``t.scan().plan_files()`` (once: it takes minutes at 20,000 files) and Iceberg
Java's ``table.newScan().planFiles()`` in a warm session (tests/peers' Java server, the table
loaded once, the tasks counted in the JVM); every plan's file count checked.

Whole reads to Arrow of the v3 tables: pyiceberg's and ours of the table before its delete,
ours of the table with its vectors (the per-file cost of a read), each row count checked.

Then ``delete_rows`` of ``id in (...)`` lists of 10, 1,000 and 100,000 keys on a copy of the
2,000-file v3 table, keys that match (spread over the ids) and keys that match nothing, each
against reading the files whose id bounds hold a key, the work a delete cannot skip, in two
ways: ``pq.read_table`` (pyarrow's one call, through a dataset) and ``pq.ParquetFile(...).read()``
(the fastest whole-file read, twice as fast on these small files).

Run (after ``make peers``): ``.venv/bin/python bench/bench_planning.py [--runs 3]``
(``--smoke``: 200 and 2,000 files, 10 and 1,000 keys, one run)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

ROWS = 200


def build(folder: Path, files: int, *, v2_deletes: bool = False) -> Any:
    """The table of the docstring (v3 with vectors, or v2 with position-delete files)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField

    from puffin.iceberg import add_files, delete_rows, local_catalog, upgrade_to_v3

    catalog = local_catalog(folder)
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "k", IntegerType(), required=False),
    )
    table = catalog.create_table("db.t", schema)
    source = folder / "src"
    source.mkdir()
    paths = []
    for i in range(files):
        ids = np.arange(i * ROWS, (i + 1) * ROWS, dtype=np.int64)
        path = source / f"f{i:06d}.parquet"
        pq.write_table(pa.table({"id": ids, "k": (ids % 7).astype(np.int32)}), path)
        paths.append(str(path))
    for start in range(0, files, 1000):
        table = add_files(table, paths[start : start + 1000])
    if v2_deletes:
        return _position_deletes(catalog, table, files // 4)
    table = upgrade_to_v3(table)
    catalog.register_table("db.undeleted", table.metadata_location)  # for the full reads
    return delete_rows(table, f"k = 3 and id < {files * ROWS // 4}").table


def _position_deletes(catalog: Any, table: Any, count: int) -> Any:
    """One v2 snapshot adding a position-delete file for each of the first ``count`` data
    files (positions 0 and 3), with ``file_path`` bounds naming that file."""
    from pyiceberg.manifest import DATA_FILE_TYPE

    from iceberg_fixtures import _commit_delete_snapshot
    from puffin.conformance.tables import write_position_delete_file
    from puffin.iceberg.scan.delete_file_index import PATH_FIELD_ID
    from puffin.io.locations import local_path

    Path(local_path(table.location()) or "", "data").mkdir(parents=True, exist_ok=True)
    names = [f.name for f in DATA_FILE_TYPE[2].fields]
    data = sorted(str(t.file.file_path) for t in table.scan().plan_files())[:count]
    deletes = []
    for path in data:
        delete_file = write_position_delete_file(table, {path: [0, 3]})
        delete_file[names.index("lower_bounds")] = {PATH_FIELD_ID: path.encode()}
        delete_file[names.index("upper_bounds")] = {PATH_FIELD_ID: path.encode()}
        deletes.append(delete_file)
    return _commit_delete_snapshot(catalog, table, deletes, format_version=2, new_identifier="db.d")


def plan_ours(table: Any, runs: int) -> tuple[float, float, float, int, int]:
    """(cold seconds, median warm seconds, median seconds decoding the manifests again each
    plan, files, files with deletes), measured in a fresh process that only loads the table
    from its metadata file, as Java's session does: every table then starts from the same
    state (in this process, the larger ones were planned after the build of all three and
    pyiceberg's plans, and a warm plan of 20,000 files cost 5-9 ms by what the heap held)."""
    import json
    import subprocess

    command = [sys.executable, __file__, "--plan-ours", str(table.metadata_location), str(runs)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return tuple(json.loads(out.splitlines()[-1]))  # type: ignore[return-value]


def _plan_in_this_process(
    metadata_location: str, runs: int
) -> tuple[float, float, float, int, int]:
    """:func:`plan_ours`'s figures, in this process. Warm plans read the process's cache of
    decoded manifests; Java's warm plans decode them each time (its manifest cache is off by
    default), as the third figure does."""
    from pyiceberg.table import StaticTable

    from puffin.iceberg import scan_table
    from puffin.iceberg.metadata.manifests import clear_entry_cache

    table = StaticTable.from_metadata(metadata_location)
    scan_table(table).plan_files()  # the modules a plan imports, loaded as in a busy process
    clear_entry_cache()
    times, decoding, planned = [], [], []
    for _ in range(runs + 1):
        start = time.perf_counter()
        planned = scan_table(table).plan_files()
        times.append(time.perf_counter() - start)
    for _ in range(runs):
        clear_entry_cache()
        start = time.perf_counter()
        scan_table(table).plan_files()
        decoding.append(time.perf_counter() - start)
    warm, decoded = statistics.median(times[1:]), statistics.median(decoding)
    return times[0], warm, decoded, len(planned), sum(1 for p in planned if p.delete_files)


def plan_pyiceberg(table: Any) -> tuple[float, int]:
    start = time.perf_counter()
    tasks = list(table.scan().plan_files())
    return time.perf_counter() - start, len(tasks)


def read_all(folder: Path, table: Any, files: int, runs: int) -> dict[str, float]:
    """Median seconds of whole reads to Arrow: pyiceberg and ours on the table before the
    delete, ours on the table with its vectors; each row count checked against the model."""
    from puffin.iceberg import local_catalog, scan_table

    undeleted = local_catalog(folder, create=False).load_table("db.undeleted")
    deleted = sum(1 for i in range(files * ROWS // 4) if i % 7 == 3)
    readers = {
        "pyiceberg": (lambda: undeleted.scan().to_arrow().num_rows, files * ROWS),
        "ours": (lambda: scan_table(undeleted).to_arrow().num_rows, files * ROWS),
        "ours, DVs": (lambda: scan_table(table).to_arrow().num_rows, files * ROWS - deleted),
    }
    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(runs):  # the readers take turns
        for name, (read, expected) in readers.items():
            start = time.perf_counter()
            rows = read()
            times[name].append(time.perf_counter() - start)
            assert rows == expected, (name, rows, expected)
    return {name: statistics.median(t) for name, t in times.items()}


def delete_by_keys(folder: Path, files: int, keys: int, match: bool, tmp: Path) -> dict[str, Any]:
    """One delete of ``keys`` ids on a fresh copy; and the read of the files it must open."""
    import pyarrow.parquet as pq

    from puffin.iceberg import delete_rows

    total = files * ROWS
    ids = list(range(1, total, max(1, total // keys)))[:keys] if match else list(
        range(10**12, 10**12 + keys)
    )
    from iceberg_fixtures import copy_warehouse

    table = copy_warehouse(folder, tmp / f"copy-{keys}-{match}")
    start = time.perf_counter()
    result = delete_rows(table, f"id in ({', '.join(map(str, ids))})")
    seconds = time.perf_counter() - start
    holding = sorted({i // ROWS for i in ids if i < total})  # the files whose bounds hold a key
    start = time.perf_counter()
    for i in holding:
        pq.read_table(folder / "src" / f"f{i:06d}.parquet")  # pyarrow's one call (a dataset)
    reading = time.perf_counter() - start
    start = time.perf_counter()
    for i in holding:
        pq.ParquetFile(folder / "src" / f"f{i:06d}.parquet").read()  # pyarrow's defaults
    fast_reading = time.perf_counter() - start
    start = time.perf_counter()
    for i in holding:  # the fastest whole read of a small file: no threads, no pre-buffering
        path = folder / "src" / f"f{i:06d}.parquet"
        pq.ParquetFile(path, pre_buffer=False).read(use_threads=False)
    fastest_reading = time.perf_counter() - start
    # The model: ids of the table that the first delete (k = 3, first quarter) left live.
    expected = sum(1 for i in ids if i < total and not (i % 7 == 3 and i < total // 4))
    assert result.deleted_rows == expected, (result.deleted_rows, expected)
    return {"keys": keys, "match": match, "seconds": seconds, "deleted": result.deleted_rows,
            "expected": expected, "files_read": len(holding), "read_seconds": reading,
            "fast_read_seconds": fast_reading, "fastest_read_seconds": fastest_reading}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="smallest sizes, one run")
    parser.add_argument("--plan-ours", nargs=2, metavar=("METADATA", "RUNS"),
                        help=argparse.SUPPRESS)  # plan_ours's fresh process
    args = parser.parse_args()
    if args.plan_ours:
        import json

        print(json.dumps(_plan_in_this_process(args.plan_ours[0], int(args.plan_ours[1]))))
        return
    sizes, key_counts, runs = ((200, 2000), (10, 1000), 1) if args.smoke else (
        (2000, 20000), (10, 1000, 100_000), args.runs)
    from peers.iceberg_java import JavaPeer, plan_java

    with tempfile.TemporaryDirectory(prefix="bench-planning-") as tmp_text:
        tmp = Path(tmp_text)
        tables = {f"{n} files, {n // 4} DVs (v3)": (tmp / f"v3-{n}", build(tmp / f"v3-{n}", n))
                  for n in sizes}
        big = sizes[-1]
        name = f"{big} files, {big // 4} position-delete files (v2)"
        tables[name] = (tmp / f"v2-{big}", build(tmp / f"v2-{big}", big, v2_deletes=True))
        print("| table | ours cold | ours warm | ours, decoding each plan | pyiceberg | "
              "Java warm (median) | ours warm / Java | ours decoding / Java |")
        print("|---|---|---|---|---|---|---|---|")
        growth: dict[str, tuple[float, ...]] = {}
        with JavaPeer(tmp / "java") as java:
            for label, (_, table) in tables.items():
                cold, warm, decoded, count, deleted = plan_ours(table, runs)
                theirs, their_count = plan_pyiceberg(table)
                java_plan = plan_java(java, table.metadata_location, runs=max(runs, 2))
                java_s = statistics.median(java_plan["seconds"][1:] or java_plan["seconds"])
                assert count == their_count == java_plan["tasks"], (count, their_count, java_plan)
                assert deleted == count // 4, (label, deleted)
                growth[label] = (cold, warm, decoded, java_s)
                print(f"| {label} | {cold * 1e3:.1f} ms | {warm * 1e3:.1f} ms | "
                      f"{decoded * 1e3:.1f} ms | {theirs:.3f} s | {java_s * 1e3:.1f} ms | "
                      f"{warm / java_s:.2f}× | {decoded / java_s:.2f}× |")
        small_v3, big_v3 = (growth[f"{n} files, {n // 4} DVs (v3)"] for n in sizes)
        print(f"\n{sizes[-1]:,} against {sizes[0]:,} files (v3): " + ", ".join(
            f"{what} {b / a:.1f}×" for what, a, b in zip(
                ("ours cold", "ours warm", "ours decoding", "Java warm"), small_v3, big_v3,
                strict=True)))
        print("\nwhole reads (`to_arrow`), pyiceberg's and ours before the delete, ours after:")
        print("| files | pyiceberg | ours | ours, with DVs | ours / pyiceberg | ms a file, ours |")
        print("|---|---|---|---|---|---|")
        for n in sizes:
            table = tables[f"{n} files, {n // 4} DVs (v3)"][1]
            r = read_all(tmp / f"v3-{n}", table, n, runs)
            print(f"| {n:,} | {r['pyiceberg']:.2f} s | {r['ours']:.2f} s | {r['ours, DVs']:.2f} s"
                  f" | {r['ours'] / r['pyiceberg']:.2f}× | {r['ours'] / n * 1000:.2f} |")
        small = sizes[0]
        print(f"\ndelete_rows by key lists on the {small}-file v3 table:")
        print("| keys | match | seconds | rows deleted | files whose bounds hold a key | "
              "pq.read_table | ParquetFile.read | the same, no threads or pre-buffering | "
              "delete / each read |")
        print("|---|---|---|---|---|---|---|---|---|")
        reads = ("read_seconds", "fast_read_seconds", "fastest_read_seconds")
        for keys in key_counts:
            for match in (True, False):
                r = delete_by_keys(tmp / f"v3-{small}", small, keys, match, tmp)
                ratios = " / ".join(f"{r['seconds'] / r[k]:.1f}" for k in reads)
                print(f"| {keys:,} | {'yes' if match else 'no'} | {r['seconds']:.2f} | "
                      f"{r['deleted']:,} | {r['files_read']:,} | {r['read_seconds']:.2f} s | "
                      f"{r['fast_read_seconds']:.2f} s | {r['fastest_read_seconds']:.2f} s | "
                      f"{ratios if r['files_read'] else 'n/a'} |")
        print("key deletes checked against the model")


if __name__ == "__main__":
    main()
