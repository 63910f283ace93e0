"""Tests written against the mutants that survived mutation testing of the Roaring reader
(``blobs/dv/roaring64.py`` and ``blobs/dv/roaring_runs.py``, ``make mutation``).

Everything goes through the public decoders, :meth:`DeletionVector.deserialize` (a framed
payload, so every position in a message is 20 bytes past the start of the 32-bit bitmap of
key 0: length, magic, key count and key) and :meth:`DeletionVector.deserialize_portable`, and
through :meth:`DeletionVector.serialize_portable` for the tie between run and array
containers.  Each test pins what the rest of the suite left open: the exact reason of each
error, the byte of the payload it names, the ``location`` it carries, and the bitmap index or
container index in it.  The bitmaps are built here by hand from the RoaringFormatSpec layout
(cookie, container count or run flags, descriptive header, offset header, containers), never
with the code under test.  Budget: well under 1 s.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import pytest

from _hostile import dv_frame, dv_portable
from puffin import DeletionVector, DeletionVectorError

NO_RUNS = 12346  # cookie of a bitmap without run containers; the container count follows
RUNS = 12347  # | (containers - 1) << 16, then the run flags
EMPTY32 = struct.pack("<II", NO_RUNS, 0)
LOCATION = "s3://bucket/dv.puffin"
#: Index in a framed payload of the first byte of key 0's 32-bit bitmap.
BASE = 4 + 4 + 8 + 4

Runs = Sequence[tuple[int, int]]  # (start, length - 1), as the format stores them


def arrays32(
    containers: Sequence[tuple[int, Sequence[int]]],
    *,
    cards: Sequence[int] | None = None,
    offsets: dict[int, int] | None = None,
) -> bytes:
    """A 32-bit bitmap of array containers (``key``, sorted 16-bit values): no-run cookie,
    count, header, offset header (always there without runs), then the arrays."""
    n = len(containers)
    cards = [len(values) for _, values in containers] if cards is None else cards
    out = bytearray(struct.pack("<II", NO_RUNS, n))
    for (key, _), card in zip(containers, cards, strict=True):
        out += struct.pack("<HH", key, card - 1)
    bodies = [struct.pack(f"<{len(values)}H", *values) for _, values in containers]
    at = len(out) + 4 * n
    for i, body in enumerate(bodies):
        out += struct.pack("<I", (offsets or {}).get(i, at))
        at += len(body)
    return bytes(out + b"".join(bodies))


def runs32(
    containers: Sequence[tuple[int, Runs]],
    *,
    flags: bytes | None = None,
    offsets: dict[int, int] | None = None,
    cards: dict[int, int] | None = None,
) -> bytes:
    """A 32-bit bitmap of run containers (``key``, runs): run cookie, run flags, header
    (each cardinality what the runs hold unless ``cards`` says otherwise), the offset
    header from 4 containers on, then each run count and its runs."""
    n = len(containers)
    out = bytearray(struct.pack("<I", RUNS | (n - 1) << 16))
    out += (
        flags
        if flags is not None
        else bytes([0xFF] * (n // 8)) + (bytes([(1 << (n % 8)) - 1]) if n % 8 else b"")
    )
    for i, (key, runs) in enumerate(containers):
        card = (cards or {}).get(i, sum(length + 1 for _, length in runs))
        out += struct.pack("<HH", key, card - 1)
    bodies = [
        struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", *r) for r in runs)
        for _, runs in containers
    ]
    if n >= 4:
        at = len(out) + 4 * n
        for i, body in enumerate(bodies):
            out += struct.pack("<I", (offsets or {}).get(i, at))
            at += len(body)
    return bytes(out + b"".join(bodies))


def refused(body: bytes) -> DeletionVectorError:
    """The error of the framed payload around ``body``; the bare body must give the same
    reason, 8 bytes earlier, and both carry the location."""
    with pytest.raises(DeletionVectorError) as framed:
        DeletionVector.deserialize(dv_frame(body), location=LOCATION)
    with pytest.raises(DeletionVectorError) as bare:
        DeletionVector.deserialize_portable(body, location=LOCATION)
    assert framed.value.location == LOCATION and bare.value.location == LOCATION
    assert framed.value.offset is None and bare.value.offset is None
    framed_at = int(framed.value.reason.rpartition("(at byte ")[2].split()[0])
    assert bare.value.reason == framed.value.reason.replace(
        f"(at byte {framed_at} ", f"(at byte {framed_at - 8} "
    )
    return framed.value


def at(reason: str, byte: int) -> str:
    return f"{reason} (at byte {byte} of the payload)"


# ---- the 64-bit layout: key count, keys, what is left --------------------------------------


def test_fewer_than_eight_bytes_name_their_length() -> None:
    with pytest.raises(DeletionVectorError) as info:
        DeletionVector.deserialize_portable(b"\0" * 5, location=LOCATION)
    assert info.value.reason == at(
        "portable 64-bit Roaring bitmap needs at least 8 bytes, got 5", 0
    )
    assert info.value.location == LOCATION


def test_a_key_count_that_cannot_fit_names_the_bytes_that_follow() -> None:
    body = dv_portable((0, EMPTY32), (1, EMPTY32), count=3)  # 24 bytes: room for 2
    assert refused(body).reason == at(
        "bitmap count 3 cannot fit in the 24 bytes that follow (each bitmap takes at least "
        "12 bytes)",
        8,
    )


@pytest.mark.parametrize("spare", [0, 1, 3])
def test_a_bitmap_with_no_room_for_its_key_is_named_by_index(spare: int) -> None:
    # Key 0's bitmap holds two values (20 bytes), so 24 + spare bytes follow the count:
    # room for two entries by size, but not for the second key.
    body = dv_portable((0, arrays32([(0, [1, 9])])), count=2) + b"\0" * spare
    assert refused(body).reason == at(
        "portable 64-bit Roaring bitmap truncated: bitmap 1 of 2 has no room for its key",
        8 + 8 + 24,
    )


def test_four_spare_bytes_hold_the_key_and_the_bitmap_is_what_is_missing() -> None:
    body = dv_portable((0, arrays32([(0, [1, 9])])), count=2) + struct.pack("<I", 1)
    assert refused(body).reason == at(
        "Roaring bitmap truncated: the cookie needs 4 bytes, only 0 remain", 8 + 8 + 28
    )


@pytest.mark.parametrize("empty", [True, False], ids=["empty bitmap", "one value"])
@pytest.mark.parametrize(
    ("key", "why"),
    [
        (0x7FFFFFFF, "above Iceberg's largest key 2147483646"),
        (0x80000000, "negative as a Java int, so its positions are >= 2^63"),
        (0xFFFFFFFF, "negative as a Java int, so its positions are >= 2^63"),
    ],
)
def test_a_key_past_javas_range_is_named_with_its_bitmap(key: int, why: str, empty: bool) -> None:
    bitmap = EMPTY32 if empty else arrays32([(0, [7])])
    body = dv_portable((0, EMPTY32), (5, EMPTY32), (key, bitmap))
    assert refused(body).reason == at(f"bitmap 2 has key {key} (0x{key:08x}), {why}", 8 + 8 + 24)


def test_the_largest_key_is_accepted() -> None:
    body = dv_portable((0x7FFFFFFE, arrays32([(0, [3])])))
    assert list(DeletionVector.deserialize(dv_frame(body))) == [(0x7FFFFFFE << 32) + 3]


@pytest.mark.parametrize("empty", [True, False], ids=["empty bitmap", "one value"])
def test_keys_out_of_order_name_the_bitmap_and_both_keys(empty: bool) -> None:
    bitmap = EMPTY32 if empty else arrays32([(0, [7])])
    body = dv_portable((2, EMPTY32), (4, arrays32([(0, [1])])), (4, bitmap))
    assert refused(body).reason == at(
        "bitmap keys must be strictly ascending: key 4 follows 4 (bitmap 2)", 8 + 8 + 12 + 22
    )


def test_a_bad_key_inside_a_run_of_empty_bitmaps_is_named_exactly() -> None:
    keys = [*range(40), 17, 41, 42]
    body = dv_portable(*[(k, EMPTY32) for k in keys])
    assert refused(body).reason == at(
        "bitmap keys must be strictly ascending: key 17 follows 39 (bitmap 40)", 8 + 8 + 12 * 40
    )
    keys = [*range(10), 0x7FFFFFFF, 0x7FFFFFFF + 1]
    body = dv_portable(*[(k, EMPTY32) for k in keys])
    assert refused(body).reason == at(
        "bitmap 10 has key 2147483647 (0x7fffffff), above Iceberg's largest key 2147483646",
        8 + 8 + 12 * 10,
    )


def test_many_empty_bitmaps_then_values_decode() -> None:
    keys = [*range(300), 301]
    entries = [(k, EMPTY32) for k in keys] + [(302, arrays32([(0, [5])]))]
    dv = DeletionVector.deserialize(dv_frame(dv_portable(*entries)))
    assert list(dv) == [(302 << 32) + 5]


def test_empty_bitmaps_past_the_last_bitmap_the_count_allows_are_left_over() -> None:
    body = dv_portable((0, EMPTY32), (1, EMPTY32), count=1)
    assert refused(body).reason == at(
        "12 bytes left over after the 1 bitmaps of the portable 64-bit Roaring bitmap", 8 + 20
    )


def test_empty_bitmaps_the_count_promises_but_the_bytes_do_not_hold() -> None:
    # Count 3 fits the 36 bytes that follow by size, but key 0's bitmap takes 24 of them:
    # after one empty bitmap there is no room for the third key.
    body = dv_portable((0, arrays32([(0, [1, 9])])), (1, EMPTY32), count=3)
    assert refused(body).reason == at(
        "portable 64-bit Roaring bitmap truncated: bitmap 2 of 3 has no room for its key",
        8 + 8 + 24 + 12,
    )


def test_bytes_after_the_last_bitmap_are_counted() -> None:
    body = dv_portable((3, arrays32([(0, [1])]))) + b"\0\0\0"
    assert refused(body).reason == at(
        "3 bytes left over after the 1 bitmaps of the portable 64-bit Roaring bitmap",
        8 + 8 + 4 + 18,
    )


# ---- the 32-bit header: cookie, counts, flags ------------------------------------------------


TWO_VALUES = arrays32([(0, [1, 9])])  # 20 bytes: room for a short bitmap after it


def second(bitmap: bytes) -> bytes:
    """Key 0 with two values, then key 1 with ``bitmap``, which starts at byte 8 + 24 + 4
    of the body: the first bitmap pays for the room the key count check asks for."""
    return dv_portable((0, TWO_VALUES), (1, bitmap))


SECOND = 8 + 8 + 24 + 4  # where ``second``'s bitmap starts in the framed payload


def test_a_bitmap_of_only_its_cookie_lacks_the_container_count() -> None:
    assert refused(second(struct.pack("<I", NO_RUNS))).reason == at(
        "Roaring bitmap truncated: the container count needs 4 bytes, only 0 remain", SECOND + 4
    )
    assert refused(second(struct.pack("<I", NO_RUNS) + b"\0" * 3)).reason == at(
        "Roaring bitmap truncated: the container count needs 4 bytes, only 3 remain", SECOND + 4
    )


def test_a_cookie_that_is_neither_is_shown_in_hex() -> None:
    assert refused(second(b"\x3a\x31\0\0")).reason == at(
        "not a portable Roaring bitmap: cookie 0x0000313a is neither 12346 nor 12347 + "
        "(containers - 1) << 16",
        SECOND,
    )


def test_run_flags_cut_short() -> None:
    cookie = struct.pack("<I", RUNS | 16 << 16)  # 17 containers: 3 bytes of run flags
    assert refused(second(cookie + b"\xff\xff")).reason == at(
        "Roaring bitmap truncated: the run-container flags needs 3 bytes, only 2 remain",
        SECOND + 4,
    )
    assert refused(second(cookie + b"\xff\xff\x01\0")).reason == at(
        "Roaring bitmap truncated: the descriptive header of 17 containers needs 68 bytes, "
        "only 1 remain",
        SECOND + 4 + 3,
    )


def test_a_header_and_an_offset_header_cut_short() -> None:
    header = struct.pack("<II", NO_RUNS, 3) + struct.pack("<6H", 0, 0, 1, 0, 2, 0)
    assert refused(dv_portable((0, header[:-2]))).reason == at(
        "Roaring bitmap truncated: the descriptive header of 3 containers needs 12 bytes, "
        "only 10 remain",
        BASE + 8,
    )
    assert refused(dv_portable((0, header + b"\0" * 4))).reason == at(
        "Roaring bitmap truncated: the offset header of 3 containers needs 12 bytes, only 4 remain",
        BASE + 20,
    )


def test_containers_cut_short_name_the_whole_bitmap() -> None:
    bitmap = arrays32([(0, [1, 2, 3]), (1, [4])])
    assert refused(dv_portable((0, bitmap[:-1]))).reason == at(
        f"Roaring bitmap truncated: a bitmap of 2 containers needs {len(bitmap)} bytes, only "
        f"{len(bitmap) - 1} remain",
        BASE,
    )


# ---- container keys and offsets --------------------------------------------------------------


@pytest.mark.parametrize("n", [6, 24], ids=["walked in Python", "walked with NumPy"])
def test_container_keys_out_of_order_name_the_container(n: int) -> None:
    containers = [(k, [k]) for k in range(n)]
    containers[4] = (2, [4])  # container 4 repeats... no: follows key 3 with key 2
    bitmap = arrays32(containers)
    assert refused(dv_portable((0, bitmap))).reason == at(
        "Roaring container keys not strictly ascending: key 2 follows 3 (container 4)",
        BASE + 8 + 4 * 4,
    )


@pytest.mark.parametrize("n", [2, 3], ids=["two", "three"])
def test_run_container_keys_out_of_order_without_an_offset_header(n: int) -> None:
    containers: list[tuple[int, Runs]] = [(10 - k, [(0, 1)]) for k in range(n)]
    bitmap = runs32(containers)
    assert refused(dv_portable((0, bitmap))).reason == at(
        "Roaring container keys not strictly ascending: key 9 follows 10 (container 1)",
        BASE + 4 + 1 + 4,
    )


@pytest.mark.parametrize("n", [6, 24], ids=["walked in Python", "walked with NumPy"])
def test_an_offset_header_that_lies_names_the_container_and_both_offsets(n: int) -> None:
    containers = [(k, [k, k + 1]) for k in range(n)]
    good = arrays32(containers)
    right = 8 + 8 * n + 4 * 3  # header, offset header, three arrays of two values
    bad = arrays32(containers, offsets={3: right + 2})
    assert len(DeletionVector.deserialize_portable(dv_portable((0, good)))) == 2 * n
    assert refused(dv_portable((0, bad))).reason == at(
        f"Roaring offset header says container 3 starts at {right + 2}, the container sizes "
        f"put it at {right}",
        BASE + 8 + 4 * n + 4 * 3,
    )


def test_a_run_container_offset_outside_the_bitmap() -> None:
    n = 20
    containers: list[tuple[int, Runs]] = [(k, [(0, k)]) for k in range(n)]
    data_start = 4 + 3 + 4 * n + 4 * n  # cookie, flags, header, offsets: bitmap-relative
    for offset in (data_start - 1, 10_000):
        bad = runs32(containers, offsets={5: offset})
        assert refused(dv_portable((0, bad))).reason == at(
            f"Roaring container 5 offset {offset} is outside the bitmap",
            BASE + 4 + 3 + 4 * n + 4 * 5,
        )


def test_unused_run_flag_bits_are_ignored() -> None:
    n = 17  # three bytes of flags, seven of their bits past the last container
    containers: list[tuple[int, Runs]] = [(k, [(5, 0)]) for k in range(n)]
    bitmap = runs32(containers, flags=b"\xff\xff\xff")
    dv = DeletionVector.deserialize(dv_frame(dv_portable((0, bitmap))))
    assert list(dv) == [(k << 16) + 5 for k in range(n)]


# ---- run containers --------------------------------------------------------------------------


def test_a_run_count_cut_short() -> None:
    bitmap = runs32([(0, [(1, 1)])])  # cookie, one flag byte, header, run count, one run
    for remain in (0, 1):
        assert refused(second(bitmap[: 9 + remain])).reason == at(
            f"Roaring bitmap truncated: the run count of container 0 needs 2 bytes, only "
            f"{remain} remain",
            SECOND + 9,
        )


def test_runs_cut_short_are_a_truncation_not_a_cardinality_error() -> None:
    containers: list[tuple[int, Runs]] = [(0, [(1, 1)]), (1, [(1, 2)])]
    bitmap = runs32(containers)
    for cut in (1, 2, 3):
        assert refused(dv_portable((0, bitmap[:-cut]))).reason == at(
            f"Roaring bitmap truncated: a bitmap of 2 containers needs {len(bitmap)} bytes, "
            f"only {len(bitmap) - cut} remain",
            BASE,
        )


@pytest.mark.parametrize("n", [2, 20], ids=["walked in Python", "walked with NumPy"])
def test_a_run_cardinality_error_carries_the_location(n: int) -> None:
    containers: list[tuple[int, Runs]] = [(k, [(0, 3)]) for k in range(n)]
    bitmap = bytearray(runs32(containers))
    flag_bytes = (n + 7) // 8
    header_at = 4 + flag_bytes
    struct.pack_into("<H", bitmap, header_at + 4 * 1 + 2, 5)  # container 1: 6 values, not 4
    assert refused(dv_portable((0, bytes(bitmap)))).reason == at(
        "Roaring run container 1 has cardinality 6 in the header, its runs hold 4 values",
        BASE + header_at + 4 + 2,
    )


def test_invalid_containers_are_refused_with_the_location_and_the_bitmap_start() -> None:
    bitmap = arrays32([(0, [5, 3])])  # not sorted: pyroaring refuses it
    error = refused(dv_portable((1, EMPTY32), (2, bitmap)))
    assert error.reason.startswith("invalid Roaring bitmap: ")
    assert error.reason.endswith(f"(at byte {8 + 8 + 12 + 4} of the payload)")


# ---- what serialization writes: Java's choice between tied run and array containers ---------


def expected_arrays(containers: Sequence[tuple[int, Sequence[int]]]) -> bytes:
    return dv_portable((0, arrays32(containers)))


@pytest.mark.parametrize(
    "ranges",
    [[(0, 3)], [(0, 2), (3, 6)], [(10, 12), (20, 22), (30, 33)]],
    ids=["one run of 3", "two runs of 5", "three runs of 7"],
)
@pytest.mark.parametrize("n", [1, 17], ids=["walked in Python", "walked with NumPy"])
def test_a_run_as_large_as_its_array_is_written_as_the_array(
    ranges: list[tuple[int, int]], n: int
) -> None:
    dv = DeletionVector()
    for key in range(n):
        for start, stop in ranges:
            dv.add_range((key << 16) + start, (key << 16) + stop)
    values = [v for start, stop in ranges for v in range(start, stop)]
    assert dv.serialize_portable() == expected_arrays([(k, values) for k in range(n)])


def test_a_run_smaller_than_its_array_stays_a_run() -> None:
    dv = DeletionVector(range(0, 4))  # 6 bytes as a run, 8 as an array
    assert dv.serialize_portable() == dv_portable((0, runs32([(0, [(0, 3)])])))


# ---- many runs: the NumPy check sums them a group at a time ----------------------------------


def many_runs(n: int, runs: int, cards: Sequence[int]) -> bytes:
    """``n`` run containers of ``runs`` runs each (run j: start 4j, length j % 3 + 1), with
    the header cardinalities given; built with NumPy, the layout as ``runs32`` writes it."""
    starts = np.arange(runs, dtype="<u2") * 4
    lengths = (np.arange(runs) % 3).astype("<u2")  # length - 1
    body = struct.pack("<H", runs) + np.column_stack([starts, lengths]).astype("<u2").tobytes()
    head = bytearray(struct.pack("<I", RUNS | (n - 1) << 16))
    head += bytes([0xFF] * (n // 8)) + (bytes([(1 << (n % 8)) - 1]) if n % 8 else b"")
    for key, card in enumerate(cards):
        head += struct.pack("<HH", key, card - 1)
    at = len(head) + 4 * n
    head += np.arange(at, at + n * len(body), len(body), dtype="<u4").tobytes()
    return bytes(head) + body * n


def test_run_cardinalities_checked_across_groups_of_runs() -> None:
    # 20 containers of 16,384 runs: 327,680 runs, more than one group of 2^18.
    n, runs = 20, 16_384
    held = sum(j % 3 + 1 for j in range(runs))
    bitmap = many_runs(n, runs, [held] * n)
    dv = DeletionVector.deserialize(dv_frame(dv_portable((0, bitmap))))
    assert len(dv) == n * held
    assert list(dv)[:6] == [0, 4, 5, 8, 9, 10]
    header_at = 4 + 3
    for bad in (0, 15, 16, 19):  # first, last of the first group, first and last after it
        cards = [held] * n
        cards[bad] = held + 1
        assert refused(dv_portable((0, many_runs(n, runs, cards)))).reason == at(
            f"Roaring run container {bad} has cardinality {held + 1} in the header, its runs "
            f"hold {held} values",
            BASE + header_at + 4 * bad + 2,
        )


def test_a_run_container_offset_on_the_last_byte_is_outside() -> None:
    # Two bytes are needed for the run count: an offset on the bitmap's last byte is outside,
    # though the payload's CRC follows it in a framed payload.
    n = 20
    containers: list[tuple[int, Runs]] = [(k, [(0, k)]) for k in range(n)]
    size = len(runs32(containers))
    for offset in (size - 1, size):
        bad = runs32(containers, offsets={n - 1: offset})
        assert refused(dv_portable((0, bad))).reason == at(
            f"Roaring container {n - 1} offset {offset} is outside the bitmap",
            BASE + 4 + 3 + 4 * n + 4 * (n - 1),
        )


def test_a_run_container_without_runs_among_many() -> None:
    n = 20
    containers: list[tuple[int, Runs]] = [(k, [(5, 3)]) for k in range(n)]
    containers[7] = (7, [])
    bitmap = runs32(containers, cards={7: 4})  # the header still says 4 values
    assert refused(dv_portable((0, bitmap))).reason == at(
        "Roaring run container 7 has cardinality 4 in the header, its runs hold 0 values",
        BASE + 4 + 3 + 4 * 7 + 2,
    )


def one_value_containers(n: int) -> bytes:
    """A no-run bitmap of ``n`` array containers, container k holding the value k % 65536."""
    keys = np.arange(n, dtype=np.int64)
    header = np.zeros((n, 2), dtype="<u2")
    header[:, 0] = keys % 65536
    offsets = 8 + 8 * n + 2 * keys
    values = (keys % 65536).astype("<u2")
    return (
        struct.pack("<II", NO_RUNS, n)
        + header.tobytes()
        + offsets.astype("<u4").tobytes()
        + values.tobytes()
    )


def test_a_bitmap_of_every_container_and_one_more() -> None:
    full = one_value_containers(1 << 16)
    dv = DeletionVector.deserialize(dv_frame(dv_portable((0, full))))
    assert len(dv) == 1 << 16 and list(dv)[:2] == [0, 65537]
    assert list(dv)[-1] == (65535 << 16) + 65535
    assert refused(dv_portable((0, one_value_containers((1 << 16) + 1)))).reason == at(
        "Roaring bitmap claims 65537 containers, more than 65536", BASE + 4
    )
