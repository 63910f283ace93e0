"""CDC histories through equality deletes, every job held to a model computed in plain Python.

Hypothesis draws a history (tests/cdc_history.py: appends, deletes by key, upserts, keys
repeating across commits, null keys, partitioned or not) on a v2 or v3 table, checked against
the model: ``scan_table``; ``compute_table_statistics`` (the NDV of a column unique per row is
the live row count); ``delete_rows`` (it counts live rows only; on v2 by the table's delete
mode, drawn); then either ``convert_equality_deletes`` (no equality delete left, rows
unchanged, on v3 no ``_row_id`` changed) or ``rewrite_data_files`` (rows unchanged, equality
deletes dropped with the files they applied to).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_history import (
    PARTITIONS,
    build_history,
    cdc_arrow,
    cdc_equality_file,
    cdc_schema,
    commit_change,
    equality_files,
    live_rows,
)
from iceberg_fixtures import make_catalog
from puffin.iceberg import (
    append,
    compute_table_statistics,
    convert_equality_deletes,
    delete_rows,
    rewrite_data_files,
    scan_table,
    upgrade_to_v3,
    verify_table,
)

ids = st.one_of(st.none(), st.integers(0, 6))
step = st.tuples(
    st.sampled_from(["insert", "delete", "upsert"]),
    st.lists(ids, min_size=1, max_size=6),
    st.sampled_from(PARTITIONS),
    st.sampled_from([("id",), ("id", "p")]),
)


@settings(
    max_examples=int(os.environ.get('CDC_EXAMPLES', 12)), deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(
    partitioned=st.booleans(),
    steps=st.lists(step, min_size=2, max_size=6),
    compact=st.booleans(),
    cut=st.integers(0, 40),
    mode=st.sampled_from(["dv", "merge-on-read", "copy-on-write"]),
)
def test_cdc_history_reads_as_the_model_through_every_job(
    tmp_path_factory: pytest.TempPathFactory,
    partitioned: bool,
    steps: list[tuple[str, list[int | None], int, tuple[str, ...]]],
    compact: bool,
    cut: int,
    mode: str,
) -> None:
    version = 3 if mode == "dv" else 2
    folder = tmp_path_factory.mktemp("cdc")
    table, model = build_history(folder, partitioned, steps, version)
    if version == 2:
        with table.transaction() as tx:
            tx.set_properties({"write.delete.mode": mode})
        table = table.refresh()

    assert live_rows(table) == model.live()
    stats = compute_table_statistics(table, columns=["tag"], commit=False)
    assert int(stats.blob_metadata[0].properties["ndv"]) == len(model.live())

    deleted = [r for r in model.live() if r[2] < cut]
    result = delete_rows(table, f"tag < {cut}")
    assert result.deleted_rows == len(deleted)
    table = result.table
    model.rows = [(s, r) for s, r in model.rows if r[2] >= cut]
    assert live_rows(table) == model.live()

    before = _row_ids(table) if version == 3 else None
    if compact:
        compacted = rewrite_data_files(table, min_deleted_fraction=0.0, min_input_files=1,
                                       statistics="none")  # fmt: skip
        table = compacted.table
        assert live_rows(table) == model.live()
        assert before is None or _row_ids(table) == before
        assert not equality_files(table) or compacted.snapshot_id is None
    else:
        converted = convert_equality_deletes(table)
        table = converted.table
        assert not equality_files(table)
        assert live_rows(table) == model.live()
        assert before is None or _row_ids(table) == before
        assert table.metadata.format_version == version


def _row_ids(table: Any) -> list[tuple[int, int]]:
    got = scan_table(table, selected_fields=("tag", "_row_id")).to_arrow()
    return sorted(zip(got.column("tag").to_pylist(), got.column("_row_id").to_pylist(),
                      strict=True))  # fmt: skip


def test_the_command_converts_once_then_finds_nothing(tmp_path: Path) -> None:
    """``puffin table convert-equality-deletes --json`` in its documented shape; a second run
    commits nothing; a v2 table's become a position-delete file; a v1 table (no deletes) is
    refused with one line and exit 1 (a table error)."""
    import contextlib
    import io
    import json

    from puffin.cli import main
    from tests.cli.test_cli import check_shape, documented_shape

    catalog = make_catalog(tmp_path)
    v2 = append(catalog.create_table("db.v2", cdc_schema()), cdc_arrow([(1, 0, 0), (2, 0, 1)]))
    v2 = commit_change(v2, [cdc_equality_file(v2, tmp_path, ("id",), [(2,)], None)], [])
    v1 = catalog.create_table("db.v1", cdc_schema(), properties={"format-version": "1"})
    table = append(upgrade_to_v3(catalog.create_table("db.t", cdc_schema())),
                   cdc_arrow([(1, 0, 0), (None, 0, 1), (2, 1, 2)]))  # fmt: skip
    eq = cdc_equality_file(table, tmp_path, ("id",), [(None,), (2,)], None)
    table = commit_change(table, [eq], [])
    kinds = [w.kind for w in verify_table(table).warnings]
    assert "equality-deletes" in kinds and verify_table(table).ok

    def run(name: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = ["table", "convert-equality-deletes", name, "--warehouse", str(tmp_path)]
            status = main([*args, "--json"])
        return status, out.getvalue(), err.getvalue()

    status, out, _ = run("db.t")
    doc = json.loads(out)
    check_shape(doc, documented_shape("table-convert-equality-deletes"))
    assert (doc["equality_files"], doc["data_files"], doc["converted_rows"]) == (1, 1, 2)
    assert status == 0 and doc["snapshot_id"] is not None
    status, out, _ = run("db.t")
    assert status == 0 and json.loads(out)["snapshot_id"] is None
    converted = catalog.load_table("db.t")
    assert live_rows(converted) == [(1, 0, 0)]
    assert "equality-deletes" not in [w.kind for w in verify_table(converted).warnings]
    status, out, _ = run("db.v2")
    assert status == 0 and json.loads(out)["converted_rows"] == 1
    v2 = catalog.load_table("db.v2")
    assert v2.metadata.format_version == 2 and live_rows(v2) == [(1, 0, 0)]
    kinds = {d.content for d in _live_deletes(v2)}
    assert kinds == {1}  # position deletes, the equality delete file gone
    status, _, err = run("db.v1")
    assert status == 1 and "upgrade" in err and len(err.strip().splitlines()) == 1
    assert v1.metadata.format_version == 1


def _live_deletes(table: Any) -> list[Any]:
    from puffin.iceberg.metadata.delete_files import live_delete_files

    return list(live_delete_files(table, table.current_snapshot()).values())


def test_commits_landing_during_the_conversion_keep_their_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the keys are matched, another writer deletes a row (with a vector on a file the
    conversion gives a vector too) and appends rows: the conversion's commit loses the race,
    starts again on the table as it then is, and every effect is kept."""
    from puffin.iceberg.maintenance import convert_equality as convert

    catalog = make_catalog(tmp_path)
    table = append(upgrade_to_v3(catalog.create_table("db.t", cdc_schema())),
                   cdc_arrow([(1, 0, 0), (2, 0, 1), (3, 0, 2), (None, 0, 3)]))  # fmt: skip
    table = commit_change(table, [cdc_equality_file(table, tmp_path, ("id",), [(2,)], None)], [])
    real, raced = convert._matched, []

    def racing(*args: Any) -> Any:
        if not raced:  # another writer, between the plan and the commit
            raced.append(delete_rows(catalog.load_table("db.t"), "tag = 2").snapshot_id)
            append(catalog.load_table("db.t"), cdc_arrow([(2, 0, 9)]))
        return real(*args)

    monkeypatch.setattr(convert, "_matched", racing)
    result = convert_equality_deletes(table)
    assert result.attempts == 2 and raced[0] is not None
    assert live_rows(result.table) == [(1, 0, 0), (2, 0, 9), (None, 0, 3)]
    assert not equality_files(result.table)
