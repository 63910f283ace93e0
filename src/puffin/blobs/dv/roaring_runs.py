"""Run containers of a portable 32-bit Roaring bitmap: their written cardinalities checked.

The format writes every container's cardinality - 1 in the descriptive header.  CRoaring
(so pyroaring) computes a run container's cardinality from its runs and ignores the header's,
so a bitmap whose run containers have swapped cardinalities has the right total and decodes
without complaint, though its header lies to any reader that trusts it.  These checks
compare each run container's header cardinality with what its runs hold, in plain Python
for a few containers and with NumPy (bounded temporaries) for many.  Private to
:mod:`puffin.blobs.dv.roaring64`; positions are indexes into the buffer, given in messages.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from puffin.errors import DeletionVectorError

__all__ = ["RunContainers", "check_run_card", "check_run_cards", "run_counts"]


def _error(message: str, at: int, location: str | None) -> DeletionVectorError:
    return DeletionVectorError(f"{message} (at byte {at} of the payload)", location=location)


class RunContainers(NamedTuple):
    """A bitmap's run containers: which ones, where their run counts are, the counts."""

    which: np.ndarray
    at: np.ndarray
    runs: np.ndarray

    @staticmethod
    def empty() -> RunContainers:
        none = np.empty(0, dtype=np.int64)
        return RunContainers(none, none, none)


def run_counts(
    buf: bytes,
    start: int,
    end: int,
    n: int,
    run_flags: bytes,
    offsets: np.ndarray,
    offsets_at: int,
    data_start: int,
    location: str | None,
) -> RunContainers:
    """Each run container's run count, read where the offset header says it starts.

    The offsets are then checked against the sizes this gives, so a lying header cannot go
    unnoticed.
    """
    flags = np.frombuffer(run_flags, dtype=np.uint8)
    run_index = np.flatnonzero(np.unpackbits(flags, bitorder="little")[:n])
    at = offsets[run_index] + start
    outside = np.flatnonzero((at < data_start) | (at + 2 > end))
    if outside.size:
        i = int(run_index[outside[0]])
        raise _error(
            f"Roaring container {i} offset {int(offsets[i])} is outside the bitmap",
            offsets_at + 4 * i,
            location,
        )
    u8 = np.frombuffer(buf, dtype=np.uint8)
    runs = u8[at].astype(np.int64) | (u8[at + 1].astype(np.int64) << 8)
    return RunContainers(run_index, at, runs)


def _run_card_error(
    i: int, card: int, held: int, header_at: int, location: str | None
) -> DeletionVectorError:
    return _error(
        f"Roaring run container {i} has cardinality {card} in the header, its runs hold "
        f"{held} values",
        header_at + 4 * i + 2,
        location,
    )


def check_run_card(
    buf: bytes, at: int, runs: int, card: int, i: int, header_at: int, location: str | None
) -> None:
    """Container ``i``'s runs (at ``at``, within the buffer) hold its written cardinality."""
    held = runs + sum(struct.unpack_from(f"<{2 * runs}H", buf, at + 2)[1::2])
    if held != card:
        raise _run_card_error(i, card, held, header_at, location)


#: Runs summed per NumPy pass in :func:`check_run_cards`: bounds its temporaries (about
#: 40 bytes a run) whatever the bitmap holds.
_RUN_GROUP = 1 << 18


def check_run_cards(
    buf: bytes, runs: RunContainers, cards: np.ndarray, header_at: int, location: str | None
) -> None:
    """:func:`check_run_card` for many containers, a group of runs at a time."""
    empty = np.flatnonzero(runs.runs == 0)  # no runs: nothing for reduceat to sum
    if empty.size:
        j = int(empty[0])
        raise _run_card_error(int(runs.which[j]), int(cards[j]), 0, header_at, location)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    ends = np.cumsum(runs.runs)
    lo = 0
    while lo < runs.runs.size:
        limit = int(ends[lo] - runs.runs[lo]) + _RUN_GROUP
        hi = max(int(np.searchsorted(ends, limit, side="right")), lo + 1)
        count = runs.runs[lo:hi]
        first = np.cumsum(count) - count  # each container's first run in the group
        # The length of run j of a container at ``at`` is the u16 at at + 2 + 4j + 2.
        pos = np.arange(int(count.sum()), dtype=np.int64)
        pos -= np.repeat(first, count)
        pos *= 4
        pos += np.repeat(runs.at[lo:hi] + 4, count)
        lengths = u8[pos].astype(np.int64)
        pos += 1
        lengths |= u8[pos].astype(np.int64) << 8
        held = np.add.reduceat(lengths, first) + count
        bad = np.flatnonzero(held != cards[lo:hi])
        if bad.size:
            j = lo + int(bad[0])
            held_j = int(held[bad[0]])
            raise _run_card_error(int(runs.which[j]), int(cards[j]), held_j, header_at, location)
        lo = hi
