"""Integer equality keys, each with the newest delete naming it: one lookup per row, not per delete.

A CDC table's data files each meet a different set of equality deletes: those of a later data
sequence number in the same scope (a partition, or every partition for a delete of an
unpartitioned spec). A file of sequence ``s`` meets exactly the scope's deletes newer than
``s``, so a row of it is deleted when the newest delete of the scope holding its key is newer
than ``s``. :class:`NewestKeys` keeps each key of a scope's deletes with that newest sequence
number: built once for every data file of the scope, then one lookup per row (a flag table
when the keys are dense, a binary search otherwise), where matching each file against each
of its deletes made a lookup per row per delete (on the 10 M-row benchmark of 50 upserts,
those lookups were most of the scan). Deletes older than a file that are in the structure
change nothing: their numbers are not newer than the file's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

__all__ = ["AtSequence", "NewestKeys"]

#: A table of one number per value from the smallest key to the largest is kept when that
#: span is at most this many times the keys (and 64 Mi values, 4 bytes each).
DENSE_SPAN = 32


class NewestKeys:
    """Integer keys (sorted, unique) and, for each, the newest sequence number of a delete
    holding it; ``null_newest``: that of a null key (-1: no delete holds a null)."""

    def __init__(self, parts: list[tuple[int, npt.NDArray[Any], bool]], paths: frozenset[str]):
        """``parts``: (sequence number, sorted keys, holds a null) of each delete file of
        ``paths``."""
        import numpy as np

        self.paths = paths
        keys = np.concatenate([k for _, k, _ in parts])
        sequences = np.concatenate([np.full(len(k), s, dtype=np.int64) for s, k, _ in parts])
        order = np.lexsort((sequences, keys))  # by key, then by sequence number
        keys, sequences = keys[order], sequences[order]
        last = np.ones(len(keys), dtype=bool)  # the last of each key: its newest delete
        last[:-1] = keys[1:] != keys[:-1]
        self.keys, self.newest = keys[last], sequences[last]
        self.null_newest = max((s for s, _, null in parts if null), default=-1)
        self.dense = _dense(self.keys, self.newest)

    def deleted(self, column: pa.Array, sequence: int) -> npt.NDArray[np.bool_]:
        """Which values of ``column`` (the key, of the data file of ``sequence``) a delete
        newer than the file holds."""
        import numpy as np
        import pyarrow.compute as pc

        nulls = column.null_count
        values = (pc.fill_null(column, 0) if nulls else column).to_numpy()
        if not len(self.keys):
            hit = np.zeros(len(values), dtype=bool)
        elif self.dense is not None:
            low, high = self.keys[0], self.keys[-1]
            inside = (values >= low) & (values <= high)
            with np.errstate(over="ignore"):  # a wrapped offset lies outside: ``inside``
                offsets = values.astype(np.int64, copy=False) - np.int64(low)
            at = np.clip(offsets, 0, len(self.dense) - 1)
            hit = inside & (self.dense[at] > sequence)
        else:
            at = np.minimum(np.searchsorted(self.keys, values), len(self.keys) - 1)
            hit = (self.keys[at] == values) & (self.newest[at] > sequence)
        if nulls:
            is_null = pc.is_null(column).to_numpy(zero_copy_only=False)
            hit = np.where(is_null, self.null_newest > sequence, hit)
        out: npt.NDArray[np.bool_] = hit
        return out


class AtSequence:
    """A :class:`NewestKeys` for one data file: its rows' matcher (``FileKeys`` calls
    ``deleted`` with the key column as a one-column table)."""

    def __init__(self, keys: NewestKeys, sequence: int) -> None:
        self.keys, self.sequence = keys, sequence

    def deleted(self, rows: pa.Table) -> npt.NDArray[np.bool_]:
        return self.keys.deleted(rows.column(0), self.sequence)


def _dense(keys: npt.NDArray[Any], newest: npt.NDArray[Any]) -> npt.NDArray[Any] | None:
    """The newest sequence number by key offset (0: no delete, as numbers start at 1),
    when the keys are dense enough and the numbers fit in 32 bits."""
    import numpy as np

    if not len(keys) or int(newest.max()) >= 2**31 or int(newest.min()) < 1:
        return None
    span = int(keys[-1]) - int(keys[0]) + 1
    if span > min(DENSE_SPAN * len(keys), 1 << 26):
        return None
    table = np.zeros(span, dtype=np.int32)
    table[keys.astype(np.int64) - np.int64(keys[0])] = newest
    return table
