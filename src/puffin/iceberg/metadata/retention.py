"""Which snapshots are past the table's retention: the rule :func:`expire_snapshots` applies
and ``verify_table`` warns about (Iceberg Java's ``ExpireSnapshots`` defaults), and the one
reading of an ``older_than`` that maintenance takes (an age, a point in time, or a duration
string as the command line spells it)."""

from __future__ import annotations

import datetime
import re
import time
from typing import TYPE_CHECKING, TypeAlias

from puffin.errors import UsageError
from puffin.support.durations import spell_age

if TYPE_CHECKING:
    from pyiceberg.table.metadata import TableMetadata

__all__ = [
    "DEFAULT_MAX_AGE",
    "MAX_AGE_PROPERTY",
    "MIN_KEEP_PROPERTY",
    "OlderThan",
    "StillExpired",
    "cutoff_ms_of",
    "cutoff_of",
    "expired_snapshots",
    "parse_age",
]

#: What an ``older_than`` may be: an age, an aware point in time, or a duration such as "3d".
OlderThan: TypeAlias = datetime.timedelta | datetime.datetime | str

_AGE = re.compile(r"^\s*(-?)\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_SPELLINGS = "an age such as 3d, 12h, 30m, 90s or 2w"

#: Java's defaults: ``history.expire.max-snapshot-age-ms`` (5 days) and
#: ``history.expire.min-snapshots-to-keep`` (1).
MAX_AGE_PROPERTY = "history.expire.max-snapshot-age-ms"
MIN_KEEP_PROPERTY = "history.expire.min-snapshots-to-keep"
DEFAULT_MAX_AGE = datetime.timedelta(days=5)


def parse_age(text: str) -> datetime.timedelta:
    """``"3d"``, ``"12h"``, ``"30m"``, ``"90s"``, ``"2w"`` as a duration (never negative)."""
    match = _AGE.match(text)
    if match is None:
        raise UsageError(f"{text!r} is not {_SPELLINGS}")
    if match.group(1):
        raise UsageError(f"{text!r} is a negative age: give {_SPELLINGS}")
    return datetime.timedelta(**{_UNITS[match.group(3)]: float(match.group(2))})


def cutoff_of(older_than: OlderThan, *, name: str = "older_than") -> datetime.datetime:
    """The point in time (UTC) before which something counts as old: ``older_than`` is an
    age (a ``timedelta`` or a string :func:`parse_age` reads) counted back from now, or an
    aware ``datetime``; anything else, or a negative age, is a :class:`UsageError`."""
    now = datetime.datetime.now(datetime.timezone.utc)
    if isinstance(older_than, str):
        older_than = parse_age(older_than)
    if isinstance(older_than, datetime.timedelta):
        if older_than < datetime.timedelta(0):
            raise UsageError(
                f"{name} must not be a negative age, got {spell_age(older_than)}: give "
                f"{_SPELLINGS}"
            )
        return now - older_than
    if isinstance(older_than, datetime.datetime):
        if older_than.tzinfo is None:
            raise UsageError(
                f"{name} must be a timezone-aware datetime (datetime.now(timezone.utc) - ...); "
                f"{older_than} has no time zone"
            )
        return older_than.astimezone(datetime.timezone.utc)
    raise UsageError(
        f"{name} must be a datetime.timedelta, an aware datetime.datetime or {_SPELLINGS} "
        f"as a string, not {type(older_than).__name__} {older_than!r}"
    )


def cutoff_ms_of(older_than: OlderThan | None, configured: str | None) -> int:
    """The cutoff in epoch milliseconds: ``older_than`` as :func:`cutoff_of` reads it, or
    (``None``) the table's configured ``history.expire.max-snapshot-age-ms`` (else 5 days)."""
    if older_than is None:
        age = datetime.timedelta(milliseconds=int(configured)) if configured else DEFAULT_MAX_AGE
        return int(time.time() * 1000) - int(age.total_seconds() * 1000)
    return int(cutoff_of(older_than).timestamp() * 1000)


def expired_snapshots(metadata: TableMetadata, cutoff_ms: int, retain_last: int) -> set[int]:
    """The snapshots to remove: older than the cutoff, and neither a ref's snapshot nor one
    of the last ``retain_last`` ancestors of a branch."""
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    kept: set[int] = set()
    for ref in metadata.refs.values():
        kept.add(ref.snapshot_id)
        if ref.snapshot_ref_type != "branch":
            continue
        snapshot_id: int | None = ref.snapshot_id
        for _ in range(retain_last):
            snapshot = by_id.get(snapshot_id) if snapshot_id is not None else None
            if snapshot is None:
                break
            kept.add(snapshot.snapshot_id)
            snapshot_id = snapshot.parent_snapshot_id
    return {
        s.snapshot_id
        for s in metadata.snapshots
        if s.snapshot_id not in kept and s.timestamp_ms < cutoff_ms
    }


class StillExpired:
    """A commit requirement: every snapshot an expiry removes would still be removed by the
    same rule on the table as the catalog holds it when the commit lands.

    Iceberg Java's ``RemoveSnapshots`` commits against the refreshed table; so does an
    expiry here, when the catalog checks requirements in this process (a SQL catalog, see
    :func:`~puffin.iceberg.metadata.v3.checks_requirements_here`): an append that moved
    ``main`` meanwhile changes nothing it removes, while a ref set at one of its snapshots,
    or another expiry that removed some first, fails the requirement (pyiceberg's
    ``CommitFailedException``) and the expiry is computed again.
    """

    def __init__(self, expired: set[int], cutoff_ms: int, retain_last: int) -> None:
        self.expired = frozenset(expired)
        self.cutoff_ms = cutoff_ms
        self.retain_last = retain_last

    def validate(self, base_metadata: TableMetadata | None) -> None:
        """Raise pyiceberg's ``CommitFailedException`` if the expiry no longer holds."""
        from pyiceberg.exceptions import CommitFailedException

        if base_metadata is None:
            raise CommitFailedException("Requirement failed: the table is gone")
        still = expired_snapshots(base_metadata, self.cutoff_ms, self.retain_last)
        if not self.expired <= still:
            changed = sorted(self.expired - still)[:3]
            raise CommitFailedException(
                f"Requirement failed: snapshots {changed} are no longer to expire (a ref "
                "points at one, or it was removed meanwhile)"
            )
