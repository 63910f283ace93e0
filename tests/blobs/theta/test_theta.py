"""apache-datasketches-theta-v1: hashing, building, set operations and the serialized forms.

Oracles: ``datasketches`` (the C++ library: update sketches, unions, (de)serialization,
estimates), ``mmh3`` (an independent MurmurHash3), datasketches-java's documented byte layout
(EmptyCompactSketch, SingleItemSketch, loadCompactMemory), and the Puffin container API.
Test time budget: about 30 s.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import pickle
import struct
import uuid

import datasketches as ds
import mmh3
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import puffin
from puffin import (
    APACHE_DATASKETCHES_THETA_V1,
    ThetaBlob,
    ThetaSketch,
    ThetaSketchBuilder,
    ThetaSketchError,
    add_theta_blob,
    read_theta_blobs,
    serialize_value,
)
from puffin.blobs.theta.build import k_smallest_distinct
from puffin.blobs.theta.files import MAX_LG_K, MIN_LG_K, check_lg_k
from puffin.blobs.theta.murmur3 import theta_hash_lanes, theta_hash_var
from puffin.errors import UsageError

MAX_THETA = (1 << 63) - 1
K = 4096


def mmh3_theta(data: bytes) -> int:
    """The sketch hash: first 64-bit half of MurmurHash3_x64_128, seed 9001, shifted right."""
    return mmh3.hash64(data, seed=9001, signed=False)[0] >> 1


def expected_sketch(keys: list[bytes], k: int = K) -> tuple[list[int], int]:
    """Canonical sketch of serialized keys, from mmh3: k smallest distinct hashes and theta."""
    hashes = sorted({h for h in (mmh3_theta(b) for b in keys if b) if 0 < h < MAX_THETA})
    if len(hashes) <= k:
        return hashes, MAX_THETA
    return hashes[:k], hashes[k]


def ds_canonical(values: list[object], lg_k: int = 12) -> ds.compact_theta_sketch:
    """datasketches fed the same values, trimmed to k entries (what a union returns).

    Untrimmed, an update sketch in estimation mode keeps every hash below its own theta,
    between k and 15/16 * 2k of them; trimming keeps the k smallest and sets theta to the
    (k+1)-th, which is what Java's Spark action writes (it merges through a Union).
    """
    sketch = ds.update_theta_sketch(lg_k)
    for v in values:
        sketch.update(v)
    raw = sorted(sketch)
    k = 1 << lg_k
    sketch.trim()
    trimmed = sketch.compact()
    assert sorted(trimmed) == raw[:k]
    assert trimmed.theta64 == (raw[k] if len(raw) > k else sketch.theta64)
    return trimmed


def assert_same_as_ds(ours: ThetaSketch, theirs: ds.compact_theta_sketch) -> None:
    assert ours.hashes.tolist() == sorted(theirs)
    assert ours.theta64 == theirs.theta64
    assert ours.estimate == theirs.get_estimate()
    assert ours.is_empty == theirs.is_empty()
    for n in (1, 2, 3):
        assert ours.lower_bound(n) == theirs.get_lower_bound(n)
        assert ours.upper_bound(n) == theirs.get_upper_bound(n)


# -- the hash ----------------------------------------------------------------------------------


def test_seed_hash_constant() -> None:
    # Java's computeSeedHash: low 16 bits of MurmurHash3(long[]{seed}, seed 0).
    assert mmh3.hash64(struct.pack("<q", 9001), seed=0, signed=False)[0] & 0xFFFF == 0x93CC


@given(st.lists(st.binary(min_size=1, max_size=80), min_size=1, max_size=60))
def test_var_hash_matches_mmh3(keys: list[bytes]) -> None:
    buf = np.frombuffer(b"".join(keys) + bytes(16), dtype=np.uint8)
    lengths = np.array([len(k) for k in keys], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    assert theta_hash_var(buf, starts, lengths).tolist() == [mmh3_theta(k) for k in keys]


@given(st.integers(1, 16), st.lists(st.binary(min_size=16, max_size=16), min_size=1, max_size=40))
def test_lane_hash_matches_mmh3(length: int, raw: list[bytes]) -> None:
    keys = [r[:length] for r in raw]
    padded = np.frombuffer(b"".join(k + bytes(16 - length) for k in keys), dtype="<u8").reshape(
        -1, 2
    )
    lo = np.ascontiguousarray(padded[:, 0])
    hi = np.ascontiguousarray(padded[:, 1]) if length > 8 else None
    assert theta_hash_lanes(lo, hi, length).tolist() == [mmh3_theta(k) for k in keys]


def _lanes(keys: list[bytes], length: int) -> tuple[np.ndarray, np.ndarray | None]:
    padded = np.frombuffer(b"".join(k + bytes(16 - length) for k in keys), dtype="<u8")
    padded = padded.reshape(-1, 2)
    lo = np.ascontiguousarray(padded[:, 0])
    return lo, (np.ascontiguousarray(padded[:, 1]) if length > 8 else None)


def _bounds(full: list[int], pick: int, top: int) -> list[int]:
    """Bounds that probe the filter's edges: at, just above and just below actual hashes,
    around the point where the window stops applying, and the extremes."""
    around = [full[pick % len(full)] + d for d in (-1, 0, 1)] if full else []
    edge = top - (top >> 31)  # below this the window applies (2^63 - 2^32 for theta hashes)
    return [b for b in [0, 1, 2, *around, edge - 1, edge, edge + 1, top - 1] if 0 <= b < top]


@settings(max_examples=60)
@given(
    st.integers(1, 16),
    st.lists(st.binary(min_size=16, max_size=16), min_size=1, max_size=300),
    st.integers(0, 10**6),
    st.booleans(),
)
def test_lane_hash_below_is_a_filter(length: int, raw: list[bytes], pick: int, shift: bool) -> None:
    # ``below`` takes a shortcut through the finalizer (a window around (eA + eB) * F2); the
    # result must be exactly the full hashes under the bound, for every bound.
    keys = [r[:length] for r in raw]
    lo, hi = _lanes(keys, length)
    full = theta_hash_lanes(lo, hi, length, shift=shift).tolist()
    top = 1 << (63 if shift else 64)
    for bound in _bounds(sorted(full), pick, top):
        got = theta_hash_lanes(lo, hi, length, shift=shift, below=bound).tolist()
        assert got == [h for h in full if h < bound], bound


@settings(max_examples=40)
@given(
    st.lists(st.binary(min_size=1, max_size=70), min_size=1, max_size=200),
    st.integers(0, 10**6),
)
def test_var_hash_below_is_a_filter(keys: list[bytes], pick: int) -> None:
    buf = np.frombuffer(b"".join(keys) + bytes(16), dtype=np.uint8)
    lengths = np.array([len(k) for k in keys], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    full = theta_hash_var(buf, starts, lengths).tolist()
    for bound in _bounds(sorted(full), pick, 1 << 63):
        got = theta_hash_var(buf, starts, lengths, below=bound).tolist()
        assert sorted(got) == sorted(h for h in full if h < bound), bound


# 8-byte keys (little-endian longs) whose raw h1 is below 2^33 (one in 2^31), found by a
# brute-force search; for several, (eA + eB) * F2 lies above h1, so only the upper half of
# the window catches them.
_SMALL_H1_KEYS = [
    1070264681, 4343666897, 10487141905, 10658693194, 12670943927, 18190321076, 22496734705,
    22714733404, 25831370552, 31292460702, 32298473870, 35555881578, 38232199706, 41350004360,
]


def test_hash_below_keeps_keys_at_the_edge_of_the_window() -> None:
    lo = np.array(_SMALL_H1_KEYS, dtype=np.uint64)
    raw = theta_hash_lanes(lo, None, 8, shift=False).tolist()
    assert raw == [mmh3.hash64(struct.pack("<q", k), seed=9001, signed=False)[0] for k in lo]
    assert max(raw) < 1 << 33
    for h in raw:
        for bound in (h, h + 1, h + (1 << 32), 1 << 33):
            got = theta_hash_lanes(lo, None, 8, shift=False, below=bound).tolist()
            assert got == [x for x in raw if x < bound]
            theta = theta_hash_lanes(lo, None, 8, below=bound >> 1).tolist()
            assert theta == [x >> 1 for x in raw if x >> 1 < bound >> 1]


def test_hash_below_rejects_bounds_outside_uint64() -> None:
    lo = np.arange(3, dtype=np.uint64)
    for bad in (-1, 1 << 64):
        with pytest.raises(ValueError, match="below"):
            theta_hash_lanes(lo, None, 8, below=bad)


def test_datasketches_hashes_long_and_string_like_iceberg() -> None:
    # The premise of the datasketches oracle: it hashes ints as 8-byte LE and str as UTF-8.
    sketch = ds.update_theta_sketch()
    sketch.update(-5)
    sketch.update("h\u00e9")
    assert sorted(sketch) == sorted(
        [mmh3_theta(struct.pack("<q", -5)), mmh3_theta("h\u00e9".encode())]
    )


# -- building: datasketches oracle for long / timestamp / string ------------------------------


@pytest.mark.parametrize("cardinality", [0, 1, 2, 100, K, K + 1, 3 * K, 200_000])
def test_long_column_matches_datasketches(cardinality: int) -> None:
    rng = np.random.default_rng(cardinality)
    pool = rng.integers(-(2**63), 2**63 - 1, size=max(cardinality, 1), dtype=np.int64)
    values = (
        pool[rng.integers(0, max(cardinality, 1), size=2 * cardinality)]
        if cardinality
        else pool[:0]
    )
    theirs = ds_canonical(values.tolist())
    for threads in (1, 2):
        ours = ThetaSketch.from_values(values, "long", threads=threads)
        assert_same_as_ds(ours, theirs)
    assert_same_as_ds(ThetaSketch.from_values(pa.array(values), "long"), theirs)


@pytest.mark.parametrize("size", [50, 5000, 60_000])
def test_timestamp_column_matches_datasketches(size: int) -> None:
    rng = np.random.default_rng(size)
    micros = rng.integers(0, 2_000_000_000_000_000, size=size)
    theirs = ds_canonical(micros.tolist())
    assert_same_as_ds(ThetaSketch.from_values(micros.astype("datetime64[us]"), "timestamp"), theirs)
    assert_same_as_ds(
        ThetaSketch.from_values(pa.array(micros, pa.timestamp("us", "UTC")), "timestamptz"), theirs
    )
    stamps = [dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(m)) for m in micros[:200]]
    assert_same_as_ds(
        ThetaSketch.from_values(stamps, "timestamp"), ds_canonical(micros[:200].tolist())
    )


@pytest.mark.parametrize("size", [0, 10, 4096, 50_000])
def test_string_column_matches_datasketches(size: int) -> None:
    rng = np.random.default_rng(size)
    words = [f"w{v}\u00e9" * int(v % 7) for v in rng.integers(0, 10**9, size=size).tolist()]
    words += ["", "", None] if size else []  # empty strings are ignored, nulls skipped
    theirs = ds_canonical([w for w in words if w is not None])
    assert_same_as_ds(ThetaSketch.from_values(pa.array(words), "string"), theirs)
    assert_same_as_ds(ThetaSketch.from_values(words, "string", threads=1), theirs)
    chunks = pa.chunked_array([words[: size // 3], words[size // 3 :]], pa.large_string())
    assert_same_as_ds(ThetaSketch.from_values(chunks, "string"), theirs)


def test_only_nulls_and_empty_strings_is_empty() -> None:
    sketch = ThetaSketch.from_values(["", None, ""], "string")
    assert sketch.is_empty and sketch.estimate == 0.0 and sketch.num_retained == 0
    assert ThetaSketch.from_values(pa.array([None, None], pa.int64()), "long").is_empty


# -- building: mmh3 oracle for every other type ---------------------------------------------------

_OTHER_TYPES = [
    ("boolean", st.booleans(), pa.bool_()),
    ("int", st.integers(-(2**31), 2**31 - 1), pa.int32()),
    ("float", st.floats(width=32), pa.float32()),
    ("double", st.floats(), pa.float64()),
    ("date", st.dates(), pa.date32()),
    ("time", st.times(), pa.time64("us")),
    ("timestamp_ns", st.integers(-(2**63), 2**63 - 1), pa.int64()),
    ("uuid", st.uuids(), None),
    ("binary", st.binary(max_size=40), pa.binary()),
    ("fixed[3]", st.binary(min_size=3, max_size=3), pa.binary(3)),
    ("fixed[12]", st.binary(min_size=12, max_size=12), pa.binary(12)),
    ("fixed[16]", st.binary(min_size=16, max_size=16), pa.binary(16)),
    ("fixed[21]", st.binary(min_size=21, max_size=21), pa.binary(21)),
    (
        "decimal(9,2)",
        st.decimals(places=2, min_value=-9999999, max_value=9999999),
        pa.decimal128(9, 2),
    ),
    (
        "decimal(38,0)",
        st.integers(-(10**38) + 1, 10**38 - 1).map(decimal.Decimal),
        pa.decimal128(38, 0),
    ),
]


@pytest.mark.parametrize(
    ("type_", "strategy", "arrow_type"), _OTHER_TYPES, ids=[c[0] for c in _OTHER_TYPES]
)
def test_exact_mode_is_the_set_of_mmh3_hashes(
    type_: str, strategy: st.SearchStrategy[object], arrow_type: object
) -> None:
    @settings(max_examples=25)
    @given(st.lists(st.one_of(st.none(), strategy), max_size=50))
    def check(values: list[object]) -> None:
        keys = [serialize_value(v, type_) for v in values if v is not None]
        hashes, theta = expected_sketch(keys)
        ours = ThetaSketch.from_values(values, type_)
        assert ours.hashes.tolist() == hashes and ours.theta64 == theta == MAX_THETA
        if arrow_type is not None:
            assert ThetaSketch.from_values(pa.array(values, arrow_type), type_) == ours

    check()


@pytest.mark.parametrize(
    ("type_", "make"),
    [
        ("int", lambda r, n: r.integers(-(2**31), 2**31 - 1, size=n, dtype=np.int32)),
        ("date", lambda r, n: r.integers(-50_000, 50_000, size=n).astype("datetime64[D]")),
        ("double", lambda r, n: r.standard_normal(n)),
        ("float", lambda r, n: r.standard_normal(n).astype(np.float32)),
        ("uuid", lambda r, n: r.integers(0, 256, size=(n, 16), dtype=np.uint8)),
        ("time", lambda r, n: r.integers(0, 86_400_000_000, size=n).astype("timedelta64[us]")),
        (
            "timestamp_ns",
            lambda r, n: pa.array(r.integers(-(2**62), 2**62, size=n), pa.timestamp("ns")),
        ),
        (
            "timestamptz_ns",
            lambda r, n: r.integers(-(2**62), 2**62, size=n).astype("datetime64[ns]"),
        ),
        (
            "binary",
            lambda r, n: pa.array(
                [
                    bytes(r.integers(0, 256, size=int(r.integers(0, 40)), dtype=np.uint8))
                    for _ in range(n)
                ]
            ),
        ),
        ("fixed[3]", lambda r, n: r.integers(0, 256, size=(n, 3), dtype=np.uint8)),
        ("fixed[12]", lambda r, n: r.integers(0, 256, size=(n, 12), dtype=np.uint8)),
        (
            "fixed[21]",
            lambda r, n: pa.array(
                [bytes(x) for x in r.integers(0, 256, size=(n, 21), dtype=np.uint8)], pa.binary(21)
            ),
        ),
        (
            "decimal(18,3)",
            lambda r, n: pa.array(
                [
                    decimal.Decimal(v).scaleb(-3)
                    for v in r.integers(-(10**15), 10**15, size=n).tolist()
                ],
                pa.decimal128(18, 3),
            ),
        ),
        (
            "string",
            lambda r, n: pa.array([f"{v:x}" for v in r.integers(0, 2**40, size=n).tolist()]),
        ),
    ],
)
def test_estimation_mode_keeps_k_smallest_mmh3_hashes(type_: str, make: object) -> None:
    rng = np.random.default_rng(7)
    values = make(rng, 20_000)  # type: ignore[operator]
    keys = [b for b in puffin.serialize_values(values, type_) if b is not None]
    hashes, theta = expected_sketch(keys)
    ours = ThetaSketch.from_values(values, type_)
    assert ours.num_retained == K and ours.theta64 == theta
    assert ours.hashes.tolist() == hashes
    small = ThetaSketch.from_values(values, type_, lg_k=5)
    assert small.hashes.tolist(), small.theta64 == expected_sketch(keys, 32)


def test_float_nan_and_negative_zero() -> None:
    nans = np.array([np.nan, -np.nan, struct.unpack("<d", bytes.fromhex("0100000000f0ff7f"))[0]])
    assert ThetaSketch.from_values(nans, "double").num_retained == 1  # one canonical NaN
    assert ThetaSketch.from_values(np.array([0.0, -0.0]), "double").num_retained == 2  # as Java
    expected = mmh3_theta(bytes.fromhex("0000c07f"))
    assert ThetaSketch.from_values(nans, "float").hashes.tolist() == [expected]


def test_builder_streams_and_is_deterministic() -> None:
    rng = np.random.default_rng(11)
    values = rng.integers(0, 50_000, size=300_000)
    whole = ThetaSketch.from_values(values, "long", threads=1)
    builder = ThetaSketchBuilder("long", threads=2)
    for part in np.array_split(values, 7):
        builder.update(part)
    assert builder.result() == whole
    builder.update(np.array([], dtype=np.int64))
    assert builder.result() == whole  # result() does not consume the builder
    again = ThetaSketchBuilder("long").update_hashes(whole.hashes).result()
    assert again.hashes.tolist() == whole.hashes.tolist()


def test_k_smallest_distinct_with_many_repeats() -> None:
    pool = np.repeat(np.arange(1, 100, dtype=np.uint64), 500)
    kept, theta = k_smallest_distinct(np.random.default_rng(1).permutation(pool), 32)
    assert kept.tolist() == list(range(1, 33)) and theta == 33


@pytest.mark.parametrize("lg_k", [4, 27, True, 12.0])
def test_lg_k_is_validated(lg_k: object) -> None:
    with pytest.raises(ValueError):
        ThetaSketch.from_values([1], "long", lg_k=lg_k)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=f"from {MIN_LG_K} to {MAX_LG_K}, got {lg_k!r}"):
        check_lg_k(lg_k)  # type: ignore[arg-type]
    assert check_lg_k(MIN_LG_K) == MIN_LG_K and check_lg_k(MAX_LG_K) == MAX_LG_K


def test_bounds_validate_num_std_devs() -> None:
    sketch = ThetaSketch.from_values([1, 2], "long")
    with pytest.raises(ValueError):
        sketch.lower_bound(4)


# -- union -------------------------------------------------------------------------------------

_columns = st.lists(st.integers(0, 30_000), max_size=9000)


@settings(max_examples=20)
@given(_columns, _columns, _columns, st.sampled_from([5, 8, 12]))
def test_union_laws_and_concatenation(a: list[int], b: list[int], c: list[int], lg_k: int) -> None:
    sa, sb, sc = (
        ThetaSketch.from_values(np.array(x, dtype=np.int64), "long", lg_k=lg_k) for x in (a, b, c)
    )
    assert sa.union(sb) == sb.union(sa)
    assert sa.union(sb).union(sc) == sa.union(sb.union(sc)) == ThetaSketch.union(sa, sb, sc)
    assert ThetaSketch.union(sa, sb, sc) == ThetaSketch.from_values(
        np.array(a + b + c, dtype=np.int64), "long", lg_k=lg_k
    )
    # and it is what a datasketches union returns
    union = ds.theta_union(lg_k)
    for s in (sa, sb, sc):
        union.update(s.to_datasketches())
    assert_same_as_ds(ThetaSketch.union(sa, sb, sc), union.get_result())


@settings(max_examples=30)
@given(st.integers(0, 200_000), st.integers(0, 2**32), st.sampled_from([5, 9, 12]))
def test_estimate_within_three_sigma(n: int, seed: int, lg_k: int) -> None:
    values = np.random.default_rng(seed).permutation(n).astype(np.int64)
    sketch = ThetaSketch.from_values(values, "long", lg_k=lg_k)
    assert sketch.lower_bound(3) <= n <= sketch.upper_bound(3)
    assert sketch.lower_bound(1) <= sketch.estimate <= sketch.upper_bound(1)
    assert sketch.is_estimation_mode == (n > (1 << lg_k))


def test_union_accepts_bytes_and_datasketches() -> None:
    a = ThetaSketch.from_values(np.arange(10_000), "long")
    b = ds.update_theta_sketch()
    for v in range(5_000, 20_000):
        b.update(v)
    expected = ds.theta_union()
    expected.update(a.to_datasketches())
    expected.update(b)
    assert_same_as_ds(a.union(b), expected.get_result())
    assert_same_as_ds(a.union(b.compact().serialize()), expected.get_result())
    assert a.union(ThetaSketch()) == a and ThetaSketch().union(ThetaSketch()).is_empty
    assert a.union(a, lg_k=5).num_retained == 32
    with pytest.raises(TypeError):
        a.union(42)


# -- serialization ---------------------------------------------------------------------------


def test_java_byte_layout() -> None:
    # EmptyCompactSketch.EMPTY_COMPACT_SKETCH_ARR
    assert ThetaSketch().serialize() == bytes([1, 3, 3, 0, 0, 0x1E, 0, 0])
    # SingleItemSketch: preLongs 1, flags read-only|compact|ordered|single-item, then the hash
    one = ThetaSketch.from_values([7], "long")
    h = mmh3_theta(struct.pack("<q", 7))
    assert one.serialize() == bytes([1, 3, 3, 0, 0, 0x3A, 0xCC, 0x93]) + struct.pack("<Q", h)
    # loadCompactMemory: count, p = 1.0f, theta (estimation only), ascending hashes
    exact = ThetaSketch.from_values([7, 8], "long")
    assert exact.serialize() == (
        bytes([2, 3, 3, 0, 0, 0x1A, 0xCC, 0x93])
        + struct.pack("<If", 2, 1.0)
        + struct.pack("<2Q", *sorted([h, mmh3_theta(struct.pack("<q", 8))]))
    )
    est = ThetaSketch.from_values(np.arange(10_000), "long")
    data = est.serialize()
    assert data[:8] == bytes([3, 3, 3, 0, 0, 0x1A, 0xCC, 0x93])
    assert struct.unpack_from("<IfQ", data, 8) == (K, 1.0, est.theta64)
    assert np.frombuffer(data, "<u8", offset=24).tolist() == est.hashes.tolist()


@pytest.mark.parametrize("n", [0, 1, 2, 3000, 50_000])
def test_datasketches_reads_our_bytes(n: int) -> None:
    ours = ThetaSketch.from_values(np.arange(n, dtype=np.int64) * 7919, "long")
    theirs = ds.compact_theta_sketch.deserialize(ours.serialize())
    assert_same_as_ds(ours, theirs)
    # C++ writes p = 0 and no single-item flag (and keeps the seed hash it read, 0 in an
    # empty sketch); otherwise its re-serialization is byte for byte ours.
    cpp = bytearray(theirs.serialize())
    mine = bytearray(ours.serialize())
    if n == 1:
        mine[5] &= ~0x20
    elif n >= 2:
        mine[12:16] = bytes(4)
    assert bytes(cpp) == bytes(mine)
    assert (
        ds.compact_theta_sketch.deserialize(ours.serialize(compressed=True)).get_estimate()
        == ours.estimate
    )


@pytest.mark.parametrize("n", [0, 1, 2, 7, 8, 9, 3000, 50_000])
def test_we_read_datasketches_v3_and_v4(n: int) -> None:
    update = ds.update_theta_sketch()
    for v in range(n):
        update.update(v * 31)
    for compact in (update.compact(), update.compact(False)):
        for compressed in (False, True):
            data = compact.serialize(compressed)
            ours = ThetaSketch.deserialize(data)
            assert ours.hashes.tolist() == sorted(compact) and ours.theta64 == compact.theta64
            assert ours.estimate == compact.get_estimate()
    # and our compressed form is byte for byte the C++ one (v4 is used from 2 entries on)
    if n >= 2:
        assert ThetaSketch.from_datasketches(update).serialize(
            compressed=True
        ) == update.compact().serialize(True)


def _v1(hashes: list[int], theta: int = MAX_THETA, family: int = 3) -> bytes:
    return (
        bytes([3, 1, family, 0, 0, 0, 0, 0])
        + struct.pack("<IIQ", len(hashes), 0, theta)
        + b"".join(struct.pack("<Q", h) for h in hashes)
    )


def _v2(hashes: list[int], theta: int | None, seed_hash: int = 0x93CC) -> bytes:
    pre = 2 if theta is None else 3
    head = bytes([pre, 2, 3, 0, 0, 0]) + struct.pack("<HII", seed_hash, len(hashes), 0)
    if theta is not None:
        head += struct.pack("<Q", theta)
    return head + b"".join(struct.pack("<Q", h) for h in hashes)


@pytest.mark.parametrize("theta", [MAX_THETA, 1 << 62])
def test_legacy_versions_read_like_datasketches(theta: int) -> None:
    hashes = sorted(mmh3_theta(struct.pack("<q", i)) for i in range(40))
    hashes = [h for h in hashes if h < theta]
    for data in (
        _v1(hashes, theta),
        _v2(hashes, theta),
        _v2(hashes, None) if theta == MAX_THETA else _v2(hashes, theta),
    ):
        ours = ThetaSketch.deserialize(data)
        theirs = ds.compact_theta_sketch.deserialize(data)
        assert ours.hashes.tolist() == sorted(theirs) and ours.theta64 == theirs.theta64
    assert ThetaSketch.deserialize(_v1([])).is_empty
    assert ThetaSketch.deserialize(bytes([1, 2, 3, 0, 0, 0, 0, 0])).is_empty


def _valid_samples() -> list[bytes]:
    est = ThetaSketch.from_values(np.arange(5000), "long", lg_k=5)
    exact = ThetaSketch.from_values(np.arange(20), "long")
    one = ThetaSketch.from_values([1], "long")
    return [
        est.serialize(),
        exact.serialize(),
        one.serialize(),
        ThetaSketch().serialize(),
        est.serialize(compressed=True),
        exact.serialize(compressed=True),
        _v1(exact.hashes.tolist()),
        _v2(exact.hashes.tolist(), None),
        _v2(est.hashes.tolist(), est.theta64),
    ]


def test_every_truncation_and_extension_is_rejected() -> None:
    for data in _valid_samples():
        ThetaSketch.deserialize(data)
        for cut in range(len(data)):
            with pytest.raises(ThetaSketchError, match=r"at byte \d+ of the sketch") as info:
                ThetaSketch.deserialize(data[:cut])
            assert info.value.offset is None  # a payload position is not a file offset
        with pytest.raises(ThetaSketchError, match="unexpected bytes"):
            ThetaSketch.deserialize(data + b"\x00")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ((1, 5), "serial version"),
        ((1, 0), "serial version"),
        ((2, 2), "family"),
        ((0, 4), "preamble longs"),
        ((5, 0x18), "compact/read-only"),
        ((5, 0x1B), "big-endian"),
        ((6, 0x00), "seed hash"),
    ],
)
def test_header_corruptions(patch: tuple[int, int], message: str) -> None:
    data = bytearray(ThetaSketch.from_values(np.arange(5000), "long", lg_k=5).serialize())
    data[patch[0]] = patch[1]
    with pytest.raises(ThetaSketchError, match=message):
        ThetaSketch.deserialize(bytes(data))


def test_content_corruptions() -> None:
    est = bytearray(ThetaSketch.from_values(np.arange(5000), "long", lg_k=5).serialize())
    huge = bytearray(est)
    struct.pack_into("<I", huge, 8, 0xFFFFFFFF)  # claims 4 G entries: refused before allocating
    with pytest.raises(ThetaSketchError, match="truncated"):
        ThetaSketch.deserialize(bytes(huge))
    zero_theta = bytearray(est)
    struct.pack_into("<Q", zero_theta, 16, 0)
    with pytest.raises(ThetaSketchError, match="theta"):
        ThetaSketch.deserialize(bytes(zero_theta))
    above = bytearray(est)
    struct.pack_into("<Q", above, 24 + 8 * 31, MAX_THETA)
    at_entry_31 = rf"entry 31 is not in .*at byte {24 + 8 * 31} of the sketch"
    with pytest.raises(ThetaSketchError, match=at_entry_31):
        ThetaSketch.deserialize(bytes(above))
    swapped = bytearray(est)
    swapped[24:32], swapped[32:40] = est[32:40], est[24:32]
    with pytest.raises(ThetaSketchError, match="out of order"):
        ThetaSketch.deserialize(bytes(swapped))
    repeated = bytearray(est)
    repeated[32:40] = est[24:32]
    with pytest.raises(ThetaSketchError, match="repeats"):
        ThetaSketch.deserialize(bytes(repeated))
    # unordered sketches are sorted on read, repeats still refused
    unordered = bytearray(swapped)
    unordered[5] &= ~0x10
    assert (
        ThetaSketch.deserialize(bytes(unordered)).hashes.tolist()
        == ThetaSketch.deserialize(bytes(est)).hashes.tolist()
    )
    empty_with_count = bytes([2, 3, 3, 0, 0, 0x1E, 0, 0]) + struct.pack("<If", 3, 1.0)
    with pytest.raises(ThetaSketchError, match="empty sketch claims"):
        ThetaSketch.deserialize(empty_with_count)
    with pytest.raises(ThetaSketchError, match="seed hash"):
        ThetaSketch.deserialize(_v2([5, 6], None, seed_hash=0x1234))


def test_v4_corruptions() -> None:
    v4 = bytearray(
        ThetaSketch.from_values(np.arange(5000), "long", lg_k=5).serialize(compressed=True)
    )
    for index, value, message in (
        (3, 0, "entry bits"),
        (3, 64, "entry bits"),
        (4, 0, "entry-count"),
        (4, 5, "entry-count"),
        (0, 3, "preamble"),
        (6, 0, "seed hash"),
    ):
        bad = bytearray(v4)
        bad[index] = value
        with pytest.raises(ThetaSketchError, match=message):
            ThetaSketch.deserialize(bytes(bad))
    tiny_theta = bytearray(v4)
    struct.pack_into("<Q", tiny_theta, 8, 5)
    with pytest.raises(ThetaSketchError, match="past theta"):
        ThetaSketch.deserialize(bytes(tiny_theta))
    zero_delta = bytearray(
        ThetaSketch.from_values(np.arange(20), "long").serialize(compressed=True)
    )
    zero_delta[9:] = bytes(len(zero_delta) - 9)  # all deltas 0
    with pytest.raises(ThetaSketchError, match="repeats"):
        ThetaSketch.deserialize(bytes(zero_delta))


@settings(max_examples=300)
@given(
    st.sampled_from(range(9)),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_mutations_read_or_raise_theta_error(which: int, edits: list[tuple[int, int]]) -> None:
    data = bytearray(_SAMPLES[which])
    for pos, value in edits:
        data[pos % len(data)] = value
    try:
        sketch = ThetaSketch.deserialize(bytes(data))
    except ThetaSketchError as exc:
        assert "of the sketch" in exc.reason and exc.offset is None
        return
    hashes = sketch.hashes
    assert np.all(hashes[1:] > hashes[:-1]) and (
        hashes.size == 0 or (hashes[0] > 0 and hashes[-1] < sketch.theta64)
    )


_SAMPLES = _valid_samples()


def test_round_trips_and_pickle() -> None:
    sketch = ThetaSketch.from_values(np.arange(9000), "long", lg_k=10)
    for data in (sketch.serialize(), sketch.serialize(compressed=True)):
        assert ThetaSketch.deserialize(data) == sketch
    copy = pickle.loads(pickle.dumps(sketch))
    assert copy == sketch and copy.lg_k == 10
    assert ThetaSketch.from_datasketches(sketch.to_datasketches()) == sketch
    assert hash(copy) == hash(sketch)
    assert "estimate" in repr(sketch) and repr(ThetaSketch()) == "ThetaSketch(empty)"
    with pytest.raises(ValueError):
        sketch.hashes[0] = 1  # read-only


# -- Puffin blobs ------------------------------------------------------------------------------


def test_theta_blobs_round_trip_through_puffin(tmp_path: object) -> None:
    a = ThetaSketch.from_values(np.arange(100_000), "long")
    b = ThetaSketch.from_values(pa.array(["x", "y", None]), "string")
    buf = io.BytesIO()
    with puffin.create(buf, created_by="test") as writer:
        meta_a = add_theta_blob(writer, a, 1, snapshot_id=10, sequence_number=3)
        writer.add_blob(b"other", type="some-blob", fields=[9])
        meta_b = add_theta_blob(
            writer, b, 2, snapshot_id=10, sequence_number=3, codec=None, properties={"note": "x"}
        )
    assert meta_a.type == APACHE_DATASKETCHES_THETA_V1 and meta_a.fields == (1,)
    assert meta_a.compression_codec == "zstd" and dict(meta_a.properties) == {
        "ndv": str(int(a.estimate))
    }
    assert dict(meta_b.properties) == {"ndv": "2", "note": "x"}
    data = buf.getvalue()
    blobs = read_theta_blobs(data)
    assert [(f, s, n) for f, s, n in blobs] == [(1, a, int(a.estimate)), (2, b, 2)]
    assert isinstance(blobs[0], ThetaBlob) and blobs[0].metadata == meta_a
    with puffin.open(data) as reader:
        assert read_theta_blobs(reader)[1].sketch == b
        assert (
            ds.compact_theta_sketch.deserialize(reader.read_blob(meta_a)).get_estimate()
            == a.estimate
        )


def _file_with(payload: bytes, *, fields: list[int] | None = None, ndv: str | None = "1") -> bytes:
    buf = io.BytesIO()
    with puffin.create(buf) as writer:
        writer.add_blob(
            payload,
            type=APACHE_DATASKETCHES_THETA_V1,
            fields=[1] if fields is None else fields,
            properties=None if ndv is None else {"ndv": ndv},
        )
    return buf.getvalue()


def test_theta_blob_errors() -> None:
    good = ThetaSketch.from_values([1], "long").serialize()
    assert read_theta_blobs(_file_with(good, ndv=None))[0].ndv is None
    with pytest.raises(ThetaSketchError, match="exactly one field") as info:
        read_theta_blobs(_file_with(good, fields=[1, 2]))
    assert info.value.blob_index == 0
    too_long = str(2**63)  # an ndv is a Java long
    for bad_ndv in ("-1", " 1", "1.0", "", "x", "5\n", "\u0661", too_long, "9" * 5000):
        with pytest.raises(ThetaSketchError, match="ndv"):
            read_theta_blobs(_file_with(good, ndv=bad_ndv))
    with pytest.raises(ThetaSketchError, match=r"truncated .* of the sketch") as info:
        read_theta_blobs(_file_with(good[:-1]))
    assert (info.value.blob_index, info.value.offset) == (0, 4)  # the blob's file offset
    with pytest.raises(TypeError):
        add_theta_blob(None, b"x", 1, snapshot_id=1, sequence_number=1)  # type: ignore[arg-type]


def test_all_iceberg_types_build() -> None:
    cases = {
        "boolean": [True, False, None],
        "int": [1, 2],
        "long": [1, 2],
        "float": [1.5],
        "double": [1.5],
        "date": [dt.date(2020, 1, 1)],
        "time": [dt.time(12, 0)],
        "timestamp": [dt.datetime(2020, 1, 1)],
        "timestamptz": [dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)],
        "timestamp_ns": [dt.datetime(2020, 1, 1)],
        "timestamptz_ns": [dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)],
        "string": ["a"],
        "uuid": [uuid.uuid4()],
        "fixed[4]": [b"abcd"],
        "binary": [b"ab"],
        "decimal(9,2)": [decimal.Decimal("1.25")],
    }
    for type_, values in cases.items():
        keys = [serialize_value(v, type_) for v in values if v is not None]
        sketch = ThetaSketch.from_values(values, type_)
        assert sketch.hashes.tolist() == expected_sketch(keys)[0], type_


@settings(max_examples=40)
@given(st.integers(0, 100_000), st.integers(0, 2**32))
def test_ndv_is_javas_truncated_estimate(n: int, seed: int) -> None:
    sketch = ThetaSketch.from_values(np.random.default_rng(seed).integers(0, 2**62, size=n), "long")
    # datasketches-java Sketch.estimate: curCount * (LONG_MAX_VALUE_AS_DOUBLE / thetaLong)
    java = sketch.num_retained * (9.223372036854775807e18 / sketch.theta64)
    assert sketch.ndv == int(java)
    assert abs(sketch.ndv - sketch.estimate) < 1 + 1e-9 * sketch.estimate


def test_clustered_column_matches_oracles() -> None:
    # The whole column spans 2^40 (no whole-array de-duplication), but the first and last
    # 256 K-row slices span 1,000 values each, so they are reduced on their own after
    # serializing, for NumPy and Arrow input alike.
    rng = np.random.default_rng(5)
    blocks = [base + rng.integers(0, 1000, size=300_000) for base in (0, 2**40, -(2**40))]
    values = np.concatenate(blocks)
    theirs = ds_canonical(values.tolist())
    for column in (values, pa.array(values)):
        assert_same_as_ds(ThetaSketch.from_values(column, "long"), theirs)
        assert_same_as_ds(ThetaSketch.from_values(column, "long", threads=1), theirs)
    with_nulls = np.ma.masked_array(values, mask=values % 5 == 0)
    kept = values[values % 5 != 0].tolist()
    assert_same_as_ds(ThetaSketch.from_values(with_nulls, "long"), ds_canonical(kept))


def test_builder_update_is_all_or_nothing() -> None:
    builder = ThetaSketchBuilder("int", threads=2)
    builder.update(np.arange(1000, dtype=np.int64))
    before = builder.result()
    bad = np.arange(600_000, dtype=np.int64)
    bad[-1] = 2**40  # out of range for int, in the last slice
    with pytest.raises(ValueError):
        builder.update(bad)
    assert builder.result() == before


@pytest.mark.parametrize("spread", [1, 3, 1000, 60_000, 200_000])
def test_small_range_columns_match_oracles(spread: int) -> None:
    # Low-cardinality integer slices are de-duplicated before hashing; the result must not change.
    rng = np.random.default_rng(spread)
    values = rng.integers(-spread // 2, spread - spread // 2, size=300_000)
    assert_same_as_ds(ThetaSketch.from_values(values, "long"), ds_canonical(values.tolist()))
    masked = np.ma.masked_array(values, mask=values % 7 == 0)
    kept = values[values % 7 != 0].tolist()
    assert_same_as_ds(ThetaSketch.from_values(masked, "long"), ds_canonical(kept))
    days = values.astype("datetime64[D]")
    keys = [struct.pack("<i", d) for d in set(values.tolist())]
    hashes, theta = expected_sketch(keys)
    sketch = ThetaSketch.from_values(days, "date")
    assert sketch.hashes.tolist() == hashes and sketch.theta64 == theta
    assert ThetaSketch.from_values(values.astype(np.int32), "int") == sketch


def test_theta_union_takes_a_list_on_the_class_and_others_on_an_instance() -> None:
    a = puffin.ThetaSketch.from_values(np.arange(0, 100), "long")
    b = puffin.ThetaSketch.from_values(np.arange(50, 200), "long")
    both = puffin.ThetaSketch.from_values(np.arange(0, 200), "long")
    assert puffin.ThetaSketch.union([a, b]) == both
    assert puffin.ThetaSketch.union(iter([a, b])) == both
    assert puffin.ThetaSketch.union(a, b) == both
    assert puffin.ThetaSketch.union([a], [b.serialize()]) == both
    assert a.union(b) == both and a.union([b]) == both
    assert puffin.ThetaSketch.union([]).is_empty
    assert puffin.ThetaSketch.union([a, b], lg_k=5).num_retained == 32
    with pytest.raises(TypeError, match="cannot union a int"):
        puffin.ThetaSketch.union([a, 42])
