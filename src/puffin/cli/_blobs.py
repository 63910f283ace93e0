"""Decoding theta and deletion-vector blobs for ``inspect`` and ``verify``.

Both commands go through the library's own decoders, so the command line checks exactly
what the library checks.
"""

from __future__ import annotations

import math
import re
from typing import Any

from puffin.errors import InvalidBlobError, ThetaSketchError
from puffin.metadata import BlobMetadata

__all__ = [
    "DV_TYPE",
    "THETA_TYPE",
    "check_blob",
    "decode_dv_blob",
    "decode_theta_blob",
    "dv_info",
    "parse_ndv",
    "theta_info",
]

THETA_TYPE = "apache-datasketches-theta-v1"
DV_TYPE = "deletion-vector-v1"

_NDV = re.compile(r"[0-9]+")


def parse_ndv(meta: BlobMetadata, index: int) -> int | None:
    """The ``ndv`` property as an int (None when absent); the spec's format is enforced."""
    text = meta.properties.get("ndv")
    if text is None:
        return None
    if not _NDV.fullmatch(text):
        raise ThetaSketchError(
            f"'ndv' property {text!r} is not a non-negative integer in decimal digits",
            blob_index=index,
            field="properties",
        )
    return int(text)


def decode_theta_blob(data: bytes, meta: BlobMetadata, index: int) -> Any:
    """The blob's sketch; errors name the blob and its file offset.

    The payload may have been compressed, so a byte offset inside the sketch is not a file
    offset: it goes into the message instead.
    """
    from puffin.blobs.theta import ThetaSketch

    try:
        return ThetaSketch.deserialize(data)
    except ThetaSketchError as exc:
        reason = exc.reason
        if exc.offset is not None:
            reason += f" (byte {exc.offset} of the sketch)"
        raise ThetaSketchError(reason, blob_index=index, offset=meta.offset) from None


def theta_info(data: bytes, meta: BlobMetadata, index: int, *, std_devs: int) -> dict[str, Any]:
    """Decoded estimate, bounds and retained count of a theta blob, beside its ``ndv``."""
    sketch = decode_theta_blob(data, meta, index)
    estimate = float(sketch.estimate)
    ndv = parse_ndv(meta, index)
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
        "ndv_matches_estimate": None if ndv is None else ndv == math.floor(estimate),
    }


def dv_info(data: bytes, meta: BlobMetadata, index: int, *, limit: int | None) -> dict[str, Any]:
    """Referenced data file, cardinality and the first ``limit`` positions of a DV blob."""
    dv = decode_dv_blob(data, meta, index)
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
        "referenced_data_file": meta.properties.get("referenced-data-file"),
        "cardinality": cardinality,
        "positions": positions,
        "positions_complete": len(positions) == cardinality,
    }


def decode_dv_blob(data: bytes, meta: BlobMetadata, index: int) -> Any:
    """A DV blob decoded with every check ``puffin.read_deletion_vectors`` makes.

    The footer rules (snapshot-id and sequence-number -1, no codec, referenced-data-file and
    cardinality properties) come first, then the payload with the cardinality; error
    offsets are file offsets.
    """
    from puffin.blobs.deletion_vector import decode_blob

    return decode_blob(data, meta, index, f"blob {index}")


def check_blob(data: bytes, meta: BlobMetadata, index: int) -> None:
    """Every type-specific check on a decompressed blob; raises the first problem found."""
    if meta.type == THETA_TYPE:
        if len(meta.fields) != 1:  # as puffin.read_theta_blobs requires
            raise ThetaSketchError(
                f"a theta blob names exactly one field, this one {len(meta.fields)}",
                blob_index=index,
                field="fields",
            )
        info = theta_info(data, meta, index, std_devs=1)
        if info["ndv"] is not None and not info["ndv_matches_estimate"]:
            raise ThetaSketchError(
                f"'ndv' property {info['ndv']} does not match the sketch's estimate "
                f"{info['estimate']!r} (truncated: {math.floor(info['estimate'])})",
                blob_index=index,
                field="properties",
            )
    elif meta.type == DV_TYPE:
        decode_dv_blob(data, meta, index)
    else:  # pragma: no cover - callers only pass the two types above
        raise InvalidBlobError(f"no checks for blob type {meta.type!r}", blob_index=index)
