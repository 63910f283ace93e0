"""DuckDB's iceberg extension: 1.4.4 in the project venv, 1.5.5 in ``.venv-duckdb15``.

The extensions come from the package index as wheels (``duckdb-ext-*`` for 1.4.4,
``duckdb-extension-*`` for 1.5.5), never from DuckDB's extension server: autoinstall and
autoload are off, 1.4.4 gets ``extension_directory`` pointed at the wheel's folder and
1.5.5 loads each file by path. DuckDB 1.5.5 needs duckdb 1.5.x, which cannot share the
project venv with 1.4.4, so it runs as a child process (``_duckdb15_child.py``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from peers._common import metadata_path, run_child, side_python

DUCKDB15_VENV = ".venv-duckdb15"


def _extension_directory() -> Path:
    spec = importlib.util.find_spec("duckdb_ext")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("duckdb-ext-iceberg is not installed (the `peers` extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "extensions"


def connect_duckdb() -> Any:
    """A DuckDB 1.4.4 connection with the wheel-shipped avro and iceberg extensions loaded."""
    import duckdb

    con = duckdb.connect(
        config={
            "extension_directory": str(_extension_directory()),
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
    )
    con.execute("LOAD avro")
    con.execute("LOAD iceberg")
    return con


def _scan(metadata: str | os.PathLike[str]) -> str:
    path = str(metadata_path(metadata)).replace("'", "''")
    return f"iceberg_scan('{path}')"


def read_duckdb(metadata: str | os.PathLike[str]) -> pa.Table:
    """DuckDB 1.4.4's ``iceberg_scan`` of one metadata.json."""
    con = connect_duckdb()
    try:
        table: pa.Table = con.execute(f"SELECT * FROM {_scan(metadata)}").fetch_arrow_table()
        return table
    finally:
        con.close()


def read_duckdb15(metadata: str | os.PathLike[str], *, sql: str | None = None) -> pa.Table:
    """DuckDB 1.5.5's ``iceberg_scan`` (or ``sql``, with ``{table}`` for the scan)."""
    python = side_python(DUCKDB15_VENV)
    query = (sql or "SELECT * FROM {table}").format(table=_scan(metadata))
    return run_child(python, "_duckdb15_child.py", [query], timeout=120)
