"""``--impl CMD``: an implementation in any language, spoken to as JSON lines over a pipe.

The command is started once; each request is one JSON object on a line of its stdin, each
response one JSON object on a line of its stdout (docs/conformance.md has the protocol).
The first request is ``{"op": "hello"}``, answered with the implementation's name and the
operations it speaks.  A process that dies or stops answering is restarted for the next
request, so one crash fails one vector.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from puffin.errors import SetupError

__all__ = ["ProcessAdapter"]


class ProcessAdapter:
    """An adapter behind a subprocess speaking the JSON-lines protocol.

    ``timeout`` bounds each answer (seconds); ``memory_limit`` caps the child's address
    space (bytes, POSIX only) so a peer that allocates without bound fails one vector;
    ``quiet`` drops the child's stderr (the JVM's start-up warnings).
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        name: str | None = None,
        cwd: str | None = None,
        timeout: float = 120.0,
        memory_limit: int | None = None,
        quiet: bool = False,
    ) -> None:
        self._argv = shlex.split(command) if isinstance(command, str) else list(command)
        self._cwd = cwd
        self._timeout = timeout
        self._memory_limit = memory_limit
        self._stderr = subprocess.DEVNULL if quiet else None
        self._proc: subprocess.Popen[str] | None = None
        hello = self._exchange({"op": "hello"})
        if not hello.get("ok"):
            raise SetupError(f"{self._argv[0]} did not answer hello: {hello.get('error')}")
        info = hello.get("result", {})
        self.name: str = name or str(info.get("name", self._argv[0]))
        self.ops: frozenset[str] = frozenset(info.get("ops", ()))

    def _limit(self) -> None:  # runs in the child, before exec
        import resource

        assert self._memory_limit is not None
        resource.setrlimit(resource.RLIMIT_AS, (self._memory_limit, self._memory_limit))

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            limit = self._limit if self._memory_limit and os.name == "posix" else None
            try:
                self._proc = subprocess.Popen(
                    self._argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    encoding="utf-8",
                    cwd=self._cwd,
                    stderr=self._stderr,
                    preexec_fn=limit,
                )
            except OSError as exc:
                raise SetupError(f"cannot start {self._argv[0]}: {exc}") from exc
        return self._proc

    def _exchange(self, request: Mapping[str, Any]) -> dict[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], self._timeout)
            line = proc.stdout.readline() if ready else ""
        except OSError:
            line = ""
        if not line:
            proc.kill()
            proc.wait()
            why = "timed out" if proc.returncode == -9 else f"exited (status {proc.returncode})"
            return {"ok": False, "crashed": True, "error": f"the adapter process {why}"}
        try:
            response = json.loads(line)
        except ValueError:
            return {"ok": False, "crashed": True, "error": f"not a JSON line: {line[:200]!r}"}
        if not isinstance(response, dict):
            return {"ok": False, "crashed": True, "error": "the response is not an object"}
        return response

    def handle(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return self._exchange(request)

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
