"""Data files written again without their deleted rows: compaction and copy-on-write deletes.

Reader → writer: the files of each partition are read by the one row reader
(:class:`~puffin.iceberg.scan.rows.RowReader`, deletes applied) and streamed into new files
of that partition, rolled at the target size.  On a v3 table every row keeps its
``_row_id`` and ``_last_updated_sequence_number`` (written into the new files under their
reserved field ids, which every v3 reader prefers to inherited ids); a v2 table has no row
lineage.  Nothing is committed here: the caller's snapshot swaps the files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from puffin.iceberg.metadata.delete_files import DeleteIndex
from puffin.iceberg.scan.delete_file_index import scoped_data_file
from puffin.iceberg.scan.lineage import LINEAGE_COLUMNS, FileLineage, file_lineage
from puffin.iceberg.scan.plan import PlannedFile
from puffin.iceberg.scan.rows import RowReader
from puffin.iceberg.writes._streaming import FileTarget
from puffin.iceberg.writes.append import write_data_files
from puffin.support.progress import Progress

if TYPE_CHECKING:
    import uuid

    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["Groups", "rewrite_files", "scoped_position_deletes", "target_file_size"]

#: Files to write again, by (partition spec id, partition).
Groups = Mapping[tuple[int, Any], Sequence[PlannedFile]]


def target_file_size(table: Table) -> int:
    """The table's ``write.target-file-size-bytes`` (pyiceberg's default, 512 MiB)."""
    from pyiceberg.table import TableProperties

    return int(
        table.metadata.properties.get(
            TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
            TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
        )
    )


def rewrite_files(
    table: Table,
    snapshot: Snapshot,
    index: DeleteIndex,
    groups: Groups,
    target: int,
    written: list[str],
    *,
    deleted: Mapping[str, npt.NDArray[np.int64]] | None = None,
    progress: bool | None = False,
    label: str = "compact ",
    lineage: Mapping[str, FileLineage] | None = None,
    write_uuid: uuid.UUID | None = None,
) -> list[DataFile]:
    """The live rows of the ``groups``' files written again, partition by partition; the
    new files' records (each also listed in ``written`` once written).

    ``index`` gives each file's deletes; ``deleted`` instead gives every deleted position
    of the files it names (a copy-on-write delete: what is deleted already and what the
    delete adds), whose delete files are then not read again. On a v3 table ``lineage``
    gives the files' first row ids (by default read from the snapshot's manifests).
    ``write_uuid`` names the files of a single group (see
    :func:`~puffin.iceberg.writes.append.write_data_files`)."""
    from pyiceberg.expressions import AlwaysTrue

    if write_uuid is not None and len(groups) > 1:
        raise ValueError("write_uuid names the files of one group; got several")
    v3 = table.metadata.format_version >= 3
    schema = _file_schema(table) if v3 else table.schema()
    if v3 and lineage is None:
        lineage = file_lineage(table, snapshot)
    reader = RowReader(
        table,
        table.schema(),
        AlwaysTrue(),
        True,
        index,
        list(LINEAGE_COLUMNS) if v3 else [],
        dict(lineage or {}),
    )
    total = sum(p.record_count for files in groups.values() for p in files)
    added: list[DataFile] = []
    default = table.spec().spec_id
    with Progress(total, label=label, enabled=progress) as bar:
        for (spec_id, partition), files in groups.items():
            # Into the table's current spec, as Java's default output-spec-id: files of an
            # older spec have their rows partitioned anew.
            if spec_id == default:
                into = FileTarget(schema, partition, spec_id, target)
            else:
                into = FileTarget(schema, None, None, target)
            batches = _batches(reader, files, bar, deleted)
            stream = _reader_of(schema, batches)
            new = write_data_files(table, stream, into=into, write_uuid=write_uuid)
            written.extend(str(f.file_path) for f in new)
            added.extend(new)
    return added


def scoped_position_deletes(files: Iterable[PlannedFile]) -> set[tuple[str, None]]:
    """The keys of the Parquet position-delete files scoped to one of ``files`` (their
    ``file_path`` bounds name it alone, as Java writes them per data file): a rewrite that
    removes the file drops them; one holding rows of other files too stays."""
    from pyiceberg.manifest import FileFormat

    return {
        (str(d.file_path), None)
        for p in files
        for d in p.delete_files
        if d.file_format == FileFormat.PARQUET and scoped_data_file(d) == p.path
    }


def _batches(
    reader: RowReader,
    files: Sequence[PlannedFile],
    bar: Progress,
    deleted: Mapping[str, npt.NDArray[np.int64]] | None,
) -> Iterator[Any]:
    for p in files:
        if deleted is not None and p.path in deleted:
            yield from reader.file_batches(PlannedFile(p.data_file), deleted=deleted[p.path])
        else:
            yield from reader.file_batches(p)
        bar.update(p.record_count)


def _file_schema(table: Table) -> Schema:
    """The table's schema plus the two row-lineage columns, by their reserved field ids."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    extra = [NestedField(i, n, LongType(), required=False) for n, i in LINEAGE_COLUMNS.items()]
    return Schema(*table.schema().fields, *extra, schema_id=table.schema().schema_id)


def _reader_of(schema: Schema, batches: Iterator[Any]) -> pa.RecordBatchReader:
    """The batches as one stream in the types of the first (a file's ``string`` stays
    ``string``, as the files being rewritten hold it, not pyiceberg's ``large_string``)."""
    import itertools

    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    first = next(batches, None)
    if first is None:
        return pa.RecordBatchReader.from_batches(
            schema_to_pyarrow(schema, include_field_ids=False), iter(())
        )
    arrow = first.schema
    rest = (b if b.schema.equals(arrow) else b.cast(arrow) for b in batches)
    return pa.RecordBatchReader.from_batches(arrow, itertools.chain([first], rest))
