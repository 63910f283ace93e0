"""Our DV bytes against Java's RoaringBitmap, the library Iceberg Java serializes with.

A small Java program (written to a temporary folder, run with Java's single-file source
launcher against the RoaringBitmap jar that ships with pyspark) builds each position set
the way Iceberg's ``RoaringPositionBitmap`` does (``add`` per position into one
``RoaringBitmap`` per key, a bitmap for every key up to the largest, ``runOptimize``) and
frames it as ``BitmapPositionDeleteIndex`` does (length, magic, little-endian body,
CRC-32).  The cases aim at RoaringBitmap's container choices: run/array size ties,
bitsets near the 2047-run threshold, full containers, key boundaries.  Skipped when Java or
the jar is missing.  Budget: about 5 s (JVM start and compile).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

import puffin
from puffin import DeletionVector

pytestmark = [pytest.mark.slow, pytest.mark.java]

JAVA_SOURCE = r"""
import java.io.*;
import java.nio.*;
import java.util.*;
import java.util.zip.CRC32;
import org.roaringbitmap.RoaringBitmap;

public class DvOracle {
  public static void main(String[] args) throws Exception {
    DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(args[0])));
    PrintStream out = new PrintStream(new BufferedOutputStream(new FileOutputStream(args[1])));
    int cases = in.readInt();
    for (int c = 0; c < cases; c++) {
      long n = in.readLong();
      List<RoaringBitmap> bitmaps = new ArrayList<>();
      for (long i = 0; i < n; i++) {
        long pos = in.readLong();
        int key = (int) (pos >> 32);
        while (bitmaps.size() < key + 1) bitmaps.add(new RoaringBitmap());
        bitmaps.get(key).add((int) pos);
      }
      long size = 8;
      for (RoaringBitmap b : bitmaps) { b.runOptimize(); size += 4 + b.serializedSizeInBytes(); }
      ByteBuffer buf = ByteBuffer.allocate((int) (size + 12));
      buf.order(ByteOrder.BIG_ENDIAN).putInt((int) (size + 4));
      buf.put(new byte[] {(byte) 0xD1, (byte) 0xD3, 0x39, 0x64});
      buf.order(ByteOrder.LITTLE_ENDIAN).putLong(bitmaps.size());
      for (int k = 0; k < bitmaps.size(); k++) { buf.putInt(k); bitmaps.get(k).serialize(buf); }
      CRC32 crc = new CRC32();
      crc.update(buf.array(), 4, (int) (size + 4));
      buf.order(ByteOrder.BIG_ENDIAN).putInt((int) crc.getValue());
      out.println(HexFormat.of().formatHex(buf.array()));
    }
    out.close();
  }
}
"""


def roaring_jar() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("RoaringBitmap-*.jar"))
    return jars[-1] if jars else None


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique without its hash path, which is slow on large int arrays in NumPy 2.4."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))[: values.size]]


def spans(pairs: list[tuple[int, int]]) -> np.ndarray:
    return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in pairs])


def spans_of(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)])


def cases() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    out = [
        np.array([], dtype=np.int64),
        np.arange(3),  # one run of 3: run size 6 == array size 6, Java keeps the array
        np.array([0, 1, 2, 3, 10]),  # two runs, cardinality 5: another tie
        np.array([0, 1, 2, 3, 4, 10, 11]),  # run strictly smaller
        np.arange(65536),  # a full container
        np.arange(4096),  # largest array
        np.arange(0, 8194, 2),  # 4097 values: smallest bitset
        spans([((1 << 32) - 3, (1 << 32) + 3)]),  # across the key boundary
        np.array([5, (3 << 32) + 1]),  # empty bitmaps for keys 1 and 2
    ]
    for _ in range(12):  # bitsets with about 2047 runs (the run/bitset threshold)
        runs = int(rng.integers(1990, 2100))
        starts = np.sort(rng.choice(65536 // 16, runs, replace=False)) * 16
        lengths = rng.integers(2, 10, runs)
        values = sorted_unique(spans_of(starts, lengths))
        out.append(values + (int(rng.integers(0, 4)) << 16))
    for _ in range(12):  # arrays made of short runs: frequent ties
        lengths = rng.integers(1, 4, int(rng.integers(1, 1200)))
        starts = np.cumsum(lengths + rng.integers(2, 5, lengths.size)) - lengths
        out.append(spans_of(starts, lengths))
    for _ in range(12):  # mixtures over several keys
        parts = []
        for key in rng.choice(4, int(rng.integers(1, 4)), replace=False):
            base = int(key) << 32
            parts.append(base + rng.integers(0, 1 << 32, int(rng.integers(1, 3000))))
            start = int(rng.integers(0, 1 << 31))
            parts.append(base + np.arange(start, start + int(rng.integers(1, 50_000))))
            parts.append(base + rng.integers(0, 70_000, int(rng.integers(1, 20_000))))
        out.append(sorted_unique(np.concatenate(parts)))
    return [sorted_unique(c).astype(np.int64) for c in out]


def test_bytes_equal_java_roaringbitmap(tmp_path: Path) -> None:
    java, jar = shutil.which("java"), roaring_jar()
    if java is None or jar is None:
        pytest.skip("needs java and pyspark's RoaringBitmap jar")
    all_cases = cases()
    source = tmp_path / "DvOracle.java"
    source.write_text(JAVA_SOURCE)
    with open(tmp_path / "cases.bin", "wb") as f:
        f.write(struct.pack(">i", len(all_cases)))
        for positions in all_cases:
            f.write(struct.pack(">q", positions.size) + positions.astype(">i8").tobytes())
    subprocess.run(
        [java, "-cp", str(jar), str(source), str(tmp_path / "cases.bin"), str(tmp_path / "out")],
        check=True,
        timeout=120,
    )
    java_payloads = [bytes.fromhex(line) for line in (tmp_path / "out").read_text().split()]
    assert len(java_payloads) == len(all_cases)
    for i, (positions, expected) in enumerate(zip(all_cases, java_payloads, strict=True)):
        assert DeletionVector(positions).serialize() == expected, f"case {i}"
        breaks = np.flatnonzero(np.diff(positions) != 1) + 1
        if breaks.size < 5000:  # built from runs: pyroaring then holds run containers
            by_ranges = DeletionVector()
            for run in np.split(positions, breaks) if positions.size else []:
                by_ranges.add_range(int(run[0]), int(run[-1]) + 1)
            assert by_ranges.serialize() == expected, f"case {i} built from ranges"
        decoded = DeletionVector.deserialize(expected, expected_cardinality=positions.size)
        assert np.array_equal(decoded.to_numpy(), positions), f"case {i} decoded"
        assert decoded.serialize() == expected
        assert puffin.DeletionVector(decoded).serialize() == expected
