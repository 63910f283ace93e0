"""Parquet position-delete files, as Iceberg Java 1.10 writes them for a v2 table.

A position-delete file is a Parquet file of (``file_path``, ``pos``) rows, the spec's reserved
field ids 2147483546 and 2147483545, sorted by path then position.  Java's Spark writes one
per data file by default (``write.delete.granularity`` = ``file``; Spark's default since 1.8,
where the table property's own default still says ``partition``) or one per partition.

Its metrics are Java's (``PositionDeleteWriter.metrics``): no value or null counts for the two
columns; lower and upper bounds, never truncated, only when the file deletes rows of one data
file, so a reader can tell at once which file it applies to (a bound on ``file_path`` that
covers many files would only make planning look at it for all of them).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError
from puffin.iceberg.catalog.advice import table_command
from puffin.iceberg.scan.delete_file_index import PATH_FIELD_ID, partition_key

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

    from puffin.iceberg.scan.plan import PlannedFile

__all__ = ["delete_granularity", "position_delete_schema", "write_position_deletes"]

#: The ``pos`` column's reserved field id (``file_path``'s is ``PATH_FIELD_ID``).
POS_ID = 2147483545
GRANULARITY = "write.delete.granularity"
#: Java's Spark writer's default (``SparkWriteConf.deleteGranularity``).
DEFAULT_GRANULARITY = "file"
#: The Parquet codecs of pyarrow's writer that Iceberg's table properties can name.
CODECS = frozenset({"zstd", "snappy", "gzip", "lz4", "brotli", "none"})


def delete_granularity(table: Table) -> str:
    """``file`` or ``partition``: how the table's position deletes are grouped into files."""
    value = table.metadata.properties.get(GRANULARITY, DEFAULT_GRANULARITY).strip().lower()
    if value not in ("file", "partition"):
        raise UsageError(
            f"table property {GRANULARITY}={value!r} is neither 'file' nor 'partition': "
            "set it to one of them "
            f"({table_command(table, 'alter', '--set-property', GRANULARITY, 'file')})"
        )
    return value


def write_position_deletes(
    table: Table,
    planned: Sequence[PlannedFile],
    positions: Mapping[str, npt.NDArray[np.int64]],
    written: list[str],
) -> list[DataFile]:
    """Write ``positions`` (``{data file path: sorted unique positions}``, each a live data
    file of ``planned``) as position-delete files grouped as the table's granularity says;
    their v2 delete-file records, not yet committed.  Each location goes into ``written``
    before its file is written, so a failed write leaves nothing once those are removed."""
    by_path = {p.path: p for p in planned}
    groups: dict[Any, list[str]] = {}
    per_file = delete_granularity(table) == "file"
    for path in sorted(p for p, pos in positions.items() if len(pos)):
        data_file = by_path[path].data_file
        key = path if per_file else partition_key(data_file)
        groups.setdefault(key, []).append(path)
    return [
        _write_one(table, [(p, positions[p]) for p in paths], by_path[paths[0]].data_file, written)
        for paths in groups.values()
    ]


def _rows(deletes: Sequence[tuple[str, npt.NDArray[np.int64]]]) -> pa.Table:
    """The file's rows, sorted by path then position (paths come sorted, positions too)."""
    import numpy as np
    import pyarrow as pa

    counts = [len(p) for _, p in deletes]
    paths = pa.DictionaryArray.from_arrays(
        pa.array(np.repeat(np.arange(len(deletes), dtype=np.int32), counts)),
        pa.array([path for path, _ in deletes], pa.string()),
    ).cast(pa.string())
    pos = pa.array(np.concatenate([p for _, p in deletes]).astype(np.int64, copy=False))
    return pa.Table.from_arrays([paths, pos], schema=position_delete_schema())


def position_delete_schema() -> pa.Schema:
    """The spec's schema of a position-delete file (required columns, reserved field ids)."""
    import pyarrow as pa

    field_id = b"PARQUET:field_id"
    return pa.schema(
        [
            pa.field("file_path", pa.string(), False, {field_id: str(PATH_FIELD_ID).encode()}),
            pa.field("pos", pa.int64(), False, {field_id: str(POS_ID).encode()}),
        ]
    )


def _write_one(
    table: Table,
    deletes: Sequence[tuple[str, npt.NDArray[np.int64]]],
    first: DataFile,
    written: list[str],
) -> DataFile:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _rows(deletes)
    buffer = pa.BufferOutputStream()
    pq.write_table(rows, buffer, compression=_codec(table))  # in memory: a file's positions
    data = buffer.getvalue()
    location = str(table.location_provider().new_data_location(f"{uuid.uuid4()}-deletes.parquet"))
    written.append(location)
    with table.io.new_output(location).create(overwrite=False) as out:
        out.write(data.to_pybytes())
    metadata = pq.read_metadata(pa.BufferReader(data))
    return _record(location, len(data), metadata, deletes, first)


def _codec(table: Table) -> str:
    """The table's Parquet codec for delete files, as Java chooses it (zstd by default)."""
    props = table.metadata.properties
    name = "write.delete.parquet.compression-codec"
    if name not in props:
        name = "write.parquet.compression-codec"
    codec = props.get(name, "zstd").strip().lower()
    codec = "none" if codec == "uncompressed" else codec
    if codec not in CODECS:
        raise UsageError(
            f"table property {name}={codec!r} is not a Parquet codec this writer has: set it "
            f"to one of {', '.join(sorted(CODECS))} (uncompressed is none)"
        )
    return codec


def _record(
    location: str,
    size: int,
    metadata: Any,
    deletes: Sequence[tuple[str, npt.NDArray[np.int64]]],
    first: DataFile,
) -> DataFile:
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    sizes = {PATH_FIELD_ID: 0, POS_ID: 0}
    offsets = []
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        column = group.column(0)
        offsets.append(int(column.dictionary_page_offset or column.data_page_offset))
        for c, field_id in ((0, PATH_FIELD_ID), (1, POS_ID)):
            sizes[field_id] += int(group.column(c).total_compressed_size)
    bounds: dict[str, Any] = {}
    if len(deletes) == 1:  # Java keeps the bounds of a file that deletes from one data file
        ((path, pos),) = deletes
        lower = {PATH_FIELD_ID: path.encode(), POS_ID: int(pos[0]).to_bytes(8, "little")}
        upper = {PATH_FIELD_ID: path.encode(), POS_ID: int(pos[-1]).to_bytes(8, "little")}
        bounds = {"lower_bounds": lower, "upper_bounds": upper}
    record = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=first.partition,
        record_count=int(metadata.num_rows),
        file_size_in_bytes=size,
        column_sizes=sizes,
        split_offsets=offsets,
        **bounds,
    )
    record.spec_id = first.spec_id
    return record
