"""pyiceberg 0.12: its ``PuffinFile`` and its deletion-vector decoder, as a scan uses them.

pyiceberg reads a DV file whole, through the footer (``deletion_vectors_from_puffin_file``);
``read-dv`` feeds one blob range to the same decoder (``_extract_vector_payload`` then
``DeletionVector._deserialize_bitmap``), which is what it would do given a manifest range.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from puffin.conformance.adapters._base import Response, error, ok
from puffin.errors import MissingDependencyError

__all__ = ["PyicebergAdapter"]


def _positions(dv: Any) -> dict[str, Any]:
    positions = [int(p) for p in dv.to_vector().to_pylist()]
    return {"count": len(positions), "positions": positions}


class PyicebergAdapter:
    """``pyiceberg``: read-container, read-dv, read-dvs, scan-table (its table scan)."""

    ops = frozenset({"read-container", "read-dv", "read-dvs", "scan-table"})

    def __init__(self) -> None:
        try:
            import pyiceberg
            from pyiceberg.table import deletion_vector, puffin
        except ImportError as exc:
            raise MissingDependencyError(
                "the pyiceberg adapter needs the iceberg extra: pip install "
                "'iceberg-puffin[iceberg]'"
            ) from exc
        self._puffin = puffin
        self._dv = deletion_vector
        self.name = f"pyiceberg {pyiceberg.__version__}"

    def handle(self, request: Mapping[str, Any]) -> Response:
        if request["op"] == "scan-table":
            from puffin.conformance.adapters._tables import read_pyiceberg, rows_result

            try:
                return ok(rows_result(read_pyiceberg(request["metadata"]), request["columns"]))
            except Exception as exc:  # any rejection pyiceberg makes
                return error(exc)
        data = Path(request["path"]).read_bytes()
        try:
            if request["op"] == "read-container":
                return ok(self._container(data))
            if request["op"] == "read-dvs":
                vectors = self._dv.deletion_vectors_from_puffin_file(self._puffin.PuffinFile(data))
                return ok({"vectors": {v.referenced_data_file: _positions(v) for v in vectors}})
            blob = data[request["offset"] : request["offset"] + request["length"]]
            bitmaps = self._dv.DeletionVector._deserialize_bitmap(
                self._dv._extract_vector_payload(blob)
            )
            return ok(_positions(self._dv.DeletionVector("", bitmaps)))
        except Exception as exc:  # any rejection pyiceberg makes, whatever its type
            return error(exc)

    def _container(self, data: bytes) -> Response:
        from puffin.conformance.results import container_result

        reader = self._puffin.PuffinFile(data)
        blobs = []
        for blob in reader.footer.blobs:
            meta = blob.model_dump(by_alias=True)
            blobs.append((meta, reader.get_blob_payload(blob)))
        return container_result(reader.footer.properties, blobs)

    def close(self) -> None:
        pass
