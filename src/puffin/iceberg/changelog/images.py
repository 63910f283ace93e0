"""The images of a changelog's rows: carry-overs dropped, updates paired, net changes.

A commit that rewrites a data file (copy-on-write) deletes every row of it and inserts the
ones it kept: those rows did not change, and are dropped in pairs, as Iceberg Java's
changelog view drops its "carry-over" rows. An ``UPDATE_BEFORE``/``UPDATE_AFTER`` pair is a
deleted and an inserted row of one commit with the same key: the ``_row_id`` on a v3 table,
given identifier columns otherwise. Net changes collapse what happened to each row over the
range into its state at the start and at the end.

Rows are grouped by Arrow's hash aggregation (nulls equal to nulls, as Java compares rows
here) and the groups worked on in NumPy, never as Python objects per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from puffin.errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

__all__ = [
    "CHANGE_COLUMNS",
    "CHANGE_ORDINAL",
    "CHANGE_TYPE",
    "COMMIT_SNAPSHOT_ID",
    "DELETE",
    "INSERT",
    "UPDATE_AFTER",
    "UPDATE_BEFORE",
    "drop_carryovers",
    "group_ids",
    "net_changes",
    "pair_updates",
]

CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
#: Iceberg Java's changelog columns, in its order, after the data columns.
CHANGE_COLUMNS = (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)
INSERT, DELETE = "INSERT", "DELETE"
UPDATE_BEFORE, UPDATE_AFTER = "UPDATE_BEFORE", "UPDATE_AFTER"
#: Order within a commit: what left first, each update's two images together.
_ORDER = {DELETE: 0, UPDATE_BEFORE: 1, UPDATE_AFTER: 1, INSERT: 2}


def group_ids(table: pa.Table, keys: Sequence[str]) -> npt.NDArray[np.int64]:
    """Each row's group number: rows equal in every ``keys`` column share one."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    if not keys or not n:
        return np.zeros(n, dtype=np.int64)
    names = [f"k{i}" for i in range(len(keys))]
    columns = [_groupable(table.column(k)) for k in keys]
    work = pa.table([*columns, pa.array(np.arange(n))], names=[*names, "row"])
    lists = work.group_by(names, use_threads=False).aggregate([("row", "list")])
    rows = lists.column("row_list").combine_chunks()
    out = np.empty(n, dtype=np.int64)
    out[pc.list_flatten(rows).to_numpy()] = pc.list_parent_indices(rows).to_numpy()
    return out


def _groupable(column: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    """``column`` as a type Arrow's hash aggregation takes: an extension type as its
    storage, a nested value as text (no hash kernel takes lists, maps or structs)."""
    import json

    import pyarrow as pa

    kind = column.type
    if isinstance(kind, pa.BaseExtensionType):
        return pa.chunked_array([c.storage for c in column.chunks], kind.storage_type)
    if pa.types.is_nested(kind):
        text = [None if v is None else json.dumps(v, default=repr) for v in column.to_pylist()]
        return pa.array(text, pa.string())
    if pa.types.is_dictionary(kind):
        return column.cast(kind.value_type)
    return column


def _sides(table: pa.Table) -> npt.NDArray[np.int8]:
    """1 for a row in the commit's snapshot (an insert or after-image), 0 for one gone."""
    import numpy as np
    import pyarrow.compute as pc

    kinds = table.column(CHANGE_TYPE)
    after = pc.is_in(kinds, value_set=_strings([INSERT, UPDATE_AFTER]))
    return np.asarray(after.to_numpy(zero_copy_only=False), dtype=np.int8)


def _strings(values: list[str]) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, pa.string())


def _runs(
    group: npt.NDArray[np.int64],
    side: npt.NDArray[np.int8],
    within: npt.NDArray[np.int64] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(order, rank)``: the rows sorted by group, side, then ``within`` (then row), and
    each sorted row's rank among the rows of its group and side."""
    import numpy as np

    n = len(group)
    index = np.arange(n)
    keys = (index,) if within is None else (index, within)
    order = np.lexsort((*keys, side, group))
    if not n:
        return order, index
    g, s = group[order], side[order]
    first = np.r_[True, (g[1:] != g[:-1]) | (s[1:] != s[:-1])]
    starts = np.maximum.accumulate(np.where(first, index, 0))
    return order, index - starts


def drop_carryovers(table: pa.Table, values: Sequence[str]) -> pa.Table:
    """``table`` (one commit's changes) without the rows it deleted and inserted unchanged:
    a deleted and an inserted row equal in every ``values`` column cancel, pair by pair."""
    import numpy as np
    import pyarrow as pa

    side = _sides(table)
    if side.all() or not side.any():
        return table
    group = group_ids(table, values)
    order, rank = _runs(group, side)
    gone = np.bincount(group, weights=1 - side)
    came = np.bincount(group, weights=side)
    pairs = np.minimum(gone, came)
    keep = np.ones(table.num_rows, dtype=bool)
    keep[order[rank < pairs[group[order]]]] = False
    return table.filter(pa.array(keep))


def pair_updates(table: pa.Table, keys: Sequence[str], what: str) -> pa.Table:
    """``table`` (one commit's changes, carry-overs dropped) with each deleted and inserted
    row of the same ``keys`` (none null) as ``UPDATE_BEFORE`` and ``UPDATE_AFTER``, side by
    side; :class:`UsageError` naming ``what`` when a key is on two rows of one side."""
    import numpy as np
    import pyarrow as pa

    side = _sides(table)
    if side.all() or not side.any():
        return table
    n = table.num_rows
    group = group_ids(table, keys)
    nulls = np.zeros(n, dtype=bool)
    for k in keys:
        nulls |= np.asarray(table.column(k).is_null().to_numpy(zero_copy_only=False))
    group = np.where(nulls, -1, group)
    valid = group >= 0
    gone = np.bincount(group[valid], weights=1 - side[valid], minlength=1)
    came = np.bincount(group[valid], weights=side[valid], minlength=1)
    if (gone > 1).any() or (came > 1).any():
        raise UsageError(
            f"cannot pair updates by {what}: one commit deletes or inserts two rows with the "
            f"same {', '.join(keys)}; ask for changes without updates"
        )
    paired = valid & ((gone == 1) & (came == 1))[np.maximum(group, 0)]
    kinds = np.where(side == 1, INSERT, DELETE).astype(object)
    kinds[paired & (side == 0)] = UPDATE_BEFORE
    kinds[paired & (side == 1)] = UPDATE_AFTER
    where = np.where(paired, 1, np.where(side == 1, 2, 0))
    order = np.lexsort((np.arange(n), side, np.where(paired, group, 0), where))
    column = table.schema.get_field_index(CHANGE_TYPE)
    labelled = table.set_column(column, CHANGE_TYPE, pa.array(kinds, pa.string()))
    return labelled.take(pa.array(order))


def net_changes(
    table: pa.Table, values: Sequence[str], identity: str | None, updates: bool
) -> pa.Table:
    """The net effect of ``table`` (a range's changes): for each row, its image at the start
    and at the end, nothing when they are equal. Rows are followed by ``identity`` (the
    ``_row_id``) where they have one, else counted as equal ``values`` (a multiset, as
    Java's changelog view counts them); ``updates`` pairs the two images of an identity."""
    import numpy as np
    import pyarrow as pa

    if not table.num_rows:
        return table
    known = np.zeros(table.num_rows, dtype=bool)
    if identity is not None:
        known = ~np.asarray(table.column(identity).is_null().to_numpy(zero_copy_only=False))
    parts = []
    if known.any():
        assert identity is not None
        parts.append(_net_by_identity(table.filter(pa.array(known)), values, identity, updates))
    if not known.all():
        if updates and identity is None:
            raise UsageError(
                "net changes cannot pair updates without row ids (Iceberg Java's changelog "
                "view refuses both together too): ask for one or the other, or upgrade to v3"
            )
        parts.append(_net_by_values(table.filter(pa.array(~known)), values))
    return _in_commit_order(pa.concat_tables(parts))


def _net_by_identity(
    table: pa.Table, values: Sequence[str], identity: str, updates: bool
) -> pa.Table:
    """Net changes of rows that all have an ``identity``."""
    import numpy as np
    import pyarrow as pa

    ids = table.column(identity).to_numpy()
    side = _sides(table)
    ordinal = table.column(CHANGE_ORDINAL).to_numpy()
    order = np.lexsort((np.arange(len(ids)), side, ordinal, ids))
    s = ids[order]
    first = order[np.r_[True, s[1:] != s[:-1]]]
    last = order[np.r_[s[1:] != s[:-1], True]]
    was, now = side[first] == 0, side[last] == 1
    both = was & now
    pair = pa.concat_tables([table.take(first[both]).select(values),
                             table.take(last[both]).select(values)])  # fmt: skip
    k = int(both.sum())
    groups = group_ids(pair, values)
    changed = groups[:k] != groups[k:]
    before, after = first[both][changed], last[both][changed]
    gone_type, came_type = (UPDATE_BEFORE, UPDATE_AFTER) if updates else (DELETE, INSERT)
    images = pa.concat_tables(
        [_relabel(table, before, gone_type, after), _relabel(table, after, came_type, after)]
    )
    m = len(before)
    side_by_side = np.stack([np.arange(m), np.arange(m) + m], axis=1).reshape(-1)
    pieces = [
        _relabel(table, first[was & ~now], DELETE, last[was & ~now]),
        images.take(pa.array(side_by_side, pa.int64())),
        _relabel(table, last[~was & now], INSERT, last[~was & now]),
    ]
    return pa.concat_tables(pieces)


def _net_by_values(table: pa.Table, values: Sequence[str]) -> pa.Table:
    """Net changes of rows without identity: as many of the latest inserts (or deletes) of
    equal rows as were inserted (deleted) more often than deleted (inserted)."""
    import numpy as np
    import pyarrow as pa

    side = _sides(table)
    group = group_ids(table, values)
    net = np.bincount(group, weights=np.where(side == 1, 1, -1))
    ordinal = table.column(CHANGE_ORDINAL).to_numpy()
    order, rank = _runs(group, side, -ordinal)
    g, s = group[order], side[order]
    keep = ((s == 1) & (rank < net[g])) | ((s == 0) & (rank < -net[g]))
    rows = np.sort(order[keep])
    kinds = np.where(side[rows] == 1, INSERT, DELETE).astype(object)
    taken = table.take(pa.array(rows))
    column = taken.schema.get_field_index(CHANGE_TYPE)
    return taken.set_column(column, CHANGE_TYPE, pa.array(kinds, pa.string()))


def _relabel(
    table: pa.Table, rows: npt.NDArray[np.int64], kind: str, when: npt.NDArray[np.int64]
) -> pa.Table:
    """Rows ``rows`` of ``table`` as ``kind`` changes made by the commits of rows ``when``."""
    import pyarrow as pa

    taken = table.take(pa.array(rows, pa.int64()))
    commits = table.take(pa.array(when, pa.int64()))
    out = taken.set_column(
        taken.schema.get_field_index(CHANGE_TYPE), CHANGE_TYPE,
        pa.array([kind] * len(rows), pa.string()),
    )  # fmt: skip
    for name in (CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID):
        out = out.set_column(out.schema.get_field_index(name), name, commits.column(name))
    return out


def _in_commit_order(table: pa.Table) -> pa.Table:
    """``table`` by change ordinal, then deletes, updates (images side by side), inserts."""
    import numpy as np
    import pyarrow as pa

    kinds = table.column(CHANGE_TYPE).to_pylist()
    rank = np.array([_ORDER[k] for k in kinds], dtype=np.int64)
    ordinal = table.column(CHANGE_ORDINAL).to_numpy()
    order = np.lexsort((np.arange(len(kinds)), rank, ordinal))
    return table.take(pa.array(order))
