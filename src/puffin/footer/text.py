"""The footer's JSON text: written as Iceberg Java writes it, and faults located in it.

:func:`dump_java` writes JSON byte for byte as Java's Jackson does (compact, control
characters escaped with upper-case hex).  ``json.loads`` tells its hooks what it found (a
duplicate key, ``NaN``) but not where; the footer's error must say both, so
:func:`byte_position` finds the token again in the text, skipping what lies in strings.
"""

from __future__ import annotations

import json
import re
from typing import Any

from puffin.errors import PuffinError

__all__ = ["PayloadError", "byte_position", "culprit", "dump_java", "dump_string"]


def culprit(exc: PuffinError) -> str:
    """A pattern for the token an error from a parser hook is about."""
    if exc.field is None:  # NaN, Infinity or -Infinity, named in the message
        name = exc.reason.split(": ", 1)[-1].split(" ", 1)[0]
        return rf"(?<![\w-]){re.escape(name)}"
    return re.escape(json.dumps(exc.field)) + r"\s*:"  # the key, as written


def byte_position(text: str, pattern: str) -> int:
    """The byte offset in ``text`` of the second match of ``pattern`` outside strings for a
    key (the duplicate), else of the first match outside strings; 0 when not found."""
    found = [m.start() for m in re.finditer(pattern, text) if not _in_string(text, m.start())]
    if not found:
        return 0
    at = found[1] if pattern.endswith(r"\s*:") and len(found) > 1 else found[0]
    return len(text[:at].encode("utf-8", "surrogatepass"))


def _in_string(text: str, index: int) -> bool:
    """Whether ``index`` of ``text`` lies inside a JSON string (a key's quote starts one)."""
    inside = escaped = False
    for ch in text[:index]:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = inside
        elif ch == '"':
            inside = not inside
    return inside


_LOWER_HEX_ESCAPE = re.compile(r"\\u00([0-9a-f]{2})")


def dump_string(value: str) -> str:
    # Jackson escapes control characters as Python does, but with upper-case hex digits.
    text = json.dumps(value, ensure_ascii=False)
    if "\\u00" in text:
        text = _LOWER_HEX_ESCAPE.sub(lambda m: "\\u00" + m.group(1).upper(), text)
    return text


def dump_java(value: Any) -> str:
    if isinstance(value, str):
        return dump_string(value)
    if isinstance(value, bool) or value is None:
        raise TypeError(f"unexpected JSON value {value!r} in Puffin metadata")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(dump_java(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{dump_string(k)}:{dump_java(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"unexpected JSON value {value!r} in Puffin metadata")


class PayloadError(Exception):
    """A footer error at a byte of the payload, before the caller places it in a file."""

    def __init__(self, error: PuffinError, position: int) -> None:
        super().__init__(error, position)
        self.error = error
        self.position = position

    def located(self, payload: str, *, offset: int | None = None) -> PuffinError:
        """The error, its message naming the byte of ``payload``; ``offset`` in the file."""
        self.error.reason = f"{self.error.reason} (at byte {self.position} of the {payload})"
        return self.error.with_context(offset=offset)
