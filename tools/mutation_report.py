"""Mutation testing of chosen modules with mutmut 3, and each module's score.

``make mutation MODULES="src/puffin/blobs/dv/format.py src/puffin/codecs.py"`` runs::

    python tools/mutation_report.py run src/puffin/blobs/dv/format.py src/puffin/codecs.py

which, module by module, runs ``mutmut run 'puffin.blobs.dv.format.*'`` (every mutant of that
module, tested afresh) and then prints killed / total per module, the surviving mutants by
name (``mutmut show NAME`` prints one's diff) and the wall time of each module's run.
``report`` prints the same table from the results already in ``mutants/`` without running.

The configuration is ``[tool.mutmut]`` in pyproject.toml: a module must be listed in its
``only_mutate`` (mutmut mutates nothing else), and the tests are its
``pytest_add_cli_args_test_selection``.  mutmut works in ``./mutants`` (git-ignored).

Statuses are mutmut's own (``mutmut.stats.status_by_exit_code``); the score is killed
divided by all mutants of the module, so a timeout, a mutant no selected test reaches and
one never checked all count against it.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"

# mutmut 3.8.1's exit codes (mutmut/stats.py), used if mutmut is not importable here.
_FALLBACK_STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    2: "check was interrupted by user",
    None: "not checked",
    33: "no tests",
    34: "skipped",
    35: "suspicious",
    36: "timeout",
    37: "caught by type check",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
    -11: "segfault",
    -9: "segfault",
}


def status_of(exit_code: int | None) -> str:
    try:
        from mutmut.stats import status_by_exit_code
    except ImportError:  # pragma: no cover - mutmut is in the test extra
        return _FALLBACK_STATUS.get(exit_code, "suspicious")
    return str(status_by_exit_code[exit_code])


@dataclass
class ModuleResult:
    module: str
    statuses: Counter[str] = field(default_factory=Counter)
    survivors: list[str] = field(default_factory=list)
    seconds: float | None = None

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    @property
    def killed(self) -> int:
        return self.statuses["killed"]

    @property
    def score(self) -> float:
        return 100.0 * self.killed / self.total if self.total else 0.0


def mutant_pattern(module: str) -> str:
    """``src/puffin/codecs.py`` -> ``puffin.codecs.*``, mutmut's names for its mutants."""
    path = Path(module)
    if path.suffix != ".py" or not path.parts or path.parts[0] != "src":
        raise SystemExit(f"{module}: expected a module under src/, such as src/puffin/codecs.py")
    dotted = ".".join(path.with_suffix("").parts[1:])
    if dotted.endswith(".__init__"):
        dotted = dotted[: -len(".__init__")]
    return f"{dotted}.*"


def enrolled_modules() -> list[str]:
    """The ``only_mutate`` patterns of ``[tool.mutmut]``."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)
    patterns = config.get("tool", {}).get("mutmut", {}).get("only_mutate", [])
    return [str(pattern) for pattern in patterns]


def check_enrolled(modules: list[str]) -> None:
    patterns = enrolled_modules()
    for module in modules:
        if not (ROOT / module).is_file():
            raise SystemExit(f"{module}: no such file")
        if not any(fnmatch.fnmatch(module, pattern) for pattern in patterns):
            raise SystemExit(
                f"{module} is not in [tool.mutmut] only_mutate of pyproject.toml "
                f"({', '.join(patterns) or 'empty'}): add it there, with its tests in "
                "pytest_add_cli_args_test_selection"
            )


def read_results(module: str) -> ModuleResult:
    """The module's results from mutmut's ``mutants/<path>.meta``."""
    result = ModuleResult(module)
    meta = MUTANTS / f"{module}.meta"
    if not meta.is_file():
        return result
    exit_codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    for name, exit_code in sorted(exit_codes.items()):
        status = status_of(exit_code)
        result.statuses[status] += 1
        if status != "killed":
            result.survivors.append(f"{name}: {status}")
    return result


def run_module(module: str, jobs: int | None) -> float:
    """``mutmut run`` on every mutant of ``module``; the wall time in seconds."""
    mutmut = Path(sys.executable).parent / "mutmut"
    command = [str(mutmut), "run"]
    if jobs:
        command += ["--max-children", str(jobs)]
    command.append(mutant_pattern(module))
    print(f"== {module}: {' '.join(command)}", flush=True)
    start = time.monotonic()
    completed = subprocess.run(command, cwd=ROOT, check=False)
    seconds = time.monotonic() - start
    if completed.returncode != 0:
        raise SystemExit(f"mutmut failed on {module} (exit {completed.returncode})")
    return seconds


def print_report(results: list[ModuleResult]) -> None:
    print()
    print(f"{'module':<40} {'total':>6} {'killed':>6} {'surv.':>6} {'t/o':>4} {'other':>6}"
          f" {'score':>7} {'wall':>7}")
    for r in results:
        other = r.total - r.killed - r.statuses["survived"] - r.statuses["timeout"]
        wall = f"{r.seconds:.0f}s" if r.seconds is not None else "-"
        print(f"{r.module:<40} {r.total:>6} {r.killed:>6} {r.statuses['survived']:>6}"
              f" {r.statuses['timeout']:>4} {other:>6} {r.score:>6.1f}% {wall:>7}")
    for r in results:
        if r.survivors:
            print(f"\nnot killed in {r.module} (mutmut show NAME for the diff):")
            for line in r.survivors:
                print(f"  {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["run", "report"])
    parser.add_argument("modules", nargs="*", help="paths such as src/puffin/codecs.py")
    parser.add_argument("--jobs", type=int, default=None, help="mutmut's --max-children")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_intermixed_args(argv)
    modules: list[str] = args.modules or enrolled_modules()
    check_enrolled(modules)
    results = []
    for module in modules:
        seconds = run_module(module, args.jobs) if args.command == "run" else None
        result = read_results(module)
        result.seconds = seconds
        results.append(result)
    print_report(results)
    if args.json:
        args.json.write_text(json.dumps(
            [{"module": r.module, "total": r.total, "score": round(r.score, 2),
              "statuses": dict(r.statuses), "wall_seconds": r.seconds,
              "not_killed": r.survivors} for r in results],
            indent=2,
        ) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
