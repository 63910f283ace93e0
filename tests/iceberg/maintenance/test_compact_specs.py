"""``rewrite_data_files`` after partition spec changes: a field added, removed or replaced,
and files of several specs live at once. Rewritten rows go into the table's current spec
(Java's default ``output-spec-id``), each file holding one partition of it, with the same
rows and row ids as before; the model is the sample's ids minus the deleted ones, and the
partition of every row is computed with pyiceberg's transform, not ours. Java reads the
result in ``test_java_reads_compaction_across_specs``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.transforms import BucketTransform, IdentityTransform, TruncateTransform

from puffin.iceberg import (
    append,
    create_sample_table,
    delete_rows,
    local_catalog,
    rewrite_data_files,
    sample_batch,
    scan_table,
    transaction,
    upgrade_to_v3,
    verify_table,
)
from puffin.iceberg.scan.plan import plan_files
from puffin.io.locations import local_path

LINEAGE = ("_row_id", "_last_updated_sequence_number")


def _add_bucket(tx: Any) -> None:
    with tx.update_spec() as spec:
        spec.add_field("id", BucketTransform(4), "id_bucket")


def _remove_bucket(tx: Any) -> None:
    with tx.update_spec() as spec:
        spec.remove_field("id_bucket")


def _replace_bucket(tx: Any) -> None:
    with tx.update_spec() as spec:
        spec.remove_field("id_bucket")
        spec.add_field("category", IdentityTransform(), "category")


def _add_truncate(tx: Any) -> None:
    with tx.update_spec() as spec:
        spec.add_field("id", TruncateTransform(500), "id_trunc")


Change = Callable[[Any], None]
# Each case: the spec changes, each followed by an append of 300 rows, so that files of
# every spec are live when the compaction runs.
CASES: dict[str, list[Change]] = {
    "added": [_add_bucket],
    "removed": [_add_bucket, _remove_bucket],
    "replaced": [_add_bucket, _replace_bucket],
    "several-specs": [_add_bucket, _replace_bucket, _add_truncate],
}


DELETED = (1, 2, 3)  # categories deleted: about a third of every file's rows


def build(tmp_path: Path, changes: list[Change]) -> tuple[Any, set[int]]:
    """The table after its changes, appends and one delete; the model's ids (read by
    pyiceberg before the delete, filtered here in Python)."""
    from peers.pyiceberg_scan import read_pyiceberg

    table = upgrade_to_v3(create_sample_table(local_catalog(tmp_path), "db.t", rows=1200, files=3))
    for i, change in enumerate(changes):
        with transaction(table) as tx:
            change(tx)
        start = 10_000 * (i + 1)
        table = append(table, sample_batch(300, start=start, seed=i), statistics="none")
    rows = read_pyiceberg(local_path(table.metadata_location) or "").to_pylist()
    table = delete_rows(table, f"category in {DELETED}").table
    return table, {r["id"] for r in rows if r["category"] not in DELETED}


def _partition_of(table: Any, rows: pa.Table) -> list[tuple[Any, ...]]:
    """Each row's partition in the table's current spec, by pyiceberg's transforms."""
    spec, schema = table.spec(), table.schema()
    out = []
    for row in rows.to_pylist():
        values = []
        for field in spec.fields:
            source = schema.find_column_name(field.source_id)
            transform = field.transform.transform(schema.find_field(field.source_id).field_type)
            values.append(transform(row[source]))
        out.append(tuple(values))
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_compaction_after_spec_changes(tmp_path: Path, case: str) -> None:
    table, model = build(tmp_path, CASES[case])
    specs_before = {p.data_file.spec_id for p in plan_files(table, table.current_snapshot())}
    # Files of two specs at least are live (removing the field brings spec 0 back).
    assert len(specs_before) == (2 if case == "removed" else len(CASES[case]) + 1)
    before = scan_table(table, selected_fields=("id", *LINEAGE)).to_arrow().sort_by("id")
    result = rewrite_data_files(table, min_deleted_fraction=0.2, min_input_files=1)
    table = result.table
    assert result.rewritten_files > 0 and verify_table(table).problems == []
    after = scan_table(table, selected_fields=("id", *LINEAGE)).to_arrow().sort_by("id")
    assert set(after.column("id").to_pylist()) == model and after.num_rows == len(model)
    assert after.select(["id", "_row_id"]).equals(before.select(["id", "_row_id"]))
    current = table.spec().spec_id
    planned = plan_files(table, table.current_snapshot())
    assert {p.data_file.spec_id for p in planned} == {current}  # every file rewritten
    for p in planned:  # each file holds rows of its own partition only
        rows = pq.read_table(local_path(p.path) or "")
        partition = tuple(p.data_file.partition[i] for i in range(len(table.spec().fields)))
        assert set(_partition_of(table, rows)) <= {partition}, p.path


def _identity_category(tx: Any) -> None:
    with tx.update_spec() as spec:
        spec.add_field("category", IdentityTransform(), "category")


def test_more_partitions_than_open_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows of old files fall in 200 partitions of the new spec; with 16 files open at a
    time, a partition whose writer was closed gets another file, and with 4 KiB of row-group
    buffer shared by the open writers, the largest is written out: nothing is lost."""
    from puffin.iceberg.writes import _streaming

    monkeypatch.setattr(_streaming, "_MAX_OPEN_PARTITIONS", 16)
    flushes: list[int] = []
    flush = _streaming._RollingWriter.flush

    def counted(self: Any) -> None:
        flushes.append(self.nbytes)
        flush(self)

    monkeypatch.setattr(_streaming._RollingWriter, "flush", counted)
    table, model = build(tmp_path, [_identity_category])
    with transaction(table) as tx:
        tx.set_properties({"write.parquet.row-group-size-bytes": "4096"})
    before = scan_table(table, selected_fields=("id", *LINEAGE)).to_arrow().sort_by("id")
    table = rewrite_data_files(table, min_deleted_fraction=0.2, min_input_files=1).table
    after = scan_table(table, selected_fields=("id", *LINEAGE)).to_arrow().sort_by("id")
    assert set(after.column("id").to_pylist()) == model
    assert after.select(["id", "_row_id"]).equals(before.select(["id", "_row_id"]))
    planned = plan_files(table, table.current_snapshot())
    assert len({p.data_file.partition[0] for p in planned}) > 100 and flushes
    for p in planned:
        rows = pq.read_table(local_path(p.path) or "")
        assert set(rows.column("category").to_pylist()) == {p.data_file.partition[0]}


def test_java_reads_compaction_across_specs(tmp_path: Path, java: Any) -> None:
    from peers.iceberg_java import read_java

    table, model = build(tmp_path, CASES["several-specs"])
    table = rewrite_data_files(table, min_deleted_fraction=0.2, min_input_files=1).table
    rows = read_java(java, local_path(table.metadata_location) or "")
    assert sorted(rows.column("id").to_pylist()) == sorted(model)
