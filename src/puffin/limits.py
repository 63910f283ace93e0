"""Caps on what a file may make the reader allocate, and the cheap footer-JSON check."""

from __future__ import annotations

import re
from dataclasses import dataclass

from puffin.errors import InvalidFooterError, LimitExceededError, PuffinError

__all__ = ["DEFAULT_LIMITS", "Limits", "json_cap_violation"]

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


# --- footer JSON complexity ----------------------------------------------------------------

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[][{},:]|[^][{},:"\s]+', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_BRACKETS_OR_QUOTES = bytes(b for b in range(256) if b not in b'[]{}"')
_OPEN, _CLOSE, _COLON, _COMMA, _QUOTE = b"[{", b"]}", ord(":"), ord(","), ord('"')


def json_cap_violation(payload: bytes, limits: Limits) -> tuple[PuffinError, int] | None:
    """The first cap the footer JSON breaks, with its byte position in ``payload``.

    Runs before ``json.loads``, which would build every value first.  Bounds that cost a
    few passes in C come first (values <= 1 + commas + brackets; nesting from the
    brackets outside strings); only when one may be over a cap does the exact token scan
    run, and it stops at the first value or level over the cap.
    """
    brackets = payload.count(b"[") + payload.count(b"{")
    if 1 + brackets + payload.count(b",") > limits.max_json_values:
        return _exact_scan(payload, limits)
    if brackets <= limits.max_json_depth or _shallow(payload, limits.max_json_depth):
        return None
    return _exact_scan(payload, limits)


def _shallow(payload: bytes, cap: int) -> bool:
    """True if the brackets outside strings surely nest at most ``cap`` deep."""
    if b"\\" in payload:  # escaped quotes: find the strings the slow way
        nest = _STRING.sub(b"", payload).translate(None, _NOT_BRACKETS)
    else:  # adjacent quotes delimit no bracket; then every other run is inside a string
        nest = payload.translate(None, _NOT_BRACKETS_OR_QUOTES).replace(b'""', b"")
        if b'"' in nest:
            nest = b"".join(nest.split(b'"')[::2])
    # Each round removes the innermost level, or two ({[]} goes at once): after r rounds
    # an empty string means a depth of at most 2r.
    for rounds in range(1, cap + 1):
        nest = nest.replace(b"[]", b"").replace(b"{}", b"")
        if not nest:
            return 2 * rounds <= cap
    return False


def _exact_scan(payload: bytes, limits: Limits) -> tuple[PuffinError, int] | None:
    depth = values = 0
    for token in _TOKEN.finditer(payload):
        first = payload[token.start()]
        if first in _OPEN:
            depth += 1
            values += 1
            if depth > limits.max_json_depth:
                return InvalidFooterError(
                    f"footer payload JSON is nested too deeply: more than "
                    f"{limits.max_json_depth} levels (Limits.max_json_depth)"
                ), token.start()
        elif first in _CLOSE:
            depth -= 1
        elif first == _COLON:
            values -= 1  # the string before it was a key
        elif first != _COMMA:
            values += 1
        if values > limits.max_json_values and first != _QUOTE:
            return LimitExceededError(
                f"footer payload JSON holds more than {limits.max_json_values} values "
                "(Limits.max_json_values)"
            ), token.start()
    return None
