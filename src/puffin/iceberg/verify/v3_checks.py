"""Table-level rules of v3 deletes and row lineage, for ``verify_table``.

Each check returns ``(path, message)`` pairs (empty when the table follows the rule), so
``verify_table`` can report them beside its per-file checks:

* PUFFIN delete entries only in v3 tables, and only in delete manifests;
* at most one live deletion vector per data file;
* a vector's cardinality equals its manifest ``record_count``;
* a vector is in its data file's partition spec and partition, and its data sequence number
  is not below the data file's (it would delete nothing: a position delete applies to data
  files of its sequence number or lower; Iceberg Java 1.10 fails a scan on the first);
* row lineage: in a snapshot with ``first-row-id``, every data manifest has a
  ``first_row_id``, delete manifests have none, assigned ranges do not overlap and stay
  below the snapshot's ``first-row-id + added-rows`` and the table's ``next-row-id``.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["check_deletes", "check_row_lineage", "check_v3", "check_vector_targets"]

Finding = tuple[str, str]


def check_deletes(table: Table, snapshot: Snapshot, *, vectors: bool = True) -> list[Finding]:
    """PUFFIN entries where they may not be, two live DVs for one file, wrong cardinality.

    ``vectors=False`` skips reading each vector (cardinality), for callers that check every
    vector themselves (``verify_table``).
    """
    from pyiceberg.manifest import FileFormat, ManifestContent

    from puffin.iceberg.metadata.delete_files import read_vector, vector_ref
    from puffin.iceberg.metadata.manifests import (
        delete_file_key,
        read_manifest_entries,
        read_manifest_list,
    )
    from puffin.io.locations import open_input

    out: list[Finding] = []
    version = table.metadata.format_version
    live: dict[str, str] = {}
    for manifest in read_manifest_list(table.io, snapshot.manifest_list):
        for entry in read_manifest_entries(table.io, manifest):
            df = entry.data_file
            if df.file_format != FileFormat.PUFFIN:
                continue
            where = manifest.manifest_path
            if version < 3:
                out.append((where, f"PUFFIN delete file {df.file_path} in a v{version} table"))
            if manifest.content != ManifestContent.DELETES:
                out.append((where, f"PUFFIN file {df.file_path} listed in a data manifest"))
                continue
            path, referenced = delete_file_key(df)
            if referenced is None:
                continue  # deletes.deletion_vector_refs reports the missing fields
            if referenced in live:
                out.append(
                    (
                        where,
                        f"two live deletion vectors for {referenced}: {live[referenced]} "
                        f"and {path}",
                    )
                )
            live[referenced] = path
            if not vectors:
                continue
            try:
                ref = vector_ref(df, where)
                with open_input(table.io, path) as f:
                    read_vector(f, ref)  # the manifest's record_count checked too
            except (OSError, ValueError) as exc:  # a PuffinError is a ValueError
                out.append(
                    (
                        path,
                        f"deletion vector for {referenced} (manifest record_count "
                        f"{df.record_count}): {exc}",
                    )
                )
    return out


def check_row_lineage(table: Table, snapshot: Snapshot) -> list[Finding]:
    """The row-lineage rules of the snapshot's manifest list (v3 snapshots only)."""
    from pyiceberg.manifest import ManifestContent

    from puffin.iceberg.metadata.manifests import read_manifest_list
    from puffin.iceberg.metadata.v3 import first_row_id_of

    first = snapshot.first_row_id
    if table.metadata.format_version < 3 or first is None:
        return []
    where = snapshot.manifest_list
    out: list[Finding] = []
    next_row_id = getattr(table.metadata, "next_row_id", None)
    if next_row_id is None:
        out.append((where, "v3 table metadata without next-row-id"))
    end = first + (snapshot.added_rows or 0)
    if next_row_id is not None and end > next_row_id:
        out.append((where, f"snapshot rows end at {end}, past next-row-id {next_row_id}"))
    ranges: list[tuple[int, int, str]] = []
    for m in read_manifest_list(table.io, snapshot.manifest_list):
        fri = first_row_id_of(m)
        if m.content != ManifestContent.DATA:
            if fri is not None:
                out.append((m.manifest_path, "delete manifest with a first_row_id"))
            continue
        if fri is None:
            out.append(
                (
                    m.manifest_path,
                    f"data manifest without first_row_id under snapshot "
                    f"{snapshot.snapshot_id}, which has first-row-id {first}",
                )
            )
            continue
        size = int(m.added_rows_count or 0) + int(m.existing_rows_count or 0)
        ranges.append((fri, fri + size, m.manifest_path))
        if next_row_id is not None and fri + size > next_row_id:
            out.append((m.manifest_path, f"row ids up to {fri + size} pass next-row-id"))
    ranges.sort()
    for (_, a_end, a), (b_start, _, b) in itertools.pairwise(ranges):
        if b_start < a_end:
            out.append((b, f"row ids from {b_start} overlap those of {a} (up to {a_end})"))
    return out


def check_v3(
    table: Table,
    snapshot: Snapshot | None = None,
    *,
    vectors: bool = True,
    planned: Sequence[PlannedFile] | None = None,
) -> list[Finding]:
    """Every rule above for ``snapshot`` (default: the current one); ``vectors`` as in
    :func:`check_deletes`; ``planned``: the snapshot's plan, when the caller made it."""
    snap = snapshot if snapshot is not None else table.current_snapshot()
    if snap is None:
        return []
    return [
        *check_deletes(table, snap, vectors=vectors),
        *check_vector_targets(table, snap, planned),
        *check_row_lineage(table, snap),
    ]


def check_vector_targets(
    table: Table, snapshot: Snapshot, planned: Sequence[PlannedFile] | None = None
) -> list[Finding]:
    """Each deletion vector against its live data file as the plan read it (``planned``, or
    planned here): the same partition spec and partition, and a data sequence number not
    below the data file's."""
    from puffin.errors import TableMetadataError
    from puffin.iceberg.metadata.delete_files import deletion_vector_refs
    from puffin.iceberg.scan.delete_file_index import lenient_vectors, partition_key
    from puffin.iceberg.scan.plan import plan_files

    try:
        refs = deletion_vector_refs(table, snapshot)
    except TableMetadataError:
        return []  # check_deletes and verify_table report what is wrong with them
    if not refs:
        return []
    if planned is None:
        with lenient_vectors():  # a vector below its data file is reported here
            planned = plan_files(table, snapshot, equality=True)
    targets = {p.path: p for p in planned}
    out: list[Finding] = []
    for r in refs:
        target = targets.get(r.referenced_data_file)
        if target is None:
            continue  # not live: verify_table says so
        spec_id, values = partition_key(target.data_file)
        where = f"deletion vector for {r.referenced_data_file} in {r.path}"
        if r.partition != values or r.spec_id not in (None, spec_id):
            out.append((r.manifest_path, f"{where} is in partition {r.partition!r} of spec "
                        f"{r.spec_id}, its data file in {values!r} of spec {spec_id}"))  # fmt: skip
        sequence, own = target.data_sequence, r.sequence_number
        if sequence is not None and own is not None and own < sequence:
            out.append((r.manifest_path, f"{where} has data sequence number "
                        f"{own}, below its data file's {sequence}: it deletes "
                        "nothing"))  # fmt: skip
    return out
