"""Caps on what a file may make the reader allocate."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "Limits"]

_MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Upper bounds the reader enforces before it reads, allocates or decompresses.

    Sizes that a file declares (footer payload size, blob lengths, content sizes in
    compression frames) are checked against these caps and against the file size first,
    so a small hostile file cannot make the reader allocate gigabytes.

    Attributes:
        max_footer_size: largest footer payload, stored or decompressed (default 64 MiB;
            a 10,000-blob footer is about 2 MiB).
        max_blob_size: largest stored blob (default 2 GiB - 1, Java's array limit).
        max_decompressed_size: largest decompressed blob (default 2 GiB - 1).
        tail_read_size: bytes read from the end of the file when the footer size is not
            known; a larger footer costs one more read (default 64 KiB).

    Example::

        puffin.open(path, limits=puffin.Limits(max_decompressed_size=256 << 20))
    """

    max_footer_size: int = 64 * _MiB
    max_blob_size: int = 0x7FFFFFFF
    max_decompressed_size: int = 0x7FFFFFFF
    tail_read_size: int = 64 * 1024

    def __post_init__(self) -> None:
        for name in ("max_footer_size", "max_blob_size", "max_decompressed_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Limits.{name} must be a non-negative int, got {value!r}")
        if not isinstance(self.tail_read_size, int) or self.tail_read_size < 16:
            raise ValueError(
                f"Limits.tail_read_size must be an int >= 16, got {self.tail_read_size!r}"
            )


DEFAULT_LIMITS = Limits()
