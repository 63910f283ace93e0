"""A snapshot's delete files, each read once: the one loader of deletion vectors and
position-delete files, used by the scan, the DV merge, verification and Spark.

A deletion vector is read as Iceberg Java's ``BaseDeleteLoader`` reads it: by the byte
range its delete-manifest entry records (``content_offset``, ``content_size_in_bytes``), no
footer needed, its cardinality checked against the entry's ``record_count``. pyiceberg 0.12
plans v3 tables without those fields, so the ranges come from the manifests read with the v3
schema (:func:`deletion_vector_refs`). A Parquet position-delete file is read whole.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.errors import TableMetadataError, UnsupportedTableError
from puffin.iceberg.metadata.manifests import (
    CONTENT_OFFSET,
    CONTENT_SIZE,
    REFERENCED_DATA_FILE,
    DeleteFileKey,
    delete_file_key,
    read_manifest_entries,
)
from puffin.io.locations import open_input, open_source

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.blobs.dv.format import DeletionVector

__all__ = [
    "DeleteIndex",
    "DeletionVectorRef",
    "check_delete_partitions",
    "deletion_vector_refs",
    "is_equality_delete",
    "live_delete_files",
    "read_vector",
    "vector_ref",
]

DELETE_FILE_PATH = "file_path"
DELETE_POS = "pos"


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
    #: the partition spec and values its manifest entry gives (a DV must share its data
    #: file's); ``None`` and ``()`` when not known
    spec_id: int | None = None
    partition: tuple[Any, ...] = ()


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
        for entry in read_manifest_entries(table.io, manifest, cached=True):
            df = entry.data_file
            if (
                df.content != DataFileContent.POSITION_DELETES
                or df.file_format != FileFormat.PUFFIN
            ):
                continue
            ref = vector_ref(df, manifest.manifest_path, entry.sequence_number)
            if ref.referenced_data_file in seen:
                raise TableMetadataError(
                    f"two deletion vectors for data file {ref.referenced_data_file}: "
                    f"{seen[ref.referenced_data_file].path} and {ref.path}"
                )
            seen[ref.referenced_data_file] = ref
            out.append(ref)
    return out


def is_equality_delete(delete_file: DataFile) -> bool:
    """Whether ``delete_file`` is an equality delete file (not positions, not a vector)."""
    from pyiceberg.manifest import DataFileContent

    return bool(delete_file.content == DataFileContent.EQUALITY_DELETES)


def live_delete_files(table: Table, snapshot: Snapshot) -> dict[DeleteFileKey, DataFile]:
    """Every live delete-file entry of the snapshot's delete manifests (vectors and
    position-delete files alike), by :func:`~.manifests.delete_file_key`."""
    from pyiceberg.manifest import ManifestContent

    out: dict[DeleteFileKey, DataFile] = {}
    for manifest in snapshot.manifests(table.io):
        if manifest.content == ManifestContent.DELETES:
            for entry in read_manifest_entries(table.io, manifest, cached=True):
                out[delete_file_key(entry.data_file)] = entry.data_file
    return out


def vector_ref(
    df: DataFile, manifest_path: str, sequence_number: int | None = None
) -> DeletionVectorRef:
    """A PUFFIN delete entry's vector; :class:`TableMetadataError` without the v3 fields."""
    referenced = df[REFERENCED_DATA_FILE]
    offset, size = df[CONTENT_OFFSET], df[CONTENT_SIZE]
    if referenced is None or offset is None or size is None:
        raise TableMetadataError(
            f"delete manifest {manifest_path}: PUFFIN delete file {df.file_path} lacks "
            "referenced_data_file, content_offset or content_size_in_bytes"
        )
    return DeletionVectorRef(
        referenced_data_file=str(referenced),
        path=str(df.file_path),
        content_offset=int(offset),
        content_size_in_bytes=int(size),
        record_count=int(df.record_count),
        file_size_in_bytes=int(df.file_size_in_bytes),
        manifest_path=manifest_path,
        sequence_number=sequence_number,
        spec_id=getattr(df, "spec_id", None),
        partition=tuple(df.partition[i] for i in range(len(df.partition)))
        if df.partition
        else (),
    )


def read_vector(f: Any, ref: DeletionVectorRef) -> DeletionVector:
    """The vector ``ref`` locates in the open file ``f``, read by its manifest range and
    checked (length, magic, CRC, Roaring layout, cardinality = ``record_count``)."""
    from puffin.blobs.dv.files import read_deletion_vector

    return read_deletion_vector(
        f,
        ref.content_offset,
        ref.content_size_in_bytes,
        record_count=ref.record_count,
        referenced_data_file=ref.referenced_data_file,
    )


def check_delete_partitions(
    path: str, data_file: DataFile, delete_files: Iterable[DataFile]
) -> None:
    """A position delete (a deletion vector, or a position-delete file naming one data file)
    applies only to a data file of its own partition spec and partition values (the spec's
    scan planning); one of another is corrupt metadata, and a reader that applied it, or
    skipped it, would return wrong rows. Java fails such a scan since apache/iceberg#16957;
    so does this. A plan only gives a partition-scoped delete file to its own partition."""
    own = (data_file.spec_id or 0, _values(data_file.partition))
    for d in delete_files:
        theirs = (d.spec_id or 0, _values(d.partition))
        if theirs != own:
            raise TableMetadataError(
                f"position delete file {d.file_path} for data file {path} is in partition "
                f"{theirs[1]} of spec {theirs[0]}, the data file in {own[1]} of spec {own[0]}: "
                "a delete file must share its data file's partition"
            )


def _values(partition: Any) -> tuple[Any, ...]:
    return tuple(partition[i] for i in range(len(partition))) if partition else ()


class DeleteIndex:
    """Deleted positions per data file of one snapshot, each delete file read once.

    A Puffin file is opened once and each vector the snapshot references in it read by its
    range; a Parquet position-delete file (``file_path``, ``pos``) is read whole. Positions
    come back sorted and unique. Thread-safe: the scan's prefetch thread shares it.
    """

    def __init__(self, table: Table, snapshot: Snapshot | None, *, by_entry: bool = False) -> None:
        self._table = table
        self._snapshot = snapshot
        # Each vector read by the range its own delete entry gives, no manifest read: what
        # a Spark task holding a few planned files needs (as Java's readers do).
        self._by_entry = by_entry
        self._refs: dict[str, list[DeletionVectorRef]] | None = None
        self._loaded: dict[str, dict[str, npt.NDArray[np.int64]]] = {}
        self._lock = threading.Lock()

    def positions(
        self, data_path: str, delete_files: Iterable[DataFile]
    ) -> npt.NDArray[np.int64] | None:
        """The sorted deleted positions of ``data_path``; ``None`` when no row is deleted."""
        import numpy as np

        parts = []
        for d in delete_files:
            found = self.load(d).get(data_path)
            if found is not None and len(found):
                parts.append(found)
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return np.unique(np.concatenate(parts))

    def planned_positions(self, planned: Any) -> npt.NDArray[np.int64] | None:
        """The sorted positions ``planned`` (a ``PlannedFile``)'s position deletes remove,
        None when none; each delete file checked to share the data file's partition
        (:func:`check_delete_partitions`)."""
        check_delete_partitions(planned.path, planned.data_file, planned.delete_files)
        return self.positions(planned.path, planned.delete_files)

    def deleted_positions(self, planned: Any) -> npt.NDArray[np.int64] | None:
        """The sorted deleted positions of ``planned`` (a ``PlannedFile``), None when none
        are. This index reads position deletes only: an equality delete applying to the
        file is refused here (``puffin.iceberg.scan.delete_filter.DeleteFilter`` applies
        them), never passed over."""
        if planned.equality_deletes:
            raise UnsupportedTableError(
                f"equality delete file {planned.equality_deletes[0].file_path} applies to "
                f"{planned.path}, and this job does not apply equality deletes"
            )
        return self.planned_positions(planned)

    def vectors(self, path: str) -> dict[str, DeletionVector]:
        """``{data file: DeletionVector}`` of the Puffin file ``path`` (not cached): the file
        opened once, each vector one ranged read (one GET on an object store)."""
        refs = self._refs_of(path)
        if not refs:
            return {}
        source = open_source(path, file_size=refs[0].file_size_in_bytes, file_io=self._table.io)
        try:
            return {r.referenced_data_file: read_vector(source, r) for r in refs}
        finally:
            source.close()

    def puffin_files(self) -> list[str]:
        """The Puffin files holding the snapshot's deletion vectors, in manifest order."""
        return list(self._refs_by_file())

    def refs(self) -> list[DeletionVectorRef]:
        """Every deletion vector the snapshot references, grouped by Puffin file."""
        return [r for refs in self._refs_by_file().values() for r in refs]

    def _refs_of(self, path: str) -> list[DeletionVectorRef]:
        return self._refs_by_file().get(path, [])

    def _refs_by_file(self) -> dict[str, list[DeletionVectorRef]]:
        """The snapshot's vectors by Puffin file, its delete manifests read on first use."""
        with self._lock:
            if self._refs is None:
                refs: dict[str, list[DeletionVectorRef]] = {}
                for r in deletion_vector_refs(self._table, self._snapshot):
                    refs.setdefault(r.path, []).append(r)
                self._refs = refs
            return self._refs

    def load(self, delete_file: DataFile) -> dict[str, npt.NDArray[np.int64]]:
        """``{data file: sorted deleted positions}`` of one delete file, read on first use."""
        from pyiceberg.manifest import FileFormat

        path = str(delete_file.file_path)
        with self._lock:
            cached = self._loaded.get(path)
        if cached is not None:
            return cached
        fmt = delete_file.file_format
        if fmt == FileFormat.PUFFIN and self._by_entry:
            return self._entry_vector(delete_file)
        if fmt == FileFormat.PUFFIN:
            loaded = {data: dv.to_numpy() for data, dv in self.vectors(path).items()}
        elif fmt == FileFormat.PARQUET:
            loaded = self._load_parquet(path)
        else:
            raise UnsupportedTableError(
                f"position delete file {path} is {fmt}; only Parquet and Puffin are read"
            )
        with self._lock:
            self._loaded[path] = loaded
        return loaded

    def _entry_vector(self, delete_file: DataFile) -> dict[str, npt.NDArray[np.int64]]:
        """``{data file: positions}`` of the one vector ``delete_file`` (an entry) locates."""
        ref = vector_ref(delete_file, "of the plan")
        key = f"{ref.path}#{ref.content_offset}"
        with self._lock:
            cached = self._loaded.get(key)
        if cached is not None:
            return cached
        source = open_source(ref.path, file_size=ref.file_size_in_bytes, file_io=self._table.io)
        try:
            loaded = {ref.referenced_data_file: read_vector(source, ref).to_numpy()}
        finally:
            source.close()
        with self._lock:
            self._loaded[key] = loaded
        return loaded

    def _load_parquet(self, path: str) -> dict[str, npt.NDArray[np.int64]]:
        import numpy as np
        import pyarrow.parquet as pq

        # ParquetFile.read, not read_table: a v2 table deleted from often has many small
        # delete files, and the dataset machinery of read_table doubled the cost of each.
        with open_input(self._table.io, path) as f:
            columns = [DELETE_FILE_PATH, DELETE_POS]
            table = pq.ParquetFile(f).read(columns=columns, use_threads=False)
        if table.num_rows == 0:
            return {}
        encoded = table.column(DELETE_FILE_PATH).combine_chunks().dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        pos = table.column(DELETE_POS).to_numpy().astype(np.int64, copy=False)
        order = np.argsort(codes, kind="stable")
        codes, pos = codes[order], pos[order]
        names = encoded.dictionary.to_pylist()
        bounds = np.searchsorted(codes, np.arange(len(names) + 1))
        return {
            str(name): np.unique(pos[bounds[i] : bounds[i + 1]]) for i, name in enumerate(names)
        }
