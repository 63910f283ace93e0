"""Hostile theta sketches: declared entry counts are capped before decoding, memory stays bounded.

A compressed (serial version 4) sketch packs each entry in as little as one bit, so a
zstd-compressed blob of about a kilobyte can declare tens of millions of entries; before
``Limits.max_theta_entries`` that cost 1.6 GB.  Memory is measured in a fresh subprocess
(``VmHWM``, as in test_limits.py).  The end of the file checks that a directory given to
any entry point is a clean error, never a traceback.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import puffin
from puffin.blobs.theta.files import SEED_HASH
from puffin.errors import ThetaSketchError

MiB = 1 << 20
MAX_THETA = (1 << 63) - 1
DEFAULT_CAP = puffin.Limits().max_theta_entries
#: The issue's budget for any input under the default caps.
PEAK_RSS_BUDGET = 256 * MiB


def v4_sketch(count: int, entry_bits: int, delta: int, *, theta: int = MAX_THETA) -> bytes:
    """A version 4 sketch of ``count`` equal deltas, each packed in ``entry_bits`` bits.

    ``entry_bits`` may be wider than the deltas need (Java never writes that, the format
    allows it): the widest entries make the largest payload per entry.
    """
    count_bytes = max(1, (count.bit_length() + 7) // 8)
    pre_longs = 1 if theta == MAX_THETA else 2
    head = struct.pack("<BBBBBBH", pre_longs, 4, 3, entry_bits, count_bytes, 0x1A, SEED_HASH)
    if pre_longs == 2:
        head += struct.pack("<Q", theta)
    head += count.to_bytes(count_bytes, "little")
    # Eight entries fill whole bytes: build them once and repeat.
    bits = [(delta >> (entry_bits - 1 - b)) & 1 for _ in range(8) for b in range(entry_bits)]
    pattern = np.packbits(np.array(bits, dtype=np.uint8)).tobytes()
    body = pattern * (count // 8)
    tail_bits = bits[: (count % 8) * entry_bits]
    if tail_bits:
        body += np.packbits(np.array(tail_bits, dtype=np.uint8)).tobytes()
    return head + body


def v3_sketch(hashes: np.ndarray, *, ordered: bool) -> bytes:
    """A version 3 exact-mode sketch of ``hashes`` in the order given."""
    flags = 0x0A | (0x10 if ordered else 0)
    head = struct.pack("<BBBBBBHI", 2, 3, 3, 0, 0, flags, SEED_HASH, hashes.shape[0])
    return head + struct.pack("<f", 1.0) + hashes.astype("<u8").tobytes()


def theta_file(path: Path, sketch: bytes, *, ndv: int | None = None) -> Path:
    """A Puffin file holding ``sketch`` as one zstd theta blob (as Iceberg writes them)."""
    props = {} if ndv is None else {"ndv": str(ndv)}
    with puffin.create(path) as writer:
        writer.add_blob(sketch, type="apache-datasketches-theta-v1", fields=[1], snapshot_id=1,
                        sequence_number=1, properties=props, codec="zstd")
    return path


# -- the cap ------------------------------------------------------------------------------


def test_default_cap_is_documented_value() -> None:
    assert DEFAULT_CAP == 1 << 23
    assert "max_theta_entries" in (puffin.Limits.__doc__ or "")


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_cap_is_exact_for_every_serial_version(version: int) -> None:
    sketch = puffin.ThetaSketch.from_hashes(np.arange(1, 12, dtype=np.uint64) << np.uint64(40))
    hashes = sketch.hashes
    if version == 4:
        data = sketch.serialize(compressed=True)
    elif version == 3:
        data = sketch.serialize()
    else:  # versions 1 and 2: 3 preamble longs, count at byte 8, theta at byte 16
        head = struct.pack("<BBBBBBHI", 3, version, 3, 0, 0, 0, SEED_HASH, 11)
        head += struct.pack("<fQ", 1.0, MAX_THETA // 2)
        data = head + hashes.astype("<u8").tobytes()
    assert puffin.ThetaSketch.deserialize(data, limits=puffin.Limits(max_theta_entries=11))
    with pytest.raises(ThetaSketchError, match=r"declares 11 entries, more than 10 "
                       r"\(Limits.max_theta_entries\)"):
        puffin.ThetaSketch.deserialize(data, limits=puffin.Limits(max_theta_entries=10))


def test_limits_refuse_a_negative_cap() -> None:
    with pytest.raises(ValueError, match="max_theta_entries"):
        puffin.Limits(max_theta_entries=-1)


def test_v4_count_must_fit_the_packed_bytes() -> None:
    # 40 million one-bit entries need 5 MB; 1 KB of them is a truncated sketch.
    data = v4_sketch(40_000_000, 1, 1)[:1024]
    with pytest.raises(ThetaSketchError, match="truncated sketch: 40000000 packed entries"):
        puffin.ThetaSketch.deserialize(data, limits=puffin.Limits(max_theta_entries=1 << 30))


def test_v4_decoder_across_chunk_boundaries() -> None:
    # The decoder unpacks 64 Ki entries at a time; sums carry across chunks.
    for count in (65_535, 65_536, 65_537, 3 * 65_536 + 5):
        sketch = puffin.ThetaSketch.from_hashes(
            np.arange(1, count + 1, dtype=np.uint64) * np.uint64(977), lg_k=18
        )
        assert puffin.ThetaSketch.deserialize(sketch.serialize(compressed=True)) == sketch


def test_v4_sums_past_theta_are_refused() -> None:
    # The first chunk of 64 Ki entries ends just below 2^63; the second passes theta.
    data = v4_sketch(65_536 + 2, 63, (1 << 47) - 1)
    with pytest.raises(ThetaSketchError, match="reach past theta"):
        puffin.ThetaSketch.deserialize(data)
    # Four deltas of 0x5555...: the last sum wraps around 2^64 to below theta.
    data = v4_sketch(4, 63, 0x5555555555555555)
    with pytest.raises(ThetaSketchError, match="reach past theta"):
        puffin.ThetaSketch.deserialize(data)


def test_estimate_is_the_datasketches_double() -> None:
    import datasketches

    rng = np.random.default_rng(16)
    for exp in range(3, 64, 4):
        theta = int(rng.integers(1 << (exp - 1), min(1 << exp, MAX_THETA)))
        hashes = np.unique(rng.integers(1, theta, 40, dtype=np.uint64))
        ours = puffin.ThetaSketch.deserialize(_v3_estimating(hashes, theta))
        theirs = datasketches.compact_theta_sketch.deserialize(ours.serialize())
        assert ours.estimate == theirs.get_estimate()


def _v3_estimating(hashes: np.ndarray, theta: int) -> bytes:
    head = struct.pack("<BBBBBBHI", 3, 3, 3, 0, 0, 0x1A, SEED_HASH, hashes.shape[0])
    return head + struct.pack("<fQ", 1.0, theta) + hashes.astype("<u8").tobytes()


# -- memory, in a subprocess ---------------------------------------------------------------

_CHILD = r"""
import json, sys
import psutil
import puffin

path, entry, limits_json = sys.argv[1:4]
limits = puffin.Limits(**json.loads(limits_json))
# Load the code both entry points run (NumPy, datasketches) first: the budget is for the input.
import puffin.blobs.theta.files, puffin.blobs.verify
base_rss = psutil.Process().memory_info().rss
try:
    if entry == "read_theta_blobs":
        with puffin.open(path, limits=limits) as reader:
            blobs = puffin.read_theta_blobs(reader)
        outcome = f"ok {blobs[0].sketch.num_retained}"
    else:
        problems = puffin.verify_file(path, limits=limits)
        outcome = "ok" if not problems else f"{problems[0].error}: {problems[0].message}"
except puffin.PuffinError as exc:
    outcome = type(exc).__name__ + ": " + str(exc)
with open("/proc/self/status") as status:
    peak_rss = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmHWM:"))
print(json.dumps({"outcome": outcome, "peak_rss": peak_rss, "base_rss": base_rss}))
"""


def measure(path: Path, entry: str, limits: dict[str, int] | None = None) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), entry, json.dumps(limits or {})],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    # The figures docs/reliability.md quotes (shown with pytest -s).
    print(f"\n{path.name} {entry}: {result['outcome'][:70]!r} peak RSS "
          f"{result['peak_rss'] / MiB:.0f} MiB (baseline {result['base_rss'] / MiB:.0f} MiB)")
    return result


@pytest.fixture(scope="module")
def tens_of_millions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 million one-bit entries: 5 MB of sketch, about a kilobyte of zstd."""
    path = tmp_path_factory.mktemp("theta") / "tens-of-millions.puffin"
    return theta_file(path, v4_sketch(40_000_000, 1, 1))


@pytest.mark.parametrize("entry", ["read_theta_blobs", "verify_file"])
def test_tens_of_millions_from_a_kilobyte_are_refused(tens_of_millions: Path, entry: str) -> None:
    assert tens_of_millions.stat().st_size < 2048
    result = measure(tens_of_millions, entry)
    assert "declares 40000000 entries, more than 8388608" in result["outcome"], result
    assert "ThetaSketchError" in result["outcome"], result
    assert result["peak_rss"] - result["base_rss"] < 32 * MiB, result


@pytest.fixture(scope="module")
def widest_at_the_cap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The most a sketch can make the decoder hold under the defaults: 2^23 entries of 63 bits.

    The payload is 63 MiB (under ``max_decompressed_size``) and decodes to 64 MiB of hashes.
    """
    path = tmp_path_factory.mktemp("theta") / "widest.puffin"
    return theta_file(path, v4_sketch(DEFAULT_CAP, 63, 1 << 39), ndv=DEFAULT_CAP)


@pytest.mark.parametrize("entry", ["read_theta_blobs", "verify_file"])
def test_widest_sketch_at_the_cap_stays_under_budget(widest_at_the_cap: Path, entry: str) -> None:
    result = measure(widest_at_the_cap, entry)
    assert result["outcome"] == ("ok" if entry == "verify_file" else f"ok {DEFAULT_CAP}"), result
    assert result["peak_rss"] < PEAK_RSS_BUDGET, result


@pytest.fixture(scope="module")
def largest_unordered_v3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A version 3 sketch as large as ``max_decompressed_size`` allows, unordered (sorted on
    read)."""
    count = (puffin.Limits().max_decompressed_size - 24) // 8
    hashes = np.arange(count, 0, -1, dtype=np.uint64) << np.uint64(20)
    path = tmp_path_factory.mktemp("theta") / "unordered.puffin"
    return theta_file(path, v3_sketch(hashes, ordered=False), ndv=count)


@pytest.mark.parametrize("entry", ["read_theta_blobs", "verify_file"])
def test_largest_v3_sketch_stays_under_budget(largest_unordered_v3: Path, entry: str) -> None:
    result = measure(largest_unordered_v3, entry)
    assert result["outcome"].startswith("ok"), result
    assert result["peak_rss"] < PEAK_RSS_BUDGET, result


# -- directories --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda d: puffin.open(d),
        lambda d: puffin.create(d),
        lambda d: puffin.read_deletion_vectors(d),
        lambda d: puffin.read_deletion_vector(d, 4, 12),
        lambda d: puffin.read_theta_blobs(d),
    ],
    ids=["open", "create", "read_deletion_vectors", "read_deletion_vector", "read_theta_blobs"],
)
def test_directory_is_a_clean_error(tmp_path: Path, call: Any) -> None:
    with pytest.raises((puffin.PuffinError, OSError)) as info:
        call(tmp_path)
    assert "directory" in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_verify_file_reports_a_directory(tmp_path: Path) -> None:
    (problem,) = puffin.verify_file(tmp_path)
    assert problem.category == "invalid-file" and "directory" in problem.message


@pytest.mark.parametrize(
    "argv",
    [["inspect", "{d}"], ["verify", "{d}"], ["cat", "{d}", "0"], ["dv", "{d}"],
     ["ndv", "{parquet}", "-o", "{d}"], ["ndv", "{d}"]],
    ids=["inspect", "verify", "cat", "dv", "ndv-output", "ndv-input"],
)
def test_cli_directory_is_a_message_not_a_traceback(tmp_path: Path, argv: list[str]) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    parquet = tmp_path / "x.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), parquet)
    directory = tmp_path / "d"
    directory.mkdir()
    args = [a.format(d=directory, parquet=parquet) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "puffin", *args], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode in (1, 2), (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "directory" in proc.stdout + proc.stderr
