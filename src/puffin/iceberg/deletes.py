"""Deletion vectors of Iceberg v3 tables: write them for a table, find and read a table's.

In a v3 table a deletion vector is a ``deletion-vector-v1`` blob in a Puffin file, and the
snapshot's delete manifests point at it: a position-delete entry in ``PUFFIN`` format whose
``referenced_data_file`` names the data file and whose ``content_offset`` and
``content_size_in_bytes`` locate the blob.  :func:`read_table_deletion_vectors` reads those
manifests (with the v3 manifest schema, which pyiceberg 0.12 does not read by default) and each
vector by its byte range, as Java's reader does.

:func:`write_table_deletion_vectors` writes the Puffin file where the table keeps its data and
returns what the manifest entries need, and :func:`deletion_vector_data_files` turns that into
pyiceberg ``DataFile`` records; :mod:`puffin.iceberg.row_deletes` commits them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin._integration.locations import local_path, open_input
from puffin.errors import TableMetadataError
from puffin.iceberg._catalog import resolve_snapshot
from puffin.iceberg._plan import plan_files

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.io import FileIO
    from pyiceberg.manifest import DataFile, ManifestEntry, ManifestFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.blobs.deletion_vector import DeletionVector, DeletionVectorEntry

__all__ = [
    "DeletionVectorRef",
    "TableMetadataError",
    "apply_deletion_vector",
    "deletion_vector_data_files",
    "deletion_vector_refs",
    "read_manifest_entries",
    "read_manifest_list",
    "read_table_deletion_vectors",
    "write_table_deletion_vectors",
]


def _as_path(key: Any) -> str:
    path = getattr(key, "file_path", key)
    if not isinstance(path, str):
        raise TypeError(f"data files are given by path or pyiceberg DataFile, got {key!r}")
    return path


def write_table_deletion_vectors(
    table: Table,
    vectors: Mapping[Any, Any],
    *,
    validate: bool = True,
    location: str | None = None,
) -> list[DeletionVectorEntry]:
    """Write one Puffin file of deletion vectors for ``table`` and return manifest-ready entries.

    Args:
        table: the table the data files belong to.
        vectors: ``{data file: positions}``; a data file is its path or a pyiceberg
            ``DataFile``; positions are anything :class:`puffin.DeletionVector` accepts
            (ints, NumPy or Arrow integer arrays, ``BitMap64``, a ``DeletionVector``).
        validate: check that each data file is live in the current snapshot and that every
            position is below its record count (a vector past the end of the file is a
            corrupt table for every reader).
        location: where to write; default a new ``<uuid>-deletes.puffin`` from the table's
            location provider (its data folder).

    Returns:
        One :class:`puffin.DeletionVectorEntry` per data file (``referenced_data_file``,
        ``content_offset``, ``content_size_in_bytes``, ``record_count``, the file's
        ``path`` and ``file_size_in_bytes``), in the order given.
    """
    from puffin.blobs.deletion_vector import DeletionVector, write_deletion_vectors
    from puffin.iceberg.statistics import created_by

    dvs: dict[str, DeletionVector] = {}
    for key, positions in vectors.items():
        path = _as_path(key)
        if path in dvs:
            raise ValueError(f"data file {path} is given twice")
        dvs[path] = (
            positions if isinstance(positions, DeletionVector) else DeletionVector(positions)
        )
    if not dvs:
        raise ValueError("no deletion vectors to write")
    if validate:
        _validate_targets(table, dvs)
    if location is None:
        location = str(
            table.location_provider().new_data_location(f"{uuid.uuid4()}-deletes.puffin")
        )
    local = local_path(location)
    stream = None
    if local is not None:
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        target: Any = local
    else:
        stream = table.io.new_output(location).create(overwrite=False)
        target = stream
    try:
        entries = write_deletion_vectors(target, dvs, created_by=created_by())
    finally:
        if stream is not None:
            stream.close()
    import dataclasses

    return [
        dataclasses.replace(e, path=location) if getattr(e, "path", location) != location else e
        for e in entries
    ]


def _validate_targets(table: Table, dvs: Mapping[str, DeletionVector]) -> None:
    snapshot = table.current_snapshot()
    live: dict[str, int] = {}
    if snapshot is not None:
        live = {p.path: p.record_count for p in plan_files(table, snapshot)}
    for path, dv in dvs.items():
        if path not in live:
            raise ValueError(
                f"{path} is not a live data file of the table's current snapshot "
                "(pass validate=False to write anyway)"
            )
        if len(dv):
            largest = int(dv.to_numpy()[-1])
            if largest >= live[path]:
                raise ValueError(
                    f"position {largest} is past the end of {path}, which has {live[path]} rows"
                )


def deletion_vector_data_files(
    table: Table, entries: Iterable[Any], *, data_files: Mapping[str, DataFile] | None = None
) -> list[DataFile]:
    """pyiceberg v3 ``DataFile`` records (content position deletes, format PUFFIN) for entries.

    Each record carries the referenced data file's partition and spec id, so it can be added
    to a v3 delete manifest as is (the spec requires a DV's partition to be its data file's).
    ``data_files`` (``{path: DataFile}``) saves planning the current snapshot again.
    """
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    by_path: Mapping[str, DataFile] = data_files or {}
    snapshot = table.current_snapshot()
    if data_files is None and snapshot is not None:
        by_path = {p.path: p.data_file for p in plan_files(table, snapshot)}
    out = []
    for e in entries:
        data = by_path.get(e.referenced_data_file)
        record = DataFile.from_args(
            _table_format_version=3,
            content=DataFileContent.POSITION_DELETES,
            file_path=e.path,
            file_format=FileFormat.PUFFIN,
            partition=data.partition if data is not None else _empty_record(),
            record_count=e.record_count,
            file_size_in_bytes=e.file_size_in_bytes,
            referenced_data_file=e.referenced_data_file,
            content_offset=e.content_offset,
            content_size_in_bytes=e.content_size_in_bytes,
        )
        record.spec_id = data.spec_id if data is not None else table.spec().spec_id
        out.append(record)
    return out


def _empty_record() -> Any:
    from pyiceberg.typedef import Record

    return Record()


# --- reading a table's vectors --------------------------------------------------------------


@dataclass(frozen=True)
class DeletionVectorRef:
    """A deletion vector as a table's delete manifest references it."""

    referenced_data_file: str
    path: str
    content_offset: int
    content_size_in_bytes: int
    record_count: int
    file_size_in_bytes: int
    manifest_path: str
    sequence_number: int | None


def read_manifest_list(io: FileIO, manifest_list: str) -> list[ManifestFile]:
    """A manifest list read with the v3 schema: ``first_row_id`` survives (pyiceberg drops it)."""
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.manifest import (
        MANIFEST_LIST_FILE_SCHEMAS,
        ManifestContent,
        ManifestFile,
        PartitionFieldSummary,
    )

    with AvroFile[ManifestFile](
        io.new_input(manifest_list),
        MANIFEST_LIST_FILE_SCHEMAS[3],
        read_types={-1: ManifestFile, 508: PartitionFieldSummary},
        read_enums={517: ManifestContent},
    ) as reader:
        return list(reader)


def read_manifest_entries(
    io: FileIO, manifest: ManifestFile, *, include_deleted: bool = False
) -> list[ManifestEntry]:
    """A manifest's live entries (``include_deleted``: all of them) as v3 records (keeps the
    DV fields), sequence numbers inherited."""
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.manifest import (
        MANIFEST_ENTRY_SCHEMAS,
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestEntry,
        ManifestEntryStatus,
        _inherit_from_manifest,
    )

    with AvroFile[ManifestEntry](
        io.new_input(manifest.manifest_path),
        MANIFEST_ENTRY_SCHEMAS[3],
        read_types={-1: ManifestEntry, 2: DataFile},
        read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
    ) as reader:
        return [
            _inherit_from_manifest(entry, manifest)
            for entry in reader
            if include_deleted or entry.status != ManifestEntryStatus.DELETED
        ]


# Positions of the v3-only data_file fields in pyiceberg's v3 DataFile struct.
REFERENCED_DATA_FILE, CONTENT_OFFSET, CONTENT_SIZE = 17, 18, 19


def delete_file_key(data_file: DataFile) -> tuple[str, str | None]:
    """What identifies a delete file: its path, and for a DV the data file it references
    (one Puffin file holds many DVs).  A Parquet position-delete file is its path alone,
    even when it records ``referenced_data_file`` (Java does for file-scoped deletes)."""
    from pyiceberg.manifest import FileFormat

    if data_file.file_format != FileFormat.PUFFIN:
        return str(data_file.file_path), None
    referenced = data_file[REFERENCED_DATA_FILE] if len(data_file) > REFERENCED_DATA_FILE else None
    return str(data_file.file_path), None if referenced is None else str(referenced)


def deletion_vector_refs(table: Table, snapshot: Snapshot | None = None) -> list[DeletionVectorRef]:
    """Every deletion vector the snapshot's delete manifests reference (default: current).

    Raises :class:`TableMetadataError` for a PUFFIN delete entry without the v3 fields and
    for two live vectors of one data file (the spec allows one per data file).
    """
    from pyiceberg.manifest import DataFileContent, FileFormat, ManifestContent

    snap = snapshot if snapshot is not None else table.current_snapshot()
    if snap is None:
        return []
    out: list[DeletionVectorRef] = []
    seen: dict[str, DeletionVectorRef] = {}
    for manifest in snap.manifests(table.io):
        if manifest.content != ManifestContent.DELETES:
            continue
        for entry in read_manifest_entries(table.io, manifest):
            df = entry.data_file
            if (
                df.content != DataFileContent.POSITION_DELETES
                or df.file_format != FileFormat.PUFFIN
            ):
                continue
            referenced = df[REFERENCED_DATA_FILE]
            offset, size = df[CONTENT_OFFSET], df[CONTENT_SIZE]
            if referenced is None or offset is None or size is None:
                raise TableMetadataError(
                    f"delete manifest {manifest.manifest_path}: PUFFIN delete file "
                    f"{df.file_path} lacks referenced_data_file, content_offset or "
                    "content_size_in_bytes"
                )
            ref = DeletionVectorRef(
                referenced_data_file=str(referenced),
                path=str(df.file_path),
                content_offset=int(offset),
                content_size_in_bytes=int(size),
                record_count=int(df.record_count),
                file_size_in_bytes=int(df.file_size_in_bytes),
                manifest_path=manifest.manifest_path,
                sequence_number=entry.sequence_number,
            )
            if ref.referenced_data_file in seen:
                raise TableMetadataError(
                    f"two deletion vectors for data file {ref.referenced_data_file}: "
                    f"{seen[ref.referenced_data_file].path} and {ref.path}"
                )
            seen[ref.referenced_data_file] = ref
            out.append(ref)
    return out


def _group_by_file(
    refs: Iterable[DeletionVectorRef],
) -> Iterator[tuple[str, list[DeletionVectorRef]]]:
    groups: dict[str, list[DeletionVectorRef]] = {}
    for r in refs:
        groups.setdefault(r.path, []).append(r)
    yield from groups.items()


def read_table_deletion_vectors(
    table: Table, *, snapshot_id: int | None = None
) -> dict[str, DeletionVector]:
    """``{data file path: DeletionVector}`` for the snapshot's deletion vectors.

    Each vector is read by its manifest byte range (no footer needed) and checked: length
    prefix, magic, CRC, Roaring layout, and cardinality against the manifest's
    ``record_count``.  Errors are :class:`puffin.DeletionVectorError` naming the file.
    """
    from puffin.blobs.deletion_vector import read_deletion_vector

    snapshot = resolve_snapshot(table, snapshot_id)
    out: dict[str, DeletionVector] = {}
    for path, refs in _group_by_file(deletion_vector_refs(table, snapshot)):
        with open_input(table.io, path) as f:
            for r in refs:
                out[r.referenced_data_file] = read_deletion_vector(
                    f,
                    r.content_offset,
                    r.content_size_in_bytes,
                    record_count=r.record_count,
                    referenced_data_file=r.referenced_data_file,
                )
    return out


def apply_deletion_vector(data: pa.Table | pa.RecordBatch, dv: Any, *, offset: int = 0) -> Any:
    """``data`` without the rows whose file position (``offset`` + row index) is deleted.

    ``data`` holds consecutive rows of one data file starting at position ``offset`` (the
    whole file by default); positions outside it are ignored.  ``dv`` is a
    :class:`puffin.DeletionVector`, or anything it accepts.
    """
    import numpy as np
    import pyarrow as pa

    from puffin.iceberg._plan import keep_mask

    if hasattr(dv, "to_numpy"):
        positions = np.asarray(dv.to_numpy(), dtype=np.int64)
    else:
        from puffin.blobs.deletion_vector import DeletionVector

        positions = DeletionVector(dv).to_numpy()
    mask = keep_mask(positions, offset, data.num_rows)
    if mask is None:
        return data
    return data.filter(pa.array(mask))


def remove_files(table: Table, locations: Iterable[str]) -> None:
    """Delete files written for a commit that did not happen (best effort: the commit's
    own error is what the caller reports)."""
    for location in locations:
        try:
            table.io.delete(location)
        except OSError:  # pragma: no cover - the commit error is what matters
            pass
