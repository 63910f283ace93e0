"""One reader shared by many threads returns the right bytes, whatever its source.

Paths are read with ``os.pread`` (positional, no shared file position), bytes by slicing,
and file objects under a lock around ``seek`` + ``read``.  The file-object case is also run
through a wrapper that yields to other threads between ``seek`` and ``read``: a control test
shows that this wrapper corrupts unlocked reads, so the shared-reader test would catch a
missing lock.
"""

from __future__ import annotations

import io
import json
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import puffin

THREADS = 16
READS_PER_THREAD = 100
CODECS = (None, "lz4", "zstd")


def _payload(i: int) -> bytes:
    rng = random.Random(i)
    size = rng.choice([0, 1, 100, 5_000, 70_000, 200_000])
    return rng.randbytes(size // 2) + bytes([i]) * (size - size // 2)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[bytes]]:
    payloads = [_payload(i) for i in range(48)]
    path = tmp_path_factory.mktemp("concurrency") / "shared.puffin"
    with puffin.create(path, created_by="concurrency test") as w:
        for i, data in enumerate(payloads):
            w.add_blob(data, type="t", fields=[i], codec=CODECS[i % 3])
    return path, payloads


class YieldingFile(io.RawIOBase):
    """A file object that hands the GIL to other threads between seek and read."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._data)}[whence]
        self._pos = base + offset
        time.sleep(0)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1) -> bytes:
        time.sleep(0)
        end = len(self._data) if size < 0 else min(len(self._data), self._pos + size)
        chunk = self._data[self._pos:end]
        self._pos = end
        return chunk


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as possible, so interleavings are many."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _sources(path: Path) -> dict[str, Callable[[], Any]]:
    data = path.read_bytes()
    sources: dict[str, Callable[[], Any]] = {
        "path": lambda: path,
        "str path": lambda: str(path),
        "bytes": lambda: data,
        "memoryview": lambda: memoryview(bytearray(data)),
        "open file": lambda: open(path, "rb"),
        "BytesIO": lambda: io.BytesIO(data),
        "yielding file": lambda: YieldingFile(data),
    }
    try:
        import pyarrow as pa

        sources["pyarrow OSFile"] = lambda: pa.OSFile(str(path), "rb")
    except ImportError:  # pragma: no cover - pyarrow is an optional extra
        pass
    return sources


def _hammer(reader: puffin.PuffinReader, expected: list[bytes], threads: int,
            reads: int) -> tuple[list[str], int, float]:
    """Many threads read random blobs at once; returns problems, reads done, seconds."""
    blobs = reader.blobs
    problems: list[str] = []
    done = [0] * threads
    barrier = threading.Barrier(threads)

    def work(t: int) -> None:
        rng = random.Random(t)
        barrier.wait()
        try:
            for _ in range(reads):
                i = rng.randrange(len(blobs))
                kind = rng.randrange(25)  # the same mix whatever the thread count
                if kind == 24:
                    got = {blobs.index(m): d for m, d in reader.read_all()}
                    if got != dict(enumerate(expected)):
                        problems.append(f"thread {t}: read_all differs")
                elif kind % 2:
                    raw = reader.read_raw(i)
                    if len(raw) != blobs[i].length or (
                        blobs[i].compression_codec is None and raw != expected[i]
                    ):
                        problems.append(f"thread {t}: read_raw({i}) differs")
                elif reader.read_blob(blobs[i]) != expected[i]:
                    problems.append(f"thread {t}: read_blob({i}) differs")
                done[t] += 1
        except Exception as exc:  # a PuffinError here means a torn read
            problems.append(f"thread {t}: {type(exc).__name__}: {exc}")

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    elapsed = time.perf_counter() - start
    assert not any(w.is_alive() for w in workers), "a reader thread hung"
    return problems, sum(done), elapsed


@pytest.mark.parametrize(
    "kind",
    ["path", "str path", "bytes", "memoryview", "open file", "BytesIO", "yielding file",
     "pyarrow OSFile"],
)
def test_shared_reader_returns_correct_bytes(
    sample: tuple[Path, list[bytes]], kind: str, fast_switching: None
) -> None:
    path, expected = sample
    sources = _sources(path)
    if kind not in sources:
        pytest.skip(f"{kind} needs an optional dependency")
    source = sources[kind]()
    try:
        with puffin.open(source) as reader:
            problems, reads, _ = _hammer(reader, expected, THREADS, READS_PER_THREAD)
    finally:
        if hasattr(source, "close"):
            source.close()
    assert problems == []
    assert reads == THREADS * READS_PER_THREAD


def test_control_unlocked_reads_of_the_yielding_file_do_tear(fast_switching: None) -> None:
    # Without a lock, threads sharing the yielding file read each other's positions, so
    # the shared-reader test above can fail; with the reader's lock it does not.
    data = bytes(range(256)) * 64
    f = YieldingFile(data)
    torn = 0
    lock = threading.Lock()

    def work(t: int) -> None:
        nonlocal torn
        rng = random.Random(t)
        for _ in range(300):
            offset = rng.randrange(0, len(data) - 64)
            f.seek(offset)
            if f.read(64) != data[offset:offset + 64]:
                with lock:
                    torn += 1

    workers = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert torn > 0


def test_throughput_by_thread_count(
    sample: tuple[Path, list[bytes]], tmp_path: Path
) -> None:
    """Reads per second with 1, 2 and 8 threads sharing one reader (printed, for the docs).

    Two files: the mixed sample (mostly small blobs, where Python code and so the GIL
    dominate) and eight 2 MiB zstd blobs (where zstandard decompresses without the GIL, as
    ``os.pread`` reads).  Only correctness is asserted; the figures depend on the machine.
    """
    path, expected = sample
    big_path = tmp_path / "big.puffin"
    big = [random.Random(i).randbytes(1 << 20) * 2 for i in range(8)]
    with puffin.create(big_path) as w:
        for i, data in enumerate(big):
            w.add_blob(data, type="t", fields=[i], codec="zstd")
    figures: dict[str, dict[int, float]] = {}
    for label, file, payloads, total in (("mixed", path, expected, 400),
                                         ("2 MiB zstd", big_path, big, 128)):
        for kind in ("path", "bytes", "BytesIO"):
            source = _sources(file)[kind]()
            with puffin.open(source) as reader:
                for threads in (1, 2, 8):
                    problems, reads, seconds = _hammer(reader, payloads, threads,
                                                       total // threads)
                    assert problems == []
                    figures.setdefault(f"{label}, {kind}", {})[threads] = round(reads / seconds)
    print(json.dumps({"reads_per_second": figures}))


def test_closing_a_shared_path_reader_never_hands_out_another_files_bytes(
    sample: tuple[Path, list[bytes]], tmp_path: Path
) -> None:
    """close() waits for reads in flight: a thread that fetched the descriptor before the
    close must not read whatever file the OS gives that number to next."""
    path, payloads = sample
    other = tmp_path / "other.bin"
    other.write_bytes(b"\xee" * 300_000)
    wrong: list[int] = []
    for _ in range(20):
        reader = puffin.open(path)
        blobs = reader.blobs
        stop = threading.Event()

        def read(
            reader: puffin.PuffinReader = reader, blobs: Any = blobs, stop: Any = stop
        ) -> None:
            while not stop.is_set():
                i = random.randrange(len(blobs))
                try:
                    data = reader.read_blob(i)
                except (ValueError, OSError):  # closed: refused, never wrong bytes
                    return
                if data != payloads[i]:
                    wrong.append(i)

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.01)
        reader.close()
        handles = [open(other, "rb") for _ in range(8)]  # take the freed descriptor numbers
        stop.set()
        for t in threads:
            t.join()
        for h in handles:
            h.close()
    assert wrong == []
