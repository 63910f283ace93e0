"""The Spark jobs' console: the JVM's output goes to a log, a progress line shows the stages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def test_the_jvms_output_goes_to_the_log(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from puffin.spark._java import jvm_output_to

    log = tmp_path / "spark.log"
    noisy = "import sys, time; print('jvm noise', file=sys.stderr, flush=True); "
    with jvm_output_to(str(log)):  # a child started here keeps the log as its stderr
        child = subprocess.Popen(
            [sys.executable, "-c", noisy + "time.sleep(0.3); print('later', file=sys.stderr)"]
        )
    print("ours", file=sys.stderr)
    assert child.wait(timeout=60) == 0
    captured = capfd.readouterr()
    assert captured.err == "ours\n"
    assert log.read_text() == "jvm noise\nlater\n"


class _Stage:
    def __init__(self, stage_id: int, tasks: int, completed: int) -> None:
        self.stageId, self.numTasks, self.numCompletedTasks = stage_id, tasks, completed


def test_the_job_progress_shows_phases_then_stage_tasks() -> None:
    import io

    from puffin.spark._progress import JobProgress

    stream = io.StringIO()
    with JobProgress(enabled=True, stream=stream) as progress:
        progress.phase("starting Spark")
        assert stream.getvalue().endswith("0/1 tasks  0 tasks/s  starting Spark\x1b[K")
        progress.record([])  # no stage yet: the phase stays
        assert stream.getvalue().endswith("starting Spark\x1b[K")
        progress.record([_Stage(0, 4, 4), _Stage(1, 4, 1)])
        assert progress.bar.done == 5 and progress.bar.total == 8
        assert progress.bar.note == "stage 1"
        progress.record([_Stage(1, 4, 4)])
        assert progress.bar.done == 8 and progress.bar.note == "2 stages done"
    assert stream.getvalue().endswith("\r\x1b[K")  # erased before the results are printed


def test_the_job_progress_polls_the_status_tracker() -> None:
    import io
    import time

    from puffin.spark._progress import JobProgress

    class Tracker:
        def getActiveStageIds(self) -> list[int]:
            return [7]

        def getStageInfo(self, stage_id: int) -> _Stage:
            return _Stage(stage_id, 10, 3)

    class Context:
        def statusTracker(self) -> Tracker:
            return Tracker()

    class Session:
        sparkContext = Context()

    with JobProgress(enabled=True, stream=io.StringIO()) as progress:
        with progress.watching(Session()):
            deadline = time.monotonic() + 10
            while progress.bar.done == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
        assert (progress.bar.done, progress.bar.total, progress.bar.note) == (3, 10, "stage 7")


@pytest.mark.slow
@pytest.mark.java
def test_spark_stats_keeps_the_jvm_quiet_and_shows_progress(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        pytest.skip("no Java")
    from puffin.iceberg import create_sample_table, local_catalog

    create_sample_table(local_catalog(str(tmp_path / "wh")), "db.t", rows=2000, files=2)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "puffin",
            "spark",
            "stats",
            "db.t",
            "--warehouse",
            str(tmp_path / "wh"),
            "--no-commit",
            "--progress",
            "--master",
            "local[1]",
        ],
        capture_output=True,  # bytes: text mode would turn the progress line's \r into \n
        cwd=tmp_path,
        timeout=600,
    )
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "wrote file://" in proc.stdout.decode()
    drawn = [part for part in stderr.split("\r") if part.strip("\x1b[K")]
    assert drawn and all(part.startswith("spark: [") for part in drawn), stderr
    assert "starting Spark" in stderr and "tasks" in stderr
    assert "WARNING" not in stderr and "log level" not in stderr
