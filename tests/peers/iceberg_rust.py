"""iceberg-rust through pyiceberg-core's DataFusion table provider.

``IcebergDataFusionTable`` loads the metadata file itself (a ``file://`` URL) and scans with
iceberg-rust's reader, which checks each deletion vector's length, magic and CRC; the
query runs in a DataFusion ``SessionContext``, so no pyiceberg code is on the read path.
The reader lives in the package (the conformance kit's ``iceberg-rust`` adapter uses it).
"""

from __future__ import annotations

import os

import pyarrow as pa

from peers._common import metadata_path
from puffin.conformance.adapters._tables import read_iceberg_rust as _read_iceberg_rust


def read_iceberg_rust(metadata: str | os.PathLike[str]) -> pa.Table:
    """Every row iceberg-rust returns for ``SELECT *`` on the table at ``metadata``."""
    return _read_iceberg_rust(metadata_path(metadata))
