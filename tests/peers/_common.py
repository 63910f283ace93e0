"""What every peer shares: where the side venvs are, metadata locations, comparable rows."""

from __future__ import annotations

import os
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import UUIDType

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

Row = tuple[Any, ...]


class PeerError(RuntimeError):
    """A peer failed to read or write a table; the message carries the peer's own error."""


def metadata_path(location: str | os.PathLike[str]) -> Path:
    """A local path for a metadata.json given as a path or a ``file://`` URL."""
    from puffin.io.locations import local_path

    text = os.fspath(location)
    if text.startswith("file:"):  # no unquoting: '%41' is three characters of the name
        text = local_path(text) or text
    return Path(text).resolve()


def side_python(venv: str) -> Path:
    """The interpreter of a peer venv the Makefile builds (``make peers``).

    Under ``make test`` (``PUFFIN_REQUIRE_PEERS=1``) a missing venv fails the test, so CI
    cannot pass without the peers; a bare ``pytest`` run skips with the command to run.
    """
    python = REPO / venv / "bin" / "python"
    if not python.exists():
        message = f"{venv} is not built: run `make peers`"
        if os.environ.get("PUFFIN_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return python


def stop_server(proc: subprocess.Popen[str] | None, *, grace: float) -> None:
    """Close a server's stdin (each of ours stops itself then); kill it after ``grace`` s."""
    if proc is None:
        return
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    if proc.stdout is not None:
        proc.stdout.close()


def run_child(python: Path, script: str, args: Sequence[str], *, timeout: float) -> pa.Table:
    """Run ``script`` (in this folder) with ``python``; it writes its rows as an Arrow IPC file.

    The child gets the output path as its last argument; its stderr becomes the error
    message when it fails, so a peer's own complaint reaches the test report.
    """
    with tempfile.TemporaryDirectory(prefix="puffin-peer-") as tmp:
        out = Path(tmp) / "rows.arrow"
        proc = subprocess.run(
            [str(python), str(HERE / script), *args, str(out)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise PeerError(f"{script} failed ({proc.returncode}): {proc.stderr.strip()[-3000:]}")
        with ipc.open_file(out) as reader:
            return reader.read_all()


def _as_uuid(value: Any) -> Any:
    if value is None or isinstance(value, uuid.UUID):
        return value
    if isinstance(value, bytes):
        return uuid.UUID(bytes=value)
    return uuid.UUID(str(value))


def _sort_key(row: Row) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is None, v) for v in row)


def comparable_rows(table: pa.Table, schema: Schema) -> list[Row]:
    """Rows as sorted tuples in the Iceberg schema's column order, one Python type per value.

    Peers hand back the same values in different Arrow types: a uuid is an
    ``arrow.uuid`` extension (pyiceberg), a string (DuckDB), 16 fixed bytes (iceberg-rust)
    or plain binary (Sail); binary is ``binary`` or ``large_binary``. Each uuid becomes a
    ``uuid.UUID``; everything else compares as ``to_pylist`` gives it.
    """
    columns = []
    for field in schema.fields:
        values = table.column(field.name).to_pylist()
        if isinstance(field.field_type, UUIDType):
            values = [_as_uuid(v) for v in values]
        columns.append(values)
    return sorted(zip(*columns, strict=True), key=_sort_key)
