"""pyiceberg 0.12: the reference reader the other peers are compared with."""

from __future__ import annotations

import os

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable

from peers._common import metadata_path


def static_table(metadata: str | os.PathLike[str]) -> StaticTable:
    """The table at one metadata.json, without a catalog (what every peer is handed)."""
    # file:// and the path as it is: pyiceberg does not decode Path.as_uri()'s escapes.
    return StaticTable.from_metadata(f"file://{metadata_path(metadata)}")


def table_schema(metadata: str | os.PathLike[str]) -> Schema:
    """The current Iceberg schema, the column order and types rows are compared in."""
    return static_table(metadata).schema()


def read_pyiceberg(metadata: str | os.PathLike[str]) -> pa.Table:
    """pyiceberg's own scan: Parquet position deletes and deletion vectors applied."""
    return static_table(metadata).scan().to_arrow()
