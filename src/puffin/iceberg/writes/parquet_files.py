"""Parquet files loaded into a table, each one named in whatever is wrong with it.

``puffin table append`` and :func:`~puffin.iceberg.writes.create.create_table_from_parquet`
(``puffin table create``) read their files through :class:`ParquetFiles`: every footer
first, so a file that is not Parquet, that does not fit the table, or whose columns are not
the first file's is refused in one line naming the file and the column before any data
file is written; then the rows as one stream, a file at a time and a column chunk at a
time, each file's columns cast to the first file's types (a value that does not convert
names the file and the column too).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.errors import UsageError

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.table import Table

    from puffin.support.progress import Progress

__all__ = ["ParquetFiles", "missing_file", "require_present"]

# pyarrow's dataset scanner and a pre-buffered ParquetFile keep what they read until the
# end (apache/arrow#39808): files are read without either, 64 K rows at a time.
_BATCH_ROWS = 65536


@dataclass(frozen=True)
class _File:
    path: str  # as the caller gave it, for messages
    filesystem: Any  # pyarrow.fs.FileSystem
    location: str  # the path inside ``filesystem``
    metadata: pq.FileMetaData


class ParquetFiles:
    """The Parquet files of one load, their footers read (``rows`` is the total count).

    ``schema`` is the first file's Arrow schema: the columns every file must have (a file
    with a column more or less is refused, naming both)."""

    def __init__(self, paths: Sequence[str]) -> None:
        if not paths:
            raise UsageError("no Parquet file given")
        self.files = [_footer(str(p)) for p in paths]
        self.schema: pa.Schema = self.files[0].metadata.schema.to_arrow_schema()
        self.rows = sum(f.metadata.num_rows for f in self.files)
        for f in self.files[1:]:
            self._same_columns(f)

    def _same_columns(self, f: _File) -> None:
        first, names = self.files[0].path, f.metadata.schema.to_arrow_schema().names
        missing = [n for n in self.schema.names if n not in names]
        extra = [n for n in names if n not in self.schema.names]
        if missing or extra:
            what = (
                f"has no column {', '.join(map(repr, missing))}"
                if missing
                else f"has column {', '.join(map(repr, extra))}, which {first} has not"
            )
            raise UsageError(
                f"{f.path} {what}: the files of one load need the first file's columns "
                f"({first}); nothing was written"
            )

    def require_same_types(self) -> None:
        """Refuse a file whose column has another type than the first file's (a table made
        from them takes the first file's types), naming the file, the column and both."""
        for f in self.files[1:]:
            schema = f.metadata.schema.to_arrow_schema()
            for field in self.schema:
                other = schema.field(field.name).type
                if other != field.type:
                    raise UsageError(
                        f"{f.path}: column {field.name!r} is {other}, and {field.type} in "
                        f"{self.files[0].path}, which gives the table its schema: write the "
                        "files with one schema; nothing was written"
                    )

    def require_fit(self, table: Table) -> None:
        """Each file fits ``table`` (pyiceberg's own check, the file and the fields named);
        a nullable field of a required column is taken when the file holds no null in it."""
        from puffin.iceberg.writes.add_files import data_file_location
        from puffin.iceberg.writes.schema import check_schema, required_as_declared

        for f in self.files:
            declared = required_as_declared(table, f.metadata, data_file_location(f.path))
            check_schema(table, declared, what=f.path)

    def reader(self, progress: Progress | None = None) -> pa.RecordBatchReader:
        """Every row, streamed in the first file's schema."""
        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(self.schema, self._batches(progress))

    def table(self, progress: Progress | None = None) -> pa.Table:
        """Every row at once (pyiceberg writes a partitioned table from a whole table)."""
        import pyarrow as pa

        return pa.Table.from_batches(list(self._batches(progress)), schema=self.schema)

    def _batches(self, progress: Progress | None) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        for f in self.files:
            with f.filesystem.open_input_file(f.location) as stream:
                source = pq.ParquetFile(stream, pre_buffer=False)
                for batch in source.iter_batches(batch_size=_BATCH_ROWS):
                    yield self._cast(f, batch.select(self.schema.names))
                    if progress is not None:
                        progress.update(batch.num_rows, note=_basename(f.path))

    def _cast(self, f: _File, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` in the first file's schema; a value that does not convert names the
        file, the column and both types."""
        import pyarrow as pa

        if batch.schema == self.schema:
            return batch
        columns = []
        for field, column in zip(self.schema, batch.columns, strict=True):
            try:
                columns.append(column.cast(field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise UsageError(
                    f"{f.path}: column {field.name!r} ({column.type}) does not convert to "
                    f"{field.type}, its type in {self.files[0].path}: {_one_line(exc)}"
                ) from None
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _footer(path: str) -> _File:
    """The file's Parquet footer; a missing file or one that is not Parquet, named."""
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from puffin.io.locations import is_url, local_path

    local = local_path(path)
    try:
        if local is not None:
            filesystem, location = pafs.LocalFileSystem(), local
        else:
            filesystem, location = pafs.FileSystem.from_uri(path) if is_url(path) else (None, "")
        if filesystem is None:
            raise UsageError(f"{path}: not a path or URL of a Parquet file")
        with filesystem.open_input_file(location) as stream:
            metadata = pq.read_metadata(stream)
    except FileNotFoundError:
        raise missing_file(path) from None
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        why = _one_line(exc)
        raise UsageError(f"{path} is not a Parquet file pyarrow can read: {why}") from None
    return _File(path, filesystem, location, metadata)


def require_present(paths: Sequence[str]) -> None:
    """Each local file exists, checked before anything heavier loads (a remote one is found
    missing when its footer is read)."""
    import os

    from puffin.io.locations import local_path

    for path in paths:
        local = local_path(path)
        if local is not None and not os.path.lexists(local):
            raise missing_file(path)


def missing_file(path: str) -> FileNotFoundError:
    """What a load says of a file that is not there: what is wrong and what to do."""
    return FileNotFoundError(
        f"{path}: no such file; nothing was written: give the path of an existing Parquet "
        "file (or its URL, such as s3://bucket/data.parquet)"
    )


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
