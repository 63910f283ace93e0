"""Every job on an object store that fails requests: moto's S3 server on 127.0.0.1 answers
a seeded fraction of requests with 500, 503 SlowDown, an answer held back past the
client's half-second timeout, or a dropped connection (``tests/_s3_server.Faults``).

Whatever the faults, a job either finishes with the model's rows or fails with a
:class:`~puffin.errors.StorageError` that gives the store's answer and says nothing was
committed: the table then holds exactly the rows it held before (nothing committed
halfway), loads, and verifies (no file it references was deleted). An expiry whose deletes
fail after its commit stands, and says so in a warning. With these seeds, an append and a
delete finish, a compaction, an orphan cleanup and the statistics give up."""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("moto")

from _s3_server import CountingS3Server, Faults, running
from puffin.errors import StorageError
from puffin.iceberg import (
    append,
    create_sample_table,
    delete_rows,
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
    sample_batch,
    scan_table,
    update_table_statistics,
    upgrade_to_v3,
    verify_table,
)

LAKE = "lake"
RATE = 0.3  # three requests in ten fail: most jobs meet several faults, some give up
SEEDS = {"append": (0, 7), "compact": (2,), "delete": (3,), "expire": (2,), "orphans": (2,),
         "statistics": (1, 4)}  # fmt: skip  # each meets faults; some give up, some finish
NOW = datetime.timedelta(0)
Model = set[int]

JOBS: dict[str, Callable[[Any, Model], tuple[Any, Model]]] = {
    "append": lambda t, m: (
        append(t, sample_batch(50, start=10_000, seed=3), statistics="none"),
        m | set(range(10_000, 10_050)),
    ),
    "delete": lambda t, m: (delete_rows(t, "id < 40"), {i for i in m if i >= 40}),
    "compact": lambda t, m: (
        rewrite_data_files(t, min_input_files=2, min_deleted_fraction=0.0, statistics="none"),
        m,
    ),
    "expire": lambda t, m: (expire_snapshots(t, older_than=NOW), m),
    "orphans": lambda t, m: (
        remove_orphan_files(t, older_than=NOW, allow_short_grace_period=True),
        m,
    ),
    "statistics": lambda t, m: (update_table_statistics(t), m),
}


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with running(LAKE) as s:
        yield s


def _ids(table: Any) -> Model:
    return set(scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist())


@pytest.mark.slow  # about 50 s in all: retries and held-back answers
@pytest.mark.parametrize("job", sorted(JOBS))
def test_a_job_beside_failing_requests_finishes_or_fails_whole(
    server: CountingS3Server, tmp_path: Path, job: str
) -> None:
    outcomes = []
    for seed in SEEDS[job]:
        catalog = server.sql_catalog(
            tmp_path / f"{seed}.db", f"s3://{LAKE}/{tmp_path.name}-{seed}",
            **{"s3.request-timeout": "0.5", "s3.connect-timeout": "0.5"},
        )
        catalog.create_namespace("db")
        table = upgrade_to_v3(create_sample_table(catalog, "db.t", rows=200, files=4))
        table = append(table, sample_batch(20, start=5000, seed=1), statistics="none")
        before = _ids(table)
        server.faults = Faults(RATE, seed, delay=1.0)
        try:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                _, after = JOBS[job](table, before)
            outcome: Any = "ok"
        except OSError as exc:
            after, outcome = None, exc
        finally:
            faults, server.faults = server.faults, None
        assert sum(faults.injected.values()) > 0, "no fault met: the test proves nothing"
        table = catalog.load_table("db.t")
        assert verify_table(table).problems == [], (seed, outcome)
        assert _ids(table) == (before if after is None else after), (seed, outcome)
        if job == "expire" and outcome == "ok" and said:
            assert "the expiry committed" in str(said[-1].message), said
        outcomes.append(outcome)
    for outcome in outcomes:  # a failure says so: the store's answer, and what it means
        if outcome != "ok":
            assert isinstance(outcome, StorageError), repr(outcome)
            assert "the object store failed a request" in str(outcome)
            assert "nothing" in str(outcome) and "run it again" in str(outcome)
