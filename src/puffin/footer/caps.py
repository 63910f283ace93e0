"""The footer JSON's size and nesting against :class:`~puffin.Limits`, before any value is built.

``json.loads`` and msgspec build (or recurse through) every value before a caller could
count them, so a hostile footer is measured on its bytes first: a few passes in C bound the
values and the nesting, and only a payload that may be over a cap is scanned token by token.
"""

from __future__ import annotations

import re

from puffin.errors import InvalidFooterError, LimitExceededError, PuffinError
from puffin.limits import Limits

__all__ = ["json_cap_violation"]

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
