"""Spark pipeline: Iceberg NDV sketches and deletion vectors computed where the data is.

Nothing here assumes that the driver and the executors share a disk: the executors read the
data files and send back small serialized sketches and deletion vectors; the driver merges
them and writes the Puffin file through the table's FileIO (or fsspec).  The executors need
this library: installed on the nodes, or shipped with ``ship_environment=True``
(:mod:`~puffin.spark.shipping`); a preflight checks before the first Python task
(:mod:`~puffin.spark.preflight`). In ``local[N]`` mode they already have it.

One concept per module: :mod:`~puffin.spark._java` (Java check, :func:`local_session`),
:mod:`~puffin.spark.types` (Spark <-> Iceberg types), :mod:`~puffin.spark.ndv` (sketches of
a DataFrame, on the ``arrow`` or ``jvm`` engine), :mod:`~puffin.spark.statistics` (a
table's statistics file), :mod:`~puffin.spark.deletes` (deletion vectors),
:mod:`~puffin.spark.convert` (equality deletes into vectors), :mod:`~puffin.spark.compact`
(compaction, files written on the executors), :mod:`~puffin.spark.table_files` (an
expiry's deletes, an orphan cleanup's listing and deletes, on the executors),
:mod:`~puffin.spark.rewrite_deletes` (position deletes rewritten, read on the executors)
and :mod:`~puffin.spark.cli` (``puffin spark ...``).

Importing this package is light: its names load on first use, and pyspark, pyarrow and
argparse only when needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from puffin.errors import JavaNotFoundError, SetupError
from puffin.support.facade import lazy_names

_LAZY: dict[str, str] = {
    "MIN_JAVA": "puffin.spark._java",
    "check_java": "puffin.spark._java",
    "local_session": "puffin.spark._java",
    "convert_equality_deletes": "puffin.spark.convert",
    "rewrite_data_files": "puffin.spark.compact",
    "rewrite_position_delete_files": "puffin.spark.rewrite_deletes",
    "expire_snapshots": "puffin.spark.table_files",
    "remove_orphan_files": "puffin.spark.table_files",
    "delete_rows": "puffin.spark.deletes",
    "deletion_vector_positions": "puffin.spark.deletes",
    "deletion_vectors_for": "puffin.spark.deletes",
    "position_deletes_to_deletion_vectors": "puffin.spark.deletes",
    "upgrade_to_v3": "puffin.spark.deletes",
    "ENGINES": "puffin.spark.ndv",
    "compute_ndv_sketches": "puffin.spark.ndv",
    "compute_table_statistics": "puffin.spark.statistics",
    "iceberg_type_of": "puffin.spark.types",
    "spark_read_type": "puffin.spark.types",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import argparse

    from puffin.spark._java import MIN_JAVA, check_java, local_session
    from puffin.spark.compact import rewrite_data_files
    from puffin.spark.convert import convert_equality_deletes
    from puffin.spark.deletes import (
        delete_rows,
        deletion_vector_positions,
        deletion_vectors_for,
        position_deletes_to_deletion_vectors,
        upgrade_to_v3,
    )
    from puffin.spark.ndv import ENGINES, compute_ndv_sketches
    from puffin.spark.rewrite_deletes import rewrite_position_delete_files
    from puffin.spark.statistics import compute_table_statistics
    from puffin.spark.table_files import expire_snapshots, remove_orphan_files
    from puffin.spark.types import iceberg_type_of, spark_read_type

__getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = [
    "ENGINES",
    "MIN_JAVA",
    "JavaNotFoundError",
    "SetupError",
    "check_java",
    "compute_ndv_sketches",
    "compute_table_statistics",
    "convert_equality_deletes",
    "delete_rows",
    "deletion_vector_positions",
    "deletion_vectors_for",
    "expire_snapshots",
    "iceberg_type_of",
    "local_session",
    "position_deletes_to_deletion_vectors",
    "register_cli",
    "remove_orphan_files",
    "rewrite_data_files",
    "rewrite_position_delete_files",
    "spark_read_type",
    "upgrade_to_v3",
]


def register_cli(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``puffin spark ...`` to the ``puffin`` command: :func:`puffin.spark.cli.register_cli`.

    Kept here for the CLI's module hook; the argparse code is imported only when called.
    """
    from puffin.spark.cli import register_cli as register

    register(subparsers)
