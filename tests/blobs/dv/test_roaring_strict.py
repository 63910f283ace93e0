"""Roaring containers checked one by one: a run container's written cardinality must match its runs.

CRoaring (pyroaring) ignores the cardinality the descriptive header gives a run container,
so before this check two run containers with swapped cardinalities decoded without
complaint: the bitmap's total still added up.  Every golden file must still be accepted
and written back byte for byte.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pyroaring import BitMap, BitMap64

import puffin
from _paths import TESTDATA
from puffin.blobs.dv import roaring64 as r64
from puffin.blobs.dv.format import MAGIC
from puffin.errors import DeletionVectorError

MiB = 1 << 20
Runs = Sequence[tuple[int, int]]  # (start, length - 1), as the format stores them


def bitmap32(containers: Sequence[tuple[int, Runs]], cards: Sequence[int] | None = None) -> bytes:
    """A portable 32-bit bitmap of run containers, with the header cardinalities given.

    ``cards`` defaults to what the runs hold; the offset header is written from 4
    containers on, as the format requires.
    """
    n = len(containers)
    held = [sum(length + 1 for _, length in runs) for _, runs in containers]
    cards = held if cards is None else cards
    out = bytearray(struct.pack("<I", r64.SERIAL_COOKIE | (n - 1) << 16))
    out += bytes([0xFF] * (n // 8)) + (bytes([(1 << (n % 8)) - 1]) if n % 8 else b"")
    for (key, _), card in zip(containers, cards, strict=True):
        out += struct.pack("<HH", key, card - 1)
    bodies = [struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", *r) for r in runs)
              for _, runs in containers]
    if n >= r64.NO_OFFSET_THRESHOLD:
        at = len(out) + 4 * n
        for body in bodies:
            out += struct.pack("<I", at)
            at += len(body)
    return bytes(out + b"".join(bodies))


def portable64(bitmap: bytes) -> bytes:
    """One 32-bit bitmap under key 0 in the portable 64-bit layout."""
    return struct.pack("<QI", 1, 0) + bitmap


def payload(body: bytes) -> bytes:
    """A deletion-vector-v1 payload (length, magic, body, CRC) around a portable body."""
    framed = bytes(MAGIC) + body
    return struct.pack(">I", len(framed)) + framed + struct.pack(">I", zlib.crc32(framed))


def run_containers(n: int) -> list[tuple[int, Runs]]:
    """``n`` run containers, container ``i`` holding ``i + 2`` values in two runs."""
    return [(i, [(0, 0), (100, i)]) for i in range(n)]


def swapped(n: int, a: int, b: int) -> list[int]:
    cards = [i + 2 for i in range(n)]
    cards[a], cards[b] = cards[b], cards[a]
    return cards


# -- swapped cardinalities ----------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 16, 17, 300])
def test_swapped_run_cardinalities_are_rejected(n: int) -> None:
    # 2-3 containers: no offset header; 4-16: the Python walk; 17 and more: the NumPy walk.
    containers = run_containers(n)
    good = bitmap32(containers)
    assert puffin.DeletionVector.deserialize_portable(portable64(good)).cardinality == sum(
        i + 2 for i in range(n)
    )
    bad = bitmap32(containers, swapped(n, 0, n - 1))
    assert len(BitMap.deserialize(bad)) == len(BitMap.deserialize(good))  # pyroaring: fine
    at = 12 + 4 + (n + 7) // 8 + 2  # count and key, cookie, run flags, first key
    with pytest.raises(DeletionVectorError,
                       match=f"run container 0 has cardinality {n + 1} in the header, its "
                             rf"runs hold 2 values \(at byte {at} of the payload\)"):
        puffin.DeletionVector.deserialize_portable(portable64(bad))
    with pytest.raises(DeletionVectorError, match="run container 0 has cardinality"):
        puffin.DeletionVector.deserialize(payload(portable64(bad)))


def test_both_walks_give_the_same_verdict() -> None:
    saved = r64._SMALL_BITMAP
    verdicts = []
    for threshold in (1 << 20, 0):
        r64._SMALL_BITMAP = threshold
        try:
            for n in (4, 40):
                for a, b in ((0, 1), (1, n - 1), (n - 2, n - 1)):
                    bad = bitmap32(run_containers(n), swapped(n, a, b))
                    with pytest.raises(DeletionVectorError) as info:
                        r64.scan32(bad, 0, len(bad))
                    verdicts.append(str(info.value))
        finally:
            r64._SMALL_BITMAP = saved
    half = len(verdicts) // 2
    assert verdicts[:half] == verdicts[half:]


@pytest.mark.parametrize("n", [3, 10, 40])
def test_every_single_card_edit_of_a_run_container_is_rejected(n: int) -> None:
    containers = run_containers(n)
    for i in range(n):
        for delta in (-1, 1, 1000):
            cards = [c + 2 for c in range(n)]
            cards[i] += delta
            bad = bitmap32(containers, cards)
            with pytest.raises(DeletionVectorError, match=f"run container {i} has cardinality"):
                r64.scan32(bad, 0, len(bad))


def test_run_container_without_runs_is_rejected() -> None:
    for n in (1, 20):
        containers: list[tuple[int, Runs]] = [(i, [(5, 3)]) for i in range(n)]
        containers[-1] = (n - 1, [])
        bad = bitmap32(containers, [4] * n)
        with pytest.raises(DeletionVectorError,
                           match=f"run container {n - 1} has cardinality 4 in the header, "
                                 "its runs hold 0 values"):
            puffin.DeletionVector.deserialize_portable(portable64(bad))


def test_bitset_cardinality_is_still_checked() -> None:
    data = bytearray(BitMap(range(0, 20_000, 2)).serialize())
    struct.pack_into("<H", data, 10, 9_000)  # header: 9,001 values; the bitset holds 10,000
    with pytest.raises(DeletionVectorError, match="invalid Roaring bitmap"):
        puffin.DeletionVector.deserialize_portable(portable64(bytes(data)))


def test_error_in_a_file_carries_the_file_offset(tmp_path: Path) -> None:
    n = 5
    path = tmp_path / "dv.puffin"
    bad = payload(portable64(bitmap32(run_containers(n), swapped(n, 1, 3))))
    write_dv_file(path, bad, cardinality=sum(i + 2 for i in range(n)))
    with puffin.open(path) as reader:
        start = reader.blobs[0].offset
    with pytest.raises(DeletionVectorError, match="run container 1 has cardinality") as info:
        puffin.read_deletion_vectors(path)
    assert info.value.offset == start and info.value.blob_index == 0
    (problem,) = puffin.verify_file(path)
    assert problem.category == "deletion-vector" and problem.offset == start


def write_dv_file(path: Path, dv_payload: bytes, *, cardinality: int) -> Path:
    """A Puffin file holding ``dv_payload`` as its one deletion vector, footer as the spec says."""
    with puffin.create(path) as writer:
        writer.add_blob(dv_payload, type="deletion-vector-v1", fields=[2147483645],
                        snapshot_id=-1, sequence_number=-1,
                        properties={"referenced-data-file": "f.parquet",
                                    "cardinality": str(cardinality)})
    return path


# -- what must still be accepted ----------------------------------------------------------


def _java_payloads() -> Iterator[Path]:
    yield from sorted((TESTDATA / "iceberg-java" / "deletes").glob("*position-index.bin"))


@pytest.mark.parametrize("path", list(_java_payloads()), ids=lambda p: p.name)
def test_java_payloads_accepted_byte_for_byte(path: Path) -> None:
    data = path.read_bytes()
    assert puffin.DeletionVector.deserialize(data).serialize() == data


@pytest.mark.parametrize(
    "path",
    [TESTDATA / "iceberg-java" / "deletes" / f"64map{name}.bin"
     for name in ("empty", "32bitvals", "spreadvals")]
    + [TESTDATA / "roaring-format-spec" / name
       for name in ("bitmap64.bin", "portable_bitmap64.bin")],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_portable_golden_files_still_decode_as_pyroaring_does(path: Path) -> None:
    data = path.read_bytes()
    ours = puffin.DeletionVector.deserialize_portable(data).to_numpy()
    oracle = np.array(BitMap64.deserialize(data).to_array(), dtype=np.int64)
    assert np.array_equal(ours, oracle)


@pytest.mark.parametrize("name", ["bitmapwithruns.bin", "bitmapwithoutruns.bin"])
def test_croaring_32bit_golden_files_pass_the_walk(name: str) -> None:
    data = (TESTDATA / "croaring" / name).read_bytes()
    scan = r64.scan32(data, 0, len(data))
    assert scan.size == len(data) and scan.cardinality == len(BitMap.deserialize(data))


def test_random_bitmaps_with_runs_are_accepted() -> None:
    rng = np.random.default_rng(16)
    for _ in range(30):
        bitmap = BitMap()
        for _ in range(int(rng.integers(1, 60))):
            start = int(rng.integers(0, 1 << 24))
            bitmap.add_range(start, start + int(rng.integers(1, 5000)))
        bitmap.update(rng.integers(0, 1 << 24, int(rng.integers(0, 3000))).tolist())
        dv = puffin.DeletionVector(bitmap)
        data = dv.serialize()
        assert puffin.DeletionVector.deserialize(data) == dv


# -- memory --------------------------------------------------------------------------------

_CHILD = r"""
import json, sys
import psutil
import puffin

base_rss = psutil.Process().memory_info().rss
try:
    dvs = puffin.read_deletion_vectors(sys.argv[1])
    outcome = f"ok {sum(len(dv) for dv in dvs.values())}"
except puffin.PuffinError as exc:
    outcome = type(exc).__name__ + ": " + str(exc)
with open("/proc/self/status") as status:
    peak_rss = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmHWM:"))
print(json.dumps({"outcome": outcome, "peak_rss": peak_rss, "base_rss": base_rss}))
"""


def _measure(path: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    print(f"\n{path.name}: {result['outcome'][:70]!r} peak RSS {result['peak_rss'] / MiB:.0f} "
          f"MiB (baseline {result['base_rss'] / MiB:.0f} MiB)")
    return result


def _most_runs_file(path: Path, last_card: int) -> Path:
    """500 run containers of 32,768 single-value runs: 64 MiB of runs, 16 M values."""
    n, runs = 500, 32_768
    run_bytes = np.zeros((runs, 2), dtype="<u2")
    run_bytes[:, 0] = np.arange(0, 2 * runs, 2)
    body = struct.pack("<H", runs) + run_bytes.tobytes()
    head = bytearray(struct.pack("<I", r64.SERIAL_COOKIE | (n - 1) << 16))
    head += bytes([0xFF] * ((n + 7) // 8))
    for key in range(n):
        head += struct.pack("<HH", key, (last_card if key == n - 1 else runs) - 1)
    at = len(head) + 4 * n
    head += np.arange(at, at + n * len(body), len(body), dtype="<u4").tobytes()
    body64 = portable64(bytes(head) + body * n)
    return write_dv_file(path, payload(body64), cardinality=n * runs)


def test_most_runs_a_blob_can_hold_stay_under_budget(tmp_path: Path) -> None:
    result = _measure(_most_runs_file(tmp_path / "runs.puffin", 32_768))
    assert result["outcome"] == f"ok {500 * 32_768}", result
    assert result["peak_rss"] < 256 * MiB, result
    result = _measure(_most_runs_file(tmp_path / "runs-last-bad.puffin", 32_767))
    assert "run container 499 has cardinality 32767" in result["outcome"], result
    assert result["peak_rss"] < 256 * MiB, result
