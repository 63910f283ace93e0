"""The reference adapter: this library itself, through its public API."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import puffin
from puffin.blobs.verify import category_of
from puffin.conformance.adapters._base import Response, error, ok, python_values, theta_result
from puffin.errors import TableMetadataError

__all__ = ["PuffinAdapter"]


def _positions(dv: puffin.DeletionVector) -> dict[str, Any]:
    positions = [int(p) for p in dv.to_numpy()]
    return {"count": len(positions), "positions": positions}


def _sketch(sketch: puffin.ThetaSketch) -> Response:
    hashes = [int(h) for h in sketch.hashes]
    return theta_result(sketch.num_retained, sketch.theta64, sketch.estimate, hashes)


def _positions_from_ranges(ranges: list[list[int]]) -> puffin.DeletionVector:
    dv = puffin.DeletionVector()
    for args in ranges:
        if len(args) == 2 or args[2] == 1:
            dv.add_range(args[0], args[1])
        else:
            dv.update(range(*args))
    return dv


class PuffinAdapter:
    """``puffin`` (this library): every operation."""

    name = "puffin"
    ops = frozenset(
        {
            "read-container",
            "read-dv",
            "read-dvs",
            "read-bitmap",
            "read-theta",
            "build-theta",
            "write-container",
            "write-dv",
            "scan-table",
        }
    )

    def handle(self, request: Mapping[str, Any]) -> Response:
        try:
            return ok(getattr(self, "_" + str(request["op"]).replace("-", "_"))(request))
        except (puffin.PuffinError, TableMetadataError, OSError) as exc:
            return error(exc, category_of(exc))

    def close(self) -> None:
        pass

    def _read_container(self, request: Mapping[str, Any]) -> Response:
        from puffin.conformance.results import container_result

        with puffin.open(request["path"]) as reader:
            blobs = [(meta.to_json_dict(), reader.read_blob(meta)) for meta in reader.blobs]
            return container_result(reader.properties, blobs)

    def _read_dv(self, request: Mapping[str, Any]) -> Response:
        dv = puffin.read_deletion_vector(
            request["path"],
            request["offset"],
            request["length"],
            record_count=request.get("record-count"),
        )
        return _positions(dv)

    def _read_dvs(self, request: Mapping[str, Any]) -> Response:
        vectors = puffin.read_deletion_vectors(request["path"])
        return {"vectors": {name: _positions(dv) for name, dv in vectors.items()}}

    def _read_bitmap(self, request: Mapping[str, Any]) -> Response:
        with open(request["path"], "rb") as f:
            return _positions(puffin.DeletionVector.deserialize_portable(f.read()))

    def _read_theta(self, request: Mapping[str, Any]) -> Response:
        with open(request["path"], "rb") as f:
            return _sketch(puffin.ThetaSketch.deserialize(f.read()))

    def _build_theta(self, request: Mapping[str, Any]) -> Response:
        kind = request["type"]
        values = python_values(kind, request["values"])
        singles = [puffin.serialize_value(v, kind).hex() for v in values]
        sketch = puffin.ThetaSketch.from_values(values, kind, lg_k=request["lg-k"], threads=1)
        return {"single-values": singles, "sketch": _sketch(sketch)}

    def _write_container(self, request: Mapping[str, Any]) -> Response:
        from puffin.conformance.results import sha256

        out = io.BytesIO()
        with puffin.create(
            out, properties=request["properties"], compress_footer=request["compress-footer"]
        ) as writer:
            for blob in request["blobs"]:
                writer.add_blob(
                    bytes.fromhex(blob["data-hex"]),
                    type=blob["type"],
                    fields=blob["fields"],
                    snapshot_id=blob["snapshot-id"],
                    sequence_number=blob["sequence-number"],
                    properties=blob["properties"],
                    codec=blob["compression-codec"],
                )
        data = out.getvalue()
        return {"size": len(data), "sha256": sha256(data)}

    def _scan_table(self, request: Mapping[str, Any]) -> Response:
        from puffin.conformance.adapters._tables import puffin_rows

        return puffin_rows(request["metadata"], request["columns"])

    def _write_dv(self, request: Mapping[str, Any]) -> Response:
        from puffin.conformance.results import sha256

        data = _positions_from_ranges(request["ranges"]).serialize()
        return {"size": len(data), "sha256": sha256(data)}
