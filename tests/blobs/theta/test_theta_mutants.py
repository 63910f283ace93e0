"""Tests written against the mutants that survived mutation testing of the theta format
(``blobs/theta/format.py``, ``make mutation``).

Through the public :meth:`ThetaSketch.deserialize` and :meth:`ThetaSketch.serialize` only.
Each error is pinned to its exact message, which names the byte of the sketch at fault;
each accepted sketch to its exact hashes and theta; each written sketch to its exact bytes.
The sketches are built here by hand from the datasketches layout (preamble longs, serial
version, family, flags, seed hash, count, p, theta, then the hashes; version 4 packs the
deltas big-endian, ``entry_bits`` bits each), never with the code under test.  Budget: well
under 1 s.
"""

from __future__ import annotations

import struct

import pytest

from puffin import Limits, ThetaSketch, ThetaSketchError

MAX_THETA = (1 << 63) - 1
SEED_HASH = 0x93CC
P_ONE = struct.pack("<f", 1.0)
# Flags: read-only 0x02, empty 0x04, compact 0x08, ordered 0x10, single item 0x20.
COMPACT_ORDERED = 0x1A
COMPACT_UNORDERED = 0x0A


def v3(
    hashes: list[int],
    *,
    theta: int = MAX_THETA,
    flags: int = COMPACT_ORDERED,
    pre_longs: int | None = None,
    seed: int = SEED_HASH,
    family: int = 3,
) -> bytes:
    if pre_longs is None:
        pre_longs = 3 if theta < MAX_THETA else 2
    head = struct.pack("<BBBBBBHI", pre_longs, 3, family, 0, 0, flags, seed, len(hashes))
    head += P_ONE
    if pre_longs == 3:
        head += struct.pack("<Q", theta)
    return head + struct.pack(f"<{len(hashes)}Q", *hashes)


def v4(
    hashes: list[int],
    *,
    theta: int = MAX_THETA,
    entry_bits: int | None = None,
    count_bytes: int = 1,
    deltas: list[int] | None = None,
) -> bytes:
    deltas = (
        deltas
        if deltas is not None
        else [h - p for h, p in zip(hashes, [0, *hashes[:-1]], strict=True)]
    )
    entry_bits = entry_bits or max(deltas).bit_length()
    pre_longs = 1 if theta == MAX_THETA else 2
    out = struct.pack(
        "<BBBBBBH", pre_longs, 4, 3, entry_bits, count_bytes, COMPACT_ORDERED, SEED_HASH
    )
    if pre_longs == 2:
        out += struct.pack("<Q", theta)
    out += len(deltas).to_bytes(count_bytes, "little")
    bits = "".join(format(d, f"0{entry_bits}b") for d in deltas)
    bits += "0" * (-len(bits) % 8)
    return out + bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))


def refused(data: bytes, limits: Limits | None = None) -> str:
    with pytest.raises(ThetaSketchError) as info:
        ThetaSketch.deserialize(data, limits=limits)
    assert info.value.offset is None
    return info.value.reason


def read(data: bytes) -> tuple[list[int], int]:
    sketch = ThetaSketch.deserialize(data)
    return [int(h) for h in sketch.hashes], sketch.theta64


def at(reason: str, byte: int) -> str:
    return f"{reason} (at byte {byte} of the sketch)"


# ---- the preamble, every version --------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 7])
def test_a_sketch_shorter_than_its_first_long(size: int) -> None:
    assert refused(v3([5])[:size]) == at(
        f"truncated sketch: the preamble needs 8 bytes, only {size} present", 0
    )


@pytest.mark.parametrize("version", [0, 5, 255])
def test_an_unknown_serial_version(version: int) -> None:
    data = bytearray(v3([5]))
    data[1] = version
    assert refused(bytes(data)) == at(f"unknown serial version {version}", 1)


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("family", [1, 2, 4])
def test_versions_3_and_4_must_be_compact(version: int, family: int) -> None:
    data = bytearray(v3([5, 9]) if version == 3 else v4([5, 9]))
    data[2] = family
    assert refused(bytes(data)) == at(f"family {family} is not a compact sketch (3)", 2)


def test_version_3_flags() -> None:
    assert refused(v3([5], flags=COMPACT_ORDERED | 0x01)) == at(
        "big-endian sketches are not supported", 5
    )
    assert refused(v3([5], flags=0x12)) == at("flags 0x12 lack compact/read-only", 5)
    assert refused(v3([5], flags=0x18)) == at("flags 0x18 lack compact/read-only", 5)


@pytest.mark.parametrize("pre_longs", [0, 4, 63])
def test_version_3_preamble_longs(pre_longs: int) -> None:
    assert refused(v3([5], pre_longs=pre_longs)) == at(
        f"preamble longs {pre_longs} is not 1, 2 or 3", 0
    )


def test_the_top_two_bits_of_the_first_byte_are_not_the_preamble_length() -> None:
    data = bytearray(v3([5, 9]))
    data[0] |= 0xC0
    assert read(bytes(data)) == ([5, 9], MAX_THETA)


def test_the_seed_hash_must_be_the_default_seeds() -> None:
    for version_bytes in (v3([5, 9], seed=0x1234), v4([5, 9])[:6] + b"\x34\x12" + v4([5, 9])[8:]):
        assert refused(version_bytes) == at(
            "seed hash 0x1234 is not the default seed's 0x93CC (the sketch was built with "
            "another seed than 9001)",
            6,
        )


# ---- version 3 ---------------------------------------------------------------------------------


def test_empty_version_3_sketches() -> None:
    empty = bytes([1, 3, 3, 0, 0, 0x1E, 0, 0])
    assert read(empty) == ([], MAX_THETA)
    assert refused(empty + b"\0") == at("1 unexpected bytes after the sketch", 8)
    two = bytes([2, 3, 3, 0, 0, 0x1E, 0, 0]) + struct.pack("<I", 0) + P_ONE
    assert read(two) == ([], MAX_THETA)
    assert refused(two[:12]) == at(
        "truncated sketch: the preamble needs 16 bytes, only 12 present", 8
    )
    assert refused(two[:8] + struct.pack("<I", 3) + P_ONE) == at("empty sketch claims 3 entries", 8)
    assert refused(two + b"\0\0") == at("2 unexpected bytes after the sketch", 16)


def test_a_single_item_sketch_of_one_long_of_preamble() -> None:
    single = struct.pack("<BBBBBBH", 1, 3, 3, 0, 0, 0x3A, SEED_HASH) + struct.pack("<Q", 77)
    assert read(single) == ([77], MAX_THETA)
    assert refused(single[:12]) == at(
        "truncated sketch: 1 hashes needs 16 bytes, only 12 present", 8
    )
    assert refused(single + b"\0") == at("1 unexpected bytes after the sketch", 16)
    zero = single[:8] + struct.pack("<Q", 0)
    assert refused(zero) == at(f"hash 0 at entry 0 is not in (0, theta={MAX_THETA})", 8)


def test_a_preamble_cut_short_and_theta_checked() -> None:
    assert refused(v3([5, 9])[:12]) == at(
        "truncated sketch: the preamble needs 16 bytes, only 12 present", 8
    )
    assert refused(v3([5, 9], theta=1000)[:20]) == at(
        "truncated sketch: the preamble needs 24 bytes, only 20 present", 8
    )
    for theta in (0, 1 << 63):
        data = v3([], pre_longs=3)[:16] + struct.pack("<Q", theta)
        assert refused(data) == at(f"theta {theta} is outside (0, 2^63 - 1]", 16)
    assert read(v3([5, 9], theta=10, pre_longs=3)) == ([5, 9], 10)
    assert read(v3([5, 9], pre_longs=3)) == ([5, 9], MAX_THETA)


def test_hashes_cut_short_or_too_many() -> None:
    assert refused(v3([5, 9, 11])[:-1]) == at(
        "truncated sketch: 3 hashes needs 40 bytes, only 39 present", 16
    )
    assert refused(v3([5, 9, 11]) + b"\0" * 3) == at("3 unexpected bytes after the sketch", 40)
    assert refused(v3([5, 9, 11]), Limits(max_theta_entries=2)) == at(
        "sketch declares 3 entries, more than 2 (Limits.max_theta_entries)", 8
    )
    assert read(v3([5, 9, 11])) == ([5, 9, 11], MAX_THETA)


def test_hashes_outside_zero_to_theta_name_their_entry() -> None:
    assert refused(v3([5, 9, 0])) == at(f"hash 0 at entry 2 is not in (0, theta={MAX_THETA})", 32)
    assert refused(v3([5, 1000, 1001], theta=1000)) == at(
        "hash 1000 at entry 1 is not in (0, theta=1000)", 24 + 8
    )
    assert read(v3([5, 999], theta=1000)) == ([5, 999], 1000)


def test_ordered_hashes_out_of_order_or_repeated_name_their_entry() -> None:
    assert refused(v3([5, 9, 9, 12])) == at("hash at entry 2 repeats", 32)
    assert refused(v3([5, 9, 12, 10])) == at("hash at entry 3 is out of order", 40)


def test_unordered_hashes_are_sorted_or_refused_as_a_whole() -> None:
    assert read(v3([12, 5, 9], flags=COMPACT_UNORDERED)) == ([5, 9, 12], MAX_THETA)
    assert refused(v3([12, 5, 12], flags=COMPACT_UNORDERED)) == at(
        "unordered sketch: a hash repeats", 16
    )


# ---- version 4 ---------------------------------------------------------------------------------


def test_version_4_reads_exact_and_estimating_sketches() -> None:
    assert read(v4([5, 9, 300])) == ([5, 9, 300], MAX_THETA)
    assert read(v4([5, 9, 300], theta=301)) == ([5, 9, 300], 301)
    assert read(v4([5, 9, 300], entry_bits=63)) == ([5, 9, 300], MAX_THETA)
    assert read(v4([7], theta=8)) == ([7], 8)


def test_version_4_header_checks() -> None:
    def patched(index: int, value: int) -> bytes:
        data = bytearray(v4([5, 9]))
        data[index] = value
        return bytes(data)

    assert refused(patched(0, 3)) == at("preamble longs 3 is not 1 or 2", 0)
    assert refused(patched(0, 0)) == at("preamble longs 0 is not 1 or 2", 0)
    assert refused(patched(3, 0)) == at("entry bits 0 is not in 1..63", 3)
    assert refused(patched(3, 64)) == at("entry bits 64 is not in 1..63", 3)
    assert refused(patched(4, 0)) == at("entry-count width 0 is not in 1..4", 4)
    assert refused(patched(4, 5)) == at("entry-count width 5 is not in 1..4", 4)


def test_version_4_counts_of_every_width() -> None:
    for width in (1, 2, 3, 4):
        assert read(v4([5, 9], count_bytes=width)) == ([5, 9], MAX_THETA)
        assert refused(v4([5, 9], count_bytes=width)[: 8 + width - 1]) == at(
            f"truncated sketch: the entry count needs {8 + width} bytes, only {8 + width - 1} "
            "present",
            8,
        )
    assert refused(v4([5, 9], theta=10)[:12]) == at(
        "truncated sketch: theta needs 16 bytes, only 12 present", 8
    )
    assert refused(v4([5, 9], theta=10)[:16]) == at(
        "truncated sketch: the entry count needs 17 bytes, only 16 present", 16
    )
    for theta in (0, 1 << 63):
        data = bytearray(v4([5, 9], theta=10))
        data[8:16] = struct.pack("<Q", theta)
        assert refused(bytes(data)) == at(f"theta {theta} is outside (0, 2^63 - 1]", 8)


def test_version_4_packed_entries_cut_short_too_many_or_followed() -> None:
    data = v4([5, 9, 300])  # 9 bits an entry: 27 bits, 4 bytes after the count at 9
    assert len(data) == 13
    assert refused(data[:-1]) == at(
        "truncated sketch: 3 packed entries needs 13 bytes, only 12 present", 9
    )
    assert refused(data + b"\0") == at("1 unexpected bytes after the sketch", 13)
    assert refused(data, Limits(max_theta_entries=2)) == at(
        "sketch declares 3 entries, more than 2 (Limits.max_theta_entries)", 8
    )
    wide = v4([5, 9, 300], theta=1000, count_bytes=2)
    assert refused(wide, Limits(max_theta_entries=2)) == at(
        "sketch declares 3 entries, more than 2 (Limits.max_theta_entries)", 16
    )


def test_version_4_deltas_that_repeat_or_pass_theta() -> None:
    assert refused(v4([], deltas=[5, 4, 0, 3])) == at(
        "entry 2 repeats its predecessor (zero delta)", 9
    )
    assert refused(v4([], deltas=[5, 4, 3], theta=12)) == at("entries reach past theta=12", 17)
    assert read(v4([], deltas=[5, 4, 2], theta=12)) == ([5, 9, 11], 12)
    # Deltas whose running sum wraps past 2^64 look small again: caught as a decrease.
    huge = (1 << 63) - 2
    assert refused(v4([], deltas=[huge, huge, huge, 5], entry_bits=63)) == at(
        f"entries reach past theta={MAX_THETA}", 8 + 1
    )


def chunked_deltas(count: int, edit: dict[int, int]) -> bytes:
    """``count`` deltas of 1 (hashes 1, 2, ...) in two bits each, with ``edit`` applied."""
    deltas = [1] * count
    for i, value in edit.items():
        deltas[i] = value
    return v4([], deltas=deltas, entry_bits=2, count_bytes=3)


def test_version_4_entries_are_checked_across_chunks_of_65536() -> None:
    count = (1 << 16) + 100
    hashes, theta = read(chunked_deltas(count, {}))
    assert (len(hashes), hashes[0], hashes[-1], theta) == (count, 1, count, MAX_THETA)
    assert read(chunked_deltas(count, {1 << 16: 2}))[0][(1 << 16) - 1 : (1 << 16) + 2] == [
        1 << 16,
        (1 << 16) + 2,
        (1 << 16) + 3,
    ]
    for i in (5, (1 << 16) - 1, 1 << 16, (1 << 16) + 7):
        assert refused(chunked_deltas(count, {i: 0})) == at(
            f"entry {i} repeats its predecessor (zero delta)", 11
        )
    estimating = v4([], deltas=[1] * count, entry_bits=2, count_bytes=3, theta=count)
    assert refused(estimating) == at(f"entries reach past theta={count}", 19)
    fits = v4([], deltas=[1] * count, entry_bits=2, count_bytes=3, theta=count + 1)
    assert read(fits)[1] == count + 1


# ---- versions 1 and 2 --------------------------------------------------------------------------


def v2(hashes: list[int], *, pre_longs: int = 2, theta: int = MAX_THETA, family: int = 3) -> bytes:
    head = struct.pack("<BBBBBBHI", pre_longs, 2, family, 0, 0, 0, SEED_HASH, len(hashes))
    if pre_longs == 1:
        return head[:8]
    head += P_ONE
    if pre_longs == 3:
        head += struct.pack("<Q", theta)
    return head + struct.pack(f"<{len(hashes)}Q", *hashes)


def v1(hashes: list[int], *, theta: int = MAX_THETA, family: int = 3, pre_longs: int = 3) -> bytes:
    head = struct.pack("<BBBBBBHI", pre_longs, 1, family, 0, 0, 0, 0, len(hashes)) + P_ONE
    return head + struct.pack("<Q", theta) + struct.pack(f"<{len(hashes)}Q", *hashes)


def test_version_2() -> None:
    assert read(v2([5, 9])) == ([5, 9], MAX_THETA)
    assert read(v2([5, 9], pre_longs=3, theta=10)) == ([5, 9], 10)
    assert read(v2([], pre_longs=1)) == ([], MAX_THETA)
    assert refused(v2([], pre_longs=1) + b"\0") == at("1 unexpected bytes after the sketch", 8)
    assert read(v2([])) == ([], MAX_THETA)
    assert refused(v2([]) + b"\0") == at("1 unexpected bytes after the sketch", 16)
    assert read(v2([], pre_longs=3, theta=10)) == ([], 10)
    for family in (0, 5):
        assert refused(v2([5], family=family)) == at(
            f"family {family} is not 1..4 for serial version 2", 2
        )
    for family in (1, 4):
        assert read(v2([5], family=family)) == ([5], MAX_THETA)
    assert refused(v2([5], pre_longs=0)) == at("preamble longs 0 is not 1, 2 or 3", 0)
    assert refused(v2([5], pre_longs=4)) == at("preamble longs 4 is not 1, 2 or 3", 0)
    assert refused(v2([5], pre_longs=3)[:20]) == at(
        "truncated sketch: the preamble needs 24 bytes, only 20 present", 8
    )
    assert refused(v2([5, 9], pre_longs=3, theta=0)) == at("theta 0 is outside (0, 2^63 - 1]", 16)
    seeded = bytearray(v2([5]))
    seeded[6:8] = b"\0\0"
    assert refused(bytes(seeded))[:26] == "seed hash 0x0000 is not th"
    assert refused(v2([5, 9]) + b"\0") == at("1 unexpected bytes after the sketch", 32)
    assert refused(v2([9, 5])) == at("hash at entry 1 is out of order", 24)
    assert refused(v2([9, 5]), Limits(max_theta_entries=1)) == at(
        "sketch declares 2 entries, more than 1 (Limits.max_theta_entries)", 8
    )


def test_version_1() -> None:
    assert read(v1([5, 9])) == ([5, 9], MAX_THETA)
    assert read(v1([5, 9], theta=10)) == ([5, 9], 10)
    assert read(v1([])) == ([], MAX_THETA)
    assert read(v1([], theta=10)) == ([], 10)
    assert refused(v1([]) + b"\0") == at("1 unexpected bytes after the sketch", 24)
    assert refused(v1([5], pre_longs=2)) == at("serial version 1 has 3 preamble longs, not 2", 0)
    for family in (0, 4):
        assert refused(v1([5], family=family)) == at(
            f"family {family} is not 1..3 for serial version 1", 2
        )
    for family in (1, 3):
        assert read(v1([5], family=family)) == ([5], MAX_THETA)
    assert refused(v1([5])[:20]) == at(
        "truncated sketch: the preamble needs 24 bytes, only 20 present", 8
    )
    assert refused(v1([5], theta=1 << 63)) == at(f"theta {1 << 63} is outside (0, 2^63 - 1]", 16)
    assert refused(v1([5, 9]) + b"\0\0") == at("2 unexpected bytes after the sketch", 40)
    assert refused(v1([5, 12], theta=10)) == at("hash 12 at entry 1 is not in (0, theta=10)", 32)
    assert refused(v1([5, 9]), Limits(max_theta_entries=1)) == at(
        "sketch declares 2 entries, more than 1 (Limits.max_theta_entries)", 8
    )


# ---- writing -----------------------------------------------------------------------------------


def sketch(hashes: list[int], theta: int = MAX_THETA) -> ThetaSketch:
    return ThetaSketch.deserialize(v3(hashes, theta=theta))


def test_version_3_bytes_as_java_writes_them() -> None:
    assert ThetaSketch.deserialize(bytes([1, 3, 3, 0, 0, 0x1E, 0, 0])).serialize() == bytes(
        [1, 3, 3, 0, 0, 0x1E, 0, 0]
    )
    assert sketch([77]).serialize() == struct.pack("<BBBBBBHQ", 1, 3, 3, 0, 0, 0x3A, SEED_HASH, 77)
    assert sketch([5, 9]).serialize() == v3([5, 9])
    assert sketch([5, 9], theta=10).serialize() == v3([5, 9], theta=10)
    assert sketch([5], theta=10).serialize() == v3([5], theta=10)
    assert sketch([], theta=10).serialize() == v3([], theta=10)


def test_version_4_bytes_as_java_packs_them() -> None:
    assert sketch([5, 9, 300]).serialize(compressed=True) == v4([5, 9, 300])
    assert sketch([5, 9, 300], theta=301).serialize(compressed=True) == v4([5, 9, 300], theta=301)
    assert sketch([7], theta=8).serialize(compressed=True) == v4([7], theta=8)
    many = list(range(1, 300))
    assert sketch(many).serialize(compressed=True) == v4(many, count_bytes=2)
    top = [1 << 62, (1 << 63) - 2]
    assert sketch(top).serialize(compressed=True) == v4(top)
    # Version 4 needs two entries, or one while estimating: else version 3 is written.
    assert sketch([77]).serialize(compressed=True) == sketch([77]).serialize()
    assert sketch([], theta=10).serialize(compressed=True) == v3([], theta=10)
    empty = bytes([1, 3, 3, 0, 0, 0x1E, 0, 0])
    assert ThetaSketch.deserialize(empty).serialize(compressed=True) == empty


def test_the_entry_count_is_the_first_four_bytes_whatever_p_holds() -> None:
    p_bytes = struct.pack("<f", 0.1)  # its low byte is not 0: a fifth count byte would show
    exact = v3([5, 9])
    assert read(exact[:12] + p_bytes + exact[16:]) == ([5, 9], MAX_THETA)
    empty = bytes([2, 3, 3, 0, 0, 0x1E, 0, 0]) + struct.pack("<I", 0) + p_bytes
    assert read(empty) == ([], MAX_THETA)
    legacy2 = v2([5, 9])
    assert read(legacy2[:12] + p_bytes + legacy2[16:]) == ([5, 9], MAX_THETA)
    legacy1 = v1([5, 9])
    assert read(legacy1[:12] + p_bytes + legacy1[16:]) == ([5, 9], MAX_THETA)


def test_theta_of_one_is_accepted() -> None:
    assert read(v3([], theta=1)) == ([], 1)


def test_version_1_hashes_must_be_ordered() -> None:
    assert refused(v1([9, 5])) == at("hash at entry 1 is out of order", 32)


def test_empty_sketches_of_every_version_hold_uint64_hashes() -> None:
    for data in (bytes([1, 3, 3, 0, 0, 0x1E, 0, 0]), v2([], pre_longs=1), v2([]), v1([])):
        assert ThetaSketch.deserialize(data).hashes.dtype == "uint64"


def test_version_4_count_width_as_java_writes_it() -> None:
    for n, width in ((127, 1), (255, 1), (256, 2)):
        hashes = list(range(1, n + 1))
        assert sketch(hashes).serialize(compressed=True) == v4(hashes, count_bytes=width)


def test_version_4_running_sums_that_wrap_between_entries() -> None:
    top = (1 << 63) - 1
    assert refused(v4([], deltas=[1, top, top, top], entry_bits=63)) == at(
        f"entries reach past theta={MAX_THETA}", 9
    )
