"""``remove_orphan_files``: the guard keeps what lies outside the table, even through a link."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest

pytest.importorskip("pyiceberg")

from iceberg_fixtures import make_catalog
from puffin.iceberg import create_sample_table, remove_orphan_files, sample_batch, upgrade_to_v3
from puffin.iceberg.metadata.table_locations import normalise
from puffin.io.locations import local_path

NOW = datetime.timedelta(0)


def test_a_link_out_of_the_table_is_reported_not_followed(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path / "wh"), "db.t", rows=50))
    root = Path(local_path(table.location()) or "")
    precious = tmp_path / "precious.parquet"
    pq.write_table(sample_batch(5, start=0, seed=1), precious)
    before = precious.read_bytes()
    link = root / "data" / "link.parquet"
    link.symlink_to(precious)
    stray = root / "data" / "stray.parquet"
    stray.write_bytes(b"orphan")
    dry = remove_orphan_files(table, older_than=NOW, dry_run=True)
    assert {o.path for o in dry.orphans} == {str(link), str(stray)}
    assert [o.path for o in dry.removed] == [str(stray)] and stray.exists()
    assert [normalise(p) for p in dry.skipped_outside_table] == [normalise(str(precious))]
    done = remove_orphan_files(table, older_than=NOW, allow_short_grace_period=True)
    assert [o.path for o in done.removed] == [str(stray)] and not stray.exists()
    assert done.deleted == {"data": (1, 6)}
    assert precious.read_bytes() == before and link.is_symlink()
    assert [normalise(p) for p in done.skipped_outside_table] == [normalise(str(precious))]


def test_young_orphans_are_kept(tmp_path: Path) -> None:
    table = upgrade_to_v3(create_sample_table(make_catalog(tmp_path / "wh"), "db.t", rows=50))
    stray = Path(local_path(table.location()) or "") / "data" / "stray.parquet"
    stray.write_bytes(b"orphan")
    assert remove_orphan_files(table).orphans == [] and stray.exists()  # 3 days of grace
    old = (datetime.datetime.now() - datetime.timedelta(days=4)).timestamp()
    os.utime(stray, (old, old))
    assert [o.path for o in remove_orphan_files(table).removed] == [str(stray)]
