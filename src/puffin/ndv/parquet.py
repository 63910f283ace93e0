"""``puffin ndv``'s reading: Parquet row groups as parts of the NDV engine.

Only the needed columns are read, ``batch_rows`` at a time from a buffered stream, and
string columns with small dictionaries come as Arrow dictionaries, so the engine hashes
each used entry once instead of every row (see :mod:`puffin.ndv.engine`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.blobs.theta import DEFAULT_LG_K, ThetaSketch
from puffin.blobs.types import IcebergType
from puffin.ndv.engine import Batches, sketch_parts

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["NdvColumn", "ParquetNdv", "dictionary_columns", "sketch_parquet"]

#: Bytes of a column chunk read at a time: pyarrow then keeps no row group it has decoded.
READ_BUFFER = 1 << 20
# A string column is read as Arrow dictionaries only when its column chunks take at most
# this many bytes a row (plus the slack): the dictionary is then small next to the rows and
# hashing it saves most of the work.  pyarrow hands every batch its own copy of the
# dictionary, so a large one (a column with many distinct values, or one that fell back to
# plain pages) would cost memory and be hashed again and again instead.
_DICT_ROW_BYTES = 2
_DICTIONARY_SLACK = 64 << 10


def dictionary_columns(
    metadata: pq.FileMetaData,
    names: Sequence[str],
    *,
    row_bytes: int = _DICT_ROW_BYTES,
    slack: int = _DICTIONARY_SLACK,
) -> list[str]:
    """Top-level columns of ``names`` whose every column chunk is dictionary-encoded
    and takes at most ``row_bytes`` a row plus ``slack`` (defaults: see ``_DICT_ROW_BYTES``),
    so that reading them as Arrow dictionaries and hashing the used entries beats hashing
    every row.  (Callers pass only string and binary columns: pyarrow reads only those as
    dictionaries.)
    """
    if not names or not metadata.num_row_groups:
        return []
    first = metadata.row_group(0)
    index = {first.column(i).path_in_schema: i for i in range(first.num_columns)}
    out = []
    for name in names:
        col = index.get(name)
        if col is None:
            continue
        chunks = [metadata.row_group(rg).column(col) for rg in range(metadata.num_row_groups)]
        if all(
            c.has_dictionary_page and c.total_uncompressed_size <= row_bytes * c.num_values + slack
            for c in chunks
        ):
            out.append(name)
    return out


@dataclass(frozen=True)
class NdvColumn:
    """A top-level Parquet column to sketch as ``iceberg_type``."""

    name: str
    iceberg_type: IcebergType


@dataclass(frozen=True)
class ParquetNdv:
    """What :func:`sketch_parquet` found: per column its sketch and non-null count."""

    sketches: list[ThetaSketch]
    non_null: list[int]
    rows: int


#: ``guard(path, column)``: a context in which errors reading ``path`` (``column`` None) or
#: hashing its ``column`` are raised, so the caller can say where they came from.
Guard = Callable[[str, "str | None"], AbstractContextManager[None]]


def _no_guard(path: str, column: str | None) -> AbstractContextManager[None]:
    return contextlib.nullcontext()


def _open(path: str, meta: pq.FileMetaData, columns: Sequence[NdvColumn]) -> pq.ParquetFile:
    import pyarrow.parquet as pq

    strings = [c.name for c in columns if c.iceberg_type.name in ("string", "binary")]
    # No pre-buffering and a buffered stream: pyarrow then keeps no row group it has read,
    # and memory stays bounded by the batch size.
    return pq.ParquetFile(
        path,
        metadata=meta,
        pre_buffer=False,
        buffer_size=READ_BUFFER,
        read_dictionary=dictionary_columns(meta, strings) or None,
    )


def sketch_parquet(
    paths: Sequence[str],
    columns: Sequence[NdvColumn],
    *,
    lg_k: int = DEFAULT_LG_K,
    batch_rows: int = 128 * 1024,
    metadata: Sequence[pq.FileMetaData | None] | None = None,
    on_batch: Callable[[int, int], None] | None = None,
    guard: Guard | None = None,
    threads: int | None = None,
) -> ParquetNdv:
    """Theta sketches of ``columns`` over every row of the Parquet files ``paths``.

    Each row group is a part of :func:`sketch_parts`, read ``batch_rows`` at a time with
    only the needed columns.  Values are cast to the Arrow type of each column's Iceberg
    type, as ``puffin ndv`` has always done.  ``metadata`` (the files' footers, when already
    read) saves reading them again; ``on_batch(rows, file_index)`` follows each batch.
    """
    import pyarrow.parquet as pq

    guard = guard or _no_guard
    given = list(metadata) if metadata is not None else [None] * len(paths)
    metas = []
    for path, meta in zip(paths, given, strict=True):
        with guard(path, None):
            metas.append(pq.read_metadata(path) if meta is None else meta)
    names = [c.name for c in columns]

    def row_group(index: int, rg: int) -> Batches:
        pf = _open(paths[index], metas[index], columns)
        for batch in pf.iter_batches(
            batch_size=batch_rows, row_groups=[rg], columns=names, use_threads=False
        ):
            yield batch.num_rows, {i: batch.column(name) for i, name in enumerate(names)}

    where = [(i, rg) for i, meta in enumerate(metas) for rg in range(meta.num_row_groups)]
    result = sketch_parts(
        [functools.partial(row_group, i, rg) for i, rg in where],
        {i: c.iceberg_type for i, c in enumerate(columns)},
        lg_k=lg_k,
        cast=True,
        threads=threads,
        on_batch=None if on_batch is None else lambda rows, part: on_batch(rows, where[part][0]),
        guard=lambda part, key: guard(
            paths[where[part][0]], None if not isinstance(key, int) else names[key]
        ),
    )
    return ParquetNdv(
        [result.sketches[i] for i in range(len(columns))],
        [result.non_null[i] for i in range(len(columns))],
        result.rows,
    )
