"""Tests written against the mutants that survived mutation testing of ``puffin/codecs.py``.

Each pins a behaviour the rest of the suite left open (``make mutation``, see
tools/mutation_report.py): frames of more than one 4 MiB output chunk (both LZ4 paths,
``decompress`` and ``decompress_buffer``, and zstd), the exact frame Iceberg Java's
settings produce, hand-made zstd frames (no checksum, RLE block, reserved block type,
dictionary-id byte, truncations) checked against RFC 8878, the exact error messages, the
per-thread zstd context, the codec registry, the bounded read that keeps a zstd frame's
memory to its declared size and the exact buffer of ``decompress_buffer``.  The tests in
test_limits.py that decode in a subprocess cannot see a mutant (the subprocess imports the
unmutated package), which is why some of these repeat their inputs in-process.  Budget:
about 1 s.
"""

from __future__ import annotations

import io
import struct
import sys
import threading
from typing import Any

import lz4.frame
import pytest
import zstandard

from _hostile import lz4_set_content_size
from puffin import codecs
from puffin.codecs import Lz4Codec, ZstdCodec, get_codec, register_codec
from puffin.errors import CodecError, LimitExceededError, UnknownCodecError

CHUNK = 4 << 20  # the codecs' output chunk
BIG = 2 * CHUNK + 1000  # three chunks of output
CAP = 1 << 30

ZSTD_MAGIC = bytes.fromhex("28b52ffd")
# Single-segment frame header (FHD 0x20: no checksum, no dictionary id, 1-byte content size).
ZSTD_EMPTY_NO_CHECKSUM = ZSTD_MAGIC + b"\x20\x00" + b"\x01\x00\x00"  # last raw block, size 0
ZSTD_RLE = ZSTD_MAGIC + b"\x20\x05" + bytes([1 | 1 << 1 | 5 << 3, 0, 0]) + b"a"  # "aaaaa"


def text(size: int) -> bytes:
    line = b"".join(b"line %d of a blob with words %d\n" % (i, i * i % 97) for i in range(4000))
    return (line * (size // len(line) + 1))[:size]


def big_payload() -> bytes:
    return (bytes(range(251)) * (BIG // 251 + 1))[:BIG]


def codec_error(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(CodecError) as info:
        call(*args, **kwargs)
    return str(info.value)


# ---- LZ4 -----------------------------------------------------------------------------------


def test_lz4_frames_of_several_chunks_decode_on_both_paths() -> None:
    data = big_payload()
    frame = Lz4Codec().compress(data)
    out = Lz4Codec().decompress(frame, max_size=CAP)
    assert type(out) is bytes and out == data
    buffer = Lz4Codec().decompress_buffer(frame, max_size=CAP)
    assert type(buffer) is bytearray and len(buffer) == BIG and buffer == data


def test_lz4_decompress_buffer_allocates_exactly_the_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its promise: one buffer of the output's size, no growth slack (a 256 MiB footer would
    # otherwise hold up to an eighth more). CPython's bytearray reports its allocation.
    monkeypatch.setattr(codecs, "_CHUNK", 1000)
    data = big_payload()[:25_000]
    buffer = Lz4Codec().decompress_buffer(Lz4Codec().compress(data), max_size=CAP)
    assert buffer == data
    assert sys.getsizeof(buffer) - sys.getsizeof(bytearray()) <= len(data) + 1


class _Reads(io.BytesIO):
    """A real reader that records each ``read``: what was asked, and what had been read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[tuple[int, int]] = []

    def read(self, size: int | None = -1) -> bytes:
        assert size is not None
        self.asked.append((size, self.tell()))
        return super().read(size)


@pytest.mark.parametrize("declared", [0, 1, 3, 4, 5, 8, 11])
@pytest.mark.parametrize("extra", [-1, 0, 1, 2, 10])
def test_a_bounded_read_stops_one_byte_past_the_declared_size(
    declared: int, extra: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What keeps a zstd frame's memory to its declared size, whatever libzstd lets through:
    # at most declared + 1 bytes, asked for a chunk at a time (4 bytes here).
    monkeypatch.setattr(codecs, "_CHUNK", 4)
    source = bytes(range(max(declared + extra, 0)))
    reader = _Reads(source)
    assert codecs._read_bounded(reader, declared) == source[: declared + 1]
    assert reader.asked and all(0 < n <= 4 and at + n <= declared + 1 for n, at in reader.asked)


@pytest.mark.parametrize("path", ["decompress", "decompress_buffer"])
def test_lz4_frame_truncated_after_its_first_chunk(path: str) -> None:
    frame = Lz4Codec().compress(big_payload())
    cut = frame[: len(frame) * 3 // 4]
    message = codec_error(getattr(Lz4Codec(), path), cut, max_size=CAP)
    assert message.startswith(f"LZ4 frame declares {BIG} bytes of content but holds ")
    held = int(message.rpartition(" ")[2])
    assert CHUNK < held < BIG


@pytest.mark.parametrize("path", ["decompress", "decompress_buffer"])
@pytest.mark.parametrize("size", [10, BIG], ids=["small", "big"])
def test_lz4_frame_that_understates_its_content(path: str, size: int) -> None:
    data = big_payload()[:size]
    frame = lz4_set_content_size(Lz4Codec().compress(data), size - 10)
    message = codec_error(getattr(Lz4Codec(), path), frame, max_size=CAP)
    assert message == f"LZ4 frame declares {size - 10} bytes of content but holds more"


def test_lz4_writes_content_size_and_content_checksum() -> None:
    frame = Lz4Codec().compress(b"x" * 10)
    # magic, FLG 0x6C (version 1, independent blocks, content checksum, content size),
    # BD 0x40 (64 KiB blocks), the size, then the header checksum.
    assert frame[:14] == bytes.fromhex("04224d18" "6c40") + struct.pack("<Q", 10)
    assert frame == lz4.frame.compress(b"x" * 10, store_size=True, content_checksum=True)
    assert Lz4Codec().decompress(frame, max_size=10) == b"x" * 10


def test_lz4_header_errors() -> None:
    empty = Lz4Codec().compress(b"")
    assert Lz4Codec().decompress(empty, max_size=0) == b""
    assert codec_error(Lz4Codec().decompress, empty[:6], max_size=10) == (
        "not an LZ4 frame (bad or missing frame magic)"
    )
    for size in (7, 13):
        assert codec_error(Lz4Codec().decompress, empty[:size], max_size=10) == (
            "LZ4 frame header is truncated"
        )
    # 14 bytes hold the whole content size but not the header checksum.
    assert codec_error(Lz4Codec().decompress, empty[:14], max_size=10) == (
        "LZ4 frame is truncated or holds more than its content size"
    )
    no_size = lz4.frame.compress(b"abc", store_size=False)
    assert codec_error(Lz4Codec().decompress, no_size, max_size=10) == (
        "LZ4 frame has no content size (the spec requires it)"
    )
    corrupt = bytearray(Lz4Codec().compress(text(5000)))
    corrupt[20:30] = bytes(10)
    assert codec_error(Lz4Codec().decompress, bytes(corrupt), max_size=CAP).startswith(
        "corrupt LZ4 frame: "
    )


def test_lz4_content_size_over_the_cap_even_with_its_top_bit_set() -> None:
    frame = Lz4Codec().compress(b"abc")
    for declared in (101, 2**63 + 5):
        with pytest.raises(LimitExceededError) as info:
            Lz4Codec().decompress(lz4_set_content_size(frame, declared), max_size=100)
        assert str(info.value) == (
            f"LZ4 frame declares a content size of {declared} bytes, over the cap of 100 bytes"
        )


# ---- zstd ----------------------------------------------------------------------------------


def test_zstd_writes_what_iceberg_java_writes() -> None:
    data = text(60_000)
    oracle = zstandard.ZstdCompressor(level=3, write_content_size=True, write_checksum=True)
    assert ZstdCodec().compress(data) == oracle.compress(data)
    assert ZstdCodec(level=4).compress(data) != oracle.compress(data)


def test_zstd_frames_of_several_chunks_decode() -> None:
    data = big_payload()
    assert ZstdCodec().decompress(ZstdCodec().compress(data), max_size=CAP) == data


def test_zstd_frames_without_checksum_and_with_rle_blocks() -> None:
    assert ZstdCodec().decompress(ZSTD_EMPTY_NO_CHECKSUM, max_size=0) == b""
    assert ZstdCodec().decompress(ZSTD_RLE, max_size=5) == b"aaaaa"
    plain = zstandard.ZstdCompressor(write_content_size=True, write_checksum=False)
    data = text(50_000)
    assert ZstdCodec().decompress(plain.compress(data), max_size=CAP) == data
    # Dictionary_ID_flag 1 with id 0 (no dictionary): one more header byte, no checksum.
    with_dict_id = ZSTD_MAGIC + b"\x21\x00\x00" + b"\x01\x00\x00"
    assert ZstdCodec().decompress(with_dict_id, max_size=0) == b""


def test_zstd_structure_errors() -> None:
    frame = ZstdCodec().compress(text(50_000))
    header = zstandard.frame_header_size(frame)
    assert codec_error(ZstdCodec().decompress, frame[: header + 2], max_size=CAP) == (
        "zstd frame is truncated"
    )
    assert codec_error(ZstdCodec().decompress, frame[:-2], max_size=CAP) == (
        "zstd frame is truncated"
    )
    assert codec_error(ZstdCodec().decompress, frame + b"\0\0\0", max_size=CAP) == (
        "3 bytes follow the zstd frame"
    )
    assert codec_error(ZstdCodec().decompress, ZSTD_RLE + b"a", max_size=5) == (
        "1 bytes follow the zstd frame"
    )
    reserved = bytearray(ZSTD_EMPTY_NO_CHECKSUM)
    reserved[6] |= 0x06
    assert codec_error(ZstdCodec().decompress, bytes(reserved), max_size=10) == (
        "zstd block at byte 6 of the frame has the reserved type 3"
    )
    skippable = bytes.fromhex("502a4d18") + struct.pack("<I", 4) + b"abcd"
    assert codec_error(ZstdCodec().decompress, skippable, max_size=10) == (
        "not a zstd frame (a skippable frame or a bad magic number)"
    )
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(b"abc")
    assert codec_error(ZstdCodec().decompress, no_size, max_size=10) == (
        "zstd frame has no content size (the spec requires it)"
    )
    corrupt = frame[: header + 3] + bytes(20) + frame[header + 23 :]
    assert codec_error(ZstdCodec().decompress, corrupt, max_size=CAP).startswith(
        "corrupt zstd frame: "
    )
    with pytest.raises(LimitExceededError) as info:
        ZstdCodec().decompress(frame, max_size=100)
    assert str(info.value) == (
        "zstd frame declares a content size of 50000 bytes, over the cap of 100 bytes"
    )


def test_one_zstd_context_per_thread() -> None:
    frame = ZstdCodec().compress(b"abc" * 100)
    seen: list[object] = []
    outputs: list[bytes] = []

    def work() -> None:
        # A new thread has no context yet: the first call makes it, the second reuses it.
        outputs.append(ZstdCodec().decompress(frame, max_size=300))
        first = codecs._zstd_decompressor()
        seen.extend([first, codecs._zstd_decompressor()])

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
        thread.join()
    assert outputs == [b"abc" * 100] * 2
    assert isinstance(seen[0], zstandard.ZstdDecompressor)
    assert seen[0] is seen[1] and seen[2] is seen[3] and seen[0] is not seen[2]


# ---- registry ------------------------------------------------------------------------------


class _Named:
    def __init__(self, name: object) -> None:
        self.name = name

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        return bytes(data)

    def decompress(self, data: bytes | bytearray | memoryview, *, max_size: int) -> bytes:
        return bytes(data)


def test_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codecs, "_REGISTRY", dict(codecs._REGISTRY))
    with pytest.raises(UnknownCodecError) as unknown:
        get_codec("LZ4")
    assert str(unknown.value) == "unknown compression codec 'LZ4' (known: lz4, zstd)"
    for name in (None, 5, ""):
        with pytest.raises(ValueError) as bad_name:
            register_codec(_Named(name))  # type: ignore[arg-type]
        assert str(bad_name.value) == "a codec needs a non-empty string name"
    mine = _Named("mine")
    register_codec(mine)  # type: ignore[arg-type]
    assert get_codec("mine") is mine
    with pytest.raises(ValueError) as twice:
        register_codec(_Named("mine"))  # type: ignore[arg-type]
    assert str(twice.value) == "codec 'mine' is already registered"
    assert get_codec("mine") is mine
    other = _Named("mine")
    register_codec(other, replace=True)  # type: ignore[arg-type]
    assert get_codec("mine") is other
    assert codecs.available_codecs() == ["lz4", "mine", "zstd"]
