"""Iceberg Java 1.10.2, the reference implementation, on Spark 3.5 in ``.venv-java``.

pyspark 3.5.9 cannot share ``.venv`` with pyspark 4, so one server process per test module
(:class:`JavaPeer`) holds a Spark session in the side venv and runs requests sent as JSON
lines (``_java_server.py``). Jars: the Iceberg runtime from PyPI's
``snowpark-connect-deps-iceberg``, pyspark's Jackson relocated to Iceberg's shaded package
and Debian's SQLite JDBC driver (``tools/java_peer_setup.py``, docs/interop.md).

Java shares a warehouse's ``catalog.db`` through its ``JdbcCatalog``: the Spark catalog
``default`` of :meth:`JavaPeer.sql` with ``warehouse=`` is the catalog our
``local_catalog`` (pyiceberg's ``SqlCatalog``) names ``default``, so both commit to the
same tables. A table is also read by its metadata file (:func:`read_java`).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from peers._common import REPO, PeerError, metadata_path, side_python, stop_server

JAVA_VENV = ".venv-java"
ROW_LINEAGE = ["_row_id", "_last_updated_sequence_number"]


def java_jars() -> Path:
    """``.venv-java/jars``, built by ``make peers`` (fails under ``make test`` if missing)."""
    jars = REPO / JAVA_VENV / "jars"
    if not (jars / ".stamp").is_file():
        message = f"{jars} is not built: run `make peers`"
        if os.environ.get("PUFFIN_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return jars


class JavaPeer:
    """A Spark 3.5 session with Iceberg Java for one module: ``with JavaPeer(tmp) as java:``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> JavaPeer:
        python = side_python(JAVA_VENV)
        jars = java_jars()
        if not (jars / "sqlite-jdbc.jar").is_file():
            message = "no SQLite JDBC driver: apt-get install libxerial-sqlite-jdbc-java"
            if os.environ.get("PUFFIN_REQUIRE_PEERS") == "1":
                pytest.fail(message)
            pytest.skip(message)
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = (self.workdir / "java-peer.log").open("w")
        self._proc = subprocess.Popen(
            [str(python), str(Path(__file__).with_name("_java_server.py")), str(jars)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            cwd=self.workdir, env={**os.environ, "PYSPARK_PYTHON": str(python)},
        )
        log.close()
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "ready":
            self.stop()
            raise PeerError(f"Iceberg Java did not start: {self.log()}")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        """Close the server's stdin (it stops Spark); kill it if it has not within 30 s."""
        proc, self._proc = self._proc, None
        stop_server(proc, grace=30)

    def log(self) -> str:
        """The server's stderr (Spark's and Java's own messages), for failure reports."""
        return (self.workdir / "java-peer.log").read_text(errors="replace")[-3000:]

    def request(self, **fields: Any) -> dict[str, Any]:
        if self._proc is None or self._proc.stdin is None or self._proc.stdout is None:
            raise PeerError("the Java peer is not running")
        self._proc.stdin.write(json.dumps(fields) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise PeerError(f"the Java peer stopped: {self.log()}")
        answer: dict[str, Any] = json.loads(line)
        if not answer["ok"]:
            raise PeerError(f"Iceberg Java: {answer['error']}")
        return answer

    def _rows(self, **fields: Any) -> pa.Table:
        with tempfile.TemporaryDirectory(prefix="puffin-java-", dir=self.workdir) as tmp:
            out = Path(tmp) / "rows.arrow"
            self.request(out=str(out), **fields)
            with ipc.open_file(out) as reader:
                return reader.read_all()

    def sql(self, statement: str, *, warehouse: Path | None = None) -> pa.Table:
        """A statement's result; ``warehouse`` names the catalog ``default`` shares."""
        where = None if warehouse is None else str(Path(warehouse).resolve())
        return self._rows(op="sql", sql=statement, warehouse=where)

    def changelog(
        self, warehouse: Path, table: str, start: int | None, end: int, **flags: Any
    ) -> pa.Table:
        """Iceberg Java's changelog view (``create_changelog_view``) of ``table`` in
        ``warehouse``'s catalog after ``start`` up to ``end``; ``flags``: its other
        arguments (``net_changes``, ``compute_updates``, ``identifier_columns``)."""
        options = [f"'end-snapshot-id', '{end}'"]
        if start is not None:
            options.append(f"'start-snapshot-id', '{start}'")
        args = [f"table => 'db.{table.split('.')[-1]}'", f"options => map({', '.join(options)})",
                "changelog_view => 'puffin_changes'"]  # fmt: skip
        for name, value in flags.items():
            if isinstance(value, bool):
                args.append(f"{name} => {str(value).lower()}")
            else:
                args.append(f"{name} => array({', '.join(repr(v) for v in value)})")
        where = str(Path(warehouse).resolve())
        return self._rows(op="changelog", warehouse=where, args=", ".join(args))

    def read(self, metadata: str | os.PathLike[str], columns: list[str] | None = None) -> pa.Table:
        """Every row of the table at a metadata.json, as Iceberg Java reads it."""
        return self._rows(op="read", metadata=str(metadata_path(metadata)), columns=columns)


def plan_java(peer: JavaPeer, metadata: str | os.PathLike[str], runs: int = 3) -> dict[str, Any]:
    """Iceberg Java's ``newScan().planFiles()`` of the table at ``metadata``, ``runs`` times
    in the peer's warm session: ``{"seconds": [...], "tasks": n}``."""
    return peer.request(op="plan", metadata=str(metadata_path(metadata)), runs=runs)


def read_java(peer: JavaPeer, metadata: str | os.PathLike[str]) -> pa.Table:
    """Every row Iceberg Java reads from the table at ``metadata`` (schema columns only)."""
    return peer.read(metadata)


def plan_java_files(peer: JavaPeer, metadata: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Iceberg Java's plan of the table at ``metadata``: each data file's delete files."""
    answer = peer.request(op="plan", metadata=str(metadata_path(metadata)), runs=1, detail=True)
    files: dict[str, list[str]] = answer["files"]
    return files


def equality_delete_java(
    peer: JavaPeer, warehouse: Path, table: str, column: str, keys: list[int]
) -> str:
    """Iceberg Java writes and commits one equality delete file of ``keys`` on the ``int``
    column ``column`` of ``table`` (unpartitioned) in ``warehouse``'s catalog; its path."""
    answer = peer.request(
        op="equality_delete", warehouse=str(Path(warehouse).resolve()), table=table,
        column=column, keys=keys,
    )  # fmt: skip
    path: str = answer["path"]
    return path
