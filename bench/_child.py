"""A measured job run in a process of its own (so its peak RSS is its own), and the JSON
document it prints on its last line: what bench_append, bench_maintenance and bench_equality
each ran their child jobs with."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def run_child(program: str, *args: object) -> dict[str, Any]:
    """Run ``program`` (Python source) with ``args``; its last line of output, as JSON.
    ``RuntimeError`` with the end of its stderr if it fails."""
    argv = [sys.executable, "-c", program, *(str(a) for a in args)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"child job failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
