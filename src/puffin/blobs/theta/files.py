"""``apache-datasketches-theta-v1`` blobs: Iceberg-compatible Theta sketches.

Iceberg table statistics store, per column, a compact Theta sketch of the column's distinct
values, each value hashed from its single-value serialization (see
:mod:`puffin.blobs.single_value`).  ``datasketches`` can estimate, union and decode such
sketches but cannot build them for most Iceberg types (it hashes ints as 8-byte longs and has
no notion of dates, decimals or UUIDs), so this module builds them itself, vectorized:

    sketch = ThetaSketch.from_values(column, "date")       # NumPy, pyarrow or a list
    sketch.estimate, sketch.lower_bound(2), sketch.upper_bound(2)
    data = sketch.serialize()                              # compact, version 3, as Java writes
    same = ThetaSketch.deserialize(data)                   # versions 1-4 (4 = compressed)
    merged = ThetaSketch.union(a, b, c)

The sketch a column gets is canonical: the ``k`` smallest distinct hashes with theta the
``(k + 1)``-th, exactly what a DataSketches union returns, whatever the chunking or threads.

This module holds the Puffin helpers: :func:`add_theta_blob` writes a sketch the way Iceberg
Java and Trino do (one field id, zstd, property ``ndv``), :func:`read_theta_blobs` reads
them all back.  The sketch is :mod:`puffin.blobs.theta.sketch`, its bytes
:mod:`puffin.blobs.theta.format`; everything public there is re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.blobs import standard
from puffin.blobs.theta.format import SEED_HASH
from puffin.blobs.theta.sketch import (
    DEFAULT_LG_K,
    MAX_LG_K,
    MIN_LG_K,
    ThetaSketch,
    ThetaSketchBuilder,
    check_lg_k,
)
from puffin.errors import ThetaSketchError

if TYPE_CHECKING:  # pragma: no cover
    from puffin.metadata import BlobMetadata
    from puffin.reader import PuffinReader
    from puffin.writer import PuffinWriter

__all__ = [
    "APACHE_DATASKETCHES_THETA_V1",
    "DEFAULT_LG_K",
    "MAX_LG_K",
    "MIN_LG_K",
    "NDV_PROPERTY",
    "SEED_HASH",
    "ThetaBlob",
    "ThetaSketch",
    "ThetaSketchBuilder",
    "add_theta_blob",
    "check_lg_k",
    "decode_blob",
    "read_theta_blobs",
]

#: The Puffin blob type of a compact Theta sketch (:mod:`puffin.blobs.standard` names it).
APACHE_DATASKETCHES_THETA_V1 = standard.APACHE_DATASKETCHES_THETA_V1
#: The blob property holding the distinct-value estimate (Iceberg's NDV).
NDV_PROPERTY = standard.NDV


@dataclass(frozen=True)
class ThetaBlob:
    """A theta blob read back from a Puffin file.

    Unpacks as ``field_id, sketch, ndv = blob``; ``metadata`` is the blob's footer entry.
    ``ndv`` is the ``ndv`` property (``None`` when the writer left it out).
    """

    field_id: int
    sketch: ThetaSketch
    ndv: int | None
    metadata: BlobMetadata

    def __iter__(self) -> Iterator[Any]:
        return iter((self.field_id, self.sketch, self.ndv))


def add_theta_blob(
    writer: PuffinWriter,
    sketch: ThetaSketch,
    field_id: int,
    *,
    snapshot_id: int,
    sequence_number: int,
    codec: str | None = "zstd",
    properties: Mapping[str, str] | None = None,
) -> BlobMetadata:
    """Write ``sketch`` as the theta blob of ``field_id``, the way Iceberg Java does it.

    The payload is the version-3 compact sketch, compressed with ``codec`` (zstd, as Java),
    with property ``ndv`` = the estimate truncated to an integer.  Extra ``properties`` are
    added after it.  Returns the blob's footer metadata.
    """
    if not isinstance(sketch, ThetaSketch):
        raise TypeError(f"sketch must be a ThetaSketch, got {type(sketch).__name__}")
    props = {standard.NDV: str(sketch.ndv)}
    for key, value in (properties or {}).items():
        if key == standard.NDV:
            raise ValueError("the ndv property is derived from the sketch")
        props[key] = value
    return writer.add_blob(
        sketch.serialize(),
        type=standard.APACHE_DATASKETCHES_THETA_V1,
        fields=[field_id],
        snapshot_id=snapshot_id,
        sequence_number=sequence_number,
        properties=props,
        codec=codec,
    )


def read_theta_blobs(source: PuffinReader | Any) -> list[ThetaBlob]:
    """Every ``apache-datasketches-theta-v1`` blob of a Puffin file, in footer order.

    ``source`` is an open :class:`~puffin.PuffinReader` or anything :func:`puffin.open`
    accepts.  Each blob must name exactly one field and hold a valid sketch; ``ndv``, when
    present, must be a non-negative decimal integer.  Problems raise
    :class:`~puffin.ThetaSketchError` with the blob's index and file offset.
    """
    from puffin.reader import PuffinReader, open

    if isinstance(source, PuffinReader):
        return _read_theta_blobs(source)
    with open(source) as reader:
        return _read_theta_blobs(reader)


def _read_theta_blobs(reader: PuffinReader) -> list[ThetaBlob]:
    return [
        decode_blob(reader.read_blob(index), meta, index)
        for index, meta in enumerate(reader.blobs)
        if meta.type == standard.APACHE_DATASKETCHES_THETA_V1
    ]


def decode_blob(data: bytes, meta: BlobMetadata, index: int) -> ThetaBlob:
    """A theta blob's decompressed bytes and footer entry, under the type's footer rules
    (one field; ``ndv``, when present, a decimal long); :class:`~puffin.ThetaSketchError`
    with the blob's index and file offset otherwise."""
    if len(meta.fields) != 1:
        raise ThetaSketchError(
            f"a theta blob names exactly one field, this one {len(meta.fields)}",
            blob_index=index,
            field="fields",
        )
    ndv = standard.parse_long_property(
        meta.properties, standard.NDV, blob_index=index, error=ThetaSketchError
    )
    try:
        sketch = ThetaSketch.deserialize(data)
    except ThetaSketchError as exc:
        raise exc.with_context(blob_index=index, offset=meta.offset) from None
    return ThetaBlob(meta.fields[0], sketch, ndv, meta)
