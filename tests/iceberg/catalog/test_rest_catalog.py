"""Our v3 commits through a REST catalog whose server is Iceberg Java's ``CatalogHandlers``.

The server (``tests/peers/RestCatalogServer.java``, :mod:`peers.rest_catalog`) applies every
commit with Java's ``TableMetadata`` builder over a ``JdbcCatalog``: the v3 upgrade, the
``add-snapshot`` updates with ``first-row-id``/``added-rows`` and their requirements are
checked by the reference implementation, not by pyiceberg. A commit Java refuses fails the
test with Java's message (pyiceberg raises the REST error).

DuckDB attaches the same catalog (``ATTACH ... (TYPE iceberg, ENDPOINT ...)``) and deletes
from a v3 table our library made. What each version does is pinned here:

* without DuckDB's ``httpfs`` extension the ATTACH itself fails (the iceberg extension's
  REST client is httpfs's): ``make peers`` installs it, and under ``make test`` its absence
  fails the run;
* with it, DuckDB 1.4.4 refuses the delete (``Delete from Iceberg V3 tables`` is not
  implemented) and DuckDB 1.5.5 commits it, as one Puffin deletion vector per data file that
  merges the vector our library wrote (``POST /v1/transactions/commit``).

The httpfs extension is looked for as the wheels ``duckdb-ext-httpfs`` 1.4.4.20260205 (in
``.venv``) and ``duckdb-extension-httpfs`` 1.5.5 (in ``.venv-duckdb15``) install it, on each
interpreter's ``sys.path`` (``PYTHONPATH`` counts).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.table import Table

from peers._common import PeerError, run_child, side_python
from peers.rest_catalog import RestCatalogServer
from puffin.iceberg import append, delete_rows, deletion_vector_refs, scan_table, upgrade_to_v3

pytestmark = [pytest.mark.peer, pytest.mark.java]

NAMESPACE = "db"
NO_HTTPFS = (
    "An error occurred while trying to automatically install the required extension 'httpfs'"
)
V3_DELETE_1_4 = "Not implemented Error: Delete from Iceberg V3 tables"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestCatalogServer]:
    with RestCatalogServer(tmp_path_factory.mktemp("rest")) as running:
        running.catalog().create_namespace(NAMESPACE)
        yield running


def batch(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"row-{i}" for i in ids], pa.string()),
        "score": pa.array([i * 0.5 for i in ids], pa.float64()),
    })


def rows(table: pa.Table) -> list[tuple[object, ...]]:
    """Rows of the model's columns, sorted: the order of a scan is not a contract."""
    columns = [table.column(name).to_pylist() for name in ("id", "name", "score")]
    return sorted(zip(*columns, strict=True))


def v2_table(server: RestCatalogServer, name: str, first: pa.Table) -> Table:
    """A v2 table pyiceberg creates and appends ``first`` to, through the REST catalog."""
    catalog = server.catalog()
    table = catalog.create_table(f"{NAMESPACE}.{name}", schema=first.schema,
                                 properties={"format-version": "2"})
    table.append(first)
    return catalog.load_table(f"{NAMESPACE}.{name}")


def live_delete_files(table: Table) -> list[tuple[str, str, int]]:
    """(format, path, record count) of every live delete file of the current snapshot."""
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

    snapshot = table.current_snapshot()
    assert snapshot is not None
    found = []
    for manifest in snapshot.manifests(table.io):
        if manifest.content != ManifestContent.DELETES:
            continue
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
            if entry.status == ManifestEntryStatus.DELETED:
                continue
            found.append((entry.data_file.file_format.value, entry.data_file.file_path,
                          entry.data_file.record_count))
    return sorted(found)


def test_pyiceberg_creates_appends_and_reads_through_java(server: RestCatalogServer) -> None:
    first, second = batch(0, 20), batch(20, 5)
    table = v2_table(server, "plain", first)
    table.append(second)
    table = server.catalog().load_table(f"{NAMESPACE}.plain")

    assert table.metadata.format_version == 2
    assert Path(table.metadata_location).is_file()  # written by Java's HadoopFileIO
    assert str(table.metadata_location).startswith(str(server.warehouse))
    assert len(table.metadata.snapshots) == 2
    assert rows(table.scan().to_arrow()) == rows(pa.concat_tables([first, second]))
    assert [NAMESPACE] == [ns[0] for ns in server.catalog().list_namespaces()]


def test_our_v3_commits_pass_java_metadata_builder(server: RestCatalogServer) -> None:
    first, second = batch(0, 30), batch(100, 10)
    table = v2_table(server, "v3", first)

    table = upgrade_to_v3(table)
    assert table.metadata.format_version == 3
    deleted = delete_rows(table, "id < 7")
    assert deleted.deleted_rows == 7
    table = append(server.catalog().load_table(f"{NAMESPACE}.v3"), second)
    # a second delete across both data files: one more vector, the first one replaced
    deleted = delete_rows(table, "id >= 25 and id < 105")
    assert deleted.deleted_rows == 5 + 5

    table = server.catalog().load_table(f"{NAMESPACE}.v3")  # Java's metadata, as committed
    everything = pa.concat_tables([first, second])
    keep = pc.invert(pc.or_(pc.less(everything["id"], 7),
                            pc.and_(pc.greater_equal(everything["id"], 25),
                                    pc.less(everything["id"], 105))))
    model = everything.filter(keep)
    assert table.metadata.format_version == 3
    assert rows(scan_table(table).to_arrow()) == rows(model)
    # Row lineage as Java accepted it: the rows of `first` got ids 0..29 when the delete's
    # manifest list assigned the data manifest its first-row-id, the appended rows 30..39.
    assert table.metadata.next_row_id == len(first) + len(second)
    lineage = scan_table(table, selected_fields=("id", "_row_id")).to_arrow()
    expected = {i: i for i in range(30)} | {100 + j: 30 + j for j in range(10)}
    assert dict(zip(lineage["id"].to_pylist(), lineage["_row_id"].to_pylist(), strict=True)) \
        == {i: expected[i] for i in model["id"].to_pylist()}
    refs = deletion_vector_refs(table)
    assert sorted(ref.record_count for ref in refs) == [5, 7 + 5]
    assert all(fmt == "PUFFIN" for fmt, _, _ in live_delete_files(table))


def test_java_refuses_an_invalid_commit(server: RestCatalogServer) -> None:
    """The control: the server does check, with Java's message, and commits nothing."""
    from pyiceberg.exceptions import BadRequestError
    from pyiceberg.table.update import AddSnapshotUpdate

    table = v2_table(server, "control", batch(0, 3))
    snapshot = table.current_snapshot()
    assert snapshot is not None
    catalog = server.catalog()
    with pytest.raises(BadRequestError, match="ValidationException: Snapshot already exists"):
        catalog.commit_table(table, (), (AddSnapshotUpdate(snapshot=snapshot),))
    after = catalog.load_table(f"{NAMESPACE}.control")
    assert after.metadata_location == table.metadata_location


# DuckDB -----------------------------------------------------------------------------------

FIND_HTTPFS = """
import glob, sys
found = [p for entry in sys.path
         for p in glob.glob(entry + "/{package}/extensions/v{version}/**/httpfs.duckdb_extension",
                            recursive=True)]
print(found[0] if found else "")
"""


def httpfs_file(python: str, package: str, version: str) -> str:
    """The httpfs extension a wheel put on ``python``'s path, or '' if there is none."""
    done = subprocess.run(
        [python, "-c", FIND_HTTPFS.format(package=package, version=version)],
        capture_output=True, text=True, check=True, timeout=60,
    )
    return done.stdout.strip()


def attach_sql(server: RestCatalogServer) -> str:
    return (f"ATTACH '{server.warehouse}' AS rest (TYPE iceberg, ENDPOINT '{server.uri}', "
            "AUTHORIZATION_TYPE 'none')")


def v3_table_with_vector(server: RestCatalogServer, name: str) -> tuple[Table, pa.Table]:
    """A v3 table of our library's: 40 rows in one file, rows 0..3 deleted with a vector."""
    first = batch(0, 40)
    table = upgrade_to_v3(v2_table(server, name, first))
    delete_rows(table, "id < 4")
    table = server.catalog().load_table(f"{NAMESPACE}.{name}")
    (ref,) = deletion_vector_refs(table)
    assert ref.record_count == 4
    return table, first


def _require_httpfs(what: str) -> None:
    """Under ``make test`` the peers' venvs have httpfs (``make peers``): its absence fails."""
    import os

    if os.environ.get("PUFFIN_REQUIRE_PEERS") == "1":
        pytest.fail(f"{what} is not installed: run `make peers`")


def test_duckdb_1_4_deletes_through_the_rest_catalog(server: RestCatalogServer) -> None:
    import sys

    from puffin.conformance.adapters._tables import connect_duckdb

    table, _ = v3_table_with_vector(server, "duck14")
    before = table.metadata_location
    httpfs = httpfs_file(sys.executable, "duckdb_ext", "1.4.4")
    con = connect_duckdb()
    try:
        if not httpfs:
            _require_httpfs("duckdb-ext-httpfs in .venv")
            with pytest.raises(Exception, match=NO_HTTPFS):
                con.execute(attach_sql(server))
            return
        con.execute(f"LOAD '{httpfs}'")
        con.execute(attach_sql(server))
        assert con.execute(f"SELECT count(*) FROM rest.{NAMESPACE}.duck14").fetchall() == [(36,)]
        with pytest.raises(Exception, match=V3_DELETE_1_4):
            con.execute(f"DELETE FROM rest.{NAMESPACE}.duck14 WHERE id = 10")
    finally:
        con.close()
    after = server.catalog().load_table(f"{NAMESPACE}.duck14")
    assert after.metadata_location == before  # nothing was committed


def test_duckdb_1_5_deletes_through_the_rest_catalog(server: RestCatalogServer) -> None:
    python = side_python(".venv-duckdb15")
    table, first = v3_table_with_vector(server, "duck15")
    (ours,) = deletion_vector_refs(table)
    httpfs = httpfs_file(str(python), "duckdb_extension_httpfs", "1.5.5")
    delete = f"DELETE FROM rest.{NAMESPACE}.duck15 WHERE id >= 10 AND id < 13"
    if not httpfs:
        _require_httpfs("duckdb-extension-httpfs in .venv-duckdb15")
        with pytest.raises(PeerError, match=NO_HTTPFS):
            run_child(python, "_duckdb15_query.py", [f"{attach_sql(server)}; {delete}"],
                      timeout=180)
        return
    done = run_child(python, "_duckdb15_query.py",
                     [f"LOAD '{httpfs}'; {attach_sql(server)}; {delete}"], timeout=180)
    assert done.column(0).to_pylist() == [3]

    table = server.catalog().load_table(f"{NAMESPACE}.duck15")
    model = first.filter(pc.invert(pc.or_(
        pc.less(first["id"], 4),
        pc.and_(pc.greater_equal(first["id"], 10), pc.less(first["id"], 13)))))
    assert rows(scan_table(table).to_arrow()) == rows(model)
    # DuckDB 1.5.5 wrote a Puffin deletion vector (no Parquet position deletes) that holds
    # our vector's positions and its own, and dropped ours from the live delete manifests.
    (theirs,) = deletion_vector_refs(table)
    assert theirs.referenced_data_file == ours.referenced_data_file
    assert theirs.path != ours.path and theirs.record_count == 4 + 3
    assert live_delete_files(table) == [("PUFFIN", theirs.path, 7)]
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary.operation.value == "delete"
    assert "POST /v1/transactions/commit -> 204" in server.log()


# Every other table operation -------------------------------------------------------------


def _row_ids(table: Table) -> dict[int, int]:
    got = scan_table(table, selected_fields=("id", "_row_id")).to_arrow()
    return dict(zip(got["id"].to_pylist(), got["_row_id"].to_pylist(), strict=True))


def test_every_table_operation_passes_java_metadata_builder(
    server: RestCatalogServer, tmp_path: Path
) -> None:
    """overwrite, add_files, statistics, schema change and tag (``transaction``), the two
    rewrites, expire and orphan removal, each committed through Java's ``CatalogHandlers``
    and read back as the model computed from the batches says."""
    import datetime

    import pyarrow.parquet as pq

    from puffin.iceberg import (
        add_files,
        compute_table_statistics,
        expire_snapshots,
        overwrite,
        read_table_statistics,
        remove_orphan_files,
        rewrite_data_files,
        rewrite_deletion_vectors,
        transaction,
        update_table_statistics,
    )

    catalog = server.catalog()
    name = f"{NAMESPACE}.ops"

    def check(model: pa.Table) -> Table:
        table = catalog.load_table(name)  # the metadata as Java committed it
        assert rows(scan_table(table).to_arrow()) == rows(model)
        return table

    model = batch(0, 50)
    table = upgrade_to_v3(v2_table(server, "ops", model))
    table = delete_rows(table, "id < 5").table
    model = model.filter(pc.greater_equal(model["id"], 5))
    table = overwrite(table, batch(200, 10), "id >= 40")
    model = pa.concat_tables([model.filter(pc.less(model["id"], 40)), batch(200, 10)])
    extra = tmp_path / "extra.parquet"
    pq.write_table(batch(300, 5), extra)
    add_files(check(model), [str(extra)])
    model = pa.concat_tables([model, batch(300, 5)])
    # Rows of the overwrite's file: a second Puffin file (the first file's vector is in one).
    table = delete_rows(check(model), "id >= 205 and id < 207").table
    model = model.filter(pc.invert(pc.and_(pc.greater_equal(model["id"], 205),
                                           pc.less(model["id"], 207))))
    compute_table_statistics(check(model), progress=False)
    table = check(model)
    (column,) = [c for c in read_table_statistics(table).columns if c.name == "id"]
    assert round(column.ndv) == model.num_rows
    ids = _row_ids(table)

    with transaction(table) as tx:
        tx.update_schema().add_column("note", pa_string()).commit()
        tx.manage_snapshots().create_tag(table.current_snapshot().snapshot_id, "kept").commit()
    table = check(model.append_column("note", pa.nulls(model.num_rows, pa.string())))
    model = model.append_column("note", pa.nulls(model.num_rows, pa.string()))
    assert "kept" in table.metadata.refs and _row_ids(table) == ids

    gathered = rewrite_deletion_vectors(table)
    assert (gathered.files_before, gathered.files_after) == (2, 1)
    compacted = rewrite_data_files(check(model), min_deleted_fraction=0.0, min_input_files=2)
    assert compacted.snapshot_id is not None and compacted.removed_vectors > 0
    table = check(model)
    assert _row_ids(table) == ids
    assert compacted.statistics == "carried"  # exact before: a compaction changes no row
    update_table_statistics(table, progress=False)  # already current: nothing to do

    expired = expire_snapshots(table, older_than=datetime.timedelta(0))
    assert expired.expired_snapshot_ids and expired.deleted_files > 0
    table = check(model)
    assert table.metadata.refs["kept"].snapshot_id in {s.snapshot_id for s in table.snapshots()}
    assert remove_orphan_files(table, older_than=datetime.timedelta(0), dry_run=True).removed == []
    assert _row_ids(table) == ids


def pa_string() -> object:
    from pyiceberg.types import StringType

    return StringType()
