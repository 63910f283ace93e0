"""Row lineage on read (format version 3): each data file's ``first_row_id`` and the
``_row_id`` / ``_last_updated_sequence_number`` columns of its rows.

pyiceberg 0.12 neither reads a manifest list's ``first_row_id`` nor knows the two metadata
columns, so they come from the manifests read with the v3 schema and are filled in as
Iceberg Java's readers fill them (``ManifestReader.idAssigner``, ``ValueReaders.rowIds`` /
``lastUpdated``):

* a live data-file entry without ``first_row_id`` inherits the next id of its manifest's
  ``first_row_id``, in entry order, each file taking ``record_count`` ids;
* a row's ``_row_id`` is the value its file stores, or, where null, ``first_row_id + pos``;
  its ``_last_updated_sequence_number`` the stored value or the file's data sequence number;
* a file without ``first_row_id`` (a manifest from before the upgrade that never got one)
  reads both columns as null, whatever it stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.errors import UsageError
from puffin.iceberg.catalog.advice import table_command

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = [
    "LAST_UPDATED_FIELD_ID",
    "LINEAGE_COLUMNS",
    "ROW_ID_FIELD_ID",
    "FileLineage",
    "file_lineage",
    "lineage_column",
    "require_lineage",
]

ROW_ID_FIELD_ID = 2147483540
LAST_UPDATED_FIELD_ID = 2147483539
#: The row-lineage metadata columns by name, as Iceberg Java's ``MetadataColumns`` names them.
LINEAGE_COLUMNS = {
    "_row_id": ROW_ID_FIELD_ID,
    "_last_updated_sequence_number": LAST_UPDATED_FIELD_ID,
}


@dataclass(frozen=True)
class FileLineage:
    """What a data file's rows inherit: ``first_row_id`` (None: no lineage) and the file's
    data sequence number."""

    first_row_id: int | None
    sequence_number: int | None


def require_lineage(table: Table, asked: Sequence[str]) -> None:
    """:class:`UsageError` when row-lineage columns are ``asked`` of a table below format
    version 3, which has none."""
    if asked and table.metadata.format_version < 3:
        raise UsageError(
            f"{', '.join(asked)}: row lineage exists only on format version 3 tables "
            f"(upgrade_to_v3 / {table_command(table, 'upgrade')})"
        )


def file_lineage(table: Table, snapshot: Snapshot) -> dict[str, FileLineage]:
    """``{data file path: FileLineage}`` of every live data file of ``snapshot``."""
    from pyiceberg.manifest import ManifestContent

    from puffin.iceberg.metadata.manifests import read_manifest_entries, read_manifest_list
    from puffin.iceberg.metadata.v3 import inherited_first_row_ids

    out: dict[str, FileLineage] = {}
    for manifest in read_manifest_list(table.io, snapshot.manifest_list):
        if manifest.content != ManifestContent.DATA:
            continue
        entries = read_manifest_entries(table.io, manifest, cached=True)  # live entries, in order
        for entry, first in zip(entries, inherited_first_row_ids(manifest, entries), strict=True):
            out[str(entry.data_file.file_path)] = FileLineage(first, entry.sequence_number)
    return out


def lineage_column(
    name: str,
    stored: pa.Array | pa.ChunkedArray,
    positions: npt.NDArray[np.int64],
    lineage: FileLineage,
) -> pa.Array:
    """The ``name`` column of rows at ``positions`` of a file, ``stored`` being what the
    file holds for them (nulls where it holds nothing)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if lineage.first_row_id is None:
        return pa.nulls(len(positions), pa.int64())
    if name == "_row_id":
        inherited = pa.array(positions + np.int64(lineage.first_row_id), pa.int64())
    elif lineage.sequence_number is None:
        inherited = pa.nulls(len(positions), pa.int64())
    else:
        inherited = pa.array(np.full(len(positions), lineage.sequence_number, np.int64))
    if stored.null_count == len(stored):
        return inherited
    filled = pc.coalesce(stored, inherited)
    return filled.combine_chunks() if isinstance(filled, pa.ChunkedArray) else filled
