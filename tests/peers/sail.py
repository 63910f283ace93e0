"""Sail 0.7.2: a Spark Connect server in Rust that reads Iceberg v3 and deletes with DVs.

pysail and pyspark-client 4.2.0 live in ``.venv-sail`` (pyspark-client cannot share a venv
with pyspark 4), so the server and each client call are child processes of that venv's
Python; every server listens on 127.0.0.1 only and is stopped by :class:`SailServer`.

Sail opens an Iceberg table by its folder and picks the highest-numbered
``metadata/vN.metadata.json`` (or ``NNNNN-*.metadata.json``), so a table handed over as
one metadata.json is *staged*: a copy of that file becomes ``v1.metadata.json`` of a fresh
folder. The copy points at the same manifests and data files; Sail writes what it
commits (deletion vectors, manifests, ``v2.metadata.json``) into the staged folder.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from types import TracebackType

import pyarrow as pa

from peers._common import PeerError, metadata_path, run_child, side_python, stop_server

SAIL_VENV = ".venv-sail"
_VERSION = re.compile(r"^v(\d+)\.metadata\.json$")
# Sail's default, like Iceberg's, is copy-on-write; a staged table asks for DVs instead.
MERGE_ON_READ = {"write.delete.mode": "merge-on-read"}


class SailServer:
    """A Sail Spark Connect server for one test module: ``with SailServer(tmp) as sail:``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None
        self._staged = 0

    def __enter__(self) -> SailServer:
        python = side_python(SAIL_VENV)
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = (self.workdir / "sail-server.log").open("w")
        self._proc = subprocess.Popen(
            [str(python), str(Path(__file__).with_name("_sail_server.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=self.workdir,
        )
        log.close()
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise PeerError(f"Sail did not start: {self.log()}")
        self.port = int(line)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Close the server's stdin (it stops itself); kill it if it has not within 10 s."""
        proc, self._proc = self._proc, None
        stop_server(proc, grace=10)

    def log(self) -> str:
        """The server's own log (its stderr), for failure messages."""
        return (self.workdir / "sail-server.log").read_text(errors="replace")[-3000:]

    def stage(self, metadata: str | os.PathLike[str], *, properties: dict[str, str]) -> Path:
        """A fresh table folder whose only metadata file is a copy of ``metadata``."""
        self._staged += 1
        folder = self.workdir / f"table-{self._staged}"
        (folder / "metadata").mkdir(parents=True)
        doc = json.loads(metadata_path(metadata).read_text())
        doc["properties"] = {**doc.get("properties", {}), **properties}
        (folder / "metadata" / "v1.metadata.json").write_text(json.dumps(doc))
        return folder

    def client(self, *args: str) -> pa.Table:
        """Run one ``_sail_client.py`` command against this server."""
        if self._proc is None:
            raise PeerError("the Sail server is not running")
        try:
            return run_child(
                side_python(SAIL_VENV), "_sail_client.py", [str(self.port), *args], timeout=300
            )
        except PeerError as exc:
            raise PeerError(f"{exc}\n--- Sail server log ---\n{self.log()}") from None


def latest_metadata(folder: Path) -> Path:
    """The highest ``vN.metadata.json`` in a staged table folder: Sail's current version."""
    versions = [
        (int(m.group(1)), p)
        for p in (folder / "metadata").iterdir()
        if (m := _VERSION.match(p.name)) is not None
    ]
    return max(versions)[1]


def read_sail(server: SailServer, metadata: str | os.PathLike[str]) -> pa.Table:
    """Every row Sail reads from the table at ``metadata``."""
    folder = server.stage(metadata, properties={})
    return server.client("read", str(folder))


def delete_with_sail(server: SailServer, metadata: str | os.PathLike[str], where: str) -> Path:
    """Sail's ``DELETE FROM ... WHERE where`` (merge-on-read); the new metadata.json."""
    folder = server.stage(metadata, properties=MERGE_ON_READ)
    server.client("delete", str(folder), where)
    new = latest_metadata(folder)
    if new.name == "v1.metadata.json":
        raise PeerError(f"Sail committed nothing for DELETE WHERE {where}")
    return new
