"""Writing Puffin files.

Blobs stream to the output as they are added, so memory does not grow with the file.  A
path target is written atomically: the bytes go to a temporary file beside the target, which
is flushed, synced and renamed over the target only when the footer is complete; on any
error (or if the writer is dropped unfinished) the temporary file is removed and the target
is left as it was.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import IO, Any

from puffin.codecs import get_codec
from puffin.layout import MAGIC, footer_size_for, pack_footer
from puffin.metadata import (
    CREATED_BY,
    BlobMetadata,
    FileMetadata,
    check_blob_arguments,
    check_properties,
)

__all__ = ["PuffinWriter", "create"]

class PuffinWriter:
    """Writes one Puffin file.  Use :func:`puffin.create` to make one.

    After :meth:`close`, ``file_size``, ``footer_size`` and ``blobs`` describe what was
    written (the values an Iceberg ``StatisticsFile`` needs).
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | IO[bytes],
        *,
        created_by: str | None = None,
        properties: Mapping[str, str] | None = None,
        compress_footer: bool = False,
    ) -> None:
        check_properties(properties)
        props: dict[str, str] = {}
        if created_by is not None:
            if not isinstance(created_by, str):
                raise TypeError(f"created_by must be a str, got {type(created_by).__name__}")
            if properties and CREATED_BY in properties:
                raise ValueError("give created-by either as created_by or in properties, not both")
            props[CREATED_BY] = created_by
        props.update(properties or {})
        self._properties = props
        self._compress_footer = bool(compress_footer)
        self._blobs: list[BlobMetadata] = []
        self._closed = False
        self.file_size: int | None = None
        self.footer_size: int | None = None
        self.path: str | None = None
        self._tmp_path: str | None = None

        if isinstance(target, (str, os.PathLike)):
            self.path = os.fspath(target)
            directory = os.path.dirname(os.path.abspath(self.path))
            fd, self._tmp_path = _create_temporary(directory, os.path.basename(self.path))
            self._out: IO[bytes] = os.fdopen(fd, "wb")
            self._owns_output = True
        elif hasattr(target, "write"):
            self._out = target
            self._owns_output = False
        else:
            raise TypeError(
                "target must be a path or a writable binary file object, got "
                f"{type(target).__name__}"
            )
        try:
            self._write(MAGIC)
        except BaseException:
            self.abort()
            raise
        self._position = len(MAGIC)

    def _write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            written = self._out.write(view)
            if written is None:  # raw streams may return None when they would block
                raise OSError("output did not accept the write")
            view = view[written:]

    @property
    def blobs(self) -> list[BlobMetadata]:
        """Metadata of the blobs written so far, in order."""
        return list(self._blobs)

    @property
    def closed(self) -> bool:
        return self._closed

    def add_blob(
        self,
        data: bytes | bytearray | memoryview,
        *,
        type: str,
        fields: Iterable[int],
        snapshot_id: int = -1,
        sequence_number: int = -1,
        properties: Mapping[str, str] | None = None,
        codec: str | None = None,
    ) -> BlobMetadata:
        """Append a blob and return the metadata recorded for it in the footer.

        ``codec`` is ``None`` (stored as is), ``"lz4"`` or ``"zstd"`` (or any registered
        codec); the data is compressed here.

        Example::

            writer.add_blob(sketch_bytes, type="apache-datasketches-theta-v1", fields=[1],
                            snapshot_id=snap, sequence_number=seq, codec="zstd",
                            properties={"ndv": "42"})
        """
        if self._closed:
            raise ValueError("add_blob on a closed Puffin writer")
        field_ids = check_blob_arguments(
            type=type,
            fields=fields,
            snapshot_id=snapshot_id,
            sequence_number=sequence_number,
            properties=properties,
        )
        compressor = get_codec(codec)
        stored = memoryview(data) if compressor is None else memoryview(compressor.compress(data))
        meta = BlobMetadata(
            type=type,
            fields=field_ids,
            snapshot_id=snapshot_id,
            sequence_number=sequence_number,
            offset=self._position,
            length=stored.nbytes,
            compression_codec=codec,
            properties=dict(properties or {}),
        )
        try:
            self._write(stored)
        except BaseException:
            self.abort()
            raise
        self._position += stored.nbytes
        self._blobs.append(meta)
        return meta

    def close(self) -> None:
        """Write the footer and, for a path, publish the file atomically."""
        if self._closed:
            return
        try:
            metadata = FileMetadata(blobs=tuple(self._blobs), properties=self._properties)
            payload = metadata.to_bytes()
            if self._compress_footer:
                lz4 = get_codec("lz4")
                assert lz4 is not None
                payload = lz4.compress(payload)
            self._write(pack_footer(payload, compressed=self._compress_footer))
            footer_size = footer_size_for(len(payload))
            self.file_size = self._position + footer_size
            self.footer_size = footer_size
            self._out.flush()
            if self._owns_output:
                os.fsync(self._out.fileno())
                self._out.close()
                assert self._tmp_path is not None and self.path is not None
                os.replace(self._tmp_path, self.path)
                self._tmp_path = None
                _fsync_directory(os.path.dirname(os.path.abspath(self.path)))
        except BaseException:
            self.abort()
            raise
        self._closed = True

    def abort(self) -> None:
        """Stop without publishing: the temporary file is removed, the target untouched."""
        self._closed = True
        if self._owns_output:
            try:
                self._out.close()
            except OSError:
                pass
            if self._tmp_path is not None:
                try:
                    os.unlink(self._tmp_path)
                except FileNotFoundError:
                    pass
                self._tmp_path = None

    def __enter__(self) -> PuffinWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        # An unfinished writer never publishes a partial file.
        if getattr(self, "_tmp_path", None) is not None:
            self.abort()

    def __repr__(self) -> str:
        where = f" {self.path!r}" if self.path else ""
        return f"<PuffinWriter{where} blobs={len(self._blobs)} closed={self._closed}>"

    def __getstate__(self) -> Any:
        raise TypeError("a PuffinWriter holds an open file and cannot be pickled")


def _create_temporary(directory: str, name: str) -> tuple[int, str]:
    # Like mkstemp, but with the permissions the umask gives a normal new file (mkstemp
    # would leave the published file readable by its owner only).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        path = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file in {directory}")


def _fsync_directory(directory: str) -> None:
    # Makes the rename durable on POSIX; not possible (or needed) everywhere.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def create(
    target: str | os.PathLike[str] | IO[bytes],
    *,
    created_by: str | None = None,
    properties: Mapping[str, str] | None = None,
    compress_footer: bool = False,
) -> PuffinWriter:
    """Start writing a Puffin file.

    Args:
        target: a path (written atomically through a temporary file beside it) or a
            writable binary file object (offsets count from where writing starts).
        created_by: stored as the ``created-by`` file property (recommended by the spec).
        properties: other file properties.
        compress_footer: LZ4-compress the footer payload.  Off by default because Iceberg
            Java, Rust, Go and pyiceberg cannot read compressed footers.

    Example::

        with puffin.create("out.puffin", created_by="my-app 1.0") as writer:
            writer.add_blob(b"...", type="my-type", fields=[1])
        print(writer.file_size, writer.footer_size)
    """
    return PuffinWriter(
        target, created_by=created_by, properties=properties, compress_footer=compress_footer
    )
