"""The two processes of a maintenance job beside a busy writer (``test_busy_writer.py``).

``writer WAREHOUSE SECONDS SEED OUT``: until SECONDS have passed, every 50 ms, appends 20
rows (ids ``round * 1_000_000 + i``) or deletes a few rows it knows are live (by id, some
in the same data files), alternately; one JSON line per round: ``{"op": "append"|"delete",
"ids": [...], "ok": true}`` or ``{..., "ok": false, "error", "message"}``. The ids of a
round that failed are not in the table (nothing committed) or, for a delete, still are.

``job WAREHOUSE NAME SECONDS SEED OUT``: the maintenance job NAME (``expire``, ``compact``,
``rewrite-deletes``, ``rewrite-manifests``) in a loop until SECONDS have passed; one JSON line
per run: ``{"ok": true, "did": ...}`` (what it committed: files or snapshots it replaced or
removed, 0 for nothing) or ``{"ok": false, "error", "message"}``.
"""

from __future__ import annotations

import json
import random
import sys
import time
import traceback
from typing import Any

PAUSE_S = 0.05
#: The longest pause between a job's runs: work piles up meanwhile (ten or so commits), so
#: each run rewrites a dozen files and takes longer than the writer's pause, as in a table
#: whose maintenance runs on a schedule.
JOB_PAUSE_S = 1.5
FIRST_IDS = 200  # the sample table's own rows: ids 0..199


def writer(warehouse: str, seconds: float, seed: int, out: str) -> None:
    from puffin.iceberg import append, delete_rows, local_catalog, sample_batch

    rng = random.Random(seed)
    table = local_catalog(warehouse).load_table("db.t")
    live = list(range(FIRST_IDS))
    deadline = time.monotonic() + seconds
    number = 0
    with open(out, "a") as log:
        while time.monotonic() < deadline:
            number += 1
            record: dict[str, Any]
            try:
                if number % 2:
                    ids = [number * 1_000_000 + i for i in range(20)]
                    record = {"op": "append", "ids": ids}
                    table = append(table, sample_batch(20, start=ids[0], seed=number),
                                   statistics="none")  # fmt: skip
                    live.extend(ids)
                else:
                    start = rng.randrange(len(live))  # neighbours: often the same file
                    ids = sorted(set(live[start : start + rng.randint(1, 4)]))
                    record = {"op": "delete", "ids": ids}
                    where = f"id in ({', '.join(map(str, ids))})"
                    table = delete_rows(table, where).table
                    gone = set(ids)
                    live = [i for i in live if i not in gone]
                record["ok"] = True
            except Exception as exc:
                record.update(ok=False, error=type(exc).__name__, message=str(exc)[:300])
                record["traceback"] = traceback.format_exc()[-2000:]
            log.write(json.dumps(record) + "\n")
            log.flush()
            time.sleep(PAUSE_S)


def _job(name: str) -> Any:
    import datetime

    from puffin.iceberg import (
        expire_snapshots,
        rewrite_data_files,
        rewrite_manifests,
        rewrite_position_delete_files,
    )

    def expire(table: Any) -> Any:
        result = expire_snapshots(table, older_than=datetime.timedelta(0), retain_last=2)
        return len(result.expired_snapshot_ids)

    def compact(table: Any) -> Any:
        result = rewrite_data_files(table, min_input_files=2, statistics="none")
        return result.rewritten_files if result.snapshot_id is not None else 0

    def rewrite_deletes(table: Any) -> Any:
        result = rewrite_position_delete_files(table)
        return result.files_before if result.snapshot_id is not None else 0

    def manifests(table: Any) -> Any:
        result = rewrite_manifests(table)
        return result.manifests_before if result.snapshot_id is not None else 0

    jobs = {"expire": expire, "compact": compact, "rewrite-deletes": rewrite_deletes,
            "rewrite-manifests": manifests}  # fmt: skip
    return jobs[name]


def job(warehouse: str, name: str, seconds: float, seed: int, out: str) -> None:
    from puffin.iceberg import local_catalog

    rng = random.Random(seed)
    run = _job(name)
    deadline = time.monotonic() + seconds
    with open(out, "a") as log:
        while time.monotonic() < deadline:
            record: dict[str, Any]
            start = time.monotonic()
            try:
                table = local_catalog(warehouse).load_table("db.t")
                record = {"ok": True, "did": run(table)}
            except Exception as exc:
                record = {"ok": False, "error": type(exc).__name__, "message": str(exc)[:300]}
                record["traceback"] = traceback.format_exc()[-2000:]
            record["seconds"] = round(time.monotonic() - start, 3)
            log.write(json.dumps(record) + "\n")
            log.flush()
            time.sleep(rng.uniform(0.0, JOB_PAUSE_S))


if __name__ == "__main__":
    role = sys.argv[1]
    if role == "writer":
        warehouse, seconds, seed, out = sys.argv[2:6]
        writer(warehouse, float(seconds), int(seed), out)
    else:
        warehouse, name, seconds, seed, out = sys.argv[2:7]
        job(warehouse, name, float(seconds), int(seed), out)
