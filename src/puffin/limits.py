"""Caps on what a file may make the reader allocate (data only; :mod:`puffin.footer.caps`
checks the footer JSON against them)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "Limits"]

_MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Upper bounds the reader enforces before it reads, allocates or decompresses.

    Sizes that a file declares (footer payload size, blob lengths, content sizes in
    compression frames) are checked against these caps and against the file size first,
    so a small hostile file cannot make the reader allocate gigabytes.  The defaults accept
    every footer Iceberg Java reads up to 256 MiB (stored or decompressed) and 1,000 levels
    of nesting; memory follows the bytes really in the file and the blobs kept, never a
    claim (docs/reliability.md has the measurements).

    Attributes:
        max_footer_size: largest footer payload, stored or decompressed (default 256 MiB;
            a 10,000-blob footer is about 1.5 MiB, one of 200,000 deletion vectors 40 MiB).
        max_blob_size: largest stored blob (default 2 GiB - 1, Java's array limit); a
            stored blob is bounded by the file's size anyway.
        max_decompressed_size: largest decompressed blob (default 64 MiB; a theta sketch
            of lg_k 20 is 16 MiB).
        tail_read_size: bytes read from the end of the file when the footer size is not
            known; a larger footer costs one more read (default 64 KiB).
        max_json_depth: deepest nesting of arrays and objects in the footer JSON (default
            1,000, Jackson's limit in Iceberg Java; a valid footer nests 4 deep; at most
            10,000 are ever followed).
        max_json_values: most JSON values (objects, arrays, strings, numbers, literals; keys
            not counted) the parser builds Python objects for at once (default 1,000,000).
            A footer of at most 16 MiB within it is parsed exactly, every value built; a
            larger one is decoded without building the values no blob keeps (unknown
            fields), and the cap then applies to each blob's ``fields`` and ``properties``.
            Checked on the bytes before anything is built.
        max_theta_entries: most hashes a theta sketch may declare, checked before decoding
            (default 2^23, 64 MiB of hashes; Java and C++ sketches of lg_k 22 stay below it).

    Example::

        puffin.open(path, limits=puffin.Limits(max_decompressed_size=256 << 20))
    """

    max_footer_size: int = 256 * _MiB
    max_blob_size: int = 0x7FFFFFFF
    max_decompressed_size: int = 64 * _MiB
    tail_read_size: int = 64 * 1024
    max_json_depth: int = 1000
    max_json_values: int = 1_000_000
    max_theta_entries: int = 1 << 23

    def __post_init__(self) -> None:
        for name in ("max_footer_size", "max_blob_size", "max_decompressed_size",
                     "max_json_depth", "max_json_values", "max_theta_entries"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Limits.{name} must be a non-negative int, got {value!r}")
        if not isinstance(self.tail_read_size, int) or self.tail_read_size < 16:
            raise ValueError(
                f"Limits.tail_read_size must be an int >= 16, got {self.tail_read_size!r}"
            )


DEFAULT_LIMITS = Limits()
