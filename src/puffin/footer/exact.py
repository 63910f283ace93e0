"""The exact footer parser: every value built by ``json.loads``, faults placed by byte.

For footers that fit (:mod:`puffin.footer` decides): duplicate keys and ``NaN`` are refused
with the byte where they stand, integers too long for Python are refused by name, and the
rules of :mod:`puffin.footer.rules` check what was built.
"""

from __future__ import annotations

import json
import re
from typing import Any

from puffin.errors import InvalidFooterError, PuffinError
from puffin.footer.caps import json_cap_violation
from puffin.footer.rules import Footer, footer_from_json
from puffin.footer.text import PayloadError, byte_position, culprit
from puffin.limits import Limits

__all__ = ["parse_exact"]

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_exact(
    data: bytes, limits: Limits, *, text: str | None = None, checked: bool = False
) -> Footer:
    """The footer in the UTF-8 ``data``; ``text``: the caller's text when it holds raw
    surrogates (``data`` then is its ``surrogatepass`` encoding, which no decoder takes).

    Raises :class:`PayloadError` for faults with a byte position; ``checked``: the caller
    already found the bytes within the JSON caps.
    """
    raw_surrogates = text is not None
    if text is None:
        try:
            text = str(data, "utf-8")
        except UnicodeDecodeError as exc:
            raise PayloadError(InvalidFooterError(
                f"footer payload is not valid UTF-8: {exc.reason}"), exc.start) from None
    violation = None if checked else json_cap_violation(data, limits)
    if violation is not None:
        raise PayloadError(*violation)
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys,
                         parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        position = len(text[: exc.pos].encode("utf-8", "surrogatepass"))
        raise PayloadError(InvalidFooterError(
            f"footer payload is not valid JSON: {exc.msg} at line {exc.lineno} column "
            f"{exc.colno}"), position) from None
    except RecursionError:  # only with max_json_depth raised into the thousands
        raise InvalidFooterError("footer payload JSON is nested too deeply") from None
    except PuffinError as exc:  # a duplicate key or NaN/Infinity, from the parser's hooks
        raise PayloadError(exc, byte_position(text, culprit(exc))) from None
    except ValueError:
        # Python refuses to parse integers of more than 4,300 digits; no valid footer
        # holds one (every integer is at most 64 bits).
        error = InvalidFooterError(
            "footer payload holds an integer of more than 4,300 digits (a footer's numbers "
            "are 64-bit)"
        )
        raise PayloadError(error, byte_position(text, r"-?\d{4301,}")) from None
    # Only a \\uD800-\\uDFFF escape can put an unpaired surrogate into the parsed strings.
    return footer_from_json(
        doc, check_text=raw_surrogates or bool(_SURROGATE_ESCAPE.search(text))
    )


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        # An ambiguous footer: Jackson keeps the last value, others the first.
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InvalidFooterError(f"duplicate key {key!r} in a JSON object", field=key)
            seen.add(key)
    return out


def _reject_constant(name: str) -> Any:
    raise InvalidFooterError(
        f"footer payload is not valid JSON: {name} is not a JSON value (NaN and Infinity "
        "are JavaScript, not JSON)"
    )
