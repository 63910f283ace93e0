"""A v3 table's maintenance on Google Cloud Storage and Azure Blob Storage (emulated on
127.0.0.1: gcp-storage-emulator and Azurite, ``tests/_emulators.py``), with pyiceberg's SQL
catalog and ``FsspecFileIO`` (gcsfs, adlfs) as a user there configures them.

Appends, deletion-vector deletes, compaction, expiry and orphan cleanup leave the rows of a
plain-Python model, read back by ``scan_table`` and pyiceberg after every step; orphan cleanup
lists every object under the table (1,201 planted ones among them), deletes them in batches
and leaves each referenced object where it was.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from _emulators import Emulated, azurite, gcs
from puffin.iceberg import (
    append,
    create_sample_table,
    delete_rows,
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
    sample_batch,
    scan_table,
    upgrade_to_v3,
    verify_table,
)
from puffin.iceberg.verify.orphans import table_files
from puffin.io.listing import object_store

# Azure: more than one bulk delete of 1,000 keys. The GCS emulator rewrites its index on
# every write (1,200 puts take 110 s there), so fewer, still deleted in one batch request.
STRAYS = {"gcs": 50, "azure": 1_200}


@pytest.fixture(scope="module", params=["gcs", "azure"])
def store(request: pytest.FixtureRequest) -> Iterator[Emulated]:
    with gcs() if request.param == "gcs" else azurite() as emulated:
        yield emulated


def _catalog(store: Emulated, folder: Path, warehouse: str) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("lake", uri=f"sqlite:///{folder / 'catalog.db'}",
                         warehouse=f"{store.root}/{warehouse}", **store.properties)  # fmt: skip
    catalog.create_namespace("db")
    return catalog


def _read_alike(table: Any, model: set[int], step: str) -> None:
    ours = scan_table(table, selected_fields=("id",)).to_arrow().column("id").to_pylist()
    theirs = table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
    assert sorted(ours) == sorted(model), f"scan_table after {step}"
    assert sorted(theirs) == sorted(model), f"pyiceberg after {step}"
    assert verify_table(table).problems == [], step


@pytest.mark.slow  # about 15 s a store
def test_maintenance_on_the_store_keeps_the_model_rows(store: Emulated, tmp_path: Path) -> None:
    catalog = _catalog(store, tmp_path, "life")
    table = upgrade_to_v3(create_sample_table(catalog, "db.t", rows=300, files=3))
    assert table.location().startswith(store.root + "/")
    model = set(range(300))
    for round_ in range(2):
        first = 10_000 * (round_ + 1)
        table = append(table, sample_batch(40, start=first, seed=round_), statistics="none")
        model |= set(range(first, first + 40))
    _read_alike(table, model, "appends")

    sevens = [i for i in range(300) if i % 7 == 0]
    table = delete_rows(table, f"id in ({', '.join(map(str, sevens))})").table
    model -= set(sevens)
    _read_alike(table, model, "deletes")
    table = rewrite_data_files(table, min_input_files=2, min_deleted_fraction=0.0).table
    _read_alike(table, model, "compaction")
    table = expire_snapshots(table, older_than=datetime.timedelta(0)).table
    assert len(table.metadata.snapshots) == 1
    _read_alike(table, model, "expiry")

    # After expiry nothing under the table is unreferenced: every object there now stays.
    before = {path for path, _, _ in table_files(table, object_store(table.location(), table.io))}
    strays = [f"{table.location()}/data/stray-{i:04d}.parquet" for i in range(STRAYS[store.name])]
    strays.append(f"{table.location()}/metadata/stray.metadata.json.tmp")
    store.fs.pipe({store.key(s): b"left by a killed write" for s in strays})
    time.sleep(1.1)
    dry = remove_orphan_files(table, older_than=datetime.timedelta(0),
                              allow_short_grace_period=True, dry_run=True)  # fmt: skip
    assert sorted(o.path for o in dry.orphans) == sorted(strays)
    assert all(store.fs.exists(store.key(s)) for s in strays[:3]), "a dry run deletes nothing"

    done = remove_orphan_files(table, older_than=datetime.timedelta(0),
                               allow_short_grace_period=True)  # fmt: skip
    assert sorted(o.path for o in done.removed) == sorted(strays)
    assert done.failed == []
    assert done.requests["delete"] == -(-len(strays) // 1_000), f"batches: {dict(done.requests)}"
    found = store.fs.find(store.key(table.location()))
    left = {f"{store.root}/{path.split('/', 1)[1]}" for path in found}
    assert not left & set(strays)
    assert before <= left, "orphan cleanup deleted a referenced object"
    _read_alike(table.refresh(), model, "orphan cleanup")
