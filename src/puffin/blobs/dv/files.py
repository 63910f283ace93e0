"""``deletion-vector-v1`` blobs: Iceberg v3's deleted-row positions for one data file.

A payload is ``[u32 BE length][magic D1 D3 39 64][portable 64-bit Roaring][u32 BE CRC-32]``
where ``length`` counts the magic and the bitmap and the CRC covers the same bytes.  The
bitmap is a u64 LE count, then for each 32-bit key (the high half of the positions, in
ascending order) a u32 LE key and a portable 32-bit Roaring bitmap of the low halves.

The payload format is :mod:`puffin.blobs.dv.format` (:class:`DeletionVector`, re-exported
here); this module reads and writes DV blobs in Puffin files.  Reading checks everything a
broken or hostile payload could get wrong: length prefix, magic, CRC, key order, Java's key
limit, the Roaring headers against the bytes present, the body parsing exactly to its end
and the cardinality against the manifest or footer.  Writing matches Iceberg Java byte for
byte: bitmaps are run-optimized and every key from 0 to the largest gets a bitmap, empty
ones included.  pyroaring is the Roaring codec; NumPy does the array conversions.

Example::

    import numpy as np, puffin

    entries = puffin.write_deletion_vectors(
        "deletes.puffin", {"s3://bucket/data/file-a.parquet": np.array([3, 7, 42])}
    )
    e = entries[0]  # what the v3 manifest needs: offset, size, record count, file size
    dv = puffin.read_deletion_vector(
        "deletes.puffin", e.content_offset, e.content_size_in_bytes, record_count=e.record_count
    )
    dv.to_numpy()  # array([ 3,  7, 42])
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO

from puffin.blobs import standard
from puffin.blobs.dv.format import MAGIC, DeletionVector, PositionsLike
from puffin.blobs.dv.positions import MAX_POSITION
from puffin.errors import DeletionVectorError
from puffin.io.local import Source
from puffin.io.locations import open_source
from puffin.limits import Limits
from puffin.metadata import BlobMetadata
from puffin.reader import open as _open_puffin
from puffin.version import CREATED_BY
from puffin.writer import create as _create_puffin

__all__ = [
    "DELETION_VECTOR_V1",
    "MAGIC",
    "MAX_POSITION",
    "ROW_POSITION_FIELD_ID",
    "DeletionVector",
    "DeletionVectorEntry",
    "PositionsLike",
    "check_blob_metadata",
    "decode_blob",
    "read_deletion_vector",
    "read_deletion_vectors",
    "write_deletion_vectors",
]

#: The Puffin blob type (:mod:`puffin.blobs.standard` names it).
DELETION_VECTOR_V1 = standard.DELETION_VECTOR_V1
#: Field id Java writes in the blob's ``fields``: the ``_pos`` metadata column.
ROW_POSITION_FIELD_ID = 2147483645
PROPERTY_REFERENCED_DATA_FILE = standard.REFERENCED_DATA_FILE
PROPERTY_CARDINALITY = standard.CARDINALITY


@dataclass(frozen=True)
class DeletionVectorEntry:
    """What an Iceberg v3 manifest's delete-file entry needs for one written DV.

    ``content_offset`` and ``content_size_in_bytes`` locate the blob in the Puffin file,
    ``record_count`` is its cardinality; ``path`` (``None`` for a file object without a
    name) and ``file_size_in_bytes`` describe the Puffin file itself.
    """

    referenced_data_file: str
    content_offset: int
    content_size_in_bytes: int
    record_count: int
    path: str | None
    file_size_in_bytes: int


def _prepare(vectors: Mapping[str, PositionsLike]) -> list[tuple[str, DeletionVector]]:
    """Check every argument before a file is created: data file names, positions."""
    if not isinstance(vectors, Mapping):
        raise TypeError(f"vectors must be a mapping, got {type(vectors).__name__}")
    prepared: list[tuple[str, DeletionVector]] = []
    for referenced_data_file, positions in vectors.items():
        if not isinstance(referenced_data_file, str) or not referenced_data_file:
            raise ValueError(
                f"referenced data file must be a non-empty str, got {referenced_data_file!r}"
            )
        dv = positions if isinstance(positions, DeletionVector) else DeletionVector(positions)
        prepared.append((referenced_data_file, dv))
    return prepared


def write_deletion_vectors(
    target: str | os.PathLike[str] | IO[bytes],
    vectors: Mapping[str, PositionsLike],
    *,
    created_by: str | None = None,
) -> list[DeletionVectorEntry]:
    """Write one Puffin file holding a ``deletion-vector-v1`` blob per data file.

    Each blob is written as Iceberg Java writes it: fields ``[2147483645]``, snapshot-id
    and sequence-number -1, no compression, properties ``referenced-data-file`` then
    ``cardinality``.  A path target is written atomically.

    Args:
        target: a path or a writable binary file object.
        vectors: data file location -> positions (a :class:`DeletionVector` or anything
            its constructor takes), written in the mapping's order.  A
            ``DeletionVector`` given here is run-optimized in place.
        created_by: the file's ``created-by`` property; defaults to this library's name
            and version.

    Returns:
        One :class:`DeletionVectorEntry` per blob, in the mapping's order.
    """
    prepared = _prepare(vectors)
    written: list[tuple[str, int, BlobMetadata]] = []
    with _create_puffin(
        target, created_by=created_by if created_by is not None else CREATED_BY
    ) as writer:
        for referenced_data_file, dv in prepared:
            payload = dv.serialize()
            cardinality = dv.cardinality
            meta = writer.add_blob(
                payload,
                type=DELETION_VECTOR_V1,
                fields=[ROW_POSITION_FIELD_ID],
                snapshot_id=-1,
                sequence_number=-1,
                properties={
                    PROPERTY_REFERENCED_DATA_FILE: referenced_data_file,
                    PROPERTY_CARDINALITY: str(cardinality),
                },
            )
            written.append((referenced_data_file, cardinality, meta))
    path = writer.path
    if path is None:
        name = getattr(target, "name", None)
        path = name if isinstance(name, str) else None
    return [
        DeletionVectorEntry(
            referenced_data_file=referenced_data_file,
            content_offset=meta.offset,
            content_size_in_bytes=meta.length,
            record_count=cardinality,
            path=path,
            file_size_in_bytes=writer.file_size,
        )
        for referenced_data_file, cardinality, meta in written
    ]


def read_deletion_vector(
    source: Source,
    offset: int,
    length: int,
    *,
    record_count: int | None = None,
    referenced_data_file: str | None = None,
) -> DeletionVector:
    """Read one DV by its manifest range (``content_offset``, ``content_size_in_bytes``).

    Like Iceberg Java's reader this does not parse the footer, so it also reads DV blobs at
    known ranges of files that are not Puffin containers.  ``record_count`` (the manifest's)
    is checked against the decoded cardinality; ``referenced_data_file`` only names the DV
    in error messages.  Errors carry ``offset`` as the file offset of the payload (a
    position inside it is in the message).

    Raises:
        DeletionVectorError: the payload is invalid or its cardinality differs.
        InvalidFileError: the range lies outside the file.
    """
    for name, value in (("offset", offset), ("length", length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    src = open_source(source)
    try:
        data = src.read_at(offset, length)
        where = [src.name or "<bytes>", f"deletion vector at [{offset}, {offset + length})"]
    finally:
        src.close()
    if referenced_data_file is not None:
        where.append(f"for {referenced_data_file!r}")
    try:
        return DeletionVector.deserialize(
            data, expected_cardinality=record_count, location=" ".join(where)
        )
    except DeletionVectorError as exc:
        raise exc.with_context(offset=offset) from None


def _footer_error(
    message: str, index: int, field: str, location: str | None
) -> DeletionVectorError:
    return DeletionVectorError(message, blob_index=index, field=field, location=location)


def check_blob_metadata(
    meta: BlobMetadata, index: int, location: str | None = None
) -> tuple[str, int]:
    """The spec's footer rules for a DV blob; returns (referenced data file, cardinality).

    Raises :class:`DeletionVectorError` naming the blob ``index``, the field and ``location``.
    """
    if meta.snapshot_id != -1:
        raise _footer_error(
            f"deletion-vector-v1 blobs must have snapshot-id -1, got {meta.snapshot_id}",
            index,
            "snapshot-id",
            location,
        )
    if meta.sequence_number != -1:
        raise _footer_error(
            f"deletion-vector-v1 blobs must have sequence-number -1, got {meta.sequence_number}",
            index,
            "sequence-number",
            location,
        )
    if meta.compression_codec is not None:
        raise _footer_error(
            "deletion-vector-v1 blobs must not be compressed, got compression-codec "
            f"{meta.compression_codec!r}",
            index,
            "compression-codec",
            location,
        )
    referenced = meta.properties.get(PROPERTY_REFERENCED_DATA_FILE)
    if not referenced:
        raise _footer_error(
            "deletion-vector-v1 blob has no referenced-data-file property"
            if referenced is None
            else "deletion-vector-v1 blob has an empty referenced-data-file property",
            index,
            PROPERTY_REFERENCED_DATA_FILE,
            location,
        )
    cardinality = standard.parse_long_property(
        meta.properties,
        PROPERTY_CARDINALITY,
        blob_index=index,
        error=DeletionVectorError,
        location=location,
    )
    if cardinality is None:
        raise _footer_error(
            "deletion-vector-v1 blob has no cardinality property",
            index,
            PROPERTY_CARDINALITY,
            location,
        )
    return referenced, cardinality


def read_deletion_vectors(
    source: Source,
    *,
    file_size: int | None = None,
    footer_size: int | None = None,
    limits: Limits | None = None,
) -> dict[str, DeletionVector]:
    """Read every ``deletion-vector-v1`` blob of a Puffin file through its footer.

    Each DV blob must follow the spec's footer rules (snapshot-id and sequence-number -1,
    no compression codec, ``referenced-data-file`` present, ``cardinality`` present, a
    non-negative integer equal to the decoded count); its payload gets every check of
    :meth:`DeletionVector.deserialize`.  Blobs of other types are skipped.

    Returns:
        ``{referenced data file: DeletionVector}`` in footer order.  Two DV blobs for the
        same data file are an error, since a reader could not tell which one applies.
    """
    out: dict[str, DeletionVector] = {}
    with _open_puffin(
        source, file_size=file_size, footer_size=footer_size, limits=limits
    ) as reader:
        name = reader.name or "<bytes>"
        for index, meta in enumerate(reader.blobs):
            if meta.type == DELETION_VECTOR_V1:
                dv = decode_blob(reader.read_raw(meta), meta, index, name)
                out[meta.properties[PROPERTY_REFERENCED_DATA_FILE]] = dv  # checked by decode
        problems = standard.check_file_rules(reader.blobs)  # one DV per data file
        if problems:
            raise problems[0].with_context(location=name)
    return out


def decode_blob(
    data: bytes, meta: BlobMetadata, index: int, location: str | None = None
) -> DeletionVector:
    """One DV blob of a Puffin file, with every check :func:`read_deletion_vectors` makes.

    The footer rules come first (:func:`check_blob_metadata`), then the payload with its
    cardinality; errors carry the blob's index and file offset (a position inside the
    payload is in the message).  For tools that report each bad blob instead of stopping at
    the first.
    """
    referenced, cardinality = check_blob_metadata(meta, index, location)
    try:
        return DeletionVector.deserialize(
            data,
            expected_cardinality=cardinality,
            location=f"{location + ' ' if location else ''}deletion vector for {referenced!r}",
        )
    except DeletionVectorError as exc:
        raise exc.with_context(blob_index=index, offset=meta.offset) from None
