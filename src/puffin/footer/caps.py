"""The footer JSON's size and nesting against :class:`~puffin.Limits`, before any value is built.

``json.loads`` and msgspec build (or recurse through) every value before a caller could
count them, so a hostile footer is measured on its bytes first: a few passes in C bound the
values and the nesting, and only a payload that may be over a cap is scanned token by token.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from puffin.errors import InvalidFooterError, LimitExceededError, PuffinError
from puffin.limits import Limits

__all__ = ["first_too_deep", "json_cap_violation", "too_deep"]

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
                return too_deep(limits.max_json_depth), token.start()
        elif first in _CLOSE:
            depth -= 1
        elif first == _COLON:
            values -= 1  # the string before it was a key
        elif first != _COMMA:
            values += 1
        if values > limits.max_json_values and first != _QUOTE:
            return _too_many(limits), token.start()
    if values > limits.max_json_values:  # a last string value: no token came after it
        return _too_many(limits), token.start()
    return None


def too_deep(cap: int) -> InvalidFooterError:
    """The error for nesting past ``cap`` levels, on either parsing path."""
    return InvalidFooterError(
        f"footer payload JSON is nested too deeply: more than {cap} levels "
        "(Limits.max_json_depth)"
    )


def _too_many(limits: Limits) -> LimitExceededError:
    return LimitExceededError(
        f"footer payload JSON holds more than {limits.max_json_values} values "
        "(Limits.max_json_values)"
    )


#: Bytes of the payload the chunked depth scan copies at once.
DEPTH_CHUNK = 256 << 10
#: Bytes outside strings and whole strings: a match stops where a string the text does not
#: close begins.
_CLOSED = re.compile(rb'(?:[^"]+|"[^"\\]*(?:\\.[^"\\]*)*")*', re.S)
_STRING_OR_BRACKET = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[][{}]', re.S)


def first_too_deep(data: bytes | bytearray, cap: int) -> int | None:
    """The byte of the first bracket outside strings that opens level ``cap + 1``, or None.

    For payloads too large to copy (the streaming path): a chunk at a time, cut where no
    string is open, its strings removed and its brackets counted in C; a string longer than
    a chunk is skipped by one match where it lies. A chunk that surely stays within the cap
    (:func:`_shallow_end`: every footer a writer makes) costs no numpy; only one that may
    not is counted bracket by bracket with numpy, imported then (its 12 MiB would otherwise
    add to the peak of every large footer read).
    """
    if data.count(b"[") + data.count(b"{") <= cap:
        return None
    work: Any = None
    depth = pos = 0
    while pos < len(data):
        window = bytes(data[pos : pos + DEPTH_CHUNK])
        cut, skeleton = _outside_strings(window)
        if cut == 0:  # a string longer than the chunk begins here
            string = _STRING.match(data, pos)
            if string is None:
                return None  # never closed: the decoder says so
            pos = string.end()
            continue
        shallow = _shallow_end(skeleton, depth, cap)
        if shallow is not None:
            depth, pos = shallow, pos + cut
            continue
        if work is None:
            import numpy as np

            work = np.empty(DEPTH_CHUNK, dtype=np.int32)
        past, end = _levels(skeleton, depth, cap, work)
        if past is not None:
            return pos + _bracket_at(window, past)
        depth, pos = end, pos + cut
    return None


def _outside_strings(window: bytes) -> tuple[int, bytes]:
    """How much of ``window`` (which starts outside strings) to take, up to where a string
    it does not close begins, and the brackets outside strings in that part."""
    if b"\\" in window:  # escaped quotes: find the strings the slow way
        cut = _CLOSED.match(window).end()  # type: ignore[union-attr]  # matches empty text
        return cut, _STRING.sub(b"", window[:cut]).translate(None, _NOT_BRACKETS)
    cut = len(window) if window.count(b'"') % 2 == 0 else window.rfind(b'"')
    # Every quote opens or closes a string: two in a row enclose no bracket outside one.
    marks = window[:cut].translate(None, _NOT_BRACKETS_OR_QUOTES).replace(b'""', b"")
    if b'"' in marks:  # brackets inside strings
        marks = b"".join(marks.split(b'"')[::2])
    return cut, marks


#: Openers as ``(``, closers as ``)``: ``[`` and ``{`` count alike, as in :func:`_levels`.
_UNIFORM = bytes.maketrans(b"[{]}", b"(())")
#: Passes of :func:`_shallow_end` before a chunk is left to the exact count.
_SHALLOW_PASSES = 8


def _shallow_end(skeleton: bytes, depth: int, cap: int) -> int | None:
    """The depth after brackets ``skeleton`` entered at ``depth`` when they surely stay
    within ``cap``; None when they may not (then :func:`_levels` counts them exactly).

    Each pass removes every adjacent open-close pair; after ``k`` passes nothing that was
    removed nests more than ``k`` deep, and what is left is ``c`` closers then ``o``
    openers. So no bracket goes past ``max(depth, depth - c + o) + k``, and the chunk ends
    at ``depth - c + o``: both without numpy, in a few C passes over the chunk's brackets.
    """
    rest = skeleton.translate(_UNIFORM)
    passes = 0
    while b"()" in rest:
        if passes == _SHALLOW_PASSES:
            return None
        rest = rest.replace(b"()", b"")
        passes += 1
    closers = rest.count(b")")
    end = depth - closers + (len(rest) - closers)
    return end if max(depth, end) + passes <= cap else None


def _levels(skeleton: bytes, depth: int, cap: int, work: Any) -> tuple[int | None, int]:
    """For brackets ``skeleton`` entered at ``depth``: which of them (from 0) first opens
    level ``cap + 1``, or None, and the depth after them.  ``work``: int32 room for a
    chunk, reused (fresh arrays for each chunk cost more in page faults than the sums)."""
    import numpy as np

    if not skeleton:
        return None, depth
    levels = work[: len(skeleton)]
    # [ and { have bit 1 set, ] and } do not: +1 and -1, relative to ``depth``.
    np.bitwise_and(np.frombuffer(skeleton, np.uint8), 2, out=levels, casting="unsafe")
    levels -= 1
    np.cumsum(levels, out=levels)
    end = depth + int(levels[-1])
    if depth + int(levels.max()) <= cap:
        return None, end
    return int(np.argmax(levels > cap - depth)), end


def _bracket_at(text: bytes, index: int) -> int:
    """The byte of the ``index``-th bracket outside strings in ``text`` (from 0)."""
    brackets = (m for m in _STRING_OR_BRACKET.finditer(text) if text[m.start()] != _QUOTE)
    return next(itertools.islice(brackets, index, None)).start()
