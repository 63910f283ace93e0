"""The library's version and the ``created-by`` value of the files it writes."""

from __future__ import annotations

__all__ = ["CREATED_BY", "__version__"]

__version__ = "0.1.0"

#: The ``created-by`` footer property of every file this library writes by default.
CREATED_BY = f"iceberg-puffin {__version__}"
