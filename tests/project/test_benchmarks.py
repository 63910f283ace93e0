"""Every benchmark script still runs (issue 42, "nothing rots unseen").

Each ``bench/bench_*.py`` (the glob: a new script is covered without editing this file) runs
in a fresh interpreter with ``--smoke``, the flag every script takes: its smallest sizes and
one run, so that it finishes in seconds while still running its own checks (row counts,
sketches and positions compared with its peers). Nothing here asserts a time: a script
passes when it exits 0 and prints the report its checks lead to.

What a script needs is read from its source: Iceberg Java (``JavaPeer``, or the REST
catalog's Java server) makes it a ``peer``, ``java`` and ``slow`` test, and is looked for
the way tests/peers does (a skip on
a bare run, a failure under ``make test``); a local PySpark session makes it ``java`` and
``slow`` (20 to 90 s each on 2 cores).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _paths import ROOT

BENCH = ROOT / "bench"
SCRIPTS = sorted(BENCH.glob("bench_*.py"))

# A line each script's final report prints only after its checks have run.
REPORTS = {
    "bench_append.py": "statistics: full / incremental =",
    "bench_append_memory.py": "goal: each append ≤ 256 MiB above its baseline",
    "bench_changes.py": "| changes of | changes | scan both + diff |",
    "bench_cli_startup.py": "startup goal (help and usage errors under 0.5 s, median):",
    "bench_commit_checks.py": "| stat per file (shipped) |",
    "bench_commits.py": "rewrite_data_files + expire_snapshots:",
    "bench_container.py": "peak above baseline MiB",
    "bench_deletion_vector.py": "peak RSS of decode (fresh process):",
    "bench_equality.py": "ours with equality deletes / after conversion:",
    "bench_iceberg.py": "puffin table stats compute --no-commit, fresh process",
    "bench_java.py": "| delete category = 0 | seconds |",
    "bench_maintenance.py": "expire_snapshots on 10 snapshots:",
    "bench_many_writers.py": "| catalog | writers | commits/s |",
    "bench_ndv.py": "compute_table_statistics / duckdb (4 files):",
    "bench_planning.py": "key deletes checked against the model",
    "bench_row_deletes.py": "full scan before any delete (the v2 base table):",
    "bench_s3.py": "puffin, s3fs, every blob (read_all)",
    "bench_s3_orphans.py": "marks on the table: commit",
    "bench_scan.py": "stream growth/rg",
    "bench_spark.py": "puffin engine=auto",
    "bench_spark_compact.py": "local[1] / local[2]:",
    "bench_spark_java.py": "| java merge-on-read DELETE |",
    "bench_theta.py": "date-nodedupe",
    "bench_v2_deletes.py": "rewrite_position_delete_files:",
}


def _marks(script: Path) -> list[pytest.MarkDecorator]:
    text = script.read_text(encoding="utf-8")
    if "JavaPeer" in text or "RestCatalogServer" in text:
        return [pytest.mark.peer, pytest.mark.java, pytest.mark.slow]
    if "local_session" in text or "pyspark" in text:
        return [pytest.mark.java, pytest.mark.slow]
    return []


def _require_java_peer() -> None:
    """The Java peer's venv and jars, found (or skipped, or failed) as tests/peers does."""
    from peers._common import side_python
    from peers.iceberg_java import JAVA_VENV, java_jars

    side_python(JAVA_VENV)
    java_jars()


def test_every_script_has_its_report_line() -> None:
    assert SCRIPTS, BENCH
    assert sorted(REPORTS) == [script.name for script in SCRIPTS]


@pytest.mark.parametrize(
    "script", [pytest.param(s, id=s.stem, marks=_marks(s)) for s in SCRIPTS]
)
def test_the_script_runs_at_its_smallest_size(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    if "JavaPeer" in text or "RestCatalogServer" in text:
        _require_java_peer()
    if _marks(script) and shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        pytest.skip("no Java")
    proc = subprocess.run(
        [sys.executable, str(script), "--smoke"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert REPORTS.get(script.name, "\n") in proc.stdout, output[-4000:]
