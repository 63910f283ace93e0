"""Peers that need their own venv: DuckDB 1.5 and Sail, each a child process of that venv.

DuckDB 1.5 cannot share a venv with DuckDB 1.4, nor pyspark-client (Sail's client) with
pyspark 4, so these adapters run ``_duckdb15_child.py`` and ``_sail_child.py`` (beside this
module, without project imports) with the side venv's Python, named explicitly by an
environment variable (``PUFFIN_DUCKDB15_PYTHON``, ``PUFFIN_SAIL_PYTHON``): an installed
package knows nothing of a source checkout's layout.  In the repository, ``make peers``
builds ``.venv-duckdb15`` and ``.venv-sail`` and ``make test`` sets the variables.  A
missing or wrong variable is a :class:`SetupError` saying what to set.
"""

from __future__ import annotations

import os
from pathlib import Path

from puffin.conformance.adapters._base import Adapter
from puffin.errors import SetupError

__all__ = ["duckdb15_adapter", "sail_adapter", "side_python"]

_HERE = Path(__file__).resolve().parent


def side_python(venv: str, variable: str, needs: str) -> Path:
    """The Python of a side venv named by ``variable``, or :class:`SetupError` saying how."""
    given = os.environ.get(variable)
    if not given:
        raise SetupError(
            f"set {variable} to the Python of a venv with {needs} (in the repository: "
            f"`make peers` builds {venv}, then {variable}={venv}/bin/python)"
        )
    if not Path(given).is_file():
        raise SetupError(f"{variable}={given} is not a file")
    return Path(given)


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
