"""How long the ``puffin`` command takes to answer ``--help`` and a usage error (issue 59).

Whole processes, as a user starts them: ``python -c "import puffin"``, the help of
``puffin``, ``puffin table`` and a subcommand, and usage errors of ``puffin table`` and
``puffin spark`` that need no table (argparse's own, and the checks each command makes
before it opens the table), beside one command that does open a table (``puffin table
dv`` on a 100-row table: what loading pyiceberg and the catalog costs). Each case runs
``--runs`` times, the cases taking turns; reported: the median and the maximum wall time,
and whether the help and usage errors are under the goal of 0.5 s. Every run's exit
status is checked, and a usage error must be one line on stderr (argparse's: its usage
too) that is about the option, not the table.

Run: ``.venv/bin/python bench/bench_cli_startup.py [--runs 15]`` (``--smoke``: 2 runs)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 0.5

#: (what, argv after ``puffin``, exit status, a word its stderr must hold, under the goal)
CASES: list[tuple[str, list[str], int, str, bool]] = [
    ("puffin --help", ["--help"], 0, "", True),
    ("puffin table --help", ["table", "--help"], 0, "", True),
    ("puffin table delete --help", ["table", "delete", "--help"], 0, "", True),
    ("puffin spark --help", ["spark", "--help"], 0, "", True),
    ("table delete, no --where (argparse)", ["table", "delete", "db.t"], 2, "--where", True),
    ("table compact --min-deleted 2", ["table", "compact", "db.t", "--min-deleted", "2"], 2,
     "--min-deleted", True),
    ("table remove-orphans --older-than 1h --delete",
     ["table", "remove-orphans", "db.t", "--older-than", "1h", "--delete"], 2,
     "grace period of 1h", True),
    ("table expire --older-than 5days", ["table", "expire", "db.t", "--older-than", "5days"], 2,
     "not an age", True),
    ("table append db.t missing.parquet", ["table", "append", "db.t", "missing.parquet"], 1,
     "no such file", True),
    ('table delete --where "id <" (pyiceberg\'s parser)',
     ["table", "delete", "db.t", "--where", "id <"], 2, "cannot parse", True),
    ("spark expire --older-than 1x", ["spark", "expire", "db.t", "--older-than", "1x"], 2,
     "not an age", True),
    ("table dv db.t (opens the table)", ["table", "dv", "db.t"], 0, "", False),
]  # fmt: skip


def _puffin() -> list[str]:
    script = Path(sys.executable).with_name("puffin")
    return [str(script)] if script.exists() else [sys.executable, "-m", "puffin"]


def _once(argv: list[str], env: dict[str, str], folder: str) -> tuple[float, int, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=folder,
                          check=False, timeout=120)  # fmt: skip
    return time.perf_counter() - start, done.returncode, done.stderr


def _check(what: str, status: int, err: str, expected: int, word: str) -> None:
    if status != expected or word not in err:
        raise SystemExit(f"{what}: exit {status}, expected {expected}: {err[-1000:]}")
    if expected and "usage:" not in err and len(err.strip().splitlines()) != 1:
        raise SystemExit(f"{what}: not one line on stderr: {err}")
    last = err.strip().splitlines()[-1] if err.strip() else ""
    if expected and ("not found" in last or "catalog" in last):
        raise SystemExit(f"{what}: answered after opening the table: {err}")


def _measure(runs: int, folder: str) -> dict[str, list[float]]:
    env = {**os.environ, "PUFFIN_WAREHOUSE": os.path.join(folder, "warehouse")}
    puffin = _puffin()
    cases = [("python -c 'import puffin'", [sys.executable, "-c", "import puffin"], 0, "")]
    cases += [(what, [*puffin, *argv], status, word) for what, argv, status, word, _ in CASES]
    times: dict[str, list[float]] = {what: [] for what, *_ in cases}
    for _ in range(runs):
        for what, argv, expected, word in cases:  # the cases take turns
            took, status, err = _once(argv, env, folder)
            _check(what, status, err, expected, word)
            times[what].append(took)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="2 runs")
    args = parser.parse_args()
    runs = 2 if args.smoke else args.runs
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as folder:
        from puffin.iceberg import create_sample_table, local_catalog

        create_sample_table(local_catalog(Path(folder) / "warehouse"), "db.t", rows=100, files=1)
        times = _measure(runs, folder)
    goal = {"python -c 'import puffin'": True, **{what: g for what, *_, g in CASES}}
    print(f"\n{runs} runs each (load average {load:.1f} before, {os.getloadavg()[0]:.1f} after)")
    print("\n| command | median ms | max ms |")
    print("|---|---:|---:|")
    for what, taken in times.items():
        print(f"| {what} | {statistics.median(taken) * 1000:.0f} | {max(taken) * 1000:.0f} |")
    held = [w for w, g in goal.items() if g]
    worst = max(held, key=lambda w: statistics.median(times[w]))
    median = statistics.median(times[worst])
    verdict = "met" if median < GOAL_S else "NOT met"
    print(f"\nstartup goal (help and usage errors under {GOAL_S} s, median): {verdict}; "
          f"slowest {worst}: {median * 1000:.0f} ms median")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
