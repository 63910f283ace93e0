"""The two processes of an orphan-cleanup race (``test_orphan_races.py``), run as scripts.

``writer WAREHOUSE MODE SECONDS SEED OUT``: appends to ``db.t`` until SECONDS have passed,
``small`` (20-row appends, a few milliseconds apart) or ``stream`` (a RecordBatchReader
of batches that trickle in, rolled into small files, so the write takes a while). Each
round's ids start at ``round * 1_000_000``; one JSON line per round: ``{"round", "rows",
"ok"}`` or ``{"round", "error", "message"}``.

``cleaner WAREHOUSE GRACE_S SECONDS SEED OUT``: ``remove_orphan_files`` with that grace period
(``allow_short_grace_period``) in a loop, random pauses between; one JSON line per run:
``{"removed", "kept"}``, ``{"refused"}`` or ``{"error", "message"}``.

WAREHOUSE is a local warehouse folder, or a JSON object: the properties of a pyiceberg SQL
catalog (an object store's warehouse, ``test_orphan_races_s3.py``).
"""

from __future__ import annotations

import datetime
import json
import random
import sys
import time
import traceback
from collections.abc import Iterator
from typing import Any

#: Errors a writer may end a round with: it lost its files to the cleaner, nothing committed.
EXPECTED_WRITER_ERRORS = ("WrittenFileGoneError",)


def _batches(first: int, rows: int, pieces: int, rng: random.Random) -> Iterator[Any]:
    from puffin.iceberg import sample_batch

    per = rows // pieces
    for i in range(pieces):
        time.sleep(rng.uniform(0.0, 0.08))
        yield from sample_batch(per, start=first + i * per, seed=i).to_batches()


def load(warehouse: str) -> Any:
    """``db.t`` of the warehouse folder, or of the SQL catalog a JSON object describes."""
    if warehouse.startswith("{"):
        from pyiceberg.catalog.sql import SqlCatalog

        return SqlCatalog("race", **json.loads(warehouse)).load_table("db.t")
    from puffin.iceberg import local_catalog

    return local_catalog(warehouse).load_table("db.t")


def writer(warehouse: str, mode: str, seconds: float, seed: int, out: str) -> None:
    import pyarrow as pa

    from puffin.iceberg import append, sample_batch

    rng = random.Random(seed)
    table = load(warehouse)
    deadline = time.monotonic() + seconds
    number = 0
    with open(out, "a") as log:
        while time.monotonic() < deadline:
            number += 1
            first = number * 1_000_000
            if mode == "small":
                rows = 20
                data: Any = sample_batch(rows, start=first, seed=number)
            else:
                rows, pieces = 40_000, 8
                schema = sample_batch(1, start=0).schema
                data = pa.RecordBatchReader.from_batches(schema, _batches(first, rows, pieces, rng))
            record: dict[str, Any] = {"round": number, "rows": rows}
            try:
                table = append(table.refresh(), data, statistics="none")
                record["ok"] = True
            except Exception as exc:
                record.update(error=type(exc).__name__, message=str(exc)[:500])
                if type(exc).__name__ not in EXPECTED_WRITER_ERRORS:
                    record["traceback"] = traceback.format_exc()[-3000:]
            log.write(json.dumps(record) + "\n")
            log.flush()
            time.sleep(rng.uniform(0.0, 0.03))


def cleaner(warehouse: str, grace_s: float, seconds: float, seed: int, out: str) -> None:
    from puffin.errors import NewerMetadataError
    from puffin.iceberg import remove_orphan_files

    rng = random.Random(seed)
    table = load(warehouse)
    grace = datetime.timedelta(seconds=grace_s)
    deadline = time.monotonic() + seconds
    with open(out, "a") as log:
        while time.monotonic() < deadline:
            record: dict[str, Any]
            try:
                result = remove_orphan_files(table, older_than=grace, allow_short_grace_period=True)
                record = {"removed": len(result.removed), "kept": len(result.kept_referenced)}
            except NewerMetadataError as exc:
                record = {"refused": True, "message": str(exc)[:500]}
            except Exception as exc:
                record = {"error": type(exc).__name__, "message": str(exc)[:500]}
                record["traceback"] = traceback.format_exc()[-3000:]
            log.write(json.dumps(record) + "\n")
            log.flush()
            time.sleep(rng.uniform(0.0, 0.05))


if __name__ == "__main__":
    role, warehouse, value, seconds, seed, out = sys.argv[1:7]
    if role == "writer":
        writer(warehouse, value, float(seconds), int(seed), out)
    else:
        cleaner(warehouse, float(value), float(seconds), int(seed), out)
