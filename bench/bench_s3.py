"""Object storage: requests and bytes to read a Puffin file on S3 (issue 15).

A real S3-compatible server (moto's server mode, tests/_s3_server.py) on 127.0.0.1 counts
every request and every response byte, whatever the client: s3fs, Arrow's C++ S3 client
behind pyiceberg's PyArrowFileIO, or pyiceberg's FsspecFileIO.  The file is the one of
bench_container.py: 10,000 blobs of 4 KiB.  pyiceberg 0.12 reads Puffin files with
``PuffinFile(bytes)``, so it downloads the object whole.

Run: ``.venv/bin/python bench/bench_s3.py [--runs 5]`` (needs the test extra: moto, s3fs;
``--smoke``: 200 blobs, one run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec

import puffin

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _s3_server import CountingS3Server

BLOBS = 10_000
BLOB_SIZE = 4096
URL = "s3://bench/many.puffin"


def make_file(server: CountingS3Server) -> tuple[int, int]:
    payload = os.urandom(BLOB_SIZE)
    server.log.clear()
    with puffin.create(URL, created_by="bench") as writer:
        for i in range(BLOBS):
            writer.add_blob(payload, type="apache-datasketches-theta-v1", fields=[i % 100 + 1],
                            snapshot_id=1234567890123, sequence_number=7,
                            properties={"ndv": str(i)})
    assert writer.file_size is not None and writer.footer_size is not None
    puts = [r for r in server.log.snapshot() if r.method in ("PUT", "POST")]
    print(f"written in {len(puts)} request(s)")
    return writer.file_size, writer.footer_size


def one_blob(**kw: Any) -> Callable[[], None]:
    def run() -> None:
        with puffin.open(URL, **kw) as reader:
            assert len(reader.read_blob(BLOBS // 2)) == BLOB_SIZE
    return run


def whole_file() -> None:
    with puffin.open(URL) as reader:
        assert sum(1 for _ in reader.read_all()) == BLOBS


def pyiceberg_whole(io: Any) -> Callable[[], None]:
    from pyiceberg.table.puffin import PuffinFile

    def run() -> None:
        with io.new_input(URL).open() as f:
            pf = PuffinFile(f.read())
        assert len(pf.get_blob_payload(pf.footer.blobs[BLOBS // 2])) == BLOB_SIZE
    return run


def measure(server: CountingS3Server, fn: Callable[[], None], runs: int) -> dict[str, Any]:
    fn()  # warm imports and connections
    times = []
    for _ in range(runs):
        server.log.clear()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    log = server.log.snapshot()
    methods = [r.method for r in log]
    return {
        "median_ms": statistics.median(times) * 1000,
        "requests": f"{len(log)} ({methods.count('HEAD')} HEAD, {methods.count('GET')} GET)",
        "bytes": sum(r.sent for r in log),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        global BLOBS
        BLOBS, args.runs = 200, 1
    from pyiceberg.io.fsspec import FsspecFileIO
    from pyiceberg.io.pyarrow import PyArrowFileIO

    server = CountingS3Server().start()
    try:
        server.boto3().create_bucket(Bucket="bench")
        fsspec.config.conf["s3"] = server.storage_options()
        file_size, footer_size = make_file(server)
        print(f"file: {BLOBS} blobs of {BLOB_SIZE} B, {file_size / 2**20:.1f} MiB, "
              f"footer {footer_size / 2**20:.2f} MiB\n")
        arrow = PyArrowFileIO(server.fileio_properties())
        fs_io = FsspecFileIO(server.fileio_properties())
        hints = {"file_size": file_size, "footer_size": footer_size}
        cases: list[tuple[str, Callable[[], None]]] = [
            ("puffin, s3fs, file_size + footer_size", one_blob(**hints)),
            ("puffin, s3fs, footer_size", one_blob(footer_size=footer_size)),
            ("puffin, s3fs, no hint", one_blob()),
            ("puffin, PyArrowFileIO, both hints", one_blob(io=arrow, **hints)),
            ("puffin, FsspecFileIO, both hints", one_blob(io=fs_io, **hints)),
            ("pyiceberg 0.12 PuffinFile (PyArrowFileIO)", pyiceberg_whole(arrow)),
            ("puffin, s3fs, every blob (read_all)", whole_file),
        ]
        print(f"footer + blob {BLOBS // 2} (last case: every blob), median of {args.runs} runs")
        print(f"{'reader':44} {'median ms':>9}  {'requests':22} {'bytes':>12}")
        for name, fn in cases:
            row = measure(server, fn, args.runs)
            print(f"{name:44} {row['median_ms']:9.1f}  {row['requests']:22} {row['bytes']:12,}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
