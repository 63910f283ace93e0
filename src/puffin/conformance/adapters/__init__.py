"""Built-in adapters: the peers this machine can run, and ``--impl`` for any other.

========================  ===========================================================
name                      implementation and operations
========================  ===========================================================
``puffin``                this library: every operation
``pyiceberg``             pyiceberg 0.12's ``PuffinFile`` and DV reader: containers, DVs
``datasketches``          Apache DataSketches C++ (Python binding): theta sketches
``pyroaring``             CRoaring through pyroaring: DV payloads and portable bitmaps
``java``                  datasketches-java and RoaringBitmap from pyspark's jars: theta
                          sketches and DVs, through a small Java program compiled at run time
``iceberg-rust``          pyiceberg-core and DataFusion: table scans
``duckdb``                DuckDB 1.4's ``iceberg_scan``: table scans
``duckdb-1.5.5``          DuckDB 1.5 in the side venv ``.venv-duckdb15``: table scans
``sail``                  Sail in the side venv ``.venv-sail``: table scans
``iceberg-java``          Iceberg Java 1.10.2 in the side venv ``.venv-java``: its Puffin
                          reader and writer, its DV reader and writer, and its
                          generic table reader (``IcebergGenerics``)
========================  ===========================================================

``puffin``, ``pyiceberg`` and ``iceberg-java`` scan tables too (the ``table`` tier).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from puffin.conformance.adapters._base import Adapter
from puffin.errors import UsageError

__all__ = ["ADAPTERS", "Adapter", "make_adapter"]


def _puffin() -> Adapter:
    from puffin.conformance.adapters._puffin import PuffinAdapter

    adapter: Adapter = PuffinAdapter()
    return adapter


def _peer(name: str) -> Callable[[], Adapter]:
    """A Python peer served in its own process with a memory cap (see ``_stdio``)."""

    def make() -> Adapter:
        from puffin.conformance.adapters._process import ProcessAdapter

        command = [sys.executable, "-m", "puffin.conformance.adapters._stdio", name]
        return ProcessAdapter(command, memory_limit=PEER_MEMORY_LIMIT)

    return make


def _local(name: str) -> Callable[[], Adapter]:
    def make() -> Adapter:
        module = importlib.import_module(
            f"puffin.conformance.adapters.{_MODULES.get(name, '_' + name)}"
        )
        adapter: Adapter = getattr(module, _CLASSES[name])()
        return adapter

    return make


def _java() -> Adapter:
    from puffin.conformance.adapters._java import java_adapter

    return java_adapter()


def _iceberg_java() -> Adapter:
    from puffin.conformance.adapters._java import iceberg_java_adapter

    return iceberg_java_adapter()


def _in_side_venv(name: str) -> Callable[[], Adapter]:
    def make() -> Adapter:
        import puffin.conformance.adapters._side as side

        factory: Callable[[], Adapter] = getattr(side, f"{name}_adapter")
        return factory()

    return make


_CLASSES = {
    "pyiceberg": "PyicebergAdapter",
    "datasketches": "DatasketchesAdapter",
    "pyroaring": "PyroaringAdapter",
    "iceberg-rust": "IcebergRustAdapter",
    "duckdb": "DuckdbAdapter",
}
_MODULES = {"iceberg-rust": "_tables", "duckdb": "_tables"}
#: Address space a peer process may use: a peer that allocates without bound fails a vector.
PEER_MEMORY_LIMIT = 3 << 30

#: The adapters the runner starts (peers in a child process each).
ADAPTERS: dict[str, Callable[[], Adapter]] = {
    "puffin": _puffin,
    **{name: _peer(name) for name in _CLASSES},
    "java": _java,
    "duckdb-1.5.5": _in_side_venv("duckdb15"),
    "sail": _in_side_venv("sail"),
    "iceberg-java": _iceberg_java,
}
#: The same peers in this process, for the ``_stdio`` server.
LOCAL_ADAPTERS: dict[str, Callable[[], Adapter]] = {name: _local(name) for name in _CLASSES}


def make_adapter(name: str) -> Adapter:
    """A built-in adapter by name (raises :class:`UsageError` for an unknown one)."""
    factory = ADAPTERS.get(name)
    if factory is None:
        raise UsageError(f"unknown adapter {name!r}; known: {', '.join(ADAPTERS)}")
    return factory()
