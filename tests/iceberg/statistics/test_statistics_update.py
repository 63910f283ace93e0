"""Statistics that keep up with appends, byte for byte what a full computation builds.

Before, every append left the table's statistics on an old snapshot and the only way on was
to sketch the whole table again.  The incremental update sketches the appended files only
and unions with the last statistics file; after appends only, each blob is byte-identical to
``compute_table_statistics`` of the new snapshot (the canonical union); after a delete it
is flagged as an upper bound.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from puffin.cli import main
from puffin.iceberg import (
    append,
    compute_table_statistics,
    create_sample_table,
    delete_rows,
    local_catalog,
    read_table_statistics,
    sample_batch,
    update_table_statistics,
    upgrade_to_v3,
)
from puffin.iceberg.statistics.files import NDV_UPPER_BOUND


def _blobs(table: Any, snapshot_id: int) -> dict[int, tuple[bytes, dict[str, str]]]:
    stats = read_table_statistics(table, snapshot_id=snapshot_id)
    return {c.field_id: (c.sketch.serialize(), dict(c.blob.properties)) for c in stats.columns}


@pytest.mark.parametrize("version", [2, 3])
def test_appends_update_statistics_byte_identical_to_a_full_computation(
    tmp_path: Path, version: int
) -> None:
    table = create_sample_table(local_catalog(tmp_path), "db.t", rows=3000, files=2, seed=1)
    if version == 3:
        table = upgrade_to_v3(table)
    compute_table_statistics(table, progress=False)
    for day, rows in enumerate((2000, 500, 4000), start=1):  # estimation mode by the end
        table = append(table, sample_batch(rows, start=10_000 * day, seed=day))
    snapshot = table.current_snapshot().snapshot_id
    incremental = _blobs(table, snapshot)
    assert all(NDV_UPPER_BOUND not in props for _, props in incremental.values())

    other = local_catalog(tmp_path).load_table("db.t")
    compute_table_statistics(other, progress=False)  # replaces the snapshot's file
    assert _blobs(other, snapshot) == incremental
    assert len(incremental) >= 8


def test_after_a_delete_the_update_is_an_upper_bound_until_a_full_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = upgrade_to_v3(create_sample_table(local_catalog(tmp_path), "db.t", rows=2000))
    compute_table_statistics(table, progress=False)
    table = delete_rows(table, "category < 5").table
    table = append(table, sample_batch(300, start=50_000, seed=3))  # after a delete
    stats = read_table_statistics(table)
    assert stats.snapshot_id == table.current_snapshot().snapshot_id
    assert all(c.blob.properties.get(NDV_UPPER_BOUND) == "true" for c in stats)
    assert all(c.upper_bound_only and c.mode == "upper bound" for c in stats)
    assert main(["table", "stats", "show", "db.t", "--warehouse", str(tmp_path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["columns"]
    assert all(r["mode"] == "upper bound" and r["exact"] is False for r in shown)
    assert main(["table", "stats", "show", "db.t", "--warehouse", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()[3:]
    assert lines and all(line.endswith("upper bound") for line in lines)
    full = update_table_statistics(table, full=True, progress=False)
    assert all(NDV_UPPER_BOUND not in (b.properties or {}) for b in full.blob_metadata)
    exact = read_table_statistics(local_catalog(tmp_path).load_table("db.t"))
    assert all(c.ndv <= u.ndv for c, u in zip(exact, stats, strict=True))
    assert all(c.mode != "upper bound" for c in exact)


def test_update_catches_up_over_several_snapshots_and_append_can_skip_it(tmp_path: Path) -> None:
    table = upgrade_to_v3(create_sample_table(local_catalog(tmp_path), "db.t", rows=1000))
    compute_table_statistics(table, progress=False)
    base = table.current_snapshot().snapshot_id
    table = append(table, sample_batch(100, start=5000), statistics="none")
    table = append(table, sample_batch(100, start=6000), statistics="none")
    assert {s.snapshot_id for s in table.metadata.statistics} == {base}
    update_table_statistics(table, progress=False)
    snapshot = table.current_snapshot().snapshot_id
    incremental = _blobs(table, snapshot)
    other = local_catalog(tmp_path).load_table("db.t")
    compute_table_statistics(other, progress=False)
    assert _blobs(other, snapshot) == incremental


def test_verify_warns_about_stale_statistics_and_the_cli_updates_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from puffin.cli import main
    from puffin.iceberg import verify_table

    table = upgrade_to_v3(create_sample_table(local_catalog(tmp_path), "db.t", rows=800))
    compute_table_statistics(table, progress=False)
    table = append(table, sample_batch(120, start=9000), statistics="none")
    report = verify_table(table)
    assert report.ok
    (stale,) = [w for w in report.warnings if w.kind == "stale-statistics"]
    assert "1 snapshot(s) behind" in stale.message and "120 rows" in stale.message
    wh = ["--warehouse", str(tmp_path), "--no-progress"]
    assert main(["table", "stats", "update", "db.t", *wh, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "table stats update"
    assert doc["snapshot-id"] == table.current_snapshot().snapshot_id
    fresh = local_catalog(tmp_path).load_table("db.t")
    assert not [w for w in verify_table(fresh).warnings if w.kind == "stale-statistics"]
