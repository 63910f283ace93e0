"""iceberg-rust through pyiceberg-core's DataFusion table provider.

``IcebergDataFusionTable`` loads the metadata file itself (a ``file://`` URL) and scans with
iceberg-rust's reader, which checks each deletion vector's length, magic and CRC; the
query runs in a DataFusion ``SessionContext``, so no pyiceberg code is on the read path.
"""

from __future__ import annotations

import os

import pyarrow as pa

from peers._common import metadata_path


def read_iceberg_rust(metadata: str | os.PathLike[str]) -> pa.Table:
    """Every row iceberg-rust returns for ``SELECT *`` on the table at ``metadata``."""
    from datafusion import SessionContext
    from pyiceberg_core.datafusion import IcebergDataFusionTable

    provider = IcebergDataFusionTable(
        identifier=["peer", "table"],
        metadata_location=metadata_path(metadata).as_uri(),
        file_io_properties={},
    )
    ctx = SessionContext()
    ctx.register_table("peer_table", provider)
    return ctx.sql("SELECT * FROM peer_table").to_arrow_table()
