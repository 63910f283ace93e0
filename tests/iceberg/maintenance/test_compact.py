"""``rewrite_data_files``: data files with deleted rows (and small files) written again
without them; rows as a model computed without any Iceberg reader says, row lineage kept,
statistics exact afterwards; with partial progress, the file groups committed in batches, a
failed batch leaving its files, an interrupt after a commit saying what landed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import make_catalog
from puffin.errors import InterruptedAfterCommit, UsageError
from puffin.iceberg import (
    compute_table_statistics,
    create_sample_table,
    delete_rows,
    read_table_statistics,
    rewrite_data_files,
    scan_table,
    update_table_statistics,
    upgrade_to_v3,
    verify_table,
)
from puffin.iceberg.maintenance.compact import CompactOptions, compact
from puffin.iceberg.metadata.delete_files import live_delete_files
from puffin.iceberg.scan.lineage import LAST_UPDATED_FIELD_ID, ROW_ID_FIELD_ID
from puffin.iceberg.scan.plan import plan_files
from puffin.iceberg.verify.orphans import find_orphans
from puffin.iceberg.writes.rewrite import rewrite_files
from puffin.io.locations import local_path

# Deletes as row filters and as pyarrow conditions (the model). The four files of the
# sample table hold ids 0-749, 750-1499, 1500-2249 and 2250-2999.
DELETES: list[tuple[str, Any]] = [
    ("id < 100", lambda t: pc.less(t["id"], 100)),  # 13 % of the first file
    (
        "id >= 800 and id < 850",
        lambda t: pc.and_(pc.greater_equal(t["id"], 800), pc.less(t["id"], 850)),
    ),  # 7 % of the second
    ("id = 1600", lambda t: pc.equal(t["id"], 1600)),  # one row of the third
    ("id >= 2700", lambda t: pc.greater_equal(t["id"], 2700)),  # 40 % of the fourth
]
LINEAGE = ("_row_id", "_last_updated_sequence_number")


def _deleted(tmp_path: Path, *, statistics: bool = True) -> tuple[Any, pa.Table]:
    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=3000, files=4, seed=4)
    model = pa.concat_tables(
        pq.read_table(local_path(p.path)) for p in plan_files(table, table.current_snapshot())
    )
    table = upgrade_to_v3(table)
    if statistics:
        compute_table_statistics(table, progress=False)
        table = table.refresh()
    for where, condition in DELETES:
        table = delete_rows(table, where).table
        model = model.filter(pc.invert(pc.fill_null(condition(model), False)))
    return table, model.sort_by("id")


def _lineage(table: Any) -> dict[int, tuple[int, int]]:
    got = scan_table(table, selected_fields=("id", *LINEAGE)).to_arrow()
    columns = [got[n].to_pylist() for n in ("id", *LINEAGE)]
    return {i: (r, s) for i, r, s in zip(*columns, strict=True)}


def _data_files(table: Any) -> list[str]:
    return sorted(p.path for p in plan_files(table, table.current_snapshot()))


def test_heavy_files_are_rewritten_without_deleted_rows_keeping_row_ids(tmp_path: Path) -> None:
    table, model = _deleted(tmp_path)
    before_files = _data_files(table)
    lineage = _lineage(table)
    assert len(lineage) == model.num_rows
    # Files of about 44 KB are not small against a 40 KB target (75 %): only the fourth file,
    # 40 % deleted, is rewritten. (Against the default 512 MiB every file is small and joins
    # the rewrite of its partition, as in Java.)
    result = rewrite_data_files(table, min_deleted_fraction=0.3, target_file_size_bytes=40_000)
    table = result.table
    assert (result.rewritten_files, result.added_files) == (1, 1)
    assert result.dropped_deleted_rows == 300 and result.rows == 450
    assert result.removed_vectors == 1
    after_files = _data_files(table)
    assert len(set(before_files) - set(after_files)) == 1
    current = table.current_snapshot()
    assert current.summary.operation.value == "replace"
    assert current.summary["deleted-data-files"] == "1"
    assert current.summary["added-data-files"] == "1"
    assert current.summary["total-records"] == str(3000 - 300)
    assert scan_table(table).to_arrow().sort_by("id").equals(model)
    assert table.scan().to_arrow().sort_by("id").equals(model)  # pyiceberg's own reader
    assert _lineage(table) == lineage
    # The new file stores both lineage columns under their reserved field ids.
    (new,) = set(after_files) - set(before_files)
    written = pq.read_schema(local_path(new))
    ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in written}
    assert ids["_row_id"] == ROW_ID_FIELD_ID and ids["_last_updated_sequence_number"] == (
        LAST_UPDATED_FIELD_ID
    )
    assert verify_table(table).ok, verify_table(table).problems


def test_everything_compacted_leaves_no_delete_and_exact_statistics(tmp_path: Path) -> None:
    table, model = _deleted(tmp_path)
    update_table_statistics(table, progress=False)  # the deletes made them upper bounds
    table = table.refresh()
    assert read_table_statistics(table).columns[0].mode == "upper bound"
    lineage = _lineage(table)
    result = rewrite_data_files(table, min_deleted_fraction=0.0, min_input_files=2)
    table = result.table
    assert (result.rewritten_files, result.added_files) == (4, 1)
    assert live_delete_files(table, table.current_snapshot()) == {}
    assert scan_table(table).to_arrow().sort_by("id").equals(model)
    assert _lineage(table) == lineage
    assert result.statistics == "exact"
    stats = read_table_statistics(table)
    assert stats.snapshot_id == table.current_snapshot().snapshot_id
    # lg_k 12 keeps 4,096 hashes: below that the sketch counts exactly.
    for column in stats.columns:
        assert column.mode != "upper bound"
        name = table.schema().find_field(column.field_id).name
        values = model[name].to_pylist()  # in Python: Arrow has no uuid kernel
        exact = len({v for v in values if v is not None})
        assert round(column.ndv) == exact, name
    # Nothing left to compact.
    again = rewrite_data_files(table, min_deleted_fraction=0.0, min_input_files=2)
    assert again.snapshot_id is None and again.rewritten_files == 0


def test_exact_statistics_are_carried_over(tmp_path: Path) -> None:
    table, model = _deleted(tmp_path, statistics=False)
    compute_table_statistics(table, progress=False)  # exact, after the deletes
    table = table.refresh()
    before = {c.field_id: (c.ndv, c.blob.properties) for c in read_table_statistics(table).columns}
    result = rewrite_data_files(table, min_deleted_fraction=0.1, target_file_size_bytes=40_000)
    assert result.statistics == "carried" and result.rewritten_files == 2
    after = read_table_statistics(result.table)
    assert after.snapshot_id == result.snapshot_id
    assert {c.field_id: (c.ndv, c.blob.properties) for c in after.columns} == before
    assert scan_table(result.table).to_arrow().sort_by("id").equals(model)


def test_where_and_target_size(tmp_path: Path) -> None:
    table, model = _deleted(tmp_path, statistics=False)
    lineage = _lineage(table)
    only_first = rewrite_data_files(table, where="id < 750", min_deleted_fraction=0.0)
    assert only_first.rewritten_files == 1 and only_first.dropped_deleted_rows == 100
    # The three files with deletes left, each written again into files of about 20 KB.
    small = rewrite_data_files(
        only_first.table, min_deleted_fraction=0.0, target_file_size_bytes=20_000
    )
    assert small.rewritten_files == 3 and small.added_files > 3
    assert scan_table(small.table).to_arrow().sort_by("id").equals(model)
    assert _lineage(small.table) == lineage


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"min_deleted_fraction": 1.5}, "min_deleted_fraction"),
        ({"min_input_files": 0}, "min_input_files"),
        ({"target_file_size_bytes": 0}, "target file size"),
        ({"statistics": "full"}, "statistics"),
        ({"where": "nope > 1"}, "nope"),
    ],
)
def test_bad_arguments_are_usage_errors(tmp_path: Path, kwargs: Any, words: str) -> None:
    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path), "db.t", rows=10))
    with pytest.raises(UsageError, match=words):
        rewrite_data_files(table, **kwargs)


def test_a_delete_opens_only_files_whose_metrics_allow_a_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deletes (and so the compaction's inputs) stay cheap on a table of many files: a
    data file whose id bounds exclude the condition is not read (issue 34's benchmark found
    every delete reading every file)."""
    from puffin.iceberg.scan import matching

    table, model = _deleted(tmp_path, statistics=False)
    opened: list[str] = []
    real = matching.matching_positions

    def counting(table: Any, planned: Any, bound: Any, *job: Any) -> Any:
        opened.append(planned.path)
        return real(table, planned, bound, *job)

    monkeypatch.setattr(matching, "matching_positions", counting)
    table = delete_rows(table, "id = 1200 or id = 1201").table  # both in the second file
    assert len(opened) == 1, opened
    model = model.filter(pc.invert(pc.is_in(model["id"], pa.array([1200, 1201], pa.int64()))))
    assert scan_table(table).to_arrow().sort_by("id").equals(model)
    opened.clear()
    table = delete_rows(table, "category = 5").table  # no id bound: every file may match
    assert len(opened) == 4


# --- partial progress: the file groups committed in batches (Java's partial-progress) ---


#: The four files (about 44 KB each) fall into four groups of one file; two batches of two.
OPTIONS: dict[str, Any] = {
    "min_deleted_fraction": 0.0,
    "target_file_size_bytes": 50_000,
    "statistics": "none",
    "partial_progress_commits": 2,
}


def _paths(table: Any) -> set[str]:
    return {p.path for p in plan_files(table, table.current_snapshot())}


def test_each_batch_of_groups_is_a_commit(tmp_path: Path) -> None:
    table, model = _deleted(tmp_path, statistics=False)
    lineage, before = _lineage(table), table.current_snapshot().snapshot_id
    result = rewrite_data_files(table, **OPTIONS)
    assert (result.commits, result.failed_groups, result.rewritten_files) == (2, 0, 4)
    assert result.rows == model.num_rows and result.first_failure == ""
    table = result.table
    first = table.snapshot_by_id(table.current_snapshot().parent_snapshot_id)
    assert first.parent_snapshot_id == before
    for snapshot in (first, table.current_snapshot()):
        assert snapshot.summary.operation.value == "replace"
        assert snapshot.summary["deleted-data-files"] == "2"
    assert scan_table(table).to_arrow().sort_by("id").equals(model)
    assert _lineage(table) == lineage
    assert verify_table(table).ok


def test_a_failed_batch_leaves_its_files_and_the_other_commits(tmp_path: Path) -> None:
    table, _ = _deleted(tmp_path, statistics=False)
    files = sorted(_paths(table))
    Path(local_path(files[-1])).unlink()  # its batch cannot be read
    result = rewrite_data_files(table, **OPTIONS, max_attempts=1)
    assert (result.commits, result.failed_groups, result.rewritten_files) == (1, 2, 2)
    assert result.first_failure.startswith("TableFileNotFoundError: ")
    assert str(local_path(files[-1])) in result.first_failure
    left = _paths(result.table)
    assert files[-1] in left and len(left & set(files)) == 2  # the failed batch's, as they were
    assert not find_orphans(result.table)  # what the failed batch wrote is gone


def test_an_interrupt_after_a_commit_says_what_landed(tmp_path: Path) -> None:
    table, _ = _deleted(tmp_path, statistics=False)
    calls: list[int] = []

    def interrupted(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return rewrite_files(*args)

    options = CompactOptions(**OPTIONS)
    with pytest.raises(InterruptedAfterCommit) as caught:
        compact(table, interrupted, options)
    table = table.refresh()
    assert caught.value.snapshot_id == table.current_snapshot().snapshot_id
    assert "2 file groups not compacted" in str(caught.value)
    assert not find_orphans(table)


def test_commits_must_be_at_least_one(tmp_path: Path) -> None:
    table, _ = _deleted(tmp_path, statistics=False)
    with pytest.raises(UsageError, match="partial_progress_commits"):
        rewrite_data_files(table, partial_progress_commits=0)
