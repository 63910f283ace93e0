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

from puffin.iceberg.scan.key_sets import dense_enough, dense_slots

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

__all__ = ["AtSequence", "NewestKeys"]


class NewestKeys:
    """Integer keys and, for each, the newest sequence number of a delete holding it: a
    table by offset from the smallest key (:attr:`dense`) when the keys are dense, else the
    keys sorted and unique beside their numbers; ``null_newest``: that of a null key (-1: no
    delete holds a null)."""

    def __init__(self, parts: list[tuple[int, npt.NDArray[Any], bool]], paths: frozenset[str]):
        """``parts``: (sequence number, sorted keys, holds a null) of each delete file of
        ``paths``."""
        import numpy as np

        self.paths = paths
        self.null_newest = max((s for s, _, null in parts if null), default=-1)
        filled = [(s, k) for s, k, _ in parts if len(k)]
        self.low = min((int(k[0]) for _, k in filled), default=0)
        self.high = max((int(k[-1]) for _, k in filled), default=-1)
        self.dense = _dense(filled, self.low, self.high)
        self.keys: npt.NDArray[Any] = np.empty(0, dtype=np.int64)
        self.newest: npt.NDArray[Any] = np.empty(0, dtype=np.int64)
        if self.dense is not None or not filled:
            return
        keys = np.concatenate([k for _, k in filled])
        sequences = np.concatenate([np.full(len(k), s, dtype=np.int64) for s, k in filled])
        order = np.lexsort((sequences, keys))  # by key, then by sequence number
        keys, sequences = keys[order], sequences[order]
        last = np.ones(len(keys), dtype=bool)  # the last of each key: its newest delete
        last[:-1] = keys[1:] != keys[:-1]
        self.keys, self.newest = keys[last], sequences[last]

    def deleted(self, column: pa.Array, sequence: int) -> npt.NDArray[np.bool_]:
        """Which values of ``column`` (the key, of the data file of ``sequence``) a delete
        newer than the file holds."""
        import numpy as np
        import pyarrow.compute as pc

        nulls = column.null_count
        values = (pc.fill_null(column, 0) if nulls else column).to_numpy()
        if self.dense is not None:
            inside, at = dense_slots(values, self.low, self.high, len(self.dense))
            hit = inside & (self.dense[at] > sequence)
        elif not len(self.keys):
            hit = np.zeros(len(values), dtype=bool)
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


def _dense(parts: list[tuple[int, npt.NDArray[Any]]], low: int, high: int) -> Any:
    """The newest sequence number by key offset from ``low`` (0: no delete, as numbers start
    at 1), written delete by delete from the oldest so that the newest stays; None when the
    keys are too sparse or the numbers do not fit in 32 bits. Built without a sorted union
    of the keys: with 10 M keys that union and its sort order took most of the memory."""
    import numpy as np

    if not parts or max(s for s, _ in parts) >= 2**31 or min(s for s, _ in parts) < 1:
        return None
    span = high - low + 1
    if not dense_enough(span, sum(len(k) for _, k in parts)):
        return None
    table = np.zeros(span, dtype=np.int32)
    for sequence, keys in sorted(parts, key=lambda p: p[0]):
        table[keys.astype(np.int64, copy=False) - np.int64(low)] = sequence
    return table
