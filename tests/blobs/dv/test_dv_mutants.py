"""Tests written against the mutants that survived mutation testing of ``blobs/dv/format.py``.

Each test pins a behaviour that the rest of the suite left open (``make mutation``, see
tools/mutation_report.py): exact error messages, the byte of the payload they name and the
``location`` they carry, the key count written after set operations, ``add`` and
``add_range``, and the two 2 GiB limits, checked at their exact boundary with a small limit
patched in (the arithmetic is the same; a real 2 GiB payload is too large for a test).
Expected bytes are built here by hand from the layout (u64 key count, then u32 key and a
32-bit Roaring bitmap per key, pyroaring's serialization as the oracle for the bitmaps),
never from the code under test.  Budget: well under 1 s.
"""

from __future__ import annotations

import struct

import pytest
from pyroaring import BitMap

from _hostile import dv_frame, dv_portable
from puffin import DeletionVector, DeletionVectorError
from puffin.blobs.dv import format as dv_format
from puffin.blobs.dv.files import MAX_POSITION

EMPTY32 = bytes.fromhex("3a30000000000000")  # a 32-bit Roaring bitmap with no container


def bm32(values: list[int]) -> bytes:
    return bytes(BitMap(values).serialize())


def raised(call: object, *args: object, **kwargs: object) -> DeletionVectorError:
    with pytest.raises(DeletionVectorError) as info:
        call(*args, **kwargs)  # type: ignore[operator]
    return info.value


# ---- inputs and arguments ------------------------------------------------------------------


@pytest.mark.parametrize("wrap", [bytearray, memoryview], ids=["bytearray", "memoryview"])
def test_bytes_like_payloads_decode_as_bytes_do(wrap: type) -> None:
    body = dv_portable((0, bm32([1, 9])), (1, bm32([4])))
    dv = DeletionVector.deserialize(wrap(dv_frame(body)))
    assert list(dv) == [1, 9, (1 << 32) + 4]
    assert list(DeletionVector.deserialize_portable(wrap(body))) == [1, 9, (1 << 32) + 4]


@pytest.mark.parametrize("value", [12345, [1, 2], None], ids=["int", "list", "None"])
def test_a_payload_that_is_not_bytes_like_is_a_type_error_naming_its_type(value: object) -> None:
    with pytest.raises(TypeError) as info:
        DeletionVector.deserialize(value)  # type: ignore[arg-type]
    assert str(info.value) == f"expected a bytes-like payload, got {type(value).__name__}"


def test_expected_cardinality_argument_errors_name_the_value() -> None:
    payload = dv_frame(dv_portable((0, bm32([1]))))
    for value, name in [("1", "str"), (True, "bool"), (1.0, "float")]:
        with pytest.raises(TypeError) as type_error:
            DeletionVector.deserialize(payload, expected_cardinality=value)  # type: ignore[arg-type]
        assert str(type_error.value) == f"expected_cardinality must be an int, got {name}"
    with pytest.raises(ValueError) as value_error:
        DeletionVector.deserialize(payload, expected_cardinality=-1)
    assert str(value_error.value) == "expected_cardinality must be >= 0, got -1"
    assert list(DeletionVector.deserialize(payload, expected_cardinality=1)) == [1]


# ---- key counts: Java's bitmap-array length ------------------------------------------------


def test_trailing_empty_keys_survive_decoding_copy_and_union() -> None:
    trailing = dv_portable((0, bm32([1])), (1, EMPTY32), (2, EMPTY32))
    dv = DeletionVector.deserialize_portable(trailing)
    assert list(dv) == [1]
    assert dv.serialize_portable() == trailing
    assert dv.copy().serialize_portable() == trailing
    # A union keeps the larger key count, on either side (Java's setAll).
    assert (dv | DeletionVector()).serialize_portable() == trailing
    assert (DeletionVector() | dv).serialize_portable() == trailing
    assert (dv | DeletionVector([5])).serialize_portable() == dv_portable(
        (0, bm32([1, 5])), (1, EMPTY32), (2, EMPTY32)
    )
    # Any other operation counts keys up to its largest position, as if built anew.
    assert (dv & dv).serialize_portable() == dv_portable((0, bm32([1])))
    assert (dv ^ DeletionVector()).serialize_portable() == dv_portable((0, bm32([1])))


@pytest.mark.parametrize("op", ["and", "sub", "xor"])
def test_an_empty_result_of_a_set_operation_has_no_key(op: str) -> None:
    a, b = DeletionVector([1, (3 << 32) + 2]), DeletionVector([1, (3 << 32) + 2])
    if op == "and":
        a, b = DeletionVector([1]), DeletionVector([2])
    result = {"and": a & b, "sub": a - b, "xor": a ^ b}[op]
    assert list(result) == [] and not result
    assert result.serialize_portable() == struct.pack("<Q", 0)
    assert result.serialize() == dv_frame(struct.pack("<Q", 0))


def test_add_counts_keys_up_to_the_largest() -> None:
    dv = DeletionVector()
    dv.add(3)
    assert dv.serialize_portable() == dv_portable((0, bm32([3])))
    dv.add((2 << 32) + 7)
    dv.add(4)
    assert dv.serialize_portable() == dv_portable((0, bm32([3, 4])), (1, EMPTY32), (2, bm32([7])))
    dv.add((1 << 32) + 1)
    assert dv.serialize_portable() == dv_portable(
        (0, bm32([3, 4])), (1, bm32([1])), (2, bm32([7]))
    )


def test_add_range_that_ends_one_past_a_key_boundary() -> None:
    dv = DeletionVector()
    dv.add_range((1 << 32) - 2, (1 << 32) + 1)
    assert list(dv) == [(1 << 32) - 2, (1 << 32) - 1, 1 << 32]
    assert dv.serialize_portable() == dv_portable(
        (0, bm32([(1 << 32) - 2, (1 << 32) - 1])), (1, bm32([0]))
    )


def test_add_range_that_ends_on_the_last_value_of_a_key() -> None:
    start, stop = (1 << 32) - 10, (1 << 32) - 1
    dv = DeletionVector()
    dv.add_range(start, stop)
    assert list(dv) == list(range(start, stop))
    body = dv.serialize_portable()
    assert body[:12] == struct.pack("<QI", 1, 0)  # one key, key 0
    assert body == DeletionVector(list(range(start, stop))).serialize_portable()
    assert DeletionVector.deserialize_portable(body) == dv


def test_add_range_one_past_the_largest_position_is_refused_before_adding() -> None:
    # Starts in the largest key: a mutant that checks the wrong end then adds a few
    # positions (and is caught), never loops over 2**31 keys.
    dv = DeletionVector()
    error = raised(dv.add_range, MAX_POSITION - 1, MAX_POSITION + 2)
    assert error.reason == (
        f"position {MAX_POSITION + 1} is outside [0, {MAX_POSITION}], the range Iceberg Java "
        "accepts"
    )
    assert len(dv) == 0 and dv.serialize_portable() == struct.pack("<Q", 0)


@pytest.mark.parametrize(
    ("start", "stop"), [(0, 0), (7, 7), (7, 3), (MAX_POSITION + 5, MAX_POSITION + 5)]
)
def test_an_empty_range_adds_nothing_and_checks_nothing(start: int, stop: int) -> None:
    dv = DeletionVector()
    dv.add_range(start, stop)
    assert list(dv) == [] and dv.serialize_portable() == struct.pack("<Q", 0)


def test_ranges_with_a_step_are_not_taken_as_contiguous() -> None:
    assert list(DeletionVector(range(0, 10, 2))) == [0, 2, 4, 6, 8]
    assert list(DeletionVector(range(3, 8))) == [3, 4, 5, 6, 7]
    assert list(DeletionVector(range(9, 0, -3))) == [3, 6, 9]


# ---- reading -------------------------------------------------------------------------------


def test_membership_of_position_zero_and_of_negatives() -> None:
    assert 0 in DeletionVector([0])
    assert 0 not in DeletionVector([1])
    assert -1 not in DeletionVector([0, 1])
    assert "0" not in DeletionVector([0])


def test_repr_shows_the_first_five_positions() -> None:
    assert repr(DeletionVector()) == "DeletionVector(cardinality=0, positions=[])"
    assert repr(DeletionVector([3, 1 << 32])) == (
        "DeletionVector(cardinality=2, positions=[3, 4294967296])"
    )
    assert repr(DeletionVector(range(5))) == (
        "DeletionVector(cardinality=5, positions=[0, 1, 2, 3, 4])"
    )
    assert repr(DeletionVector(range(7))) == (
        "DeletionVector(cardinality=7, positions=[0, 1, 2, 3, 4, ...])"
    )


# ---- framing errors: the reason, the byte at fault and the location -------------------------


def test_a_payload_shorter_than_its_framing() -> None:
    error = raised(DeletionVector.deserialize, b"\0" * 11, location="t.puffin")
    assert error.reason == (
        "deletion vector of 11 bytes is shorter than its length prefix, magic and CRC "
        "(12 bytes) (at byte 0 of the payload)"
    )
    assert error.location == "t.puffin"


def test_a_payload_of_exactly_its_framing_fails_on_the_bitmap() -> None:
    error = raised(DeletionVector.deserialize, dv_frame(b""), location="t.puffin")
    assert error.reason == (
        "portable 64-bit Roaring bitmap needs at least 8 bytes, got 0 (at byte 8 of the payload)"
    )
    assert error.location == "t.puffin"


def test_a_length_prefix_that_does_not_match() -> None:
    payload = dv_frame(dv_portable((0, bm32([1])))) + b"\0"
    error = raised(DeletionVector.deserialize, payload, location="t.puffin")
    length = len(payload) - 9
    assert error.reason == (
        f"length prefix {length} does not match the payload: {len(payload)} bytes hold "
        f"{len(payload) - 8} bytes of magic and bitmap (at byte 0 of the payload)"
    )
    assert error.location == "t.puffin"


def test_a_bad_magic_names_the_four_bytes_read() -> None:
    payload = bytearray(dv_frame(dv_portable((0, bm32([1])))))
    payload[4:8] = b"\xd1\x2c\x39\x64"
    error = raised(DeletionVector.deserialize, bytes(payload), location="t.puffin")
    assert error.reason == (
        "bad deletion vector magic d12c3964, expected d1d33964 (at byte 4 of the payload)"
    )
    assert error.location == "t.puffin"


def test_bitmap_and_cardinality_errors_carry_the_location() -> None:
    body = b"\x01" + b"\0" * 7  # one bitmap announced, none there
    framed = raised(DeletionVector.deserialize, dv_frame(body), location="t.puffin")
    assert framed.location == "t.puffin" and "(at byte 8 of the payload)" in framed.reason
    bare = raised(DeletionVector.deserialize_portable, body, location="t.puffin")
    assert bare.location == "t.puffin" and "(at byte 0 of the payload)" in bare.reason
    count = raised(
        DeletionVector.deserialize,
        dv_frame(dv_portable((0, bm32([1, 2])))),
        expected_cardinality=3,
        location="t.puffin",
    )
    assert count.reason == "deletion vector holds 2 positions, expected 3"
    assert count.location == "t.puffin"


# ---- the two 2 GiB limits ------------------------------------------------------------------


def test_the_key_count_limit_message() -> None:
    error = raised(DeletionVector([MAX_POSITION]).serialize_portable)
    assert error.reason == (
        "a deletion vector with keys up to 2147483646 would take more than 2147483647 bytes "
        "(Java writes a bitmap for every key below the largest), which Java cannot read"
    )


# DeletionVector([4 << 32]): five keys.  The key-count check counts the framing, the key
# count and an empty entry per key: 12 + 8 + 12 * 5 = 80 bytes.  The real body is 8 + 4 * 12
# + (4 + 18) = 78 bytes (key 4 holds one value), so the payload is 90.
FIVE_KEYS = [4 << 32]
FIVE_KEYS_BODY = dv_portable((0, EMPTY32), (1, EMPTY32), (2, EMPTY32), (3, EMPTY32), (4, bm32([0])))


def test_the_key_count_check_is_exact_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(FIVE_KEYS_BODY) == 78
    monkeypatch.setattr(dv_format, "_MAX_PAYLOAD_SIZE", 80)
    assert DeletionVector(FIVE_KEYS).serialize_portable() == FIVE_KEYS_BODY
    monkeypatch.setattr(dv_format, "_MAX_PAYLOAD_SIZE", 79)
    error = raised(DeletionVector(FIVE_KEYS).serialize_portable)
    assert error.reason == (
        "a deletion vector with keys up to 4 would take more than 79 bytes (Java writes a "
        "bitmap for every key below the largest), which Java cannot read"
    )


def test_the_payload_size_check_is_exact_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dv_format, "_MAX_PAYLOAD_SIZE", 90)
    assert DeletionVector(FIVE_KEYS).serialize() == dv_frame(FIVE_KEYS_BODY)
    monkeypatch.setattr(dv_format, "_MAX_PAYLOAD_SIZE", 89)
    error = raised(DeletionVector(FIVE_KEYS).serialize)
    assert error.reason == (
        "deletion vector payload of 90 bytes exceeds 89 bytes, which Java cannot read"
    )
