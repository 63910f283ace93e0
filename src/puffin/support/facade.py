"""Facades whose names load on first use: the one helper behind ``puffin``,
``puffin.iceberg`` and ``puffin.spark``.

``import puffin`` must not load NumPy, ``import puffin.iceberg`` not pyiceberg, and
``import puffin.spark`` not pyspark: each facade maps its public names to the modules that
define them, and a name's module is imported when the name is first used.

Example (a facade's ``__init__.py``)::

    __getattr__, __dir__ = lazy_names(__name__, {"DeletionVector": "puffin.blobs.dv.format"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package`` that import each of
    ``names`` (name -> defining module) on first use and keep it in the package."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
