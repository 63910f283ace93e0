"""Optional dependencies: import one or say which extra to install.

The integrations need packages the core does not (pyarrow, pyiceberg, pyspark).  Importing
them through :func:`require` turns a bare ``ModuleNotFoundError`` into a
:class:`~puffin.errors.MissingDependencyError` naming the extra, which the command line
reports in one line with exit status 2.

Example::

    pq = require("pyarrow.parquet", "arrow")
"""

from __future__ import annotations

import importlib
from types import ModuleType

from puffin.errors import MissingDependencyError

__all__ = ["install_hint", "require"]

_PACKAGE = "iceberg-puffin"


def install_hint(extra: str) -> str:
    """The pip command that installs ``extra``."""
    return f"pip install '{_PACKAGE}[{extra}]'"


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingDependencyError` naming ``extra``.

    Only a missing ``module`` (or a package it needs) becomes that error; any other failure
    inside the import is a real bug and propagates unchanged.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or module
        what = (
            f"{missing} is not installed"
            if module == missing or module.startswith(f"{missing}.")
            else f"{module} needs {missing}, which is not installed"
        )
        raise MissingDependencyError(f"{what}: {install_hint(extra)}") from exc
