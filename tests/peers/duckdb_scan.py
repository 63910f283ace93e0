"""DuckDB's iceberg extension: 1.4.4 in the project venv, 1.5.5 in ``.venv-duckdb15``.

The extensions come from the package index as wheels (``duckdb-ext-*`` for 1.4.4,
``duckdb-extension-*`` for 1.5.5), never from DuckDB's extension server: autoinstall and
autoload are off, 1.4.4 gets ``extension_directory`` pointed at the wheel's folder and
1.5.5 loads each file by path. DuckDB 1.5.5 needs duckdb 1.5.x, which cannot share the
project venv with 1.4.4, so it runs as a child process (``_duckdb15_query.py``).
DuckDB 1.4.4's connection comes from the package (the conformance kit's ``duckdb`` adapter).
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from peers._common import metadata_path, run_child, side_python
from puffin.conformance.adapters._tables import connect_duckdb as _connect_duckdb

DUCKDB15_VENV = ".venv-duckdb15"


def connect_duckdb() -> Any:
    """A DuckDB 1.4.4 connection with the wheel-shipped avro and iceberg extensions loaded."""
    return _connect_duckdb()


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
    return run_child(python, "_duckdb15_query.py", [query], timeout=120)
