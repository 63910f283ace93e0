"""Reading a snapshot's live rows column by column, by field id, with its deletes applied.

The planned data files (:mod:`puffin.iceberg.scan.plan`) are read by the row reader
(:meth:`~puffin.iceberg.scan.rows.RowReader.file_columns`): in batches of
:data:`BATCH_ROWS` rows of one row group, matched to the table's columns by Parquet field id
(or, for files written without ids, by the table's name mapping), so renamed and reordered
columns read correctly and dropped or later-added columns are simply absent from older
files. Reading runs a file ahead in a background thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.columns import ScanColumn
from puffin.iceberg.scan.file_columns import BATCH_ROWS, Batch
from puffin.iceberg.scan.plan import PlannedFile
from puffin.iceberg.scan.rows import RowReader

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["BATCH_ROWS", "Batch", "read_columns"]

T = TypeVar("T")


def _prefetch(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Run ``items`` in a background thread, ``depth`` ahead of the consumer.

    Reading (Parquet decoding, which releases the GIL) then overlaps the consumer's work.
    Errors are re-raised in the consumer; leaving early stops the producer.
    """
    buffer: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        buffer.put((0, item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            buffer.put((1, None))
        except BaseException as exc:
            buffer.put((2, exc))

    thread = threading.Thread(target=produce, name="puffin-iceberg-reader", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = buffer.get()
            if kind == 0:
                yield value
            elif kind == 1:
                return
            else:
                raise value
    finally:
        stop.set()
        while thread.is_alive():
            try:
                buffer.get_nowait()
            except queue.Empty:
                thread.join(timeout=0.05)


def read_columns(
    table: Table,
    planned: Sequence[PlannedFile],
    columns: Sequence[ScanColumn],
    *,
    deletes: DeleteIndex,
    prefetch: bool = True,
    distinct_ok: bool = False,
) -> Iterator[Batch]:
    """Every live row of the planned files, as batches of the requested columns.

    ``distinct_ok``: the caller only needs each column's set of values (a sketch), so
    top-level fields are read one at a time (each batch holds one field's columns, see
    :class:`Batch`) and dictionary-encoded string columns may come back as Arrow
    dictionaries. ``deletes``: the snapshot's delete files, shared by every call (a
    :class:`~puffin.iceberg.scan.delete_filter.DeleteFilter` where equality deletes apply).
    """
    from pyiceberg.expressions import AlwaysTrue

    reader = RowReader(table, table.schema(), AlwaysTrue(), True, deletes, [], {})

    def batches() -> Iterator[Batch]:
        for p in planned:
            yield from reader.file_columns(p, columns, distinct_ok=distinct_ok)

    return _prefetch(batches()) if prefetch else batches()
