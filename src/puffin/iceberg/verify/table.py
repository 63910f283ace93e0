"""Check that the Puffin files a table's metadata references are there and agree with it.

For every statistics file: it exists, it passes :func:`puffin.verify_file` (every rule of the
container and of each blob type), its size is ``file-size-in-bytes``, its footer size is
``file-footer-size-in-bytes``, and the ``blob-metadata`` in the table equals the footer's
blobs (type, fields, snapshot id, sequence number, properties, in order).

For every deletion vector of the snapshot: its file exists with the manifest's size, the
blob at ``content_offset`` decodes (length, magic, CRC, Roaring layout), its cardinality
equals the manifest's ``record_count``, its positions lie inside the referenced data file,
and when the file has a Puffin footer, it passes :func:`puffin.verify_file` and the
footer's blob at that range agrees.

For the snapshot as a whole (kind ``"table"``): the v3 rules of :mod:`._v3_checks` (PUFFIN
entries only in v3 delete manifests, one live vector per data file, row lineage of the
manifest list).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from puffin.blobs import standard
from puffin.blobs.verify import verify_file
from puffin.errors import PuffinError, TableMetadataError
from puffin.iceberg.metadata.delete_files import (
    DeletionVectorRef,
    deletion_vector_refs,
    read_vector,
)
from puffin.iceberg.metadata.manifests import read_from_disk
from puffin.iceberg.scan.delete_file_index import lenient_vectors
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.verify.folder import folder_warnings
from puffin.iceberg.verify.hints import maintenance_hints
from puffin.iceberg.verify.v3_checks import check_v3
from puffin.io.locations import location_key, open_input
from puffin.reader import open as open_puffin

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.table.statistics import PartitionStatisticsFile, StatisticsFile

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["TableProblem", "VerifyReport", "verify_table"]


@dataclass(frozen=True)
class TableProblem:
    """One disagreement: what kind, which file, and a message that says both values."""

    # "statistics", "partition-statistics", "deletion-vector", "data-file", "table";
    # warnings (verify/folder.py): "orphan", "newer-metadata", "set-aside", "outside-table",
    # "stale-statistics"; when maintenance would help (verify/hints.py): "expire-backlog",
    # "spread-deletes", "equality-deletes", "deleted-rows"
    kind: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.path}: {self.message}"


@dataclass
class VerifyReport:
    """What :func:`verify_table` checked and found.  ``ok`` when ``problems`` is empty.

    ``warnings`` are not errors of the table: Puffin files in its folders that nothing
    references (``kind`` ``"orphan"``; see ``puffin table remove-orphans``), metadata newer
    than the catalog's (``"newer-metadata"``), files an interrupted cleanup set aside
    (``"set-aside"``), referenced files outside the table (``"outside-table"``), statistics
    behind the current snapshot (``"stale-statistics"``; ``puffin table stats update``) and
    maintenance hints.
    """

    statistics_files: int = 0
    partition_statistics_files: int = 0
    deletion_vectors: int = 0
    problems: list[TableProblem] = field(default_factory=list)
    warnings: list[TableProblem] = field(default_factory=list)

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
            "warnings": [
                {"kind": p.kind, "path": p.path, "message": p.message} for p in self.warnings
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
    """The file's own rules (``puffin.verify_file``), then the metadata's claims about it."""

    path = stats.statistics_path

    def problem(message: str) -> None:
        report.problems.append(TableProblem("statistics", path, message))

    size = _size(table, path)
    if isinstance(size, str):
        problem(size)
        return
    if size != stats.file_size_in_bytes:
        problem(
            f"file is {size} bytes, metadata says file-size-in-bytes {stats.file_size_in_bytes}"
        )
    try:
        with open_input(table.io, path) as f:
            for p in verify_file(f):
                problem(f"not a valid Puffin file: {p}")
            with open_puffin(f, file_size=size) as reader:
                _compare_footer(stats, reader, problem)
    except PuffinError:
        pass  # a footer that cannot be read is among verify_file's problems
    except OSError as exc:
        problem(f"cannot read the file: {exc.strerror or exc}")
    if table.snapshot_by_id(stats.snapshot_id) is None:
        problem(f"snapshot {stats.snapshot_id} no longer exists in the table")


def _compare_footer(stats: StatisticsFile, reader: Any, problem: Callable[[str], None]) -> None:
    """The table's ``StatisticsFile`` entry against the footer it describes."""
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
        if blob.type == standard.APACHE_DATASKETCHES_THETA_V1 and (
            blob.snapshot_id != stats.snapshot_id
        ):
            problem(
                f"blob {i} has snapshot-id {blob.snapshot_id}, the statistics file is "
                f"for snapshot {stats.snapshot_id}"
            )


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
        report.problems.append(TableProblem("partition-statistics", stats.statistics_path, size))
    elif size != stats.file_size_in_bytes:
        report.problems.append(
            TableProblem(
                "partition-statistics",
                stats.statistics_path,
                f"file is {size} bytes, metadata says file-size-in-bytes "
                f"{stats.file_size_in_bytes}",
            )
        )


def _check_deletion_vectors(
    table: Table, snapshot: Snapshot, planned: Sequence[PlannedFile], report: VerifyReport
) -> list[DeletionVectorRef] | None:
    """Every deletion vector of the snapshot against its manifest entry and data file
    (``planned``: the snapshot's live data files); the vectors, or ``None`` when the delete
    manifests could not be read."""
    try:
        refs = deletion_vector_refs(table, snapshot)
    except TableMetadataError as exc:
        report.problems.append(TableProblem("deletion-vector", snapshot.manifest_list, str(exc)))
        return None
    if not refs:
        return refs
    live = {p.path: p.record_count for p in planned}
    by_file: dict[str, list[DeletionVectorRef]] = {}
    for r in refs:
        by_file.setdefault(r.path, []).append(r)
    for path, file_refs in by_file.items():
        report.deletion_vectors += len(file_refs)

        def problem(message: str, _path: str = path) -> None:
            report.problems.append(TableProblem("deletion-vector", _path, message))

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
            _check_dv_file(f, size, file_refs, live, problem)
    return refs


def _check_dv_file(
    f: Any,
    size: int,
    refs: Sequence[DeletionVectorRef],
    live: Mapping[str, int],
    problem: Callable[[str], None],
) -> None:
    """One DV file: its own rules when it has a footer, then each manifest range."""
    try:
        with open_puffin(f, file_size=size) as reader:
            blobs = list(reader.blobs)
    except PuffinError:
        blobs = None  # DV files need not be full Puffin files to be read
    if blobs is not None:
        referenced = {(r.content_offset, r.content_size_in_bytes) for r in refs}
        for p in verify_file(f):
            at = None if p.blob_index is None else blobs[p.blob_index]
            if at is None or (at.offset, at.length) not in referenced:
                problem(f"not a valid Puffin file: {p}")  # a referenced blob's is below
    footer = {(b.offset, b.length): b for b in blobs or ()}
    for r in refs:
        where = (
            f"vector of {r.referenced_data_file} at "
            f"[{r.content_offset}, {r.content_offset + r.content_size_in_bytes})"
        )
        if blobs is not None:
            blob = footer.get((r.content_offset, r.content_size_in_bytes))
            if blob is None:
                problem(f"{where}: the file's footer has no blob at that range")
            else:
                _check_dv_blob(blob, r, problem, where)
        try:
            dv = read_vector(f, r)
        except PuffinError as exc:
            problem(f"{where}: {exc.reason}")
            continue
        rows = live.get(r.referenced_data_file)
        last = int(dv.to_numpy()[-1]) if len(dv) else -1
        if rows is None:
            problem(f"{where}: referenced data file is not live in the snapshot")
        elif last >= rows:
            problem(f"{where}: position {last} is past the end of the data file ({rows} rows)")


def _check_dv_blob(
    blob: Any, ref: DeletionVectorRef, problem: Callable[[str], None], where: str
) -> None:
    """The footer's entry for a manifest range against that manifest entry."""
    if blob.type != standard.DELETION_VECTOR_V1:
        problem(f"{where}: the footer's blob there is {blob.type!r}")
        return
    props = blob.properties or {}
    referenced = props.get(standard.REFERENCED_DATA_FILE)
    if referenced != ref.referenced_data_file:
        problem(f"{where}: the footer says referenced-data-file {referenced!r}")
    cardinality = props.get(standard.CARDINALITY)
    try:
        agrees = standard.parse_long_property(props, standard.CARDINALITY) == ref.record_count
    except PuffinError:
        agrees = False
    if not agrees:
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
    with read_from_disk():  # a check reads the manifests as they are now, not as cached
        return _verify(table, snapshot_id)


def _verify(table: Table, snapshot_id: int | None) -> VerifyReport:
    from puffin.iceberg.catalog.catalogs import resolve_snapshot

    report = VerifyReport()
    for stats in table.metadata.statistics:
        report.statistics_files += 1
        _check_statistics(table, stats, report)
    for pstats in table.metadata.partition_statistics:
        report.partition_statistics_files += 1
        _check_partition_statistics(table, pstats, report)
    planned = refs = None
    if snapshot_id is not None or table.current_snapshot() is not None:
        snapshot = resolve_snapshot(table, snapshot_id)
        with lenient_vectors():  # each broken vector rule a problem below, not a stop here
            planned = plan_files(table, snapshot, equality=True)  # read once for every check
        refs = _check_deletion_vectors(table, snapshot, planned, report)
        _check_data_files(table, snapshot, planned, report)
        # each vector is checked above; the plan is the one made for every check
        findings = check_v3(table, snapshot, vectors=False, planned=planned)
        report.problems.extend(TableProblem("table", p, m) for p, m in findings)
    report.warnings.extend(TableProblem(*w) for w in folder_warnings(table))
    current = snapshot_id is None or snapshot_id == getattr(
        table.current_snapshot(), "snapshot_id", None
    )
    hints = maintenance_hints(table, planned if current else None, refs if current else None)
    report.warnings.extend(TableProblem(*hint) for hint in hints)
    return report


def _check_data_files(
    table: Table, snapshot: Snapshot, planned: Sequence[PlannedFile], report: VerifyReport
) -> None:
    """Every live data file exists, and none is registered twice (however its location is
    spelled: its rows would count twice)."""
    seen: dict[str, list[str]] = {}
    for p in planned:
        seen.setdefault(location_key(p.path), []).append(p.path)
    for paths in seen.values():
        if len(paths) > 1:
            report.problems.append(
                TableProblem(
                    "data-file",
                    paths[0],
                    f"registered {len(paths)} times in snapshot {snapshot.snapshot_id} "
                    f"({', '.join(sorted(set(paths)))}): its rows count {len(paths)} times",
                )
            )
        size = _size(table, paths[0])
        if isinstance(size, str):
            report.problems.append(TableProblem("data-file", paths[0], size))
