"""Run one query on DuckDB 1.5.5 (inside ``.venv-duckdb15``); write the result as Arrow IPC.

Usage: python _duckdb15_query.py SQL OUT.arrow. This venv holds only duckdb 1.5.5, its two
extension wheels and pyarrow, not the project: the extensions are found by the conformance
kit's DuckDB 1.5 adapter script (also free of project imports), loaded by its path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pyarrow.ipc as ipc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src/puffin/conformance/adapters"))
from _duckdb15_child import extension_file


def main(sql: str, out: str) -> None:
    """Load avro and iceberg by file path (no extension server), run ``sql``, save rows."""
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    for name in ("avro", "iceberg"):
        con.execute(f"LOAD '{extension_file(name)}'")
    # to_arrow_table is 1.5's name; the project venv's duckdb 1.4 stubs do not have it.
    table = con.execute(sql).to_arrow_table()  # type: ignore[attr-defined]
    with ipc.new_file(out, table.schema) as writer:
        writer.write_table(table)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
