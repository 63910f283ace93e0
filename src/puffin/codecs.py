"""Compression codecs for blobs and footers, in one registry.

The spec allows no compression, ``lz4`` (a single LZ4 frame with the content size present)
and ``zstd`` (a single Zstandard frame with the content size present).  Names are
case-sensitive, as in Iceberg Java.  Decompression is strict: one frame, content size
present and equal to the output, no trailing bytes, and the declared size checked against
the caller's cap before anything is allocated.
"""

from __future__ import annotations

import struct
import threading
from typing import Any, Protocol, runtime_checkable

from puffin.errors import CodecError, LimitExceededError, UnknownCodecError

__all__ = [
    "Codec",
    "Lz4Codec",
    "ZstdCodec",
    "available_codecs",
    "get_codec",
    "register_codec",
]

# Output is produced at most this much at a time, so memory follows the real output, not
# what a (possibly hostile) frame header claims.
_CHUNK = 4 << 20
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@runtime_checkable
class Codec(Protocol):
    """A compression codec as the registry knows it."""

    name: str

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        """Compress ``data`` into exactly one frame with its content size."""
        ...

    def decompress(self, data: bytes | bytearray | memoryview, *, max_size: int) -> bytes:
        """Decompress one frame, refusing more than ``max_size`` output bytes."""
        ...


def _too_large(codec: str, declared: int, max_size: int) -> LimitExceededError:
    return LimitExceededError(
        f"{codec} frame declares a content size of {declared} bytes, over the cap of "
        f"{max_size} bytes"
    )


class ZstdCodec:
    """Zstandard, written as Iceberg Java writes it: level 3, content size and checksum.

    Decoding never trusts the frame: the declared size is checked against the cap, the
    frame's end is found from its block headers (so trailing bytes and truncation are
    caught before decoding), and the output is read in chunks of at most 4 MiB, stopping
    one byte past the declared size.  Memory follows the real output, never the claim.
    """

    name = "zstd"

    def __init__(self, level: int = 3) -> None:
        self.level = level

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        import zstandard

        cctx = zstandard.ZstdCompressor(
            level=self.level, write_content_size=True, write_checksum=True
        )
        return cctx.compress(data)

    def decompress(self, data: bytes | bytearray | memoryview, *, max_size: int) -> bytes:
        import zstandard

        view = memoryview(data).cast("B")
        try:
            declared = zstandard.frame_content_size(view)
            header = zstandard.frame_header_size(view)
        except zstandard.ZstdError as exc:
            raise CodecError(f"not a zstd frame: {exc}") from None
        if declared < 0:
            raise CodecError("zstd frame has no content size (the spec requires it)")
        if declared > max_size:
            raise _too_large("zstd", declared, max_size)
        end = _zstd_frame_end(view, header)
        if end < len(view):
            raise CodecError(f"{len(view) - end} bytes follow the zstd frame")
        try:
            reader = _zstd_decompressor().stream_reader(view, read_across_frames=False)
            out = _read_bounded(reader, declared)
        except zstandard.ZstdError as exc:
            raise CodecError(f"corrupt zstd frame: {exc}") from None
        if len(out) != declared:
            got = "more" if len(out) > declared else str(len(out))
            raise CodecError(f"zstd frame declares {declared} bytes of content but holds {got}")
        return out


_THREAD = threading.local()


def _zstd_decompressor() -> Any:
    """One decompression context per thread: making one costs more than decoding 32 KiB."""
    dctx = getattr(_THREAD, "zstd", None)
    if dctx is None:
        import zstandard

        dctx = _THREAD.zstd = zstandard.ZstdDecompressor()
    return dctx


def _zstd_frame_end(view: memoryview, header: int) -> int:
    """Where the zstd frame starting at 0 ends, from its block headers (RFC 8878 3.1.1)."""
    if bytes(view[:4]) != _ZSTD_MAGIC:
        raise CodecError("not a zstd frame (a skippable frame or a bad magic number)")
    checksum = 4 if view[4] & 0x04 else 0
    pos = header
    while True:
        if pos + 3 > len(view):
            raise CodecError("zstd frame is truncated")
        block = view[pos] | view[pos + 1] << 8 | view[pos + 2] << 16
        kind, size = (block >> 1) & 3, block >> 3
        if kind == 3:
            raise CodecError(f"zstd block at byte {pos} of the frame has the reserved type 3")
        pos += 3 + (1 if kind == 1 else size)
        if block & 1:
            break
    if pos + checksum > len(view):
        raise CodecError("zstd frame is truncated")
    return pos + checksum


def _read_bounded(reader: Any, declared: int) -> bytes:
    """Read at most ``declared + 1`` bytes from ``reader``, one chunk at a time."""
    with reader:
        parts: list[bytes] = []
        got = 0
        while got <= declared:
            part = reader.read(min(declared + 1 - got, _CHUNK))
            if not part:
                break
            parts.append(part)
            got += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


_LZ4_MAGIC = 0x184D2204
_LZ4_FLG_CONTENT_SIZE = 0x08
# liblz4 reads a content size of 0 as "unknown" and leaves the flag clear, so it cannot
# write an empty frame that declares its size.  This is that frame, built by hand: magic,
# FLG 0x68 (version 1, independent blocks, content size), BD 0x40, size 0, header checksum
# 0x05 (second byte of XXH32 of the descriptor), end mark.  liblz4 decodes it to b"".
_LZ4_EMPTY_FRAME = bytes.fromhex("04224D18" "6840" "0000000000000000" "05" "00000000")


class Lz4Codec:
    """LZ4 frame format, with the content size stored in the frame header."""

    name = "lz4"

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        import lz4.frame

        if not memoryview(data).nbytes:
            return _LZ4_EMPTY_FRAME
        return bytes(lz4.frame.compress(data, store_size=True, content_checksum=True))

    def decompress(self, data: bytes | bytearray | memoryview, *, max_size: int) -> bytes:
        return bytes(self._decompress(data, max_size=max_size, exact=False))

    def decompress_buffer(
        self, data: bytes | bytearray | memoryview, *, max_size: int
    ) -> bytes | bytearray:
        """:meth:`decompress` into one buffer of exactly the output's size, never copied into
        ``bytes``: the reader's footer path, where a 256 MiB footer would otherwise cost
        512 MiB. A large frame is decoded twice (counted, then written)."""
        return self._decompress(data, max_size=max_size, exact=True)

    def _decompress(
        self, data: bytes | bytearray | memoryview, *, max_size: int, exact: bool
    ) -> bytes | bytearray:
        import lz4.frame

        view = memoryview(data)
        # Read the header ourselves: lz4's frame info reports 0 both for "no size" and
        # for an empty frame, and the spec needs to tell them apart.
        if len(view) < 7 or struct.unpack_from("<I", view, 0)[0] != _LZ4_MAGIC:
            raise CodecError("not an LZ4 frame (bad or missing frame magic)")
        flg = view[4]
        if not flg & _LZ4_FLG_CONTENT_SIZE:
            raise CodecError("LZ4 frame has no content size (the spec requires it)")
        if len(view) < 14:
            raise CodecError("LZ4 frame header is truncated")
        (declared,) = struct.unpack_from("<Q", view, 6)
        if declared > max_size:
            raise _too_large("LZ4", declared, max_size)
        decompressor = lz4.frame.LZ4FrameDecompressor()
        # Ask for at most one byte more than declared, so an overlong frame is caught early,
        # and at most one chunk at a time: lz4 allocates max_length up front, and memory
        # should follow the real output, not what the header claims.
        want = declared + 1
        source = bytes(view)
        try:
            out: bytes | bytearray = decompressor.decompress(
                source, max_length=min(want, _CHUNK)
            )
            if len(out) == _CHUNK and want > _CHUNK:
                out = _lz4_rest(decompressor, source, out, want, exact=exact)
        except RuntimeError as exc:  # lz4 reports frame errors as RuntimeError
            raise CodecError(f"corrupt LZ4 frame: {exc}") from None
        if len(out) != declared:
            raise CodecError(f"LZ4 frame declares {declared} bytes of content but holds "
                             f"{'more' if len(out) > declared else len(out)}")
        if not decompressor.eof:
            raise CodecError("LZ4 frame is truncated or holds more than its content size")
        if decompressor.unused_data:
            raise CodecError(f"{len(decompressor.unused_data)} bytes follow the LZ4 frame")
        return out


def _lz4_rest(
    decompressor: Any, source: bytes, first: bytes | bytearray, want: int, *, exact: bool
) -> bytearray:
    """The frame's output after its ``first`` chunk, up to ``want`` bytes, grown chunk by
    chunk; with ``exact``, in a buffer of exactly its size.

    Then a first pass counts the output without keeping it (so what is allocated is what
    the frame really holds, never its claim) and the second writes into one buffer of that
    size: a second decoding, but no growth slack and no copy at the end.
    """
    import lz4.frame

    grown = bytearray(first)
    size = len(first)
    while not decompressor.eof and size < want:
        more = decompressor.decompress(b"", max_length=min(want - size, _CHUNK))
        if not more:
            break
        size += len(more)
        if not exact:
            grown += more
    if not exact:
        return grown
    del grown
    out = bytearray(size)
    view = memoryview(out)
    again = lz4.frame.LZ4FrameDecompressor()
    chunk = again.decompress(source, max_length=min(size, _CHUNK))
    at = 0
    while chunk:
        view[at : at + len(chunk)] = chunk
        at += len(chunk)
        chunk = again.decompress(b"", max_length=min(size - at, _CHUNK)) if at < size else b""
    return out


_REGISTRY: dict[str, Codec] = {}


def register_codec(codec: Codec, *, replace: bool = False) -> None:
    """Make ``codec`` available under ``codec.name`` for reading and writing.

    The spec allows only ``lz4`` and ``zstd``; registering another name lets this library
    read and write it, but no other implementation will read such files.
    """
    if not isinstance(codec.name, str) or not codec.name:
        raise ValueError("a codec needs a non-empty string name")
    if codec.name in _REGISTRY and not replace:
        raise ValueError(f"codec {codec.name!r} is already registered")
    _REGISTRY[codec.name] = codec


def get_codec(name: str | None) -> Codec | None:
    """The codec registered as ``name`` (case-sensitive); ``None`` means uncompressed."""
    if name is None:
        return None
    codec = _REGISTRY.get(name)
    if codec is None:
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownCodecError(f"unknown compression codec {name!r} (known: {known})")
    return codec


def available_codecs() -> list[str]:
    """Names of the registered codecs."""
    return sorted(_REGISTRY)


register_codec(Lz4Codec())
register_codec(ZstdCodec())
