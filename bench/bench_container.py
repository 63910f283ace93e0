"""Container benchmarks (issue 2).

1. Reading the footer and one blob from a 10,000-blob file: time, reads and bytes read,
   beside pyiceberg's ``PuffinFile`` on the same file (which needs the whole file in memory).
2. Writing 1 GiB of blobs: peak RSS above the interpreter's baseline.

Run: ``.venv/bin/python bench/bench_container.py [--runs 7] [--gib 1]`` (``--smoke``: 200
blobs, 8 MiB written, one run)
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import puffin

BLOBS = 10_000
BLOB_SIZE = 4096


class CountingFile(io.RawIOBase):
    """A read-only file that counts reads and bytes, as a remote file system would bill."""

    def __init__(self, path: str) -> None:
        self._f = open(path, "rb")  # closed in close()
        self.reads = 0
        self.bytes = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def read(self, size: int = -1) -> bytes:
        data = self._f.read(size)
        self.reads += 1
        self.bytes += len(data)
        return data

    def close(self) -> None:
        self._f.close()
        super().close()


def make_file(path: str) -> tuple[int, int]:
    payload = os.urandom(BLOB_SIZE)
    with puffin.create(path, created_by="bench") as writer:
        for i in range(BLOBS):
            writer.add_blob(payload, type="apache-datasketches-theta-v1", fields=[i % 100 + 1],
                            snapshot_id=1234567890123, sequence_number=7,
                            properties={"ndv": str(i)})
    assert writer.file_size is not None and writer.footer_size is not None
    return writer.file_size, writer.footer_size


def ours(path: str, footer_size: int | None) -> tuple[float, int, int]:
    f = CountingFile(path)
    start = time.perf_counter()
    with puffin.open(f, footer_size=footer_size) as reader:
        data = reader.read_blob(BLOBS // 2)
    elapsed = time.perf_counter() - start
    assert len(data) == BLOB_SIZE
    f.close()
    return elapsed, f.reads, f.bytes


def pyiceberg_read(path: str) -> tuple[float, int, int]:
    from pyiceberg.table.puffin import PuffinFile

    f = CountingFile(path)
    start = time.perf_counter()
    pf = PuffinFile(f.read())
    data = pf.get_blob_payload(pf.footer.blobs[BLOBS // 2])
    elapsed = time.perf_counter() - start
    assert len(data) == BLOB_SIZE
    f.close()
    return elapsed, f.reads, f.bytes


def bench_read(runs: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "many.puffin")
        file_size, footer_size = make_file(path)
        print(f"file: {BLOBS} blobs of {BLOB_SIZE} B, {file_size / 2**20:.1f} MiB, "
              f"footer {footer_size / 2**20:.2f} MiB")
        rows = []
        for name, fn in (
            ("puffin (no hint)", lambda: ours(path, None)),
            ("puffin (footer_size hint)", lambda: ours(path, footer_size)),
            ("pyiceberg 0.12 PuffinFile", lambda: pyiceberg_read(path)),
        ):
            fn()  # warm the page cache and imports
            results = [fn() for _ in range(runs)]
            rows.append({
                "name": name,
                "median_ms": statistics.median(r[0] for r in results) * 1000,
                "reads": results[0][1],
                "bytes": results[0][2],
            })
        return rows


_WRITER_CHILD = """
import os, sys, puffin, psutil
gib, codec, path = float(sys.argv[1]), sys.argv[2] or None, sys.argv[3]
blob = os.urandom(1 << 20)  # 1 MiB, reused: the benchmark measures the writer, not the data
proc = psutil.Process()
base = proc.memory_info().rss
with puffin.create(path, created_by="bench") as w:
    for i in range(int(gib * 1024)):
        w.add_blob(blob, type="t", fields=[i], codec=codec)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec.
with open("/proc/self/status") as status:
    peak = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmHWM:"))
print(base, peak, w.file_size)
"""


def bench_write(gib: float) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for codec in ("", "zstd", "lz4"):
            path = os.path.join(tmp, "big.puffin")
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", _WRITER_CHILD, str(gib), codec, path],
                                 check=True, capture_output=True, text=True).stdout
            elapsed = time.perf_counter() - start
            base, peak, size = (int(x) for x in out.split())
            rows.append({"codec": codec or "none", "base_mib": base / 2**20,
                         "peak_above_base_mib": (peak - base) / 2**20,
                         "file_gib": size / 2**30, "seconds": elapsed})
            os.unlink(path)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--smoke", action="store_true",
                        help="smallest sizes, one run: tests/project/test_benchmarks.py")
    args = parser.parse_args()
    if args.smoke:
        global BLOBS
        BLOBS, args.runs, args.gib = 200, 1, 8 / 1024

    rows = bench_read(args.runs)
    ref = rows[-1]["median_ms"]
    print(f"\nfooter + one blob from a {BLOBS}-blob file, median of {args.runs} runs")
    print(f"{'reader':28} {'median ms':>10} {'reads':>6} {'bytes read':>12} {'speed-up':>9}")
    for r in rows:
        print(f"{r['name']:28} {r['median_ms']:10.2f} {r['reads']:6d} {r['bytes']:12,d} "
              f"{ref / r['median_ms']:8.1f}x")

    print(f"\nwriting {args.gib:g} GiB of 1 MiB blobs (a fresh process each)")
    print(f"{'codec':6} {'baseline MiB':>13} {'peak above baseline MiB':>24} {'seconds':>8}")
    for w in bench_write(args.gib):
        print(f"{w['codec']:6} {w['base_mib']:13.1f} {w['peak_above_base_mib']:24.1f} "
              f"{w['seconds']:8.1f}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    main()
