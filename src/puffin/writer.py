"""Writing Puffin files.

Blobs stream to the output as they are added, so memory does not grow with the file.  A
path target is written atomically: the bytes go to a temporary file in the target's
directory, which is flushed, synced and put in place of the target only when the footer is
complete; on any error (or if the writer is dropped unfinished) the temporary file goes
and the target is left as it was.  On Linux the temporary file is unnamed (``O_TMPFILE``),
so even a killed writer leaves nothing behind; elsewhere it is a hidden
``.<name>.<random>.tmp`` (see docs/reliability.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import IO, Any

from puffin.codecs import get_codec
from puffin.footer.rules import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from puffin.io.locations import open_sink
from puffin.layout import MAGIC, footer_size_for, pack_footer
from puffin.metadata import CREATED_BY, BlobMetadata, FileMetadata

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
        io: Any = None,
    ) -> None:
        check_properties(properties)
        props: dict[str, str] = {}
        if created_by is not None:
            if not isinstance(created_by, str):
                raise TypeError(f"created_by must be a str, got {type(created_by).__name__}")
            created_by.encode("utf-8")  # unpaired surrogates fail now, not at close()
            if properties and CREATED_BY in properties:
                raise ValueError("give created-by either as created_by or in properties, not both")
            props[CREATED_BY] = created_by
        props.update(properties or {})
        self._properties = props
        self._compress_footer = bool(compress_footer)
        self._blobs: list[BlobMetadata] = []
        self._closed = False
        self._file_size: int | None = None
        self._footer_size: int | None = None
        self._sink = open_sink(target, io=io)  # the writer never asks which kind
        self.path: str | None = self._sink.name
        try:
            self._write(MAGIC)
        except BaseException:
            self.abort()
            raise
        self._position = len(MAGIC)

    def _write(self, data: bytes | bytearray | memoryview) -> None:
        self._sink.write(data)

    @property
    def blobs(self) -> list[BlobMetadata]:
        """Metadata of the blobs written so far, in order."""
        return list(self._blobs)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def file_size(self) -> int:
        """The whole file's size in bytes (what Iceberg's ``file-size-in-bytes`` records).

        Known once the writer is closed; before that, a :class:`ValueError`.
        """
        return self._known(self._file_size, "file_size")

    @property
    def footer_size(self) -> int:
        """The footer's size in bytes, magic to magic (``file-footer-size-in-bytes``).

        Known once the writer is closed; before that, a :class:`ValueError`.
        """
        return self._known(self._footer_size, "footer_size")

    def _known(self, value: int | None, name: str) -> int:
        if value is None:
            state = "was aborted" if self._closed else "is still open"
            raise ValueError(f"{name} is known once the file is complete; the writer {state}")
        return value

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

        ``codec`` is ``None`` or ``"none"`` (stored as is; the footer then names no codec, as
        the spec wants), ``"lz4"`` or ``"zstd"`` (or any registered codec); the data is
        compressed here.

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
        if codec == "none":  # the CLI's and the README's word for "stored as is"
            codec = None
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
            self._file_size = self._position + footer_size
            self._footer_size = footer_size
            self._sink.commit()  # the file or object appears now, whole
        except BaseException:
            self.abort()
            raise
        self._closed = True

    def abort(self) -> None:
        """Stop without publishing: the temporary file is removed, the target untouched."""
        self._closed = True
        sink = getattr(self, "_sink", None)  # None: the target could not be opened
        if sink is not None:
            sink.discard()

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
        if not getattr(self, "_closed", True):
            self.abort()

    def __repr__(self) -> str:
        where = f" {self.path!r}" if self.path else ""
        return f"<PuffinWriter{where} blobs={len(self._blobs)} closed={self._closed}>"

    def __getstate__(self) -> Any:
        raise TypeError("a PuffinWriter holds an open file and cannot be pickled")


def check_blob_arguments(
    *,
    type: str,
    fields: Iterable[int],
    snapshot_id: int,
    sequence_number: int,
    properties: Mapping[str, str] | None,
) -> tuple[int, ...]:
    """Validate writer arguments up front, so a bad call never reaches the file."""
    if not isinstance(type, str) or not type:
        raise ValueError(f"blob type must be a non-empty string, got {type!r}")
    field_ids = tuple(fields)
    for f in field_ids:
        if isinstance(f, bool) or not isinstance(f, int) or not INT32_MIN <= f <= INT32_MAX:
            raise ValueError(f"field ids must be int32 values, got {f!r}")
    for name, v in (("snapshot_id", snapshot_id), ("sequence_number", sequence_number)):
        if isinstance(v, bool) or not isinstance(v, int) or not INT64_MIN <= v <= INT64_MAX:
            raise ValueError(f"{name} must be an int64 value, got {v!r}")
    check_properties(properties)
    type.encode("utf-8")  # raises UnicodeEncodeError for unpaired surrogates
    return field_ids


def check_properties(properties: Mapping[str, str] | None) -> None:
    """Properties map str to str, and every string is valid UTF-8 (no unpaired surrogate):
    checked when given, not when the footer is written after every blob."""
    for k, v in (properties or {}).items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValueError(f"properties must map str to str, got {k!r}: {v!r}")
        k.encode("utf-8")  # raises UnicodeEncodeError for unpaired surrogates
        v.encode("utf-8")


def create(
    target: str | os.PathLike[str] | IO[bytes],
    *,
    created_by: str | None = None,
    properties: Mapping[str, str] | None = None,
    compress_footer: bool = False,
    io: Any = None,
) -> PuffinWriter:
    """Start writing a Puffin file.

    Args:
        target: a path (written atomically through a temporary file beside it), a URL
            (``file://``; others through ``io`` or fsspec, an object visible only when
            complete), a pyiceberg ``OutputFile`` or a writable binary file object.
        created_by: stored as the ``created-by`` file property (recommended by the spec).
        properties: other file properties.
        compress_footer: LZ4-compress the footer payload.  Off by default because Iceberg
            Java, Rust, Go and pyiceberg cannot read compressed footers.
        io: a pyiceberg ``FileIO`` (``table.io``) to write URLs with; else fsspec.

    Example::

        with puffin.create("out.puffin", created_by="my-app 1.0") as writer:
            writer.add_blob(b"...", type="my-type", fields=[1])
        print(writer.file_size, writer.footer_size)
    """
    return PuffinWriter(target, created_by=created_by, properties=properties,
                        compress_footer=compress_footer, io=io)
