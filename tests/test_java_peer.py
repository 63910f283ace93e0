"""Iceberg Java 1.10.2, the reference, reads what we write and writes what we read (issue 21).

One Spark 3.5 session with Iceberg Java serves the whole module (tests/peers/iceberg_java.py).
Java and we share one SQLite ``catalog.db``: Java's ``JdbcCatalog`` and our ``local_catalog``
(pyiceberg's ``SqlCatalog``) see the same tables, so each commits on top of the other's
snapshots as two engines do in production.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from iceberg_fixtures import commit_position_deletes_v2, make_catalog
from peers import comparable_rows, read_pyiceberg
from peers.iceberg_java import ROW_LINEAGE, JavaPeer
from puffin.iceberg import (
    add_files,
    append,
    compute_table_statistics,
    create_sample_table,
    delete_rows,
    overwrite,
    sample_batch,
    upgrade_to_v3,
    verify_table,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaPeer]:
    """One Iceberg Java server for the module; stopped when the module ends."""
    with JavaPeer(tmp_path_factory.mktemp("java")) as peer:
        yield peer


def _lineage(java: JavaPeer, table: Table) -> dict[int, tuple[int, int]]:
    """``{id: (_row_id, _last_updated_sequence_number)}`` as Java reads the current snapshot,
    after checking Java's rows equal pyiceberg's."""
    got = java.read(table.metadata_location, ["*", *ROW_LINEAGE])
    schema = table.schema()
    assert comparable_rows(got, schema) == comparable_rows(
        read_pyiceberg(table.metadata_location), schema
    )
    ids = got.column("id").to_pylist()
    row_ids = got.column("_row_id").to_pylist()
    sequences = got.column("_last_updated_sequence_number").to_pylist()
    assert None not in row_ids and None not in sequences
    assert len(set(row_ids)) == len(row_ids), "Java sees a row id twice"
    return {i: (r, s) for i, r, s in zip(ids, row_ids, sequences, strict=True)}


def _stable(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]) -> None:
    """Surviving rows keep their row id and their last-updated sequence number."""
    kept = before.keys() & after.keys()
    assert kept, "no row survived to compare"
    assert {i: before[i] for i in kept} == {i: after[i] for i in kept}


def test_java_reads_every_state_of_our_v3_table(tmp_path: Path, java: JavaPeer) -> None:
    """v2 with position deletes → upgrade → delete → append → delete → overwrite →
    add_files → statistics: Java reads the rows pyiceberg reads, with stable row ids."""
    catalog = make_catalog(tmp_path)
    base = create_sample_table(catalog, "db.seq", rows=3000, files=3)
    files = [t.file.file_path for t in base.scan().plan_files()]
    v2 = commit_position_deletes_v2(
        catalog, base, {files[0]: np.arange(0, 50, dtype=np.int64)}, new_identifier="db.seq2"
    )
    table = upgrade_to_v3(v2)
    states = [_lineage(java, table)]
    table = delete_rows(table, "category = 7").table
    states.append(_lineage(java, table))
    table = append(table, sample_batch(500, start=3000, seed=1))
    states.append(_lineage(java, table))
    table = delete_rows(table, "category in (1, 2, 3)").table
    states.append(_lineage(java, table))
    table = overwrite(table, sample_batch(200, start=4000, seed=2), "id >= 3400")
    states.append(_lineage(java, table))
    extra = tmp_path / "extra.parquet"
    pq.write_table(sample_batch(100, start=5000, seed=3), extra)
    table = add_files(table, [str(extra)])
    compute_table_statistics(table)
    table = catalog.load_table("db.seq2")
    states.append(_lineage(java, table))
    for before, after in itertools.pairwise(states):
        _stable(before, after)
    last = states[-1].keys()
    assert {4000, 4199, 5000, 5099} <= last and not any(3400 <= i < 3500 for i in last)
    assert verify_table(table).ok, verify_table(table).problems


def _ids(table: pa.Table) -> set[int]:
    return set(table.column("id").to_pylist())


def test_java_reads_a_table_by_the_shared_catalog(tmp_path: Path, java: JavaPeer) -> None:
    """Java's JdbcCatalog lists and reads the table our catalog committed, and sees our next
    commit at once (no cached table)."""
    catalog: Catalog = make_catalog(tmp_path)
    table = upgrade_to_v3(create_sample_table(catalog, "db.shared", rows=1000, files=2))
    listed = java.sql("SHOW TABLES IN `default`.db", warehouse=tmp_path)
    assert listed.column("tableName").to_pylist() == ["shared"]
    assert _ids(java.sql("SELECT id FROM `default`.db.shared", warehouse=tmp_path)) == set(
        range(1000)
    )
    delete_rows(table, "id < 100")
    after = java.sql("SELECT id FROM `default`.db.shared", warehouse=tmp_path)
    assert _ids(after) == set(range(100, 1000))
