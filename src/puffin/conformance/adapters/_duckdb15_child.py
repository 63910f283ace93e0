"""A ``scan-table`` adapter on DuckDB 1.5 (run by the Python of a side venv, not imported).

The side venv (``.venv-duckdb15``: duckdb 1.5.5, ``duckdb-extension-iceberg`` and
``duckdb-extension-avro`` 1.5.5, pyarrow) cannot share a venv with DuckDB 1.4, so this
file has no project imports: ``python _duckdb15_child.py`` speaks the JSON-lines protocol
on stdin and stdout.  Each extension is loaded by file path from its wheel (autoinstall and
autoload off, never DuckDB's extension server).
"""

from __future__ import annotations

import glob
import importlib.util
import json
import sys
from typing import Any


def extension_file(name: str) -> str:
    """The file of the ``duckdb-extension-NAME`` wheel's extension (loaded by path)."""
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"duckdb-extension-{name} is not installed")
    folder = next(iter(spec.submodule_search_locations))
    (path,) = glob.glob(f"{folder}/extensions/*/{name}.duckdb_extension")
    return path


def _rows(con: Any, request: dict[str, Any]) -> dict[str, Any]:
    path = str(request["metadata"])
    if path.startswith("file://"):
        path = path[len("file://") :]
    sql = "SELECT * FROM iceberg_scan('{}')".format(path.replace("'", "''"))
    # to_arrow_table is 1.5's name; the project venv's duckdb 1.4 stubs do not have it.
    table = con.execute(sql).to_arrow_table()
    columns = [table.column(name).to_pylist() for name in request["columns"]]
    rows = [
        [v.hex() if isinstance(v, bytes) else v for v in row] for row in zip(*columns, strict=True)
    ]
    return {"rows": rows}


def _connect() -> Any:
    """A fresh in-memory database with avro and iceberg loaded by path."""
    import duckdb

    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    for name in ("avro", "iceberg"):
        con.execute(f"LOAD '{extension_file(name)}'")
    return con


def main() -> None:
    """Load avro and iceberg by path, then answer requests until stdin closes."""
    import duckdb

    con = _connect()
    for line in sys.stdin:
        request = json.loads(line)
        response: dict[str, Any]
        if request.get("op") == "hello":
            info = {"name": f"duckdb {duckdb.__version__}", "ops": ["scan-table"]}
            response = {"ok": True, "result": info}
        elif request.get("op") != "scan-table":
            response = {"ok": False, "unsupported": True, "error": "unknown op"}
        else:
            try:
                response = {"ok": True, "result": _rows(con, request)}
            except Exception as exc:  # DuckDB's error is the rejection
                response = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
                try:  # an internal error DuckDB calls FATAL invalidates the database
                    con.execute("SELECT 1").fetchall()
                except Exception:  # a crash, not a check: later requests get a fresh one
                    response["crashed"] = True
                    con = _connect()
        sys.stdout.write(json.dumps(response, default=str) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
