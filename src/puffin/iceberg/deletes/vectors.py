"""Deletion vectors of Iceberg v3 tables: write them for a table, find and read a table's.

In a v3 table a deletion vector is a ``deletion-vector-v1`` blob in a Puffin file, and the
snapshot's delete manifests point at it: a position-delete entry in ``PUFFIN`` format whose
``referenced_data_file`` names the data file and whose ``content_offset`` and
``content_size_in_bytes`` locate the blob.  :func:`read_table_deletion_vectors` reads those
manifests (with the v3 manifest schema, which pyiceberg 0.12 does not read by default) and each
vector by its byte range, as Java's reader does.

:func:`write_table_deletion_vectors` writes the Puffin file where the table keeps its data and
returns what the manifest entries need, and :func:`deletion_vector_data_files` turns that into
pyiceberg ``DataFile`` records; :mod:`puffin.iceberg.deletes.rows` commits them.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from puffin.iceberg.catalog.catalogs import resolve_snapshot
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.plan import keep_mask, plan_files
from puffin.io.locations import open_output
from puffin.version import CREATED_BY

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

    from puffin.blobs.dv.files import DeletionVector, DeletionVectorEntry
    from puffin.iceberg.scan.plan import PlannedFile

__all__ = [
    "apply_deletion_vector",
    "check_positions",
    "data_file_path",
    "deletion_vector_data_files",
    "read_table_deletion_vectors",
    "write_table_deletion_vectors",
    "write_vectors",
]


def data_file_path(key: Any) -> str:
    """The path of a data file given by path or as a pyiceberg ``DataFile``."""
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
    from puffin.blobs.dv.files import DeletionVector, write_deletion_vectors

    dvs: dict[str, DeletionVector] = {}
    for key, positions in vectors.items():
        path = data_file_path(key)
        if path in dvs:
            raise ValueError(f"data file {path} is given twice")
        dvs[path] = (
            positions if isinstance(positions, DeletionVector) else DeletionVector(positions)
        )
    if not dvs:
        raise ValueError("no deletion vectors to write")
    if validate:
        snapshot = table.current_snapshot()
        planned = [] if snapshot is None else plan_files(table, snapshot, equality=True)
        check_positions(planned, dvs)
    if location is None:
        location = str(
            table.location_provider().new_data_location(f"{uuid.uuid4()}-deletes.puffin")
        )
    with open_output(location, table.io) as target:
        entries = write_deletion_vectors(target, dvs, created_by=CREATED_BY)
    return [
        dataclasses.replace(e, path=location) if getattr(e, "path", location) != location else e
        for e in entries
    ]


def check_positions(planned: Sequence[PlannedFile], new: Mapping[str, Any]) -> None:
    """``ValueError`` unless every data file in ``new`` is live in ``planned`` and every
    position is below its record count (a vector past the end of its file is a corrupt
    table for every reader)."""
    import numpy as np

    counts = {p.path: p.record_count for p in planned}
    for path, positions in new.items():
        if path not in counts:
            raise ValueError(
                f"{path} is not a live data file of the table's current snapshot "
                "(pass validate=False to write anyway)"
            )
        found = positions.to_numpy() if hasattr(positions, "to_numpy") else np.asarray(positions)
        if len(found) and int(found.max()) >= counts[path]:
            raise ValueError(
                f"position {int(found.max())} is past the end of {path}, which has "
                f"{counts[path]} rows"
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
        by_path = {p.path: p.data_file for p in plan_files(table, snapshot, equality=True)}
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
        spec_id = getattr(data, "spec_id", None)  # a file just written may carry none
        record.spec_id = table.spec().spec_id if spec_id is None else spec_id
        out.append(record)
    return out


def _empty_record() -> Any:
    from pyiceberg.typedef import Record

    return Record()


# --- reading a table's vectors --------------------------------------------------------------


def read_table_deletion_vectors(
    table: Table, *, snapshot_id: int | None = None
) -> dict[str, DeletionVector]:
    """``{data file path: DeletionVector}`` for the snapshot's deletion vectors.

    Each vector is read by its manifest byte range (no footer needed) and checked: length
    prefix, magic, CRC, Roaring layout, and cardinality against the manifest's
    ``record_count``.  Errors are :class:`puffin.DeletionVectorError` naming the file.
    """
    snapshot = resolve_snapshot(table, snapshot_id)
    index = DeleteIndex(table, snapshot)
    out: dict[str, DeletionVector] = {}
    for path in index.puffin_files():  # the delete manifests read once, by the index
        out.update(index.vectors(path))
    return out


def apply_deletion_vector(data: pa.Table | pa.RecordBatch, dv: Any, *, offset: int = 0) -> Any:
    """``data`` without the rows whose file position (``offset`` + row index) is deleted.

    ``data`` holds consecutive rows of one data file starting at position ``offset`` (the
    whole file by default); positions outside it are ignored.  ``dv`` is a
    :class:`puffin.DeletionVector`, or anything it accepts.
    """
    import numpy as np
    import pyarrow as pa

    if hasattr(dv, "to_numpy"):
        positions = np.asarray(dv.to_numpy(), dtype=np.int64)
    else:
        from puffin.blobs.dv.files import DeletionVector

        positions = DeletionVector(dv).to_numpy()
    mask = keep_mask(positions, offset, data.num_rows)
    if mask is None:
        return data
    return data.filter(pa.array(mask))


def write_vectors(
    table: Table, planned: Sequence[PlannedFile], merged: Mapping[str, Any]
) -> tuple[list[DeletionVectorEntry], list[DataFile]]:
    """One Puffin file with a vector per data file, and its v3 delete-file records."""
    entries = write_table_deletion_vectors(table, merged, validate=False)
    data_files = {p.path: p.data_file for p in planned}
    return entries, deletion_vector_data_files(table, entries, data_files=data_files)
