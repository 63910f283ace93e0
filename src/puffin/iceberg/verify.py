"""Check that the Puffin files a table's metadata references are there and agree with it.

For every statistics file: it exists, its size is ``file-size-in-bytes``, its footer size is
``file-footer-size-in-bytes``, its footer parses, the ``blob-metadata`` in the table equals
the footer's blobs (type, fields, snapshot id, sequence number, properties, in order), and
each theta blob decodes.  For every deletion vector of the snapshot: its file exists with
the manifest's size, the blob at ``content_offset`` decodes (length, magic, CRC, Roaring
layout), its cardinality equals the manifest's ``record_count``, its positions lie inside the
referenced data file, and when the file has a Puffin footer, the footer's blob at that
range agrees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from puffin.errors import PuffinError
from puffin.iceberg._scan import open_input, plan_files
from puffin.iceberg.deletes import TableMetadataError, deletion_vector_refs

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.table.statistics import PartitionStatisticsFile, StatisticsFile

__all__ = ["Problem", "VerifyReport", "verify_table"]

DV_BLOB_TYPE = "deletion-vector-v1"
THETA_BLOB_TYPE = "apache-datasketches-theta-v1"


@dataclass(frozen=True)
class Problem:
    """One disagreement: what kind, which file, and a message that says both values."""

    kind: str  # "statistics", "partition-statistics" or "deletion-vector"
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.path}: {self.message}"


@dataclass
class VerifyReport:
    """What :func:`verify_table` checked and found.  ``ok`` when ``problems`` is empty."""

    statistics_files: int = 0
    partition_statistics_files: int = 0
    deletion_vectors: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "statistics_files": self.statistics_files,
            "partition_statistics_files": self.partition_statistics_files,
            "deletion_vectors": self.deletion_vectors,
            "problems": [
                {"kind": p.kind, "path": p.path, "message": p.message} for p in self.problems
            ],
        }


def _size(table: Table, location: str) -> int | str:
    """The file's size, or why it cannot be read ("file does not exist", ...)."""
    try:
        with open_input(table.io, location) as f:
            return int(f.seek(0, 2))
    except FileNotFoundError:
        return "file does not exist"
    except OSError as exc:
        return f"cannot read the file: {exc.strerror or exc}"


def _blob_view(b: Any) -> tuple[Any, ...]:
    props = getattr(b, "properties", None) or {}
    return (b.type, tuple(b.fields), b.snapshot_id, b.sequence_number, dict(props))


def _check_statistics(table: Table, stats: StatisticsFile, report: VerifyReport) -> None:
    import puffin
    from puffin.blobs.theta import ThetaSketch

    path = stats.statistics_path

    def problem(message: str) -> None:
        report.problems.append(Problem("statistics", path, message))

    size = _size(table, path)
    if isinstance(size, str):
        problem(size)
        return
    if size != stats.file_size_in_bytes:
        problem(
            f"file is {size} bytes, metadata says file-size-in-bytes {stats.file_size_in_bytes}"
        )
    try:
        with open_input(table.io, path) as f, puffin.open(f, file_size=size) as reader:
            if reader.footer_size != stats.file_footer_size_in_bytes:
                problem(
                    f"footer is {reader.footer_size} bytes, metadata says "
                    f"file-footer-size-in-bytes {stats.file_footer_size_in_bytes}"
                )
            in_table = [_blob_view(b) for b in stats.blob_metadata]
            in_file = [_blob_view(b) for b in reader.blobs]
            if in_table != in_file:
                problem(_blob_diff(in_table, in_file))
            for i, blob in enumerate(reader.blobs):
                if blob.type != THETA_BLOB_TYPE:
                    continue
                if blob.snapshot_id != stats.snapshot_id:
                    problem(
                        f"blob {i} has snapshot-id {blob.snapshot_id}, the statistics file is "
                        f"for snapshot {stats.snapshot_id}"
                    )
                try:
                    ThetaSketch.deserialize(reader.read_blob(blob))
                except PuffinError as exc:
                    problem(f"blob {i} (field {list(blob.fields)}): {exc}")
    except PuffinError as exc:
        problem(f"not a valid Puffin file: {exc}")
    except OSError as exc:
        problem(f"cannot read the file: {exc.strerror or exc}")
    if table.snapshot_by_id(stats.snapshot_id) is None:
        problem(f"snapshot {stats.snapshot_id} no longer exists in the table")


def _blob_diff(in_table: list[tuple[Any, ...]], in_file: list[tuple[Any, ...]]) -> str:
    if len(in_table) != len(in_file):
        return f"metadata lists {len(in_table)} blobs, the footer has {len(in_file)}"
    names = ("type", "fields", "snapshot-id", "sequence-number", "properties")
    for i, (a, b) in enumerate(zip(in_table, in_file, strict=True)):
        for name, x, y in zip(names, a, b, strict=True):
            if x != y:
                return f"blob {i}: metadata says {name} {x!r}, the footer says {y!r}"
    return "blob metadata differs from the footer"  # pragma: no cover - caught above


def _check_partition_statistics(
    table: Table, stats: PartitionStatisticsFile, report: VerifyReport
) -> None:
    size = _size(table, stats.statistics_path)
    if isinstance(size, str):
        report.problems.append(Problem("partition-statistics", stats.statistics_path, size))
    elif size != stats.file_size_in_bytes:
        report.problems.append(
            Problem(
                "partition-statistics",
                stats.statistics_path,
                f"file is {size} bytes, metadata says file-size-in-bytes "
                f"{stats.file_size_in_bytes}",
            )
        )


def _check_deletion_vectors(table: Table, snapshot: Snapshot, report: VerifyReport) -> None:
    import puffin
    from puffin.blobs.deletion_vector import read_deletion_vector

    try:
        refs = deletion_vector_refs(table, snapshot)
    except TableMetadataError as exc:
        report.problems.append(Problem("deletion-vector", snapshot.manifest_list, str(exc)))
        return
    if not refs:
        return
    live = {p.path: p.record_count for p in plan_files(table, snapshot)}
    by_file: dict[str, list[Any]] = {}
    for r in refs:
        by_file.setdefault(r.path, []).append(r)
    for path, file_refs in by_file.items():
        report.deletion_vectors += len(file_refs)

        def problem(message: str, _path: str = path) -> None:
            report.problems.append(Problem("deletion-vector", _path, message))

        size = _size(table, path)
        if isinstance(size, str):
            problem(size)
            continue
        sizes = {r.file_size_in_bytes for r in file_refs}
        if sizes != {size}:
            problem(
                f"file is {size} bytes, manifest says file_size_in_bytes "
                f"{', '.join(map(str, sorted(sizes)))}"
            )
        with open_input(table.io, path) as f:
            footer_blobs: dict[tuple[int, int], Any] | None = None
            try:
                with puffin.open(f, file_size=size) as reader:
                    footer_blobs = {(b.offset, b.length): b for b in reader.blobs}
            except PuffinError:
                footer_blobs = None  # DV files need not be full Puffin files to be read
            for r in file_refs:
                where = (
                    f"vector of {r.referenced_data_file} at "
                    f"[{r.content_offset}, {r.content_offset + r.content_size_in_bytes})"
                )
                if footer_blobs is not None:
                    blob = footer_blobs.get((r.content_offset, r.content_size_in_bytes))
                    if blob is None:
                        problem(f"{where}: the file's footer has no blob at that range")
                    else:
                        _check_dv_blob(blob, r, problem, where)
                try:
                    dv = read_deletion_vector(
                        f,
                        r.content_offset,
                        r.content_size_in_bytes,
                        record_count=r.record_count,
                        referenced_data_file=r.referenced_data_file,
                    )
                except PuffinError as exc:
                    problem(f"{where}: {exc.reason}")
                    continue
                rows = live.get(r.referenced_data_file)
                if rows is None:
                    problem(f"{where}: referenced data file is not live in the snapshot")
                elif len(dv) and int(dv.to_numpy()[-1]) >= rows:
                    problem(
                        f"{where}: position {int(dv.to_numpy()[-1])} is past the end of the "
                        f"data file ({rows} rows)"
                    )


def _check_dv_blob(blob: Any, ref: Any, problem: Any, where: str) -> None:
    if blob.type != DV_BLOB_TYPE:
        problem(f"{where}: the footer's blob there is {blob.type!r}")
        return
    referenced = blob.properties.get("referenced-data-file")
    if referenced != ref.referenced_data_file:
        problem(f"{where}: the footer says referenced-data-file {referenced!r}")
    cardinality = blob.properties.get("cardinality")
    if cardinality != str(ref.record_count):
        problem(
            f"{where}: the footer says cardinality {cardinality!r}, the manifest record_count "
            f"{ref.record_count}"
        )


def verify_table(table: Table, *, snapshot_id: int | None = None) -> VerifyReport:
    """Check every statistics file and the snapshot's deletion vectors against the metadata.

    Returns a :class:`VerifyReport`; problems are collected, not raised, so one run lists
    them all.  ``snapshot_id`` picks the snapshot whose deletion vectors are checked
    (default: the current one); statistics files are checked for every snapshot.
    """
    from puffin.iceberg._catalog import resolve_snapshot

    report = VerifyReport()
    for stats in table.metadata.statistics:
        report.statistics_files += 1
        _check_statistics(table, stats, report)
    for pstats in table.metadata.partition_statistics:
        report.partition_statistics_files += 1
        _check_partition_statistics(table, pstats, report)
    if snapshot_id is not None or table.current_snapshot() is not None:
        snapshot = resolve_snapshot(table, snapshot_id)
        _check_deletion_vectors(table, snapshot, report)
    return report
