"""The ``table`` tier: small v3 tables with deletion vectors, and the rows each must return.

Every vector is a recipe (see :mod:`puffin.conformance.tables`): the rows of four data
files in ``table-rows.json`` (made here from a fixed seed), the steps that build the table
and the rows it must return after them, as a count and a digest (``rows-sha256``).  The
runner builds the table in a temporary folder and asks the adapter to scan it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from typing import Any

from puffin.conformance.tables import expected_rows, rows_digest
from tools.conformance_gen.corpus import Vector

__all__ = ["ROWS_FILE", "table_rows", "table_vectors"]

ROWS_FILE = "table-rows.json"
#: Rows per data file: three of 2000 rows and a small one.
FILE_ROWS = (2000, 2000, 2000, 50)
_SEED = 14
_WORDS = ("alpha", "beta", "gamma", "delta", "café", "Zürich", "東京", "ñandú", "a b", 'q"t')
COLUMNS = [
    {"id": 1, "name": "id", "type": "long"},
    {"id": 2, "name": "name", "type": "string"},
]

_ALL = [0, 1, 2]
# The three vectors of tests/project/test_peers.py's fixture: 667, 410 and 3 positions.
_EVERY_THIRD = [0, [[0, 2000, 3]]]
_RUN = [1, [[100, 510]]]
_FEW = [2, [0, 7, 1999]]


def table_rows() -> dict[str, Any]:
    """The data files' rows: unique random ids, names from a few words (about 2% null)."""
    rng = random.Random(_SEED)
    ids = rng.sample(range(1, 1 << 40), sum(FILE_ROWS))
    files: list[list[list[Any]]] = []
    start = 0
    for count in FILE_ROWS:
        rows = []
        for row_id in ids[start : start + count]:
            name = None if rng.random() < 0.02 else f"{rng.choice(_WORDS)}-{rng.randrange(500)}"
            rows.append([row_id, name])
        files.append(rows)
        start += count
    return {"columns": [c["name"] for c in COLUMNS], "files": files}


def _appends(files: Sequence[int]) -> list[dict[str, Any]]:
    return [{"action": "append", "file": i} for i in files]


_UPGRADE = {"action": "upgrade-to-v3"}


def _delete(*deletes: list[Any]) -> dict[str, Any]:
    return {"action": "delete", "deletes": list(deletes)}


# (name, spec key, description, steps)
_RECIPES: list[tuple[str, str, str, list[dict[str, Any]]]] = [
    (
        "v3-no-deletes",
        "snapshot-union",
        "three data files appended to a v2 table, upgraded to v3; no deletes",
        [*_appends(_ALL), _UPGRADE],
    ),
    (
        "one-dv",
        "dv-set-bit",
        "one deletion vector: the 6th, 7th and last rows of the second file",
        [*_appends(_ALL), _UPGRADE, _delete([1, [5, 6, 1999]])],
    ),
    (
        "one-dv-run",
        "dv-blob",
        "one deletion vector holding a run: rows 100..1899 of the first file",
        [*_appends(_ALL), _UPGRADE, _delete([0, [[100, 1900]]])],
    ),
    (
        "dvs-in-one-puffin-smaller-first",
        "dv-properties",
        "three deletion vectors in one Puffin file, one per data file, the smallest first "
        "(3, 410 and 667 positions)",
        [*_appends(_ALL), _UPGRADE, _delete(_FEW, _RUN, _EVERY_THIRD)],
    ),
    (
        "dvs-in-one-puffin-larger-first",
        "dv-properties",
        "three deletion vectors in one Puffin file, the largest first (blobs of 1374, 39 and "
        "46 bytes for 667, 410 and 3 positions): each applies to its own data file only",
        [*_appends(_ALL), _UPGRADE, _delete(_EVERY_THIRD, _RUN, _FEW)],
    ),
    (
        "second-delete-merges",
        "scan-deleted-entries",
        "a second delete merges into the live vector of the first file (its old vector is "
        "a deleted manifest entry) and adds one for the third file",
        [
            *_appends(_ALL),
            _UPGRADE,
            _delete(_EVERY_THIRD, [1, [1, 2]]),
            _delete([2, [5]], [0, [[0, 2000, 2]]]),
        ],
    ),
    (
        "upgrade-converts-position-deletes",
        "scan-deleted-entries",
        "v2 Parquet position deletes on the second file; the upgrade to v3 replaces them with "
        "a deletion vector",
        [
            *_appends(_ALL),
            {"action": "position-deletes", "deletes": [[1, [0, 1, 2, 50]]]},
            _UPGRADE,
        ],
    ),
    (
        "delete-merges-into-converted-position-deletes",
        "dv-set-bit",
        "v2 position deletes turned into a deletion vector by the upgrade, then a delete "
        "that merges rows 0..9 into it",
        [
            *_appends(_ALL),
            {"action": "position-deletes", "deletes": [[1, [0, 1, 2, 50]]]},
            _UPGRADE,
            _delete([0, [3]], [1, [[0, 10]]]),
        ],
    ),
    (
        "all-rows-of-a-file-deleted",
        "dv-set-bit",
        "every row of the small data file deleted; the first file untouched",
        [*_appends([0, 3]), _UPGRADE, _delete([3, [[0, 50]]])],
    ),
    (
        "every-row-deleted",
        "dv-set-bit",
        "every row of both data files deleted: the scan returns no rows",
        [*_appends([0, 3]), _UPGRADE, _delete([0, [[0, 2000]]], [3, [[0, 50]]])],
    ),
]


_BASE = [*_appends(_ALL), _UPGRADE]


def _raw(blobs: list[list[Any]], *entries: dict[str, Any]) -> dict[str, Any]:
    return {"action": "raw-vectors", "blobs": blobs, "entries": list(entries) or [{"blob": 0}]}


# What a writer can get wrong around a deletion vector (issue 48), and what a conforming
# reader must do: (name, spec key, description, steps, error category or None for rows).
_MISTAKES: list[tuple[str, str, str, list[dict[str, Any]], str | None]] = [
    (
        "dv-blob-names-another-file",
        "dv-properties",
        "the blob's referenced-data-file names the second data file, its manifest entry the "
        "first: a reader reads the vector by the entry's range and applies it to the entry's "
        "data file (rows 5, 6 and 7 of the first file go); verify_table reports the mismatch",
        [*_BASE, _raw([[1, [5, 6, 7]]], {"blob": 0, "file": 0})],
        None,
    ),
    (
        "dv-range-of-another-blob",
        "dv-cardinality",
        "two vectors in one Puffin file; the first data file's entry carries the range of the "
        "second file's blob (3 positions) and a record_count of 100: the cardinality read is "
        "not the entry's, so the table must be rejected, not read with the other file's rows",
        [
            *_BASE,
            _raw([[0, [[0, 100]]], [1, [1, 2, 3]]], {"blob": 1, "file": 0, "record-count": 100}),
        ],
        "deletion-vector",
    ),
    (
        "dv-content-offset-missing",
        "dv-entry-fields",
        "a deletion vector entry without content_offset: it cannot be read, so the table must "
        "be rejected (skipping it would bring its deleted rows back)",
        [*_BASE, _raw([[0, [1, 2]]], {"blob": 0, "offset": "missing"})],
        "table-metadata",
    ),
    (
        "dv-content-offset-off-by-one",
        "dv-entry-fields",
        "a deletion vector entry whose content_offset is one byte past the blob: its length "
        "prefix and magic do not match, so the table must be rejected",
        [*_BASE, _raw([[0, [1, 2]]], {"blob": 0, "offset": 1})],
        "deletion-vector",
    ),
    (
        "dv-content-size-short",
        "dv-entry-fields",
        "a deletion vector entry whose content_size_in_bytes is one byte short: the blob's "
        "length prefix and CRC no longer fit the range, so the table must be rejected",
        [*_BASE, _raw([[0, [1, 2]]], {"blob": 0, "size": -1})],
        "deletion-vector",
    ),
    (
        "dv-record-count-differs",
        "dv-cardinality",
        "a deletion vector of 2 positions whose entry's record_count says 3: the table must be "
        "rejected",
        [*_BASE, _raw([[0, [1, 2]]], {"blob": 0, "record-count": 3})],
        "deletion-vector",
    ),
    (
        "dv-in-another-spec",
        "dv-scope",
        "the table gains an identity partition on name; a deletion vector for a data file of "
        "the unpartitioned spec is committed in the new spec: a reader must reject the table "
        "(Java fails such scans since apache/iceberg#16957)",
        [
            *_appends(_ALL),
            {"action": "partition-by", "column": "name"},
            _UPGRADE,
            _raw([[0, [1, 2]]], {"blob": 0, "partition": ["x"]}),
        ],
        "table-metadata",
    ),
    (
        "two-live-dvs-for-one-file",
        "dv-one-per-file",
        "two commits each add a deletion vector for the first data file, the first not "
        "removed: a data file has at most one, so the table must be rejected",
        [*_BASE, _raw([[0, [1]]]), _raw([[0, [2]]])],
        "table-metadata",
    ),
    (
        "dv-below-its-data-file",
        "dv-scope",
        "a deletion vector for a data file committed before the file is added: its data "
        "sequence number is below the data file's, so it does not apply; Java fails the scan "
        '("DV data sequence number ... must be greater than or equal to") and a reader must '
        "reject the table, whose writer meant those rows deleted",
        [
            *_appends([0, 1]),
            _UPGRADE,
            _raw([["@late.parquet", [1, 2]]]),
            {"action": "add-file", "file": 2, "name": "late.parquet"},
        ],
        "table-metadata",
    ),
    (
        "dv-on-a-gone-data-file",
        "dv-scope",
        "a deletion vector for a data file the table never had: it applies to no data file, "
        "so every row is read",
        [*_BASE, _raw([["@gone.parquet", [1, 2]]])],
        None,
    ),
    (
        "dv-position-past-the-end",
        "dv-set-bit",
        "a deletion vector of the third data file (2000 rows) setting positions 1, 2000 and "
        "2500: only row 1 goes; positions past the file delete nothing (verify_table reports "
        "them)",
        [*_BASE, _raw([[2, [1, 2000, 2500]]])],
        None,
    ),
]


def table_vectors() -> Iterator[Vector]:
    rows = table_rows()
    data = (json.dumps(rows, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    recipes = [(*r, None) for r in _RECIPES] + _MISTAKES
    for name, spec, description, steps, error in recipes:
        if error is not None:
            outcome: dict[str, Any] = {"error": error}
        else:
            expected = expected_rows(rows["files"], steps)
            outcome = {"result": {"count": len(expected), "rows-sha256": rows_digest(expected)}}
        yield Vector(
            "table",
            name,
            "scan-table",
            spec,
            description,
            outcome,
            args={"schema": COLUMNS, "steps": steps},
            inputs={ROWS_FILE: data},
        )
