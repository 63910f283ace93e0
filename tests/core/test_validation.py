"""Every validation rule of the reader, each on a malformed file.

Each case checks the error class (a ``PuffinError`` subclass) and that the message names
the problem and where it is.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Any

import lz4.frame
import pytest
import zstandard

import puffin

SAMPLE = "iceberg-java/puffin/sample-metric-data-compressed-zstd.bin"


def build(
    footer: Any = None,
    *,
    body: bytes = b"",
    payload: bytes | None = None,
    flags: int = 0,
    payload_size: int | None = None,
    head: bytes = b"PFA1",
    tail_magic: bytes = b"PFA1",
    footer_magic: bytes = b"PFA1",
) -> bytes:
    """A Puffin file from parts, any of which may be wrong on purpose."""
    if payload is None:
        payload = json.dumps(footer if footer is not None else {"blobs": []}).encode()
    size = len(payload) if payload_size is None else payload_size
    return (
        head + body + footer_magic + payload + struct.pack("<i", size)
        + struct.pack("<I", flags) + tail_magic
    )


def blob(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "type": "t", "fields": [1], "snapshot-id": 1, "sequence-number": 1,
        "offset": 4, "length": 3,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()


def one_blob(body: bytes = b"abc", **overrides: Any) -> bytes:
    return build({"blobs": [blob(**overrides)]}, body=body)


def expect(exc: type[puffin.PuffinError], data: bytes, *patterns: str, **kwargs: Any) -> str:
    with pytest.raises(exc) as info:
        with puffin.open(data, **kwargs) as reader:
            for i in range(len(reader.blobs)):
                reader.read_blob(i)
    message = str(info.value)
    for pattern in patterns:
        assert pattern in message, f"{pattern!r} not in {message!r}"
    assert isinstance(info.value, puffin.PuffinError) and isinstance(info.value, ValueError)
    return message


# --- layout ------------------------------------------------------------------------------


def test_baseline_builder_makes_valid_files() -> None:
    with puffin.open(one_blob()) as reader:
        assert reader.read_blob(0) == b"abc"


@pytest.mark.parametrize("size", [0, 1, 4, 19])
def test_file_shorter_than_minimum(size: int) -> None:
    expect(puffin.InvalidFileError, build()[:size], f"{size} bytes", "smallest")


def test_wrong_magic_at_start() -> None:
    expect(puffin.InvalidFileError, build(head=b"PFA2"), "magic mismatch at start", "offset 0")


def test_wrong_magic_at_end() -> None:
    data = build(tail_magic=b"PFA0")
    expect(puffin.InvalidFileError, data, "magic mismatch at end", f"offset {len(data) - 4}")


def test_wrong_magic_at_footer_start() -> None:
    expect(puffin.InvalidFileError, build(footer_magic=b"XXXX"), "magic mismatch at footer start",
           "offset 4")


def test_negative_footer_payload_size() -> None:
    expect(puffin.InvalidFileError, build(payload_size=-1), "negative footer payload size -1")


def test_footer_payload_larger_than_file() -> None:
    data = build(payload_size=1 << 30)
    expect(puffin.InvalidFileError, data, "footer payload size 1073741824", "larger than the file")


def test_footer_payload_size_points_before_footer_magic() -> None:
    # One byte too small: the footer magic is then looked for inside the payload.
    data = build()
    wrong = build(payload_size=len(json.dumps({"blobs": []})) - 1)
    assert len(wrong) == len(data)
    expect(puffin.InvalidFileError, wrong, "magic mismatch at footer start")


@pytest.mark.parametrize("flags", [0x02, 0x80, 0x0100, 0x80000000])
def test_unknown_flag_bits(flags: int) -> None:
    data = build(flags=flags)
    expect(puffin.InvalidFileError, data, "unknown footer flag bits", f"offset {len(data) - 8}")


# --- footer size hint (Java semantics) ----------------------------------------------------


@pytest.mark.parametrize("hint", [313, 315, 304, 324])
def test_footer_size_hint_mismatch_is_magic_mismatch(testdata: Path, hint: int) -> None:
    data = (testdata / SAMPLE).read_bytes()
    expect(puffin.InvalidFileError, data, "magic mismatch", footer_size=hint)


@pytest.mark.parametrize("hint", [-9686, 10314, 0, 15])
def test_footer_size_hint_out_of_range(testdata: Path, hint: int) -> None:
    data = (testdata / SAMPLE).read_bytes()
    expect(puffin.InvalidFileError, data, f"invalid footer size {hint}", footer_size=hint)


def test_footer_size_hint_with_right_magic_but_other_payload_size() -> None:
    # Both magics are where the hint says, but the payload size disagrees with the hint.
    payload = b'{"blobs":[]}PFA1'
    data = build(payload=payload, payload_size=12)
    expect(puffin.InvalidFileError, data, "does not match the footer payload size",
           footer_size=16 + len(payload))


def test_file_size_hint_larger_than_file(tmp_path: Path) -> None:
    path = tmp_path / "f.puffin"
    path.write_bytes(build())
    expect(puffin.InvalidFileError, path.read_bytes(), "does not match", file_size=1000)
    with pytest.raises(puffin.InvalidFileError, match=r"truncated|outside"):
        puffin.open(path, file_size=1000)


# --- footer payload ---------------------------------------------------------------------------


def test_footer_not_utf8() -> None:
    expect(puffin.InvalidFooterError, build(payload=b'{"blobs":[],"x":"\xff"}'),
           "not valid UTF-8", "offset 25")  # 4 (magic) + 4 (footer magic) + 17


@pytest.mark.parametrize("payload", [b"", b"{", b"{'blobs': []}", b'{"blobs":[]} x', b"NaN",
                                     b'{"blobs":[],"p":NaN}'])
def test_footer_not_json(payload: bytes) -> None:
    expect(puffin.InvalidFooterError, build(payload=payload), "not valid JSON")


@pytest.mark.parametrize("doc", [[], "blobs", 1, None])
def test_footer_not_an_object(doc: Any) -> None:
    expect(puffin.InvalidFooterError, build(payload=json.dumps(doc).encode()),
           "must be a JSON object")


def test_deeply_nested_footer() -> None:
    payload = b'{"blobs":[],"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    expect(puffin.InvalidFooterError, build(payload=payload), "nested too deeply")


def test_duplicate_keys() -> None:
    payload = b'{"blobs":[],"blobs":[]}'
    message = expect(puffin.InvalidFooterError, build(payload=payload), "duplicate key 'blobs'")
    assert "absurd number" not in message and "at byte 12 of the footer payload" in message


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (b'{"blobs":[{"type":"t","fields":[1],"snapshot-id":NaN}]}', ["NaN is not", "byte 49"]),
        (b'{"properties":{"NaN":"x"},"blobs":[-Infinity]}', ["-Infinity is not", "byte 35"]),
        (b'{"blobs":[],"x":' + b"9" * 5000 + b"}", ["more than 4,300 digits", "byte 16"]),
    ],
)
def test_json_faults_are_named_where_they_are(payload: bytes, words: list[str]) -> None:
    """Each fault says what it is and its byte, never "an absurd number" for all of them."""
    message = expect(puffin.InvalidFooterError, build(payload=payload), *words)
    assert "absurd" not in message


def test_the_conformance_duplicate_key_vector_says_so(testdata: Path) -> None:
    data = (testdata / "conformance" / "container" / "invalid-footer-duplicate-key.puffin")
    message = expect(puffin.InvalidFooterError, data.read_bytes(), "duplicate key 'blobs'")
    assert "absurd" not in message


def test_blobs_missing() -> None:
    expect(puffin.InvalidFooterError, build({"properties": {}}), "no 'blobs' field")


@pytest.mark.parametrize("value", [None, {}, "x", 3])
def test_blobs_not_a_list(value: Any) -> None:
    expect(puffin.InvalidFooterError, build({"blobs": value}), "'blobs' must be a JSON list")


@pytest.mark.parametrize("item", [None, [], "blob", 7])
def test_blob_not_an_object(item: Any) -> None:
    expect(puffin.InvalidFooterError, build({"blobs": [item]}), "blob metadata must be a JSON "
           "object", "blob 0")


@pytest.mark.parametrize(
    "field", ["type", "fields", "snapshot-id", "sequence-number", "offset", "length"]
)
def test_required_blob_field_missing(field: str) -> None:
    expect(puffin.InvalidFooterError, one_blob(**{field: _DROP}),
           f"required field {field!r} is missing", "blob 0")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("type", 1), ("type", None), ("fields", "1"), ("fields", None), ("fields", {"a": 1}),
        ("snapshot-id", "1"), ("snapshot-id", True), ("snapshot-id", 1.0), ("snapshot-id", None),
        ("sequence-number", 1.5), ("offset", False), ("offset", "4"), ("length", 3.0),
        ("length", [3]), ("compression-codec", 1), ("compression-codec", ["zstd"]),
        ("properties", []), ("properties", "x"), ("properties", None),
    ],
)
def test_blob_field_of_wrong_json_type(field: str, value: Any) -> None:
    expect(puffin.InvalidFooterError, one_blob(**{field: value}), repr(field), "blob 0")


@pytest.mark.parametrize("value", [True, 1.0, "1", None, 1 << 31, -(1 << 31) - 1])
def test_fields_elements_must_be_int32(value: Any) -> None:
    expect(puffin.InvalidFooterError, one_blob(fields=[1, value]), "'fields[1]'", "blob 0")


def test_fields_int32_bounds_accepted() -> None:
    with puffin.open(one_blob(fields=[-(1 << 31), (1 << 31) - 1])) as reader:
        assert reader.blobs[0].fields == (-(1 << 31), (1 << 31) - 1)


@pytest.mark.parametrize("field", ["snapshot-id", "sequence-number", "offset", "length"])
@pytest.mark.parametrize("value", [1 << 63, -(1 << 63) - 1, 10**30])
def test_longs_outside_int64(field: str, value: int) -> None:
    expect(puffin.InvalidFooterError, one_blob(**{field: value}), "out of range for a long",
           "blob 0")


@pytest.mark.parametrize("props", [{"k": 1}, {"k": None}, {"k": ["v"]}, {"k": {"a": "b"}}])
def test_blob_properties_not_strings(props: Any) -> None:
    expect(puffin.InvalidFooterError, one_blob(properties=props), "value of 'k'", "blob 0")


def test_file_properties_not_strings() -> None:
    expect(puffin.InvalidFooterError, build({"blobs": [], "properties": {"created-by": 5}}),
           "'created-by'")


def test_unpaired_surrogate_in_strings() -> None:
    payload = b'{"blobs":[{"type":"\\ud800","fields":[],"snapshot-id":1,"sequence-number":1,' \
        b'"offset":4,"length":0}]}'
    expect(puffin.InvalidFooterError, build(payload=payload), "surrogate", "blob 0")


def test_unknown_fields_are_ignored() -> None:
    data = build({"blobs": [dict(blob(), future={"x": [1]})], "version": 2}, body=b"abc")
    with puffin.open(data) as reader:
        assert reader.read_blob(0) == b"abc"


def test_null_codec_means_uncompressed() -> None:
    with puffin.open(one_blob(**{"compression-codec": None})) as reader:
        assert reader.blobs[0].compression_codec is None


# --- blob bounds -----------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [0, 3, -1])
def test_blob_offset_before_4(offset: int) -> None:
    expect(puffin.InvalidFileError, one_blob(offset=offset), f"blob offset {offset}", "blob 0",
           "'offset'")


def test_negative_blob_length() -> None:
    expect(puffin.InvalidFileError, one_blob(length=-1), "negative blob length", "blob 0")


def test_blob_past_footer_start() -> None:
    expect(puffin.InvalidFileError, one_blob(length=4), "runs past the footer start at 7",
           "blob 0")


def test_blob_far_past_end_of_file() -> None:
    expect(puffin.InvalidFileError, one_blob(offset=(1 << 62), length=(1 << 62)),
           "runs past the footer")


def test_unknown_codec() -> None:
    expect(puffin.UnknownCodecError, one_blob(**{"compression-codec": "gzip"}),
           "unknown compression codec 'gzip'", "blob 0")


def test_codec_name_case() -> None:
    expect(puffin.UnknownCodecError, one_blob(**{"compression-codec": "ZSTD"}), "'ZSTD'")


# --- compressed blobs ---------------------------------------------------------------------------


def codec_file(frame: bytes, codec: str) -> bytes:
    return one_blob(body=frame, length=len(frame), **{"compression-codec": codec})


def test_zstd_without_content_size() -> None:
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(b"hello")
    expect(puffin.CodecError, codec_file(frame, "zstd"), "no content size", "blob 0")


def test_zstd_with_trailing_bytes() -> None:
    frame = zstandard.ZstdCompressor().compress(b"hello") + b"junk"
    expect(puffin.CodecError, codec_file(frame, "zstd"), "blob 0")


def test_zstd_two_frames() -> None:
    c = zstandard.ZstdCompressor()
    expect(puffin.CodecError, codec_file(c.compress(b"he") + c.compress(b"llo"), "zstd"), "blob 0")


def test_zstd_content_size_mismatch() -> None:
    frame = bytearray(zstandard.ZstdCompressor(write_checksum=False).compress(b"hello world"))
    # Frame header: magic(4) FHD(1) [window] size; level 3 small input: single segment, 1 byte.
    assert frame[4] & 0x20  # single-segment: content size follows the descriptor directly
    frame[5] = 20
    expect(puffin.CodecError, codec_file(bytes(frame), "zstd"), "blob 0")


def test_zstd_garbage() -> None:
    expect(puffin.CodecError, codec_file(b"not zstd at all", "zstd"), "not a zstd frame", "blob 0")


def test_zstd_truncated() -> None:
    frame = zstandard.ZstdCompressor().compress(bytes(range(256)) * 10)
    expect(puffin.CodecError, codec_file(frame[:-5], "zstd"), "blob 0")


def lz4_frame(data: bytes) -> bytes:
    return bytes(lz4.frame.compress(data, store_size=True))


def test_lz4_without_content_size() -> None:
    frame = lz4.frame.compress(b"hello", store_size=False)
    expect(puffin.CodecError, codec_file(frame, "lz4"), "LZ4 frame has no content size", "blob 0")


def test_lz4_with_trailing_bytes() -> None:
    expect(puffin.CodecError, codec_file(lz4_frame(b"hello") + b"zz", "lz4"),
           "2 bytes follow the LZ4 frame", "blob 0")


def test_lz4_content_size_mismatch() -> None:
    frame = bytearray(lz4_frame(b"hello"))
    frame[6:14] = (4).to_bytes(8, "little")  # header checksum now wrong as well
    expect(puffin.CodecError, codec_file(bytes(frame), "lz4"), "blob 0")


def test_lz4_truncated() -> None:
    frame = lz4_frame(bytes(range(256)) * 10)
    expect(puffin.CodecError, codec_file(frame[:-6], "lz4"), "blob 0")


def test_lz4_garbage() -> None:
    expect(puffin.CodecError, codec_file(b"\x00" * 20, "lz4"), "not an LZ4 frame", "blob 0")


def test_declared_content_size_over_cap_is_checked_before_decompressing() -> None:
    data = codec_file(zstandard.ZstdCompressor().compress(b"x" * 1000), "zstd")
    expect(puffin.LimitExceededError, data, "content size of 1000 bytes", "cap of 999",
           limits=puffin.Limits(max_decompressed_size=999))
    data = codec_file(lz4_frame(b"x" * 1000), "lz4")
    expect(puffin.LimitExceededError, data, "content size of 1000 bytes",
           limits=puffin.Limits(max_decompressed_size=999))


def test_blob_length_over_cap() -> None:
    expect(puffin.LimitExceededError, one_blob(), "blob length 3 exceeds the cap of 2",
           limits=puffin.Limits(max_blob_size=2))


def test_footer_over_cap() -> None:
    expect(puffin.LimitExceededError, one_blob(), "exceeds the cap of 10",
           limits=puffin.Limits(max_footer_size=10))


# --- compressed footer ---------------------------------------------------------------------------


def test_compressed_footer_that_is_not_lz4() -> None:
    expect(puffin.CodecError, build(flags=1), "compressed footer payload", "not an LZ4 frame")


def test_compressed_footer_without_content_size() -> None:
    payload = lz4.frame.compress(b'{"blobs":[]}', store_size=False)
    expect(puffin.CodecError, build(payload=payload, flags=1), "no content size")


def test_compressed_footer_holding_bad_json() -> None:
    payload = lz4_frame(b'{"blobs":')
    expect(puffin.InvalidFooterError, build(payload=payload, flags=1), "not valid JSON")


def test_compressed_footer_round_trip_with_java_layout() -> None:
    out = io.BytesIO()
    with puffin.create(out, compress_footer=True) as writer:
        writer.add_blob(b"abc", type="t", fields=[1])
    data = out.getvalue()
    payload = data[-writer.footer_size + 4 : -12]
    assert lz4.frame.decompress(payload) == b'{"blobs":[{"type":"t","fields":[1],' \
        b'"snapshot-id":-1,"sequence-number":-1,"offset":4,"length":3}]}'


def test_errors_pickle_with_their_context() -> None:
    import pickle

    err = puffin.InvalidFooterError("bad", blob_index=3, field="offset", offset=9)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is puffin.InvalidFooterError
    assert (again.blob_index, again.field, again.offset, str(again)) == (3, "offset", 9, str(err))


def test_a_file_one_byte_short_says_it_may_be_truncated() -> None:
    buf = io.BytesIO()
    with puffin.create(buf) as writer:
        writer.add_blob(b"abc" * 10, type="t", fields=[1])
    data = buf.getvalue()
    with pytest.raises(puffin.InvalidFileError) as info:
        puffin.open(data[:-1])
    message = str(info.value)
    assert "'PFA1'" in message and "may be truncated" in message
