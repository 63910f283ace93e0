"""What the checks that keep orphan cleanup from breaking a table cost a commit (issue 42).

Every commit now checks, once its metadata file is written and before the catalog swap, that
the files it adds still exist (``puffin.iceberg.metadata.presence``). Measured here: pairs of
our ``append`` (10 rows, ``statistics="none"``) and ``delete_rows`` of one id on a v3 sample
table of 20 files, three ways, taking turns in one process: the check as shipped (a stat per
file the attempt lists), the check reading the new snapshot's manifests back (what a commit
outside the commit loop does), and no check at all. Reported: the median milliseconds of a
pair, and the ratio of each way to no check.

Run: ``.venv/bin/python bench/bench_commit_checks.py [--pairs 60] [--runs 3]``
(``--smoke``: 6 pairs, one run)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _ways() -> dict[str, Callable[..., Any] | None]:
    import puffin.iceberg.metadata.presence as presence

    shipped = presence.require_added_files

    def read_back(base: Any, metadata: Any, io: Any, path: str) -> None:
        token = presence._COMMITTING.set(None)  # as a commit outside the loop does
        try:
            shipped(base, metadata, io, path)
        finally:
            presence._COMMITTING.reset(token)

    return {"stat per file (shipped)": shipped, "manifests read back": read_back, "none": None}


def _pairs(folder: Path, pairs: int, check: Callable[..., Any] | None) -> list[float]:
    import puffin.iceberg.metadata.presence as presence
    from puffin.iceberg import (
        append,
        create_sample_table,
        delete_rows,
        local_catalog,
        sample_batch,
        upgrade_to_v3,
    )

    shipped = presence.require_added_files
    presence.require_added_files = check or (lambda *args: None)
    try:
        table = upgrade_to_v3(
            create_sample_table(local_catalog(folder), "db.t", rows=20_000, files=20)
        )
        times = []
        for i in range(pairs):
            first = 1_000_000 + 10 * i
            start = time.perf_counter()
            table = append(table, sample_batch(10, start=first), statistics="none")
            table = delete_rows(table, f"id = {first}").table
            times.append(time.perf_counter() - start)
        assert table.scan().to_arrow().num_rows == 20_000 + 9 * pairs  # the model's rows
        return times
    finally:
        presence.require_added_files = shipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="smallest sizes, one run")
    args = parser.parse_args()
    pairs, runs = (6, 1) if args.smoke else (args.pairs, args.runs)
    medians: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-checks-") as tmp:
        for run in range(runs):
            for name, check in _ways().items():
                folder = Path(tmp) / f"{run}-{len(medians.get(name, []))}-{hash(name)}"
                times = _pairs(folder, pairs, check)
                medians.setdefault(name, []).append(statistics.median(times) * 1000)
    base = statistics.median(medians["none"])
    print(f"{pairs} append + delete_rows pairs, {runs} run(s); median ms of a pair:")
    print("| check | median ms | runs | / no check |")
    print("|---|---|---|---|")
    for name, values in medians.items():
        runs_text = ", ".join(f"{v:.1f}" for v in values)
        print(f"| {name} | {statistics.median(values):.1f} | {runs_text} | "
              f"{statistics.median(values) / base:.2f}× |")


if __name__ == "__main__":
    main()
