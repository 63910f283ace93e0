"""``NewestKeys`` against a model in plain Python: a data value of a file of sequence ``s``
is deleted when a delete newer than ``s`` holds it (a null when one holds a null), whether
the keys are kept as a dense table or found by binary search (keys among the extremes)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from puffin.iceberg.scan.newest_keys import NewestKeys

values = st.one_of(st.integers(-4, 4), st.sampled_from([-(2**63), 2**63 - 1, 10**12]))
part = st.tuples(st.integers(1, 5), st.lists(st.one_of(st.none(), values), max_size=6))


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(part, min_size=1, max_size=4),
    data=st.lists(st.one_of(st.none(), values), max_size=12),
    sequence=st.integers(0, 6),
)
def test_a_value_is_deleted_by_a_newer_delete_holding_it(
    parts: list[tuple[int, list[Any]]], data: list[Any], sequence: int
) -> None:
    built = NewestKeys(
        [(s, np.unique(np.array([k for k in keys if k is not None], dtype=np.int64)),
          None in keys) for s, keys in parts],
        frozenset(),
    )  # fmt: skip
    newer = [keys for s, keys in parts if s > sequence]
    expected = [any(v in keys for keys in newer) for v in data]
    got = built.deleted(pa.array(data, pa.int64()), sequence)
    assert got.tolist() == expected


def test_both_ways_of_finding_a_key_are_used() -> None:
    dense = NewestKeys([(2, np.arange(10, dtype=np.int64), False)], frozenset())
    sparse = NewestKeys([(2, np.array([0, 2**62], dtype=np.int64), False)], frozenset())
    assert dense.dense is not None and sparse.dense is None
    probe = pa.array([0, 5, 2**62, None], pa.int64())
    assert dense.deleted(probe, 1).tolist() == [True, True, False, False]
    assert sparse.deleted(probe, 1).tolist() == [True, False, True, False]
    assert sparse.deleted(probe, 2).tolist() == [False, False, False, False]
