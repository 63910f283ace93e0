"""Rows a concurrent delete removed from files a compaction was rewriting, found again in the
new files by their row ids and deleted there too (format version 3).

Iceberg Java gives up such a rewrite ("found new position delete for replaced data file"):
its new files still hold the rows, and they cannot be told apart by position. On a v3 table
they can by row id: every rewritten row keeps its ``_row_id``, written into the new file,
and a deletion vector of the replaced file names positions whose row ids its lineage gives
(the stored ``_row_id``, else ``first_row_id + pos``). So the rows it deletes now are located
in the new files and a vector for each new file that holds some is committed with the
rewrite. The snapshot stays a ``replace``: its rows are its parent's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from puffin.iceberg.deletes.vectors import deletion_vector_data_files, write_table_deletion_vectors
from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.lineage import FileLineage, lineage_column

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

__all__ = ["carried_vectors"]

ROW_ID = "_row_id"


def carried_vectors(
    table: Table,
    touched: Mapping[str, DataFile],
    lineage: Mapping[str, FileLineage],
    added: Sequence[DataFile],
    written: list[str],
) -> list[DataFile] | None:
    """Vectors for the ``added`` files deleting the rows that the vectors in ``touched``
    (``{replaced data file: its vector now}``) delete; the Puffin file written is listed in
    ``written``. ``None`` when a row id is unknown (a file without lineage): the rewrite
    then conflicts."""
    import numpy as np

    index = DeleteIndex(table, None, by_entry=True)
    deleted: list[npt.NDArray[np.int64]] = []
    for path, vector in touched.items():
        known = lineage.get(path)
        positions = index.positions(path, [vector])
        if known is None or known.first_row_id is None:
            return None
        if positions is not None:
            deleted.append(_row_ids(table, path, positions, known))
    if not deleted:
        return []
    gone = np.unique(np.concatenate(deleted))
    vectors: dict[str, npt.NDArray[np.int64]] = {}
    for data_file in added:
        ids = _stored_row_ids(table, str(data_file.file_path))
        if ids is None:
            return None
        hit = np.flatnonzero(np.isin(ids, gone))
        if len(hit):
            vectors[str(data_file.file_path)] = hit.astype(np.int64)
    if not vectors:
        return []
    entries = write_table_deletion_vectors(table, vectors, validate=False)
    written.append(str(entries[0].path))
    by_path = {str(f.file_path): f for f in added}
    return deletion_vector_data_files(table, entries, data_files=by_path)


def _row_ids(
    table: Table, path: str, positions: npt.NDArray[np.int64], lineage: FileLineage
) -> npt.NDArray[np.int64]:
    """The row ids of ``positions`` of the data file ``path``, as Java's readers give them."""
    import numpy as np
    import pyarrow as pa

    stored = _stored(table, path)
    column = (
        pa.nulls(len(positions), pa.int64())
        if stored is None
        else stored.take(pa.array(positions))
    )
    ids = lineage_column(ROW_ID, column, positions, lineage)
    return np.asarray(ids.to_numpy(zero_copy_only=False), dtype=np.int64)


def _stored_row_ids(table: Table, path: str) -> npt.NDArray[np.int64] | None:
    """The row ids a new file stores for every row; ``None`` if some row has none."""
    import numpy as np

    stored = _stored(table, path)
    if stored is None or stored.null_count:
        return None
    return np.asarray(stored.to_numpy(), dtype=np.int64)


def _stored(table: Table, path: str) -> pa.ChunkedArray | None:
    """The ``_row_id`` column the Parquet file ``path`` stores, ``None`` if it has none."""
    import pyarrow.parquet as pq

    with table.io.new_input(path).open() as f:
        parquet = pq.ParquetFile(f)
        if ROW_ID not in parquet.schema_arrow.names:
            return None
        return parquet.read(columns=[ROW_ID]).column(ROW_ID)
