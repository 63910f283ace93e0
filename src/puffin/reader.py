"""Reading Puffin files.

The reader parses and validates the footer when it opens, then reads blobs on demand: one
read per blob, one (or, for footers larger than the tail read, two) for the footer, and one
when the caller passes Iceberg's ``file-footer-size-in-bytes`` as ``footer_size``.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import Any

from puffin.codecs import get_codec
from puffin.errors import (
    CodecError,
    InvalidFileError,
    LimitExceededError,
    PuffinError,
)
from puffin.footer import PayloadError
from puffin.io.base import RandomAccessSource
from puffin.io.local import Source
from puffin.io.locations import open_source
from puffin.layout import (
    FOOTER_STRUCT_LENGTH,
    MAGIC_LENGTH,
    MIN_FILE_SIZE,
    MIN_FOOTER_SIZE,
    check_magic,
    footer_size_for,
    parse_footer_struct,
)
from puffin.limits import DEFAULT_LIMITS, Limits
from puffin.metadata import BlobMetadata, FileMetadata, parse_payload

__all__ = ["PuffinReader", "open"]

# Blobs closer than this are fetched in one read by read_all(); the gap is read and dropped.
_COALESCE_GAP = 64 * 1024
_COALESCE_MAX = 16 << 20


class PuffinReader:
    """An open Puffin file.  Use :func:`puffin.open` to make one.

    Attributes:
        file_size: size of the file in bytes.
        footer_size: the whole footer, magic to magic (Iceberg's
            ``file-footer-size-in-bytes``).
        metadata: the parsed :class:`FileMetadata`.
        footer_compressed: whether the footer payload was LZ4-compressed.
    """

    def __init__(
        self,
        source: Source,
        *,
        file_size: int | None = None,
        footer_size: int | None = None,
        limits: Limits | None = None,
        io: Any = None,
    ) -> None:
        self.limits = limits if limits is not None else DEFAULT_LIMITS
        self._by_identity: dict[int, int] | None = None
        self._by_value: dict[BlobMetadata, list[int]] | None = None
        self._source: RandomAccessSource | None = open_source(
            source, file_size=file_size, file_io=io
        )
        # Where every read is a request (object stores), the leading magic is checked
        # by the first read starting within _COALESCE_GAP of it (the footer of a small
        # file, the first blob), never by a request of its own, which Java never makes.
        self._head_pending = bool(getattr(self._source, "defer_head", False))
        try:
            self.file_size = self._source.size
            self.name = self._source.name
            self.metadata, self.footer_size, self.footer_compressed = self._read_footer(
                footer_size
            )
            self._validate_blobs()
        except BaseException:
            self.close()
            raise

    # -- footer ---------------------------------------------------------------------------

    def _read_footer(self, hint: int | None) -> tuple[FileMetadata, int, bool]:
        src = self._src
        size = self.file_size
        if size < MIN_FILE_SIZE:
            raise InvalidFileError(
                f"file of {size} bytes is shorter than the smallest Puffin file "
                f"({MIN_FILE_SIZE} bytes)",
                offset=0,
            )
        if hint is not None:
            if isinstance(hint, bool) or not isinstance(hint, int):
                raise TypeError(f"footer_size must be an int, got {hint!r}")
            if hint < MIN_FOOTER_SIZE or hint > size - MAGIC_LENGTH:
                raise InvalidFileError(
                    f"invalid footer size {hint}: must be between {MIN_FOOTER_SIZE} and "
                    f"{size - MAGIC_LENGTH} for a file of {size} bytes"
                )
            footer = self._read(size - hint, hint)
            footer_start = size - hint
            check_magic(footer, 0, offset=footer_start, what="at footer start")
            fstruct = parse_footer_struct(footer, file_size=size)
            if footer_size_for(fstruct.payload_size) != hint:
                raise InvalidFileError(
                    f"footer size {hint} does not match the footer payload size "
                    f"{fstruct.payload_size} (footer size would be "
                    f"{footer_size_for(fstruct.payload_size)})",
                    offset=size - FOOTER_STRUCT_LENGTH,
                )
            footer_size = hint
            if not self._head_pending:
                check_magic(src.read_at(0, MAGIC_LENGTH), 0, offset=0, what="at start of file")
        else:
            tail_len = min(size, self.limits.tail_read_size)
            tail = self._read(size - tail_len, tail_len)
            if not self._head_pending:
                # A small file's tail read holds its leading magic too: no separate read.
                head = tail if tail_len == size else src.read_at(0, MAGIC_LENGTH)
                check_magic(head, 0, offset=0, what="at start of file")
            fstruct = parse_footer_struct(tail, file_size=size)
            self._check_payload_size(fstruct.payload_size)
            footer_size = footer_size_for(fstruct.payload_size)
            footer_start = size - footer_size
            if footer_size <= tail_len:
                footer = tail[tail_len - footer_size :]
            else:  # the footer is larger than the tail read: fetch only what is missing
                footer = src.read_at(footer_start, footer_size - tail_len) + tail
            check_magic(footer, 0, offset=footer_start, what="at footer start")

        self._check_payload_size(fstruct.payload_size)
        self._footer_start = footer_start
        payload_start = footer_start + MAGIC_LENGTH
        payload: bytes | bytearray = footer[MAGIC_LENGTH : MAGIC_LENGTH + fstruct.payload_size]
        del footer
        if fstruct.compressed:
            payload = self._decompressed_footer(payload, payload_start)
        try:
            metadata = parse_payload(payload, self.limits)
        except PayloadError as at:
            # A position in a compressed payload is no file offset: it goes into the message.
            if fstruct.compressed:
                raise at.located("decompressed footer payload", offset=payload_start) from None
            raise at.located("footer payload", offset=payload_start + at.position) from None
        return metadata, footer_size, fstruct.compressed

    def _decompressed_footer(self, payload: Any, payload_start: int) -> bytes | bytearray:
        lz4 = get_codec("lz4")
        assert lz4 is not None
        # Our LZ4 codec hands a large footer over without copying it into bytes.
        decompress = getattr(lz4, "decompress_buffer", lz4.decompress)
        try:
            out: bytes | bytearray = decompress(payload, max_size=self.limits.max_footer_size)
        except PuffinError as exc:
            prefix = "compressed footer payload"
            raise exc.with_context(offset=payload_start, prefix=prefix) from None
        return out

    def _check_payload_size(self, payload_size: int) -> None:
        largest = self.file_size - MIN_FILE_SIZE
        if payload_size > largest:
            raise InvalidFileError(
                f"footer payload size {payload_size} is larger than the file allows "
                f"({largest} bytes in a file of {self.file_size})",
                offset=self.file_size - FOOTER_STRUCT_LENGTH,
            )
        if payload_size > self.limits.max_footer_size:
            raise LimitExceededError(
                f"footer payload size {payload_size} exceeds the cap of "
                f"{self.limits.max_footer_size} bytes (Limits.max_footer_size)",
                offset=self.file_size - FOOTER_STRUCT_LENGTH,
            )

    def _validate_blobs(self) -> None:
        for i, blob in enumerate(self.metadata.blobs):
            if blob.offset < MAGIC_LENGTH:
                raise InvalidFileError(
                    f"blob offset {blob.offset} points into the file's leading magic",
                    blob_index=i,
                    field="offset",
                )
            if blob.length < 0:
                raise InvalidFileError(
                    f"negative blob length {blob.length}", blob_index=i, field="length"
                )
            if blob.offset + blob.length > self._footer_start:
                raise InvalidFileError(
                    f"blob [{blob.offset}, {blob.offset + blob.length}) runs past the footer "
                    f"start at {self._footer_start}",
                    blob_index=i,
                    field="length",
                )
            if blob.length > self.limits.max_blob_size:
                raise LimitExceededError(
                    f"blob length {blob.length} exceeds the cap of "
                    f"{self.limits.max_blob_size} bytes (Limits.max_blob_size)",
                    blob_index=i,
                    field="length",
                )
            try:
                get_codec(blob.compression_codec)
            except CodecError as exc:
                raise exc.with_context(blob_index=i, field="compression-codec") from None

    # -- public API ---------------------------------------------------------------------------

    @property
    def _src(self) -> RandomAccessSource:
        if self._source is None:
            raise ValueError("I/O operation on a closed Puffin reader")
        return self._source

    @property
    def blobs(self) -> list[BlobMetadata]:
        """The blobs in footer order."""
        return list(self.metadata.blobs)

    @property
    def properties(self) -> dict[str, str]:
        """The file's properties, such as ``created-by``."""
        return dict(self.metadata.properties)

    def _resolve(self, blob: BlobMetadata | int) -> tuple[int, BlobMetadata]:
        blobs = self.metadata.blobs
        if isinstance(blob, bool):
            raise TypeError("blob must be a BlobMetadata or an int index")
        if isinstance(blob, int):
            if not -len(blobs) <= blob < len(blobs):
                raise IndexError(f"blob index {blob} out of range for {len(blobs)} blobs")
            index = blob % len(blobs)
            return index, blobs[index]
        if isinstance(blob, BlobMetadata):
            # Dictionaries, not scans: `for b in reader.blobs: reader.read_blob(b)` must stay
            # linear for footers of many thousands of blobs.
            if self._by_identity is None:
                self._by_identity = {id(b): i for i, b in enumerate(blobs)}
            found = self._by_identity.get(id(blob))
            if found is None:
                if self._by_value is None:
                    self._by_value = {}
                    for i, b in enumerate(blobs):
                        self._by_value.setdefault(b, []).append(i)
                # BlobMetadata hashes without its properties; compare those too.
                found = next((i for i in self._by_value.get(blob, ()) if blobs[i] == blob), None)
            if found is None:
                raise ValueError(f"blob {blob!r} is not in this file")
            return found, blobs[found]
        raise TypeError(f"blob must be a BlobMetadata or an int index, got {type(blob).__name__}")

    def _read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``; checks a pending leading magic on the way."""
        if not self._head_pending or offset > _COALESCE_GAP:
            return self._src.read_at(offset, length)
        data = self._src.read_at(0, offset + length)  # the same request brings the magic
        check_magic(data, 0, offset=0, what="at start of file")
        self._head_pending = False
        return data[offset:]

    def read_raw(self, blob: BlobMetadata | int) -> bytes:
        """The blob's bytes as stored (compressed, if it has a codec)."""
        _, meta = self._resolve(blob)
        return self._read(meta.offset, meta.length)

    def read_blob(self, blob: BlobMetadata | int) -> bytes:
        """The blob's bytes, decompressed."""
        index, meta = self._resolve(blob)
        return self._decode(index, meta, self._read(meta.offset, meta.length))

    def _decode(self, index: int, meta: BlobMetadata, raw: bytes) -> bytes:
        codec = get_codec(meta.compression_codec)
        if codec is None:
            return raw
        try:
            return codec.decompress(raw, max_size=self.limits.max_decompressed_size)
        except PuffinError as exc:
            raise exc.with_context(blob_index=index, offset=meta.offset) from None

    def read_all(self) -> Iterator[tuple[BlobMetadata, bytes]]:
        """Every blob with its decompressed bytes, in file order.

        Neighbouring blobs are fetched in one read (up to 16 MiB at a time), so a file of
        many small blobs costs few reads.
        """
        blobs = self.metadata.blobs
        group: list[int] = []
        group_start = group_end = 0
        for i in sorted(range(len(blobs)), key=lambda i: blobs[i].offset):
            meta = blobs[i]
            end = meta.offset + meta.length
            if group and (
                meta.offset - group_end > _COALESCE_GAP
                or max(group_end, end) - group_start > _COALESCE_MAX
            ):
                yield from self._read_group(group)
                group = []
            if not group:
                group_start, group_end = meta.offset, end
            group.append(i)
            group_end = max(group_end, end)
        if group:
            yield from self._read_group(group)

    def _read_group(self, group: list[int]) -> Iterator[tuple[BlobMetadata, bytes]]:
        blobs = self.metadata.blobs
        start = min(blobs[i].offset for i in group)
        end = max(blobs[i].offset + blobs[i].length for i in group)
        chunk = memoryview(self._read(start, end - start))
        for i in group:
            meta = blobs[i]
            raw = bytes(chunk[meta.offset - start : meta.offset - start + meta.length])
            yield meta, self._decode(i, meta, raw)

    def close(self) -> None:
        """Release the file (a path source is closed; a caller's file object is not)."""
        if self._source is not None:
            self._source.close()
            self._source = None

    @property
    def closed(self) -> bool:
        return self._source is None

    def __enter__(self) -> PuffinReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = f" {self.name!r}" if self.name else ""
        return f"<PuffinReader{where} blobs={len(self.metadata.blobs)} size={self.file_size}>"

    def __iter__(self) -> Iterator[BlobMetadata]:
        return iter(self.metadata.blobs)

    def __len__(self) -> int:
        return len(self.metadata.blobs)

    def __getstate__(self) -> Any:
        raise TypeError("a PuffinReader holds an open file and cannot be pickled")


def open(
    source: Source,
    *,
    file_size: int | None = None,
    footer_size: int | None = None,
    limits: Limits | None = None,
    io: Any = None,
) -> PuffinReader:
    """Open a Puffin file for reading.

    Args:
        source: a path, a URL (``file://``, or any scheme through ``io`` or fsspec), a
            pyiceberg ``InputFile``, a bytes-like object, or a binary file object with
            ``seek`` and ``read``.  URLs are read in ranges: the footer with
            ``footer_size`` and each blob cost one request each.
        file_size: the file's size if already known (Iceberg's ``file-size-in-bytes``);
            saves a size lookup.
        footer_size: the footer size if known (Iceberg's ``file-footer-size-in-bytes``);
            the footer then costs exactly one read, and a wrong value fails as in Java.
        limits: caps on sizes the file may declare; see :class:`puffin.Limits`.
        io: a pyiceberg ``FileIO`` (such as ``table.io``) that reads URLs with its
            properties; without it, fsspec reads them.

    Returns:
        A :class:`PuffinReader`; use it as a context manager.

    Raises:
        PuffinError: the file is not a valid Puffin file (the subclass and message say
            what is wrong and where).

    Example::

        with puffin.open("stats.puffin") as reader:
            payloads = [reader.read_blob(b) for b in reader.blobs]
    """
    return PuffinReader(
        source, file_size=file_size, footer_size=footer_size, limits=limits, io=io
    )
