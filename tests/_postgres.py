"""A PostgreSQL server on 127.0.0.1 for tests of catalogs teams share (Debian's package:
``make test`` installs it where missing).

:func:`postgres_server` runs ``initdb`` on a temporary data folder and starts ``postgres``
on a free port with settings for tests (no fsync: a test's database need not survive a
power cut); as root, both run as the ``postgres`` user the package made, since PostgreSQL
refuses to run as root. The server is stopped, and its folder removed, when the ``with``
block ends. Each test gets its own catalog name (pyiceberg's SQL catalog keeps every
catalog's tables in one database, told apart by name), so tests never meet.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _processes import free_port, stop

START_TIMEOUT = 60.0
USER = "puffin"


@dataclass(frozen=True)
class Postgres:
    """A running server: the SQLAlchemy URL of its ``postgres`` database."""

    port: int

    @property
    def uri(self) -> str:
        return f"postgresql+psycopg2://{USER}@127.0.0.1:{self.port}/postgres"

    def catalog(self, warehouse: Path | str, name: str | None = None, **properties: str) -> Any:
        """pyiceberg's SQL catalog on this server, its tables under ``warehouse``; a new
        catalog name unless ``name`` is given (the same name: the same catalog)."""
        from pyiceberg.catalog.sql import SqlCatalog

        name = name or f"c{uuid.uuid4().hex[:12]}"
        location = (
            warehouse if isinstance(warehouse, str) else f"file://{Path(warehouse).resolve()}"
        )
        return SqlCatalog(name, uri=self.uri, warehouse=location, **properties)


def _binary(name: str) -> str:
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None
    )
    if found is None:
        message = f"no PostgreSQL server ({name}): apt-get install postgresql (make test does)"
        if os.environ.get("PUFFIN_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _as_server_user() -> dict[str, Any]:
    """PostgreSQL will not run as root: there, the package's ``postgres`` user runs it
    (``subprocess`` switches user in the child, so signals reach the server itself)."""
    if os.geteuid() != 0:
        return {}
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A fresh server on a free port (see the module)."""
    pytest.importorskip("psycopg2")
    initdb, postgres = _binary("initdb"), _binary("postgres")
    folder = Path(tempfile.mkdtemp(prefix="puffin-postgres-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    try:
        subprocess.run(
            [initdb, "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync",
             "--no-instructions"],
            check=True, capture_output=True, timeout=120, cwd=folder, **_as_server_user(),
        )  # fmt: skip
        port = free_port()
        log = (folder / "server.log").open("w")
        proc = subprocess.Popen(
            [postgres, "-D", str(data), "-h", "127.0.0.1", "-p", str(port), "-k", str(folder),
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
             "-c", "max_connections=200"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=folder,
            **_as_server_user(),
        )  # fmt: skip
        try:
            _wait_ready(port, proc, folder)
            yield Postgres(port)
        finally:
            stop(proc, signal.SIGINT, grace=30)  # SIGINT: PostgreSQL's "fast" shutdown
            log.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(port: int, proc: subprocess.Popen[Any], folder: Path) -> None:
    import psycopg2

    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            psycopg2.connect(host="127.0.0.1", port=port, user=USER, dbname="postgres").close()
            return
        except psycopg2.OperationalError:
            time.sleep(0.1)
    log = (folder / "server.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"PostgreSQL did not start on 127.0.0.1:{port}: {log}")
