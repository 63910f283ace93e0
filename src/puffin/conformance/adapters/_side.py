"""Peers that need their own venv: DuckDB 1.5 and Sail, each a child process of that venv.

DuckDB 1.5 cannot share a venv with DuckDB 1.4, nor pyspark-client (Sail's client) with
pyspark 4, so these adapters run ``_duckdb15_child.py`` and ``_sail_child.py`` (beside this
module, without project imports) with the side venv's Python.  It is found in this order:
the environment variable (``PUFFIN_DUCKDB15_PYTHON``, ``PUFFIN_SAIL_PYTHON``), then
``.venv-duckdb15`` / ``.venv-sail`` in the working folder and in the repository this
package runs from (``make peers`` builds both).  A missing venv is a :class:`SetupError`
saying so.
"""

from __future__ import annotations

import os
from pathlib import Path

from puffin.conformance.adapters._base import Adapter
from puffin.errors import SetupError

__all__ = ["duckdb15_adapter", "sail_adapter", "side_python"]

_HERE = Path(__file__).resolve().parent
_REPOSITORY = _HERE.parents[3]  # src/puffin/conformance/adapters -> the repository


def side_python(venv: str, variable: str, needs: str) -> Path:
    """The Python of a side venv, or :class:`SetupError` naming how to provide one."""
    given = os.environ.get(variable)
    if given:
        if not Path(given).is_file():
            raise SetupError(f"{variable}={given} is not a file")
        return Path(given)
    for root in (Path.cwd(), _REPOSITORY):
        python = root / venv / "bin" / "python"
        if python.is_file():
            return python
    raise SetupError(
        f"no {venv} (a venv with {needs}): run `make peers` in the repository, or set "
        f"{variable} to the Python of such a venv"
    )


def duckdb15_adapter() -> Adapter:
    """DuckDB 1.5 (``.venv-duckdb15``): scan-table."""
    from puffin.conformance.adapters._process import ProcessAdapter

    python = side_python(
        ".venv-duckdb15",
        "PUFFIN_DUCKDB15_PYTHON",
        "duckdb 1.5.5, duckdb-extension-iceberg and duckdb-extension-avro 1.5.5, pyarrow",
    )
    return ProcessAdapter([str(python), str(_HERE / "_duckdb15_child.py")])


def sail_adapter() -> Adapter:
    """Sail (``.venv-sail``): scan-table, through one server on 127.0.0.1 for the run."""
    from puffin.conformance.adapters._process import ProcessAdapter

    python = side_python(".venv-sail", "PUFFIN_SAIL_PYTHON", "pysail and pyspark-client")
    return ProcessAdapter([str(python), str(_HERE / "_sail_child.py")], quiet=True)
