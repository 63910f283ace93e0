"""Byte layout of a Puffin file.

::

    Magic Blob₁ Blob₂ … Blobₙ Footer
    Footer = Magic FooterPayload FooterPayloadSize(int32 LE) Flags(4 bytes) Magic

All 4-byte integers are signed two's complement, little-endian.  Flag byte 0, bit 0 marks an
LZ4-compressed footer payload; every other bit is reserved and must be zero.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from puffin.errors import InvalidFileError

__all__ = [
    "FOOTER_COMPRESSED_FLAG",
    "FOOTER_STRUCT_LENGTH",
    "MAGIC",
    "MAGIC_LENGTH",
    "MIN_FILE_SIZE",
    "MIN_FOOTER_SIZE",
    "FooterStruct",
    "footer_size_for",
    "pack_footer",
    "parse_footer_struct",
]

MAGIC = b"PFA1"
MAGIC_LENGTH = len(MAGIC)
#: FooterPayloadSize + Flags + Magic at the very end of the file.
FOOTER_STRUCT_LENGTH = 12
#: A footer with an empty payload: Magic + FooterPayloadSize + Flags + Magic.
MIN_FOOTER_SIZE = MAGIC_LENGTH + FOOTER_STRUCT_LENGTH
#: Leading magic plus the smallest footer.
MIN_FILE_SIZE = MAGIC_LENGTH + MIN_FOOTER_SIZE

FOOTER_COMPRESSED_FLAG = 0x01  # byte 0, bit 0
_KNOWN_FLAGS = FOOTER_COMPRESSED_FLAG

_INT32 = struct.Struct("<i")
_UINT32 = struct.Struct("<I")


@dataclass(frozen=True)
class FooterStruct:
    """The fixed 12 bytes that end a Puffin file."""

    payload_size: int
    compressed: bool


def footer_size_for(payload_size: int) -> int:
    """Whole footer size, magic to magic, for a payload of ``payload_size`` bytes."""
    return MAGIC_LENGTH + payload_size + FOOTER_STRUCT_LENGTH


def check_magic(data: bytes | memoryview, at: int, *, offset: int, what: str) -> None:
    """Raise unless ``data[at:at + 4]`` is the Puffin magic; ``offset`` is its file offset."""
    found = bytes(data[at : at + MAGIC_LENGTH])
    if found != MAGIC:
        raise InvalidFileError(
            f"magic mismatch {what}: expected 'PFA1' ({MAGIC.hex()}), found "
            f"{_shown(found)}{_truncation_hint(found, what)}",
            offset=offset,
        )


def _shown(found: bytes) -> str:
    if not found:
        return "nothing"
    text = found.decode("latin-1")
    return f"{text!r} ({found.hex()})" if text.isprintable() else found.hex()


def _truncation_hint(found: bytes, what: str) -> str:
    """A hint when the bytes look like the magic cut short: a file that ends too soon."""
    if what != "at end of file":
        return ""
    if any(MAGIC.startswith(found[i:]) for i in range(1, len(found))) or len(found) < 4:
        return "; the file may be truncated (it should end with PFA1)"
    return "; not a Puffin file, or the file may be truncated"


def parse_footer_struct(tail: bytes | memoryview, *, file_size: int) -> FooterStruct:
    """Decode the last 12 bytes of a file (``tail`` must end where the file ends)."""
    if len(tail) < FOOTER_STRUCT_LENGTH:
        raise InvalidFileError(
            f"file too short for a Puffin footer: {file_size} bytes", offset=file_size
        )
    end = len(tail)
    struct_offset = file_size - FOOTER_STRUCT_LENGTH
    check_magic(tail, end - MAGIC_LENGTH, offset=file_size - MAGIC_LENGTH, what="at end of file")
    (payload_size,) = _INT32.unpack_from(tail, end - FOOTER_STRUCT_LENGTH)
    (flags,) = _UINT32.unpack_from(tail, end - FOOTER_STRUCT_LENGTH + 4)
    if flags & ~_KNOWN_FLAGS:
        raise InvalidFileError(
            f"unknown footer flag bits set: flags 0x{flags:08x} (only 0x{_KNOWN_FLAGS:08x} "
            "is defined)",
            offset=struct_offset + 4,
        )
    if payload_size < 0:
        raise InvalidFileError(
            f"negative footer payload size {payload_size}", offset=struct_offset
        )
    return FooterStruct(payload_size=payload_size, compressed=bool(flags & FOOTER_COMPRESSED_FLAG))


def pack_footer(payload: bytes, *, compressed: bool) -> bytes:
    """The whole footer for an already encoded (and maybe compressed) payload."""
    if len(payload) > 0x7FFFFFFF:
        raise ValueError(f"footer payload of {len(payload)} bytes does not fit an int32")
    flags = FOOTER_COMPRESSED_FLAG if compressed else 0
    return b"".join((MAGIC, payload, _INT32.pack(len(payload)), _UINT32.pack(flags), MAGIC))
