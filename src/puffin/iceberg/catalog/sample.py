"""A sample Iceberg table with every common column type, for demos, tests and benchmarks.

The data is generated with NumPy straight into Arrow buffers (no Python loop per row), so a
few million rows take seconds.  Each column has a known number of distinct values, some below
the sketch's exact-mode limit of 4096 and some far above, and a few columns hold nulls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table

__all__ = ["SAMPLE_COLUMNS", "create_sample_table", "sample_batch", "sample_schema"]

#: Column name -> (Iceberg type, what its values are).
SAMPLE_COLUMNS: dict[str, tuple[str, str]] = {
    "id": ("long", "row number, unique"),
    "category": ("int", "0..199, uniform"),
    "amount": ("double", "uniform in [0, 1000), about 1% null"),
    "price": ("decimal(12, 2)", "0.00..999.99 in cents, uniform"),
    "day": ("date", "2020-01-01 plus 0..1999 days"),
    "event_time": ("timestamp", "random microseconds in 2024, about as many as rows"),
    "user_name": ("string", "'user-<k>' for k in 0..49999, about 2% null"),
    "session_id": ("uuid", "random, unique"),
    "tag": ("binary", "the bytes of 'tag-<k>' for k in 0..2999"),
}

_DAY0 = 18262  # 2020-01-01 in days since the epoch
_YEAR_2024_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00 in microseconds


def sample_schema() -> Schema:
    """The sample table's schema (field ids 1..9 in the order of :data:`SAMPLE_COLUMNS`)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        BinaryType,
        DateType,
        DecimalType,
        DoubleType,
        IntegerType,
        LongType,
        NestedField,
        StringType,
        TimestampType,
        UUIDType,
    )

    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "category", IntegerType(), required=False),
        NestedField(3, "amount", DoubleType(), required=False),
        NestedField(4, "price", DecimalType(12, 2), required=False),
        NestedField(5, "day", DateType(), required=False),
        NestedField(6, "event_time", TimestampType(), required=False),
        NestedField(7, "user_name", StringType(), required=False),
        NestedField(8, "session_id", UUIDType(), required=False),
        NestedField(9, "tag", BinaryType(), required=False),
    )


def _with_prefix(prefix: str, keys: np.ndarray[Any, Any], binary: bool) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.cast(pa.array(keys), pa.string())
    joined = pc.binary_join_element_wise(pa.scalar(prefix), text, "")
    return joined.cast(pa.binary()) if binary else joined


def _nulls(rng: np.random.Generator, n: int, fraction: float) -> pa.Buffer | None:
    import numpy as np
    import pyarrow as pa

    if fraction <= 0:
        return None
    valid = rng.random(n) >= fraction
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def sample_batch(rows: int, *, start: int = 0, seed: int = 0) -> pa.Table:
    """``rows`` rows of sample data whose ``id`` starts at ``start``.

    Deterministic for a given ``(rows, start, seed)``; the Arrow types are the ones pyiceberg
    writes for the schema.
    """
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng([seed, start])
    n = rows
    ids = np.arange(start, start + n, dtype=np.int64)
    cents = rng.integers(0, 100_000, n, dtype=np.int64)
    decimal_le16 = np.empty((n, 2), dtype=np.int64)
    decimal_le16[:, 0] = cents
    decimal_le16[:, 1] = cents >> 63  # sign extension of the 128-bit unscaled value
    amount = rng.random(n) * 1000.0
    names = _with_prefix("user-", rng.integers(0, 50_000, n), binary=False)
    names = pa.Array.from_buffers(pa.string(), n, [_nulls(rng, n, 0.02), *names.buffers()[1:]])
    columns: dict[str, pa.Array] = {
        "id": pa.array(ids),
        "category": pa.array(rng.integers(0, 200, n, dtype=np.int32)),
        "amount": pa.Array.from_buffers(
            pa.float64(), n, [_nulls(rng, n, 0.01), pa.py_buffer(amount)]
        ),
        "price": pa.Array.from_buffers(pa.decimal128(12, 2), n, [None, pa.py_buffer(decimal_le16)]),
        "day": pa.array((rng.integers(0, 2000, n) + _DAY0).astype(np.int32), type=pa.int32()).cast(
            pa.date32()
        ),
        "event_time": pa.array(
            rng.integers(0, 366 * 86_400_000_000, n, dtype=np.int64) + _YEAR_2024_US
        ).cast(pa.timestamp("us")),
        "user_name": names,
        "session_id": pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(16), n, [None, pa.py_buffer(rng.bytes(16 * n))]
        ),
        "tag": _with_prefix("tag-", rng.integers(0, 3000, n), binary=True),
    }
    schema = pa.schema(
        [pa.field(name, arr.type, nullable=(name != "id")) for name, arr in columns.items()]
    )
    return pa.Table.from_arrays(list(columns.values()), schema=schema)


def create_sample_table(
    catalog: Catalog,
    identifier: str | tuple[str, ...],
    rows: int = 1_000_000,
    files: int = 4,
    seed: int = 0,
    *,
    replace: bool = False,
    properties: dict[str, str] | None = None,
) -> Table:
    """Create ``identifier`` with :func:`sample_schema` and ``rows`` rows in ``files`` files.

    Each data file is one append (all in one commit), so the table's current snapshot has
    exactly ``files`` data files.  The namespace is created if missing; an existing table
    is an error unless ``replace=True`` drops it first.

    Example::

        from puffin.iceberg import load_catalog, create_sample_table
        table = create_sample_table(load_catalog(), "demo.events", rows=2_000_000, files=8)
    """
    from puffin.iceberg.catalog.sqlite import require_writable_catalog

    if rows < 0 or files < 1:
        raise UsageError(f"need rows >= 0 and files >= 1, got rows={rows}, files={files}")
    require_writable_catalog(catalog)  # before a file is written
    namespace = catalog.namespace_from(identifier)
    if namespace:
        catalog.create_namespace_if_not_exists(namespace)
    if replace and catalog.table_exists(identifier):
        catalog.drop_table(identifier)
    table = catalog.create_table(
        identifier,
        schema=sample_schema(),
        properties={
            # One Parquet file per append, whatever its size.
            "write.target-file-size-bytes": str(1 << 40),
            **(properties or {}),
        },
    )
    per_file = [rows // files + (1 if i < rows % files else 0) for i in range(files)]
    with table.transaction() as tx:
        start = 0
        for count in per_file:
            if count:
                tx.append(sample_batch(count, start=start, seed=seed))
            start += count
    return catalog.load_table(identifier)
