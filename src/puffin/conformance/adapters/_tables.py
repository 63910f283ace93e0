"""Table readers for the ``table`` tier: each takes a metadata.json and returns the live rows.

========================  ===========================================================
reader                    how it scans
========================  ===========================================================
puffin                    this library's ``scan_table``: its own plan, data files read
                          with pyarrow and every delete applied by its row reader
                          (``puffin.iceberg.scan.rows``)
pyiceberg                 ``StaticTable.from_metadata(...).scan().to_arrow()``
iceberg-rust              pyiceberg-core's ``IcebergDataFusionTable`` in a DataFusion
                          ``SessionContext``: no pyiceberg code on the read path
duckdb                    DuckDB 1.4's ``iceberg_scan`` with the extensions of the
                          ``duckdb-ext-*`` wheels (never DuckDB's extension server)
========================  ===========================================================

``tests/peers`` uses the same readers.  The answer of ``scan-table`` is
``{"rows": [[value, ...], ...]}`` in the requested column order, rows in any order.
"""

from __future__ import annotations

import decimal
import importlib.util
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from puffin.conformance.adapters._base import Response, error, ok
from puffin.errors import MissingDependencyError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "DuckdbAdapter",
    "IcebergRustAdapter",
    "connect_duckdb",
    "metadata_uri",
    "puffin_rows",
    "read_duckdb",
    "read_iceberg_rust",
    "read_pyiceberg",
    "rows_result",
]


def metadata_uri(metadata: str | os.PathLike[str]) -> str:
    """A ``file://`` URL for a metadata.json given as a path (a URL is kept)."""
    text = os.fspath(metadata)
    if "://" in text:
        return text
    # Not Path.as_uri(): pyiceberg maps file: locations to paths without unquoting.
    return f"file://{os.path.abspath(text)}"


def _json_value(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    return value


def rows_result(table: pa.Table, columns: Sequence[str]) -> Response:
    """``{"rows": [...]}`` of an Arrow table, values in the protocol's JSON forms."""
    values = [[_json_value(v) for v in table.column(name).to_pylist()] for name in columns]
    return {"rows": [list(row) for row in zip(*values, strict=True)]}


def read_pyiceberg(metadata: str | os.PathLike[str]) -> pa.Table:
    """pyiceberg's own scan: Parquet position deletes and deletion vectors applied."""
    from pyiceberg.table import StaticTable

    table: pa.Table = StaticTable.from_metadata(metadata_uri(metadata)).scan().to_arrow()
    return table


def read_iceberg_rust(metadata: str | os.PathLike[str]) -> pa.Table:
    """Every row iceberg-rust returns for ``SELECT *`` on the table at ``metadata``."""
    try:
        from datafusion import SessionContext
        from pyiceberg_core.datafusion import IcebergDataFusionTable
    except ImportError as exc:
        raise MissingDependencyError(
            "the iceberg-rust adapter needs pyiceberg-core and datafusion: pip install "
            "'pyiceberg-core==0.11.0' 'datafusion==54.1.0'"
        ) from exc
    provider = IcebergDataFusionTable(
        identifier=["peer", "table"],
        metadata_location=metadata_uri(metadata),
        file_io_properties={},
    )
    ctx = SessionContext()
    ctx.register_table("peer_table", provider)
    table: pa.Table = ctx.sql("SELECT * FROM peer_table").to_arrow_table()
    return table


def _extension_directory() -> Path:
    spec = importlib.util.find_spec("duckdb_ext")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            "DuckDB's iceberg extension is not installed: pip install 'duckdb==1.4.4' "
            "'duckdb-ext-iceberg==1.4.4.20260205' 'duckdb-ext-avro==1.4.4.20260205'"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "extensions"


def connect_duckdb() -> Any:
    """A DuckDB 1.4 connection with the wheel-shipped avro and iceberg extensions loaded."""
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


def duckdb_scan(metadata: str | os.PathLike[str]) -> str:
    """``iceberg_scan('<local path>')`` for a metadata.json given as a path or URL."""
    from puffin.io.locations import local_path

    text = os.fspath(metadata)
    path = (local_path(text) or text).replace("'", "''")
    return f"iceberg_scan('{path}')"


def read_duckdb(metadata: str | os.PathLike[str]) -> pa.Table:
    """DuckDB 1.4's ``iceberg_scan`` of one metadata.json."""
    con = connect_duckdb()
    try:
        sql = f"SELECT * FROM {duckdb_scan(metadata)}"
        table: pa.Table = con.execute(sql).fetch_arrow_table()
        return table
    finally:
        con.close()


def puffin_rows(metadata: str, columns: Sequence[str]) -> Response:
    """This library's scan (:func:`puffin.iceberg.scan_table`): our plan, our row reader
    applying every delete."""
    from pyiceberg.table import StaticTable

    from puffin.iceberg import scan_table

    table = StaticTable.from_metadata(metadata_uri(metadata))
    if table.current_snapshot() is None:
        return {"rows": []}
    data = scan_table(table, selected_fields=tuple(columns)).to_arrow()
    values = [data.column(name).to_pylist() for name in columns]
    return {"rows": [[_json_value(v) for v in row] for row in zip(*values, strict=True)]}


class _TableReader:
    """An adapter that speaks only ``scan-table``, through one reader function."""

    ops = frozenset({"scan-table"})
    name = ""

    def _read(self, metadata: str) -> pa.Table:
        raise NotImplementedError

    def handle(self, request: Mapping[str, Any]) -> Response:
        try:
            return ok(rows_result(self._read(request["metadata"]), request["columns"]))
        except Exception as exc:  # whatever the peer raises is its rejection
            return error(exc)

    def close(self) -> None:
        pass


class IcebergRustAdapter(_TableReader):
    """``iceberg-rust``: scan-table through pyiceberg-core and DataFusion."""

    def __init__(self) -> None:
        from importlib.metadata import version

        try:
            self.name = f"iceberg-rust (pyiceberg-core {version('pyiceberg-core')})"
        except Exception as exc:
            raise MissingDependencyError("the iceberg-rust adapter needs pyiceberg-core") from exc

    def _read(self, metadata: str) -> pa.Table:
        return read_iceberg_rust(metadata)


class DuckdbAdapter(_TableReader):
    """``duckdb``: scan-table through DuckDB 1.4's ``iceberg_scan``."""

    def __init__(self) -> None:
        try:
            import duckdb
        except ImportError as exc:
            raise MissingDependencyError("the duckdb adapter needs duckdb 1.4") from exc
        self._con = connect_duckdb()
        self.name = f"duckdb {duckdb.__version__}"

    def _read(self, metadata: str) -> pa.Table:
        table: pa.Table = self._con.execute(
            f"SELECT * FROM {duckdb_scan(metadata)}"
        ).fetch_arrow_table()
        return table

    def handle(self, request: Mapping[str, Any]) -> Response:
        response = super().handle(request)
        if not response.get("ok") and not _alive(self._con):
            # This error invalidated DuckDB's database (an internal error it calls FATAL):
            # a crash, not a check. Later vectors get a fresh database.
            self._con.close()
            self._con = connect_duckdb()
            response = {**response, "crashed": True}
        return response


def _alive(con: Any) -> bool:
    """Whether a DuckDB connection still answers (a fatal error invalidates its database)."""
    try:
        con.execute("SELECT 1").fetchall()
    except Exception:
        return False
    return True

    def close(self) -> None:
        self._con.close()
