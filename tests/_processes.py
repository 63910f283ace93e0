"""Processes a test starts beside each other (writers, cleaners, jobs, servers): waited for
together, and none left running whatever happens."""

from __future__ import annotations

import signal
import socket
import subprocess
from collections.abc import Sequence
from typing import Any


def wait_all(procs: Sequence[subprocess.Popen[Any]], timeout: float) -> list[Any]:
    """Each process's standard error once it has ended (``timeout`` seconds each at most);
    any still running when this returns or raises is killed."""
    try:
        return [p.communicate(timeout=timeout)[1] for p in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, grace: float = 10) -> None:
    """Ask a server to stop with ``sig``; kill it if it has not within ``grace`` seconds."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now, for a server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
