"""Run one query on DuckDB 1.5.5 (inside ``.venv-duckdb15``); write the result as Arrow IPC.

Usage: python _duckdb15_child.py SQL OUT.arrow. Kept free of project imports: this venv
holds only duckdb 1.5.5, its two extension wheels and pyarrow.
"""

from __future__ import annotations

import glob
import importlib.util
import sys

import duckdb
import pyarrow.ipc as ipc


def _extension_file(name: str) -> str:
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"duckdb-extension-{name} is not installed")
    folder = next(iter(spec.submodule_search_locations))
    (path,) = glob.glob(f"{folder}/extensions/*/{name}.duckdb_extension")
    return path


def main(sql: str, out: str) -> None:
    """Load avro and iceberg by file path (no extension server), run ``sql``, save rows."""
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    for name in ("avro", "iceberg"):
        con.execute(f"LOAD '{_extension_file(name)}'")
    # to_arrow_table is 1.5's name; the project venv's duckdb 1.4 stubs do not have it.
    table = con.execute(sql).to_arrow_table()  # type: ignore[attr-defined]
    with ipc.new_file(out, table.schema) as writer:
        writer.write_table(table)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
