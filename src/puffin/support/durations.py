"""Durations in messages, as a user writes them (``1h``, ``3d``), not as ``str(timedelta)``.

``str(timedelta)`` turns the ``1h`` a user gave into ``1:00:00.000013`` once it has gone
through a clock (a cutoff computed, then subtracted from another ``now``).  A message says
the age the user wrote, or the age itself in the one spelling the command line reads
(``puffin.iceberg.metadata.retention.parse_age``: a number and one of ``s m h d w``).
"""

from __future__ import annotations

import datetime

__all__ = ["as_written", "spell_age"]

_UNITS = (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60))


def spell_age(age: datetime.timedelta) -> str:
    """``1h``, ``90m``, ``3d``, ``2w``, ``45s``, ``0.5s``: the largest unit that divides
    the age exactly (so ``parse_age`` reads it back to the same age)."""
    micros = round(age.total_seconds() * 1_000_000)
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    for unit, seconds in _UNITS:
        if micros and micros % (seconds * 1_000_000) == 0:
            return f"{sign}{micros // (seconds * 1_000_000)}{unit}"
    whole, fraction = divmod(micros, 1_000_000)
    decimals = f".{fraction:06d}".rstrip("0") if fraction else ""
    return f"{sign}{whole}{decimals}s"


def as_written(given: object, measured: datetime.timedelta) -> str:
    """How a message names an age the caller gave as ``given``: the text as written
    (``"1h"``), a ``timedelta`` spelled by :func:`spell_age`, and anything else (a point in
    time) by the age ``measured`` from it, to the second."""
    if isinstance(given, str):
        return given.strip()
    if isinstance(given, datetime.timedelta):
        return spell_age(given)
    return spell_age(datetime.timedelta(seconds=round(measured.total_seconds())))
