"""Orphan cleanup and the writers' check on an object store: requests, bytes, time (issue 61).

A real S3-compatible server (moto's server mode, tests/_s3_server.py) on 127.0.0.1 counts
every request and every response byte. Measured:

1. ``remove_orphan_files`` on a table with ``--orphans`` orphan objects under ``data/``
   (100,000 by default, put straight into the server's store): the dry run (the listing),
   then the delete, each in a process of its own (peak RSS its own), beside the bare
   operations with s3fs (``find`` of the prefix, ``rm`` of the same keys in bulk): what the
   safety (the references read again, the marks) costs over them.
2. The check a commit makes before the catalog swap, on ``add_files`` of ``--files``
   Parquet files (1,000 by default): its requests and its share of the commit's time, with
   no cleanup's mark on the table, and with 100 done marks (a cleanup of 100,000 orphans in
   the last hour) the process has not read yet.

Iceberg Java's ``DeleteOrphanFiles`` is not run: its S3 FileIO (the AWS SDK bundle) is not
on this machine's package index.

Run: ``.venv/bin/python bench/bench_s3_orphans.py [--orphans 100000] [--files 1000]``
(``--smoke``: 2,000 orphans, 50 files).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import run_child

from _s3_server import CountingS3Server, running

LAKE = "lake"
ACCOUNT = "123456789012"

CLEANUP = r"""
import datetime, json, resource, sys, time
from pyiceberg.catalog.sql import SqlCatalog
from puffin.iceberg import remove_orphan_files
catalog = SqlCatalog("s3", **json.loads(sys.argv[1]))
table = catalog.load_table("db.t")
started = time.perf_counter()
result = remove_orphan_files(table, older_than=datetime.timedelta(0),
                             dry_run=sys.argv[2] == "dry", allow_short_grace_period=True)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "orphans": len(result.orphans),
                  "removed": len(result.removed), "failed": len(result.failed),
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _put_directly(keys: list[str], body: bytes) -> None:
    """Objects put into the server's store in this process, not through HTTP (fast)."""
    from moto.s3.models import s3_backends

    backend = s3_backends[ACCOUNT]["aws"]
    for key in keys:
        backend.put_object(LAKE, key, body)


def _table(server: CountingS3Server, folder: Path) -> tuple[Any, dict[str, str]]:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    folder.mkdir()
    spec = server.catalog_properties(folder / "catalog.db", f"s3://{LAKE}/{folder.name}")
    catalog = SqlCatalog("s3", **spec)
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64())])
    table = catalog.create_table("db.t", schema=schema)
    table.append(pa.table({"id": pa.array(range(10), pa.int64())}, schema=schema))
    return catalog.load_table("db.t"), spec


def _requests(server: CountingS3Server) -> tuple[dict[str, int], int]:
    """Requests by kind (a GET of the bucket itself is a listing) and bytes sent back."""
    log = server.log.snapshot()
    kinds = Counter(
        "LIST" if r.method == "GET" and r.path.strip("/") == LAKE else r.method for r in log
    )
    return dict(kinds), sum(r.sent for r in log)


def orphans(server: CountingS3Server, folder: Path, count: int) -> None:
    import fsspec

    table, spec = _table(server, folder)
    prefix = table.location().removeprefix(f"s3://{LAKE}/")
    keys = [f"{prefix}/data/{i % 100:02}/stray-{i:06}.parquet" for i in range(count)]
    _put_directly(keys, b"left by a killed write")
    time.sleep(1.1)
    print(f"{count:,} orphan objects under {table.location()}/data/")
    print(f"{'job':<34}{'time':>9}{'LIST':>7}{'POST':>7}{'PUT':>6}{'GET':>6}{'HEAD':>6}"
          f"{'bytes in':>12}{'peak RSS':>10}")  # fmt: skip
    rows = []
    for mode in ("dry", "delete"):
        server.log.clear()
        got = run_child(CLEANUP, json.dumps(spec), mode)
        methods, sent = _requests(server)
        assert got["orphans"] == count and got["failed"] == 0, got
        rows.append((f"ours: {'dry run' if mode == 'dry' else 'delete'}", got, methods, sent))
    _put_directly(keys, b"left by a killed write")
    fs = fsspec.filesystem("s3", **server.storage_options())
    for name, job in (
        ("s3fs: find the prefix", lambda: fs.find(f"{LAKE}/{prefix}")),
        ("s3fs: rm the same keys (bulk)", lambda: fs.rm([f"{LAKE}/{k}" for k in keys])),
    ):
        fs.invalidate_cache()
        server.log.clear()
        started = time.perf_counter()
        job()
        methods, sent = _requests(server)
        rows.append((name, {"seconds": time.perf_counter() - started}, methods, sent))
    for name, got, methods, sent in rows:
        peak = f"{got['peak_mib']:.0f} MiB" if "peak_mib" in got else ""
        counts = "".join(
            f"{methods.get(k, 0):>{w}}" for k, w in (("LIST", 7), ("POST", 7), ("PUT", 6),
                                                     ("GET", 6), ("HEAD", 6))
        )  # fmt: skip
        print(f"{name:<34}{got['seconds']:>8.2f}s{counts}{sent:>12,}{peak:>10}")
    dry, ours = rows[0][1]["seconds"], rows[1][1]["seconds"]
    find, rm = rows[2][1]["seconds"], rows[3][1]["seconds"]
    print(f"dry run / s3fs find = {dry / find:.2f}x; delete (listing included) / "
          f"s3fs find + rm = {ours / (find + rm):.2f}x")  # fmt: skip


def commit_check(server: CountingS3Server, folder: Path, files: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import puffin.iceberg.metadata.presence as presence
    from puffin.iceberg import add_files
    from puffin.iceberg.metadata.cleanup_marks import mark_body, new_mark_location

    table, _ = _table(server, folder)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), sink)
    body = sink.getvalue().to_pybytes()
    shipped = presence.require_added_files
    spent: list[float] = []
    checked: Counter[str] = Counter()

    def timed(*args: Any) -> None:
        started = time.perf_counter()
        server.log.clear()
        shipped(*args)
        spent.append(time.perf_counter() - started)
        methods, _ = _requests(server)
        checked.update(methods)

    presence.require_added_files = timed
    try:
        warm = f"{table.location().removeprefix(f's3://{LAKE}/')}/data/warm.parquet"
        _put_directly([warm], body)
        table = add_files(table, [f"s3://{LAKE}/{warm}"])  # the store's client made once
        for marks in (0, 100):
            prefix = table.location().removeprefix(f"s3://{LAKE}/")
            keys = [f"{prefix}/data/added-{marks}-{i:05}.parquet" for i in range(files)]
            _put_directly(keys, body)
            others = [f"{table.location()}/data/gone-{i}.parquet" for i in range(1000)]
            for _ in range(marks):
                key = new_mark_location(table.location()).removeprefix(f"s3://{LAKE}/")
                _put_directly([key], mark_body(others, done=True))
            checked.clear()
            started = time.perf_counter()
            table = add_files(table, [f"s3://{LAKE}/{k}" for k in keys])
            total = time.perf_counter() - started
            print(f"add_files of {files:,} files, {marks} marks on the table: commit "
                  f"{total:.2f}s, its check {spent[-1] * 1000:.0f} ms ({spent[-1] / total:.1%}),"
                  f" requests {dict(checked)}")  # fmt: skip
    finally:
        presence.require_added_files = shipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orphans", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.orphans, args.files = 2000, 50
    with running(LAKE) as server, tempfile.TemporaryDirectory() as tmp:
        orphans(server, Path(tmp) / "a", args.orphans)
        commit_check(server, Path(tmp) / "b", args.files)


if __name__ == "__main__":
    main()
