"""What ``inspect`` shows of theta and deletion-vector blobs.

The checks themselves are the library's (:mod:`puffin.blobs.standard`): the ``ndv``
property is parsed by its one parser and judged by its one rule, so ``inspect`` and
``verify`` cannot disagree.
"""

from __future__ import annotations

from typing import Any

from puffin.blobs import standard
from puffin.errors import ThetaSketchError
from puffin.metadata import BlobMetadata

__all__ = ["dv_info", "theta_info"]


def theta_info(data: bytes, meta: BlobMetadata, index: int, *, std_devs: int) -> dict[str, Any]:
    """Decoded estimate, bounds and retained count of a theta blob, beside its ``ndv``."""
    from puffin.blobs.theta.files import ThetaSketch

    try:
        sketch = ThetaSketch.deserialize(data)
    except ThetaSketchError as exc:  # the message says the byte of the sketch
        raise exc.with_context(blob_index=index, offset=meta.offset) from None
    ndv = standard.parse_long_property(
        meta.properties, standard.NDV, blob_index=index, error=ThetaSketchError
    )
    estimate = float(sketch.estimate)
    agrees = None
    if ndv is not None:
        agrees = standard.ndv_agrees(ndv, sketch.num_retained, sketch.theta64, estimate)
    return {
        "ndv": ndv,
        "estimate": estimate,
        "lower_bound": float(sketch.lower_bound(std_devs)),
        "upper_bound": float(sketch.upper_bound(std_devs)),
        "std_devs": std_devs,
        "num_retained": int(sketch.num_retained),
        "theta": float(sketch.theta),
        "is_empty": bool(sketch.is_empty),
        "estimation_mode": bool(sketch.is_estimation_mode),
        "ndv_matches_estimate": agrees,
    }


def dv_info(data: bytes, meta: BlobMetadata, index: int, *, limit: int | None) -> dict[str, Any]:
    """Referenced data file, cardinality and the first ``limit`` positions of a DV blob.

    The blob is decoded with every check ``puffin.read_deletion_vectors`` makes; error
    offsets are file offsets.
    """
    from puffin.blobs.dv.files import decode_blob

    dv = decode_blob(data, meta, index, f"blob {index}")
    cardinality = int(dv.cardinality)
    if limit is None or limit >= cardinality:
        positions = dv.to_numpy().tolist()
    else:
        positions = []
        for position in dv:
            if len(positions) >= limit:
                break
            positions.append(int(position))
    return {
        "referenced_data_file": meta.properties.get(standard.REFERENCED_DATA_FILE),
        "cardinality": cardinality,
        "positions": positions,
        "positions_complete": len(positions) == cardinality,
    }
