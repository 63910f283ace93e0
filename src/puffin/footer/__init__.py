"""The footer payload's JSON: :func:`parse`, the one door every reader goes through, and
:func:`dump`, which writes it as Iceberg Java does.

Behind the door: the caps checked on the bytes first (:mod:`~puffin.footer.caps`), the
exact parser for footers that fit (:mod:`~puffin.footer.exact`), msgspec for larger ones
(:mod:`~puffin.footer.streaming`), and one blob ⇄ JSON mapping (:mod:`~puffin.footer.rules`).
:func:`puffin.open` and :meth:`puffin.FileMetadata.from_json` both call :func:`parse`, so
they accept exactly the same footers.
"""

from __future__ import annotations

from puffin.errors import LimitExceededError
from puffin.footer.caps import json_cap_violation
from puffin.footer.exact import parse_exact
from puffin.footer.rules import Footer, footer_json
from puffin.footer.streaming import EXACT_BYTES, parse_streaming, recursion_room
from puffin.footer.text import PayloadError, dump_java
from puffin.limits import Limits

__all__ = ["Footer", "PayloadError", "dump", "parse"]


def parse(payload: str | bytes | bytearray | memoryview, limits: Limits) -> Footer:
    """The footer in ``payload`` (UTF-8 bytes, or text), checked.

    Raises :class:`PayloadError` for a fault at a known byte of the payload (the caller
    places it in its file), and :class:`~puffin.PuffinError` for the others.
    """
    text = None  # kept only when it holds raw surrogates, which no UTF-8 decodes to
    if isinstance(payload, str):
        try:
            data: bytes | bytearray = payload.encode("utf-8")
        except UnicodeEncodeError:
            data, text = payload.encode("utf-8", "surrogatepass"), payload
    else:
        # A large footer is read where it lies (a bytearray from the LZ4 codec): no copy.
        data = payload if isinstance(payload, (bytes, bytearray)) else bytes(payload)
    if len(data) <= EXACT_BYTES:
        data = bytes(data)  # at most 16 MiB: the exact parser wants bytes
        violation = json_cap_violation(data, limits)
        if violation is None:
            with recursion_room(limits.max_json_depth):
                return parse_exact(data, limits, text=text, checked=True)
        if not isinstance(violation[0], LimitExceededError):  # too deep, at a known byte
            raise PayloadError(*violation)
    return parse_streaming(data, limits)


def dump(footer: Footer) -> str:
    """Compact JSON exactly as Iceberg Java's ``FileMetadataParser`` writes it."""
    return dump_java(footer_json(footer))
