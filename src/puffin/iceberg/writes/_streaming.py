"""A ``RecordBatchReader`` written into Parquet data files with bounded memory.

pyiceberg 0.12 bins a reader's batches by ``write.target-file-size-bytes`` counted in Arrow
bytes (512 MiB by default) and hands the bins to a thread pool whose ``map`` takes every bin
at once, so a whole stream sits in memory before its first file is closed.  Here one
``pyarrow.parquet.ParquetWriter`` is fed a row group at a time: batches are buffered up to
``write.parquet.row-group-limit`` rows (pyiceberg's row groups) or
``write.parquet.row-group-size-bytes`` Arrow bytes, whichever comes first, and the file rolls
when the bytes written to it reach the target size (on disk, as the spec means it).

Everything else is pyiceberg's own: the file schema (sanitized names, field ids), the batch
projection, the Parquet writer options of the table properties, the file names
(``00000-<task>-<write uuid>.parquet``) and the location provider, the ``DataFile`` and its
metrics from the Parquet footer.  For unpartitioned tables written in Parquet only.
"""

from __future__ import annotations

import itertools
import re
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.io import FileIO, OutputFile
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema
    from pyiceberg.table.locations import LocationProvider
    from pyiceberg.table.metadata import TableMetadata
    from pyiceberg.typedef import Record

__all__ = [
    "FileTarget", "can_stream", "data_file_location", "stream_data_files", "stream_repartitioned",
]

#: Iceberg's ``write.parquet.row-group-size-bytes`` (pyiceberg ignores it), read here as the
#: Arrow bytes buffered per row group.  32 MiB by default: the writer then costs about 50 MiB
#: whatever the input, and 5 M sample rows appended from a Parquet file stay near 215 MiB
#: above the interpreter, reader included (docs/benchmarks.md); files come out about 9 %
#: larger than with 128 MiB row groups.
ROW_GROUP_BYTES = "write.parquet.row-group-size-bytes"
ROW_GROUP_BYTES_DEFAULT = 32 * 1024 * 1024
# Partitions stream_repartitioned writes to at once: files and writers open at a time.
_MAX_OPEN_PARTITIONS = 64


def can_stream(table_metadata: TableMetadata) -> bool:
    """Whether :func:`stream_data_files` writes for this table: unpartitioned, Parquet."""
    from pyiceberg.table import TableProperties

    file_format = table_metadata.properties.get(
        TableProperties.WRITE_FILE_FORMAT, TableProperties.WRITE_FILE_FORMAT_DEFAULT
    )
    return table_metadata.spec().is_unpartitioned() and str(file_format).lower() == "parquet"


def stream_data_files(
    table_metadata: TableMetadata,
    reader: pa.RecordBatchReader,
    io: FileIO,
    write_uuid: uuid.UUID,
    *,
    into: FileTarget | None = None,
) -> Iterator[DataFile]:
    """The rows of ``reader`` in Parquet data files of the table's target size, each yielded
    as it is closed.  At most one row group is held in memory.  An error closes the file
    being written (it stays on disk, named by ``write_uuid``, for the caller to remove).
    ``into``: another file schema, partition or target size than the table's (compaction);
    with no partition in it, rows are split by the table's default spec
    (:func:`stream_repartitioned`)."""
    if into is not None and into.partition is None and not table_metadata.spec().is_unpartitioned():
        schema = into.schema or table_metadata.schema()
        yield from stream_repartitioned(
            table_metadata, reader, io, write_uuid, schema=schema, target_size=into.target_size
        )
        return
    writer = _RollingWriter(_Layout(table_metadata, reader.schema, io, write_uuid, into))
    try:
        for batch in reader:
            yield from writer.add(batch)
        yield from writer.finish()
    finally:
        writer.abort()


def stream_repartitioned(
    table_metadata: TableMetadata,
    reader: pa.RecordBatchReader,
    io: FileIO,
    write_uuid: uuid.UUID,
    *,
    schema: Schema,
    target_size: int | None = None,
) -> Iterator[DataFile]:
    """The rows of ``reader`` (columns of ``schema``) written into the table's default
    partition spec, whatever spec they were read from: each batch is split by its partition
    values (the spec's transforms, as pyiceberg's writer applies them), each partition
    rolled into its own files. Memory and open files stay bounded however many partitions
    the rows fall in: the writers share one row group's bytes of buffer (the largest buffer
    is written out when they hold more), and at most :data:`_MAX_OPEN_PARTITIONS` files are
    open (the one written to longest ago is closed to open another; its partition may get
    a second file)."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import _determine_partitions

    spec = table_metadata.spec()
    tasks = itertools.count()
    writers: dict[Record, _RollingWriter] = {}  # in the order they were last written to
    budget = 0  # one row group's bytes, as the table's properties say
    try:
        for batch in reader:
            for part in _determine_partitions(spec, schema, pa.Table.from_batches([batch])):
                key = part.partition_key.partition
                writer = writers.pop(key, None)
                if writer is None:
                    if len(writers) >= _MAX_OPEN_PARTITIONS:
                        yield from writers.pop(next(iter(writers))).finish()
                    into = FileTarget(schema, key, spec.spec_id, target_size)
                    layout = _Layout(table_metadata, reader.schema, io, write_uuid, into)
                    writer = _RollingWriter(layout, tasks)
                    budget = layout.group_bytes
                writers[key] = writer
                for piece in part.arrow_table_partition.to_batches():
                    yield from writer.add(piece)
                if sum(w.nbytes for w in writers.values()) > budget:
                    max(writers.values(), key=lambda w: w.nbytes).flush()
        for writer in writers.values():
            yield from writer.finish()
    finally:
        for writer in writers.values():
            writer.abort()


@dataclass(frozen=True)
class FileTarget:
    """Where a write goes when it is not the table's default: the file schema (the table's
    plus row-lineage columns, for a compaction), one partition of a spec (``None``: each
    row's partition in the table's default spec), a target size."""

    schema: Schema | None = None
    partition: Record | None = None
    spec_id: int | None = None
    target_size: int | None = None


class _Layout:
    """What pyiceberg's ``write_file`` decides once per write: schemas, options, names."""

    def __init__(
        self,
        metadata: TableMetadata,
        arrow_schema: pa.Schema,
        io: FileIO,
        write_uuid: uuid.UUID,
        into: FileTarget | None = None,
    ) -> None:
        from pyiceberg.io.pyarrow import (
            _get_parquet_writer_kwargs,
            compute_statistics_plan,
            parquet_path_to_id_mapping,
            pyarrow_to_schema,
        )
        from pyiceberg.schema import sanitize_column_names
        from pyiceberg.table import DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE, TableProperties
        from pyiceberg.table.locations import load_location_provider
        from pyiceberg.typedef import Record
        from pyiceberg.utils.config import Config
        from pyiceberg.utils.properties import property_as_int

        props = metadata.properties
        into = into or FileTarget()
        self.metadata, self.io, self.write_uuid = metadata, io, write_uuid
        self.partition = into.partition if into.partition is not None else Record()
        self.spec_id = into.spec_id if into.spec_id is not None else metadata.default_spec_id
        schema = into.schema or metadata.schema()
        self.downcast = Config().get_bool(DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE) or False
        self.task_schema = pyarrow_to_schema(
            arrow_schema,
            name_mapping=schema.name_mapping,
            downcast_ns_timestamp_to_us=self.downcast,
            format_version=metadata.format_version,
        )
        self.file_schema: Schema = sanitize_column_names(schema)
        with warnings.catch_warnings():  # pyiceberg ignores that option; it is used here
            warnings.filterwarnings(
                "ignore", re.escape(f"Parquet writer option(s) {[ROW_GROUP_BYTES]!r}")
            )
            self.writer_kwargs = _get_parquet_writer_kwargs(props)
        self.stats_plan = compute_statistics_plan(self.file_schema, props)
        self.column_ids = parquet_path_to_id_mapping(self.file_schema)
        self.locations = load_location_provider(metadata.location, props)

        def number(name: str, default: int) -> int:
            return max(1, property_as_int(props, name, default) or default)

        self.target = into.target_size or number(
            TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
            TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
        )
        self.group_rows = number(
            TableProperties.PARQUET_ROW_GROUP_LIMIT, TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT
        )
        self.group_bytes = number(ROW_GROUP_BYTES, ROW_GROUP_BYTES_DEFAULT)

    def project(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The batch in the file schema, with field ids (pyiceberg's projection)."""
        from pyiceberg.io.fileformat import FileFormatFactory
        from pyiceberg.io.pyarrow import _to_requested_schema
        from pyiceberg.manifest import FileFormat

        return _to_requested_schema(
            requested_schema=self.file_schema,
            file_schema=self.task_schema,
            batch=batch,
            downcast_ns_timestamp_to_us=self.downcast,
            include_field_ids=True,
            format_model=FileFormatFactory.get(FileFormat.PARQUET),
        )

    def output(self, task_id: int) -> tuple[str, OutputFile]:
        """The location and output of the ``task_id``-th file, named as pyiceberg does."""
        path = data_file_location(self.locations, self.write_uuid, task_id)
        return path, self.io.new_output(path)


def data_file_location(locations: LocationProvider, write_uuid: uuid.UUID, number: int) -> str:
    """Where a streaming write puts its ``number``-th file (from 0): named as pyiceberg
    names them, placed by the table's location provider (``locations``) without a
    partition folder. A job can find the files of a write it did not see end by this."""
    name = f"00000-{number}-{write_uuid}.parquet"
    return str(locations.new_data_location(data_file_name=name, partition_key=None))


class _File:
    """One Parquet data file being written."""

    def __init__(self, layout: _Layout, task_id: int, schema: pa.Schema) -> None:
        import pyarrow.parquet as pq

        self.layout = layout
        self.path, self.output = layout.output(task_id)
        self.stream = self.output.create(overwrite=True)
        self.memory = 0  # Arrow bytes written
        try:
            self.writer: pq.ParquetWriter = pq.ParquetWriter(
                self.stream, schema=schema, store_decimal_as_integer=True, **layout.writer_kwargs
            )
        except BaseException:
            self.stream.close()
            raise

    def write(self, table: pa.Table) -> None:
        self.writer.write_table(table, row_group_size=self.layout.group_rows)
        self.memory += table.nbytes

    def tell(self) -> int:
        return int(self.stream.tell())

    def close(self) -> DataFile:
        """The file closed, and its ``DataFile`` with metrics from its footer."""
        from pyiceberg.io.pyarrow import data_file_statistics_from_parquet_metadata
        from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

        with self.stream:
            self.writer.close()
        statistics = data_file_statistics_from_parquet_metadata(
            parquet_metadata=self.writer.writer.metadata,
            stats_columns=self.layout.stats_plan,
            parquet_column_mapping=self.layout.column_ids,
        )
        return DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=self.path,
            file_format=FileFormat.PARQUET,
            partition=self.layout.partition,
            file_size_in_bytes=len(self.output),
            sort_order_id=None,
            spec_id=self.layout.spec_id,
            equality_ids=None,
            key_metadata=None,
            **statistics.to_serialized_dict(),
        )

    def abort(self) -> None:
        """Close without a footer: the file is left for the caller to remove. The writer is
        marked closed first: pyarrow's finalizer would otherwise write the footer to the
        closed stream and print its failure (an interrupted compaction showed it)."""
        self.writer.is_open = False
        try:
            self.stream.close()
        except Exception:  # already failing; the caller removes the file
            pass


class _RollingWriter:
    """Batches into row groups, row groups into files of the target size. ``tasks``: the
    numbers its files take (shared by the writers of one write, so names stay unique)."""

    def __init__(self, layout: _Layout, tasks: Iterator[int] | None = None) -> None:
        self.layout = layout
        self.buffer: list[pa.RecordBatch] = []
        self.rows = self.nbytes = 0
        self.file: _File | None = None
        self.tasks = tasks if tasks is not None else itertools.count()
        self.disk = self.memory = 0  # bytes of the files closed: on disk, in Arrow

    def add(self, batch: pa.RecordBatch) -> Iterator[DataFile]:
        """Buffer ``batch`` (sliced to bounded pieces); write a row group when one is full
        or would fill the file, and close the file once it reaches the target size."""
        if batch.num_rows == 0:
            return
        projected = self.layout.project(batch)
        per_row = max(1.0, projected.nbytes / projected.num_rows)
        piece = max(1, min(self.layout.group_rows, int(self._piece_bytes() / per_row)))
        for offset in range(0, projected.num_rows, piece):
            part = projected.slice(offset, piece)
            self.buffer.append(part)
            self.rows += part.num_rows
            self.nbytes += part.nbytes
            fills = self._expected_size() >= self.layout.target
            full = self.rows >= self.layout.group_rows or self.nbytes >= self.layout.group_bytes
            if fills or full:
                file = self._flush()
                if fills or file.tell() >= self.layout.target:
                    yield self._roll()

    def finish(self) -> Iterator[DataFile]:
        if self.buffer:
            self._flush()
        if self.file is not None:
            yield self._roll()

    def flush(self) -> None:
        """Write the buffered rows out as a row group now (their file stays open)."""
        if self.buffer:
            self._flush()

    def abort(self) -> None:
        self.buffer = []
        if self.file is not None:
            self.file.abort()
            self.file = None

    def _piece_bytes(self) -> int:
        """Arrow bytes per buffered piece: a row group's, and no more than a file's."""
        return min(self.layout.group_bytes, int(self.layout.target / self._ratio()))

    def _ratio(self) -> float:
        """Bytes on disk per Arrow byte so far (1 before anything is written)."""
        disk, memory = self.disk, self.memory
        if self.file is not None:
            disk, memory = disk + self.file.tell(), memory + self.file.memory
        return disk / memory if disk and memory else 1.0

    def _expected_size(self) -> float:
        """The current file's size once the buffer is written, as far as can be told."""
        written = self.file.tell() if self.file is not None else 0
        return written + self.nbytes * self._ratio()

    def _flush(self) -> _File:
        import pyarrow as pa

        if self.file is None:
            self.file = _File(self.layout, next(self.tasks), self.buffer[0].schema)
        self.file.write(pa.Table.from_batches(self.buffer))
        self.buffer, self.rows, self.nbytes = [], 0, 0
        return self.file

    def _roll(self) -> DataFile:
        file, self.file = self.file, None
        assert file is not None
        self.disk += file.tell()
        self.memory += file.memory
        return file.close()
