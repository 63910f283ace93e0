"""Table statistics on SQLite-catalog tables: computed, committed, reloaded and checked.

Oracles: pyiceberg reloads the committed ``StatisticsFile`` from table metadata and parses the
Puffin footer with its own ``PuffinFile``; pyiceberg's scan (its own reader, which applies
position deletes and deletion vectors itself) gives the rows whose exact distinct counts
(``pyarrow.compute.count_distinct``) the ``ndv`` must equal below 4096 and bracket within the
sketch's 3-sigma bounds above; ``datasketches`` decodes every blob.
"""

from __future__ import annotations

import io
import struct
import sys
import warnings
from pathlib import Path
from typing import Any

import datasketches
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import zstandard
from pyiceberg.catalog import Catalog
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.puffin import PuffinFile
from pyiceberg.types import (
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
)

import puffin
from iceberg_fixtures import (
    commit_deletion_vectors_v3,
    commit_position_deletes_v2,
    make_catalog,
)
from puffin.blobs.theta.files import ThetaSketch, read_theta_blobs
from puffin.errors import UsageError
from puffin.iceberg import (
    ColumnNotFoundError,
    SkippedColumnWarning,
    SnapshotNotFoundError,
    StatisticsNotFoundError,
    compute_table_statistics,
    create_sample_table,
    read_table_statistics,
    verify_table,
)
from puffin.iceberg.scan.arrow import to_iceberg_arrow
from puffin.io.locations import local_path
from puffin.support.progress import Progress

ROWS = 40_000
FILES = 4
EXACT_LIMIT = 4096


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return make_catalog(tmp_path_factory.mktemp("stats-warehouse"))


def _plain(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Extension columns (uuid) as their storage, for pyarrow kernels."""
    if isinstance(column.type, pa.BaseExtensionType):
        return pa.chunked_array([c.storage for c in column.chunks], type=column.type.storage_type)
    return column


def _ndv(blob: Any) -> int:
    """The ``ndv`` property of a pyiceberg ``BlobMetadata``."""
    assert blob.properties is not None
    return int(blob.properties["ndv"])


def _exact(column: pa.ChunkedArray) -> int:
    return int(pc.count_distinct(_plain(column), mode="only_valid").as_py())


def _check_column_ndvs(table: Table, stats: Any, *, snapshot_id: int | None = None) -> None:
    """Every blob's ndv against pyiceberg's scan of the same snapshot."""
    scanned = table.scan(snapshot_id=snapshot_id).to_arrow()
    schema = table.schema()
    assert stats.blob_metadata, "no blobs"
    for blob in stats.blob_metadata:
        (field_id,) = blob.fields
        field = schema.find_field(field_id)
        column = scanned.column(field.name)
        exact = _exact(column)
        ndv = _ndv(blob)
        sketch = read_table_statistics(table, snapshot_id=snapshot_id)[field_id].sketch
        if exact < EXACT_LIMIT:
            assert ndv == exact, (field.name, ndv, exact)
        else:
            assert sketch.lower_bound(3) <= exact <= sketch.upper_bound(3), (field.name, exact)
            assert abs(ndv - exact) / exact < 0.05
        # The same values, read by pyiceberg instead of our scan, give the same sketch bytes.
        values = to_iceberg_arrow(column, field.field_type)
        expected = ThetaSketch.from_values(values, field.field_type)
        assert sketch.serialize() == expected.serialize(), field.name


def _file_bytes(location: str) -> bytes:
    path = local_path(location)
    assert path is not None
    return Path(path).read_bytes()


@pytest.fixture(scope="module")
def sample(catalog: Catalog) -> Table:
    return create_sample_table(catalog, "db.sample", rows=ROWS, files=FILES, seed=4)


def test_compute_commit_reload(catalog: Catalog, sample: Table) -> None:
    assert len(list(sample.scan().plan_files())) == FILES
    snapshot = sample.current_snapshot()
    assert snapshot is not None
    stats = compute_table_statistics(sample)

    reloaded = catalog.load_table("db.sample")
    assert reloaded.metadata.statistics == [stats]  # through the metadata JSON and back
    assert stats.snapshot_id == snapshot.snapshot_id
    name = stats.statistics_path.rsplit("/", 1)[1]
    assert name.startswith(f"{snapshot.snapshot_id}-") and name.endswith(".stats")
    assert stats.statistics_path.startswith(reloaded.metadata.location + "/metadata/")

    data = _file_bytes(stats.statistics_path)
    assert len(data) == stats.file_size_in_bytes
    (payload_size,) = struct.unpack_from("<i", data, len(data) - 12)
    assert payload_size + 16 == stats.file_footer_size_in_bytes  # magic+payload+size+flags+magic

    theirs = PuffinFile(data)  # pyiceberg's own footer parser
    assert "iceberg-puffin" in theirs.footer.properties["created-by"]
    assert puffin.__version__ in theirs.footer.properties["created-by"]
    assert [
        (b.type, b.fields, b.snapshot_id, b.sequence_number, b.properties)
        for b in theirs.footer.blobs
    ] == [
        (b.type, b.fields, b.snapshot_id, b.sequence_number, b.properties)
        for b in stats.blob_metadata
    ]
    assert [b.fields[0] for b in theirs.footer.blobs] == list(range(1, 10))
    for blob in theirs.footer.blobs:
        assert blob.compression_codec == "zstd"
        assert blob.snapshot_id == snapshot.snapshot_id
        assert blob.sequence_number == snapshot.sequence_number
        payload = zstandard.ZstdDecompressor().decompress(
            data[blob.offset : blob.offset + blob.length]
        )
        theirs_sketch = datasketches.compact_theta_sketch.deserialize(payload)
        assert int(theirs_sketch.get_estimate()) == _ndv(blob)

    _check_column_ndvs(reloaded, stats)
    # Both regimes are covered: exact columns and estimated ones.
    ndvs = [_ndv(b) for b in stats.blob_metadata]
    assert min(ndvs) < EXACT_LIMIT < max(ndvs)
    assert verify_table(reloaded).ok


def test_read_table_statistics(catalog: Catalog, sample: Table) -> None:
    table = catalog.load_table("db.sample")
    if not table.metadata.statistics:
        compute_table_statistics(table)
        table = catalog.load_table("db.sample")
    read = read_table_statistics(table)
    assert [c.name for c in read] == [f.name for f in table.schema().fields]
    assert read["category"].ndv == 200 and read["category"].estimate == 200.0
    assert read[5].name == "day" and read["day"].ndv == 2000
    assert read.ndv()["tag"] == 3000
    assert read.created_by is not None and "iceberg-puffin" in read.created_by
    with pytest.raises(KeyError):
        read["nope"]
    with pytest.raises(SnapshotNotFoundError, match="no snapshot 42"):
        read_table_statistics(table, snapshot_id=42)
    parent = table.current_snapshot().parent_snapshot_id  # type: ignore[union-attr]
    with pytest.raises(StatisticsNotFoundError, match="no statistics file for snapshot"):
        read_table_statistics(table, snapshot_id=parent)


def test_position_deletes_are_applied(catalog: Catalog, sample: Table) -> None:
    # Delete every row with category < 20 in every file: 200 categories become 180.
    positions = {}
    for task in sample.scan().plan_files():
        path = local_path(task.file.file_path)
        assert path is not None
        category = pq.read_table(path, columns=["category"]).column(0).to_numpy()
        positions[task.file.file_path] = np.flatnonzero(category < 20)
    table = commit_position_deletes_v2(catalog, sample, positions, new_identifier="db.v2del")
    stats = compute_table_statistics(table)
    table = catalog.load_table("db.v2del")
    assert [s for s in table.metadata.statistics if s.snapshot_id == stats.snapshot_id] == [stats]
    by_field = {b.fields[0]: _ndv(b) for b in stats.blob_metadata}
    assert by_field[2] == 180
    _check_column_ndvs(table, stats)


def test_deletion_vectors_are_applied(catalog: Catalog, sample: Table) -> None:
    positions = {}
    for task in sample.scan().plan_files():
        path = local_path(task.file.file_path)
        assert path is not None
        day = pq.read_table(path, columns=["day"]).column(0).cast(pa.int32()).to_numpy()
        positions[task.file.file_path] = np.flatnonzero(day % 2 == 0)  # drop the even days
    table, _ = commit_deletion_vectors_v3(catalog, sample, positions, new_identifier="db.v3")
    table = catalog.load_table("db.v3")
    stats = compute_table_statistics(table, commit=False)
    by_field = {b.fields[0]: _ndv(b) for b in stats.blob_metadata}
    assert by_field[5] == 1000
    _check_column_ndvs_uncommitted(table, stats)
    # pyiceberg 0.12 cannot write v3 metadata; the commit goes through puffin.iceberg.metadata.v3.
    committed = compute_table_statistics(table, columns=["day"])
    table = catalog.load_table("db.v3")
    assert table.metadata.format_version == 3
    assert [s for s in table.metadata.statistics if s.snapshot_id == committed.snapshot_id] == [
        committed
    ]
    assert {b.fields[0]: _ndv(b) for b in committed.blob_metadata} == {5: 1000}


def _check_column_ndvs_uncommitted(table: Table, stats: Any) -> None:
    scanned = table.scan().to_arrow()
    data = _file_bytes(stats.statistics_path)
    with puffin.open(data, footer_size=stats.file_footer_size_in_bytes) as reader:
        blobs = read_theta_blobs(reader)
    for blob in blobs:
        field = table.schema().find_field(blob.field_id)
        column = scanned.column(field.name)
        expected = ThetaSketch.from_values(
            to_iceberg_arrow(column, field.field_type), field.field_type
        )
        assert blob.sketch.serialize() == expected.serialize(), field.name
        exact = _exact(column)
        if exact < EXACT_LIMIT:
            assert blob.ndv == exact


def test_renamed_promoted_and_added_columns(catalog: Catalog) -> None:
    table = create_sample_table(catalog, "db.evolve", rows=20_000, files=2, seed=5)
    with table.update_schema() as update:
        update.update_column("category", LongType())  # int -> long: old files hold int32
        update.rename_column("category", "segment")
        update.rename_column("user_name", "login")
        update.add_column("extra", StringType())
    table = catalog.load_table("db.evolve")
    more = pa.table(
        {
            "id": pa.array([10**9, 10**9 + 1], pa.int64()),
            "segment": pa.array([5000, 5001], pa.int64()),
            "login": pa.array(["new-a", "new-b"]),
            "extra": pa.array(["x", "y"]),
        },
        schema=pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                pa.field("segment", pa.int64()),
                pa.field("login", pa.string()),
                pa.field("extra", pa.string()),
            ]
        ),
    )
    table.append(more)  # a new snapshot whose schema has the new names
    table = catalog.load_table("db.evolve")
    stats = compute_table_statistics(table, columns=["segment", "login", "extra", "id"])
    table = catalog.load_table("db.evolve")
    read = read_table_statistics(table)
    assert [c.name for c in read] == ["segment", "login", "extra", "id"]
    assert read["segment"].field_id == 2 and read["segment"].ndv == 202
    assert read["extra"].ndv == 2
    _check_column_ndvs(table, stats)


def test_name_mapped_files(catalog: Catalog, tmp_path: Path) -> None:
    """Files added without Parquet field ids are matched through the table's name mapping."""
    schema = Schema(
        NestedField(1, "k", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
    )
    table = catalog.create_table("db.mapped", schema=schema)
    paths = []
    for i in range(2):
        path = tmp_path / f"part-{i}.parquet"
        data = pa.table(
            {
                "k": pa.array(np.arange(i * 1500, i * 1500 + 2500, dtype=np.int64)),
                "name": pa.array([f"n{j % 700}" for j in range(2500)]),
            }
        )
        pq.write_table(data, path)
        paths.append(f"file://{path}")
    table.add_files(paths)
    table = catalog.load_table("db.mapped")
    assert table.metadata.name_mapping() is not None
    stats = compute_table_statistics(table)
    by_field = {b.fields[0]: _ndv(b) for b in stats.blob_metadata}
    assert by_field == {1: 4000, 2: 700}


def test_nested_unsupported_and_errors(catalog: Catalog) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(
            2,
            "point",
            StructType(
                NestedField(3, "x", IntegerType(), required=False),
                NestedField(4, "label", StringType(), required=False),
            ),
            required=False,
        ),
        NestedField(5, "tags", ListType(6, StringType(), element_required=False), required=False),
    )
    table = catalog.create_table("db.nested", schema=schema)
    with pytest.raises(SnapshotNotFoundError, match="no snapshot yet"):
        compute_table_statistics(table)
    n = 3000
    table.append(
        pa.table(
            {
                "id": pa.array(np.arange(n, dtype=np.int64)),
                "point": pa.array(
                    [
                        None if i % 10 == 0 else {"x": i % 37, "label": f"l{i % 11}"}
                        for i in range(n)
                    ],
                    pa.struct([("x", pa.int32()), ("label", pa.large_string())]),
                ),
                "tags": pa.array([["a", "b"]] * n, pa.large_list(pa.large_string())),
            }
        )
    )
    table = catalog.load_table("db.nested")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats = compute_table_statistics(table)
    notes = [str(w.message) for w in caught if issubclass(w.category, SkippedColumnWarning)]
    assert any("'point'" in n for n in notes) and any("'tags'" in n for n in notes)
    assert [b.fields for b in stats.blob_metadata] == [[1]]

    stats = compute_table_statistics(table, columns=["point.x", "point.label", 1])
    by_field = {b.fields[0]: _ndv(b) for b in stats.blob_metadata}
    # Null structs make their fields null (pyiceberg's scan agrees).
    scanned = table.scan().to_arrow().column("point").combine_chunks()
    ids = table.schema()  # create_table assigns fresh field ids
    assert by_field == {
        ids.find_field("point.x").field_id: _exact(
            pa.chunked_array([pc.struct_field(scanned, "x")])
        ),
        ids.find_field("point.label").field_id: _exact(
            pa.chunked_array([pc.struct_field(scanned, "label")])
        ),
        1: n,
    }
    assert by_field[ids.find_field("point.x").field_id] == 37
    with pytest.raises(ColumnNotFoundError, match="no column 'nope'"):
        compute_table_statistics(table, columns=["nope"])
    with pytest.raises(UsageError, match="not a primitive type"):
        compute_table_statistics(table, columns=["tags"])
    with pytest.raises(SnapshotNotFoundError, match="no snapshot 123"):
        compute_table_statistics(table, snapshot_id=123)


def test_verify_catches_broken_statistics(catalog: Catalog, tmp_path: Path) -> None:
    table = create_sample_table(catalog, "db.broken", rows=5_000, files=2, seed=9)
    stats = compute_table_statistics(table, columns=["id", "category"])
    table = catalog.load_table("db.broken")
    assert verify_table(table).ok

    # 1. The metadata's footer size is off by one.
    footer = stats.file_footer_size_in_bytes
    wrong = stats.model_copy(update={"file_footer_size_in_bytes": footer + 1})
    with table.update_statistics() as update:
        update.set_statistics(wrong)
    table = catalog.load_table("db.broken")
    report = verify_table(table)
    assert [p.kind for p in report.problems] == ["statistics"]
    assert "file-footer-size-in-bytes" in report.problems[0].message
    with pytest.raises(puffin.PuffinError):  # reading with the metadata's footer size fails
        read_table_statistics(table)

    # 2. The blob metadata in the table disagrees with the footer.
    blobs = [b.model_copy() for b in stats.blob_metadata]
    blobs[1] = blobs[1].model_copy(update={"properties": {"ndv": "7"}})
    with table.update_statistics() as update:
        update.set_statistics(stats.model_copy(update={"blob_metadata": blobs}))
    report = verify_table(catalog.load_table("db.broken"))
    assert len(report.problems) == 1 and "blob 1" in report.problems[0].message
    assert "properties" in report.problems[0].message

    # 3. The file is truncated.
    with catalog.load_table("db.broken").update_statistics() as update:
        update.set_statistics(stats)
    path = local_path(stats.statistics_path)
    assert path is not None
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-5])
    report = verify_table(catalog.load_table("db.broken"))
    messages = [p.message for p in report.problems]
    assert any(f"metadata says file-size-in-bytes {len(data)}" in m for m in messages)
    assert any("not a valid Puffin file" in m for m in messages)

    # 4. The file is gone.
    Path(path).unlink()
    report = verify_table(catalog.load_table("db.broken"))
    assert [p.message for p in report.problems] == ["file does not exist"]


def test_progress_bar_only_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Terminal()
    with Progress(1000, label="stats ", stream=tty) as bar:
        bar.update(500)
        bar.set_note("file 1/2")
        bar.update(500)
    out = tty.getvalue()
    assert out.startswith("\rstats [") and "100%" in out and "file 1/2" in out
    assert out.endswith("\n")

    pipe = io.StringIO()
    with Progress(1000, stream=pipe) as bar:
        bar.update(1000)
    assert pipe.getvalue() == ""
    assert sys.stderr is not None


def test_dictionary_and_plain_string_columns(catalog: Catalog) -> None:
    """Dictionary-encoded strings are sketched from their used dictionary values, columns
    that fell back to plain pages are read plainly; both give the sketch of every value."""
    from puffin.iceberg.scan.file_columns import read_as_dictionary

    n = 300_000
    rng = np.random.default_rng(11)
    keys = pa.array(rng.integers(0, 100, n))
    data = pa.table(
        {
            "low": pc.binary_join_element_wise("k-", pc.cast(keys, pa.string()), ""),
            "high": pc.binary_join_element_wise(
                "row-", pc.cast(pa.array(np.arange(n)), pa.string()), ""
            ),
            "raw": pc.cast(
                pc.binary_join_element_wise("b", pc.cast(keys, pa.string()), ""), pa.binary()
            ),
        }
    )
    table = catalog.create_table("db.strings", schema=data.schema)
    table.append(data)
    table = catalog.load_table("db.strings")
    (task,) = table.scan().plan_files()
    path = local_path(task.file.file_path)
    assert path is not None
    metadata = pq.ParquetFile(path).metadata
    chosen = read_as_dictionary(metadata, ["high", "low", "raw"])
    assert chosen == ["low", "raw"]
    stats = compute_table_statistics(table)
    by_field = {b.fields[0]: _ndv(b) for b in stats.blob_metadata}
    ids = table.schema()
    assert by_field[ids.find_field("low").field_id] == 100
    assert by_field[ids.find_field("raw").field_id] == 100
    _check_column_ndvs(table, stats)


def test_progress_drawn_by_the_job(
    catalog: Catalog, sample: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    compute_table_statistics(sample, columns=["id"], commit=False, progress=True)
    err = capsys.readouterr().err
    assert "\rstatistics [" in err and "100%" in err and f"file {FILES}/{FILES}" in err
    assert f"{ROWS // 1000:.1f}k/{ROWS // 1000:.1f}k rows" in err
    compute_table_statistics(sample, columns=["id"], commit=False)  # stderr is not a tty
    assert capsys.readouterr().err == ""


def test_statistics_take_a_renamed_columns_new_name(catalog: Catalog) -> None:
    table = create_sample_table(catalog, "db.renamed", rows=2000, files=1)
    with table.update_schema() as update:
        update.rename_column("category", "kind")
    stats = compute_table_statistics(table, columns=["kind"], commit=False, progress=False)
    renamed = stats.blob_metadata[0].fields
    old = compute_table_statistics(table, columns=["category"], commit=False, progress=False)
    assert renamed == old.blob_metadata[0].fields  # the same field, by either name
