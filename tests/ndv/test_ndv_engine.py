"""The NDV engine (puffin.ndv.engine): sketches byte-identical to ThetaSketch.from_values.

The oracle is ``ThetaSketch.from_values`` on the whole column at once (itself checked against
mmh3 and datasketches in test_theta.py); the engine must give the same bytes however the
values are cut into batches, row groups, files, threads and dictionaries.  Budget: a few s.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import functools
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from puffin.blobs.theta.files import ThetaSketch
from puffin.ndv.engine import ColumnSketch, sketch_parts
from puffin.ndv.parquet import NdvColumn, dictionary_columns, sketch_parquet
from puffin.types import parse_type

RNG = np.random.default_rng(17)


def _batches(values: pa.Array, size: int) -> list[pa.Array]:
    return [values.slice(s, size) for s in range(0, len(values), size)]


def _engine(values: pa.Array, iceberg_type: str, size: int, lg_k: int = 6) -> ThetaSketch:
    sketch = ColumnSketch(iceberg_type, lg_k=lg_k)
    for batch in _batches(values, size):
        sketch.add(batch)
    return sketch.result()


def _same(a: ThetaSketch, b: ThetaSketch) -> None:
    assert a.serialize() == b.serialize()
    assert a.theta64 == b.theta64 and a.num_retained == b.num_retained


COLUMNS: dict[str, tuple[str, pa.Array]] = {
    "long": ("long", pa.array(RNG.integers(-(2**62), 2**62, 20_000))),
    "int nulls": (
        "int",
        pa.array(RNG.integers(0, 3000, 20_000, dtype=np.int32), mask=RNG.random(20_000) < 0.1),
    ),
    "double": (
        "double",
        pa.array(np.concatenate([RNG.standard_normal(5000), [np.nan, -0.0, 0.0, np.inf]])),
    ),
    "float": ("float", pa.array(RNG.standard_normal(5000).astype(np.float32))),
    "string nulls empty": (
        "string",
        pa.array(
            [None if i % 7 == 0 else ("" if i % 11 == 0 else f"v-{i % 900}") for i in range(8000)]
        ),
    ),
    "large_string": (
        "string",
        pa.array([f"user-{i}" * (i % 4) for i in range(6000)], pa.large_string()),
    ),
    "binary": ("binary", pa.array([bytes([i % 256]) * (i % 40) for i in range(5000)], pa.binary())),
    "date": (
        "date",
        pa.array(RNG.integers(0, 500, 9000, dtype=np.int32), pa.int32()).cast(pa.date32()),
    ),
    "timestamp": ("timestamp", pa.array(RNG.integers(0, 10**15, 5000)).cast(pa.timestamp("us"))),
    "decimal": (
        "decimal(12, 2)",
        pa.array(
            [decimal.Decimal(int(v)) / 100 for v in RNG.integers(-(10**9), 10**9, 3000)],
            pa.decimal128(12, 2),
        ),
    ),
    "uuid": (
        "uuid",
        pa.array(
            [uuid.UUID(int=int(v)).bytes for v in RNG.integers(0, 2**62, 3000)], pa.binary(16)
        ),
    ),
    "boolean": ("boolean", pa.array([True, False, None] * 100)),
}


@pytest.mark.parametrize("name", sorted(COLUMNS))
@pytest.mark.parametrize("size", [1, 777, 1 << 20])
def test_batches_give_the_sketch_of_the_whole_column(name: str, size: int) -> None:
    iceberg_type, values = COLUMNS[name]
    if size == 1:
        values = values.slice(0, 300)  # one value a batch: slow, so fewer values
    expected = ThetaSketch.from_values(values, iceberg_type, lg_k=6)
    _same(_engine(values, iceberg_type, size), expected)
    chunked = pa.chunked_array(_batches(values, 1000), type=values.type)
    sketch = ColumnSketch(iceberg_type, lg_k=6)
    sketch.add(chunked)
    _same(sketch.result(), expected)
    assert sketch.non_null == len(values) - values.null_count


def test_exact_mode_and_empty() -> None:
    sketch = ColumnSketch("long")
    assert sketch.result().is_empty
    sketch.add(pa.array([1, 2, 2, None, 3], pa.int64()))
    assert sketch.result().estimate == 3.0 and sketch.non_null == 4
    sketch.add(pa.array([], pa.int64()))
    assert sketch.result().serialize() == ThetaSketch.from_values([1, 2, 3], "long").serialize()


def _dictionary(indices: list[int | None], entries: list[str | None]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(entries))


def test_dictionary_hashes_only_the_entries_rows_use() -> None:
    entries = [f"e{i}" for i in range(200)] + [None]
    used = [i * 3 for i in range(60)] + [200, None]  # 200: a null entry; None: a null index
    array = _dictionary(used, entries)
    sketch = ColumnSketch("string", lg_k=5)
    sketch.add(array)
    _same(sketch.result(), ThetaSketch.from_values(array.dictionary_decode(), "string", lg_k=5))
    assert sketch.non_null == len(used) - 1  # as ``puffin ndv`` counts: null indices only


def test_dictionary_shared_across_batches_and_replaced() -> None:
    """Batches of one dictionary are hashed together; a new dictionary flushes the old one."""
    first = pa.array([f"a{i}" for i in range(500)])
    second = pa.array([f"b{i}" for i in range(500)])
    parts = [
        pa.DictionaryArray.from_arrays(pa.array(RNG.integers(0, 100, 50), pa.int32()), first),
        pa.DictionaryArray.from_arrays(pa.array(RNG.integers(300, 400, 50), pa.int32()), first),
        pa.DictionaryArray.from_arrays(pa.array(RNG.integers(0, 500, 50), pa.int32()), second),
        pa.DictionaryArray.from_arrays(pa.array(RNG.integers(0, 500, 50), pa.int32()), first),
    ]
    sketch = ColumnSketch("string", lg_k=5)
    for part in parts:
        sketch.add(part)
    decoded = pa.concat_arrays([p.dictionary_decode() for p in parts])
    _same(sketch.result(), ThetaSketch.from_values(decoded, "string", lg_k=5))
    unused = ColumnSketch("string", lg_k=5)
    unused.add(pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int32()), first))
    assert unused.result().is_empty


def test_cast_to_the_iceberg_arrow_type() -> None:
    """``cast=True`` sketches what ``puffin ndv`` always sketched: the cast values."""
    values = pa.array(RNG.integers(0, 2**31, 4000, dtype=np.uint32), pa.uint32())
    sketch = ColumnSketch("long", lg_k=6, cast=True)
    sketch.add(values)
    _same(sketch.result(), ThetaSketch.from_values(values.cast(pa.int64()), "long", lg_k=6))
    millis = pa.array(RNG.integers(0, 10**12, 3000)).cast(pa.timestamp("ms"))
    sketch = ColumnSketch("timestamp", lg_k=6, cast=True)
    sketch.add(millis)
    expected = ThetaSketch.from_values(millis.cast(pa.timestamp("us")), "timestamp", lg_k=6)
    _same(sketch.result(), expected)


def test_union_of_pieces() -> None:
    values = pa.array(RNG.integers(0, 10**9, 30_000))
    parts = [ColumnSketch("long", lg_k=7) for _ in range(3)]
    for i, batch in enumerate(_batches(values, 4096)):
        parts[i % 3].add(batch)
    _same(ColumnSketch.union(parts), ThetaSketch.from_values(values, "long", lg_k=7))


# -- Parquet -------------------------------------------------------------------------------


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    numbers = pa.array(rng.integers(0, 50_000, rows))
    return pa.table(
        {
            "id": pa.array(rng.integers(0, 2**62, rows)),
            "i32": pa.array(rng.integers(0, 5000, rows, dtype=np.int32)),
            "x": pa.array(rng.standard_normal(rows), mask=rng.random(rows) < 0.05),
            "s": pc.binary_join_element_wise("user-", pc.cast(numbers, pa.string()), ""),
            "code": pa.array([f"code-{v}" for v in rng.integers(0, 40, rows)]),
            "day": pa.array(rng.integers(0, 100, rows, dtype=np.int32)).cast(pa.date32()),
        }
    )


TYPES = {"id": "long", "i32": "int", "x": "double", "s": "string", "code": "string", "day": "date"}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("ndv")
    paths = []
    for i, rows in enumerate([30_000, 1, 17_000]):
        path = folder / f"f{i}.parquet"
        pq.write_table(_table(rows, i), path, row_group_size=7_000)
        paths.append(path)
    empty = folder / "empty.parquet"
    pq.write_table(_table(0, 9).cast(_table(1, 9).schema), empty)
    return [*paths, empty]


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_parquet_files_match_from_values(files: list[Path], threads: int) -> None:
    columns = [NdvColumn(name, parse_type(t)) for name, t in TYPES.items()]
    result = sketch_parquet(
        [str(p) for p in files], columns, lg_k=8, batch_rows=2500, threads=threads
    )
    data = pa.concat_tables(pq.read_table(p) for p in files)
    assert result.rows == data.num_rows
    for column, sketch, non_null in zip(columns, result.sketches, result.non_null, strict=True):
        values = data.column(column.name)
        _same(sketch, ThetaSketch.from_values(values, TYPES[column.name], lg_k=8))
        assert non_null == len(values) - values.null_count


def test_low_cardinality_strings_are_read_as_dictionaries(files: list[Path]) -> None:
    meta = pq.read_metadata(files[0])
    assert dictionary_columns(meta, ["s", "code"]) == ["code"]
    assert dictionary_columns(meta, []) == []


def test_progress_callback_counts_every_row(files: list[Path]) -> None:
    seen: dict[int, int] = {}

    def on_batch(rows: int, index: int) -> None:
        seen[index] = seen.get(index, 0) + rows

    sketch_parquet(
        [str(p) for p in files], [NdvColumn("id", parse_type("long"))], on_batch=on_batch
    )
    assert seen == {0: 30_000, 1: 1, 2: 17_000}


def _corrupt(source: Path, target: Path) -> None:
    """A copy whose first column chunk's pages are garbage (the footer stays valid)."""
    data = bytearray(source.read_bytes())
    start = pq.read_metadata(source).row_group(0).column(0).data_page_offset
    data[start + 40 : start + 4000] = b"\xff" * 3960
    target.write_bytes(bytes(data))


def test_first_failure_in_file_order_is_raised_with_its_place(
    files: list[Path], tmp_path: Path
) -> None:
    bad_a, bad_b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    _corrupt(files[0], bad_a)
    _corrupt(files[2], bad_b)
    places: list[tuple[str, str | None]] = []

    @contextlib.contextmanager
    def guard(path: str, column: str | None) -> Iterator[None]:
        try:
            yield
        except Exception:
            places.append((path, column))
            raise

    columns = [NdvColumn("id", parse_type("long")), NdvColumn("s", parse_type("string"))]
    paths = [str(files[2]), str(bad_a), str(bad_b)]
    with pytest.raises((OSError, pa.ArrowException)):  # pyarrow's error for the broken page
        sketch_parquet(paths, columns, guard=guard, threads=2, batch_rows=1000)
    assert places == [(str(bad_a), None)]


def test_a_value_error_names_its_column(tmp_path: Path) -> None:
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"u": pa.array([1, 2**40], pa.uint64())}), path)
    places: list[Any] = []

    @contextlib.contextmanager
    def guard(path: str, column: str | None) -> Iterator[None]:
        try:
            yield
        except (ValueError, TypeError, pa.ArrowInvalid) as exc:
            places.append((column, type(exc)))
            raise

    with pytest.raises((ValueError, TypeError, pa.ArrowInvalid)):
        sketch_parquet([str(path)], [NdvColumn("u", parse_type("int"))], guard=guard)
    assert [p[0] for p in places] == ["u"]


def test_dates_from_python_and_arrow_agree() -> None:
    days = [dt.date(2020, 1, 1) + dt.timedelta(days=int(d)) for d in RNG.integers(0, 900, 2000)]
    sketch = ColumnSketch("date", lg_k=6)
    sketch.add(pa.array(days))
    _same(sketch.result(), ThetaSketch.from_values(days, "date", lg_k=6))


def test_parts_with_absent_columns_and_a_failing_part() -> None:
    """``sketch_parts``: a ``None`` column is skipped (a file without it); a part that fails
    is reported by its index and key."""
    values = pa.array(RNG.integers(0, 10**6, 9000))

    def part(lo: int, hi: int, absent: bool) -> Iterator[tuple[int, dict[Any, Any]]]:
        for s in range(lo, hi, 1000):
            batch = values.slice(s, min(1000, hi - s))
            yield len(batch), {"a": batch, 7: None if absent else batch}

    parts = [functools.partial(part, 0, 4000, False), functools.partial(part, 4000, 9000, True)]
    result = sketch_parts(parts, {"a": "long", 7: "long"}, lg_k=6, threads=2)
    _same(result.sketches["a"], ThetaSketch.from_values(values, "long", lg_k=6))
    _same(result.sketches[7], ThetaSketch.from_values(values.slice(0, 4000), "long", lg_k=6))
    assert result.rows == 9000 and result.non_null == {"a": 9000, 7: 4000}

    def bad() -> Iterator[tuple[int, dict[Any, Any]]]:
        yield 1, {"a": pa.array(["not a long"])}

    places: list[tuple[int, Any]] = []

    @contextlib.contextmanager
    def guard(index: int, key: Any) -> Iterator[None]:
        try:
            yield
        except TypeError:
            places.append((index, key))
            raise

    with pytest.raises(TypeError):
        sketch_parts([parts[0], bad, bad], {"a": "long", 7: "long"}, threads=2, guard=guard)
    assert places == [(1, "a")]
