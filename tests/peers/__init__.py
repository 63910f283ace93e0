"""Independent Iceberg readers ("peers") our tables are checked against, offline.

One function per peer takes a table's metadata.json (a path or ``file://`` URL) and returns
the rows that peer reads, as a pyarrow Table; :func:`comparable_rows` turns any of them
into sorted tuples with one Python type per Iceberg type, so peers compare with ``==``.
How each installs, and what each checks: docs/interop.md, section "Peers".
"""

from peers._common import PeerError, comparable_rows, metadata_path
from peers.duckdb_scan import connect_duckdb, read_duckdb, read_duckdb15
from peers.iceberg_rust import read_iceberg_rust
from peers.pyiceberg_scan import read_pyiceberg, static_table, table_schema
from peers.sail import SailServer, delete_with_sail, read_sail

__all__ = [
    "PeerError",
    "SailServer",
    "comparable_rows",
    "connect_duckdb",
    "delete_with_sail",
    "metadata_path",
    "read_duckdb",
    "read_duckdb15",
    "read_iceberg_rust",
    "read_pyiceberg",
    "read_sail",
    "static_table",
    "table_schema",
]
