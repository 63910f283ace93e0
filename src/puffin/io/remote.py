"""Puffin files in object stores: ranged reads and uploads through fsspec or a FileIO.

:mod:`puffin.io.locations` decides where a location lives; a remote one comes here.  It goes
through a pyiceberg ``FileIO`` given as ``io=`` (with its properties), else through fsspec
(optional, imported only here and only when needed).

Object stores charge by request, so reads are ranged: one request per ``read_at``, no
read-ahead cache, and the object's size from one HEAD unless the caller knows it
(``file_size=``).  Writes never show a partial object: the bytes are buffered in memory
and sent in one PUT when the writer closes; past :data:`UPLOAD_BUFFER_SIZE` they go out as
a multipart upload that is completed only at close and aborted on error (S3, GCS,
Azure).  Where the store or the FileIO's stream cannot abort, they are spooled to an
unnamed local file instead and copied at close.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
import threading
from typing import Any

from puffin.errors import InvalidFileError
from puffin.io.base import RandomAccessSource, check_range, short_read
from puffin.io.stores import fsspec_fs, storage_errors

__all__ = [
    "UPLOAD_BUFFER_SIZE",
    "Upload",
    "fsspec_fs",
    "is_input_file",
    "is_output_file",
    "open_url_source",
    "protocols",
]

# Bytes of a new object kept in memory before a multipart upload (or a spool file) starts;
# also the part size.  S3 needs parts of at least 5 MiB.
UPLOAD_BUFFER_SIZE = 64 << 20

def is_input_file(obj: object) -> bool:
    """A pyiceberg ``InputFile`` (duck-typed: a location it can ``open``, no ``read``)."""
    return (
        isinstance(getattr(obj, "location", None), str)
        and callable(getattr(obj, "open", None))
        and not hasattr(obj, "read")
    )


def is_output_file(obj: object) -> bool:
    """A pyiceberg ``OutputFile`` (duck-typed: a location it can ``create``, no ``write``)."""
    return (
        isinstance(getattr(obj, "location", None), str)
        and callable(getattr(obj, "create", None))
        and not hasattr(obj, "write")
    )


def _not_found(url: str, exc: OSError) -> OSError:
    """``exc`` naming the URL, not the store's own name for the object."""
    return type(exc)(exc.errno or errno.ENOENT, exc.strerror or "no such object", url)


class _FsspecSource:
    """Ranged reads of one object: ``cat_file(path, start, end)``, one request each."""

    defer_head = True  # each read is a request: the reader checks the magic on the way

    def __init__(self, fs: Any, path: str, url: str, file_size: int | None) -> None:
        self.name: str | None = url
        self._fs, self._path = fs, path
        if file_size is None:
            try:
                with storage_errors(url):
                    info = fs.info(path)  # one HEAD
            except FileNotFoundError as exc:
                raise _not_found(url, exc) from None
            if info.get("type") == "directory":
                raise InvalidFileError(
                    "a directory, not a regular file: cannot be read as a Puffin file",
                    location=url,
                )
            file_size = int(info["size"])
        self.size = file_size

    def read_at(self, offset: int, length: int) -> bytes:
        check_range(offset, length, self.size)
        if length == 0:
            return b""
        try:
            with storage_errors(self.name or self._path):
                data = self._fs.cat_file(self._path, start=offset, end=offset + length)
        except FileNotFoundError as exc:
            raise _not_found(self.name or self._path, exc) from None
        except OSError as exc:
            # HTTP 416: the whole range lies past the object's end, i.e. a ``file_size``
            # larger than the object; a range that only overlaps the end reads short.
            if exc.errno != errno.EINVAL and "range" not in str(exc).lower():
                raise
            raise short_read(offset, length, 0) from None
        if len(data) != length:
            raise short_read(offset, length, len(data))
        return bytes(data)

    def close(self) -> None:
        pass


class _StreamSource:
    """Reads through a FileIO's seekable stream (PyArrowFileIO: one ranged GET per read)."""

    defer_head = True

    def __init__(self, input_file: Any, file_size: int | None) -> None:
        self.name: str | None = input_file.location
        try:
            with storage_errors(input_file.location):
                self._stream = input_file.open(seekable=True)  # PyArrow: the one HEAD
        except FileNotFoundError as exc:
            raise _not_found(input_file.location, exc) from None
        self._lock = threading.Lock()  # for streams without positional reads
        if file_size is None:
            try:
                size = getattr(self._stream, "size", None)
                file_size = int(size() if callable(size) else self._stream.seek(0, os.SEEK_END))
            except BaseException:
                self._stream.close()  # the reader never got it: nobody else would close it
                raise
        self.size = file_size

    def read_at(self, offset: int, length: int) -> bytes:
        check_range(offset, length, self.size)
        if length == 0:
            return b""
        read_at = getattr(self._stream, "read_at", None)  # positional, thread-safe in Arrow
        if read_at is not None:
            data = read_at(length, offset)
        else:
            with self._lock:
                self._stream.seek(offset)
                data = self._stream.read(length)
        if len(data) != length:
            raise short_read(offset, length, len(data))
        return bytes(data)

    def close(self) -> None:
        self._stream.close()


def open_url_source(
    location: Any, *, file_size: int | None = None, io: Any = None
) -> RandomAccessSource:
    """A ranged :class:`~puffin.io.local.RandomAccessSource` for a URL or a pyiceberg InputFile.

    ``file:`` URLs are the caller's to open as paths (see :func:`local_path`).
    """
    if is_input_file(location):
        fs = getattr(location, "_fs", None)  # pyiceberg's FsspecInputFile
        if fs is not None and callable(getattr(fs, "cat_file", None)):
            # Its open() is a buffered file that reads ahead (s3fs: 50 MiB blocks).
            return _FsspecSource(fs, location.location, location.location, file_size)
        return _StreamSource(location, file_size)
    if io is not None and not callable(getattr(io, "get_fs", None)):
        return _StreamSource(io.new_input(location), file_size)
    fs, path = fsspec_fs(location, io)
    return _FsspecSource(fs, path, location, file_size)


class Upload:
    """A write-only file that becomes an object only at :meth:`commit`.

    Up to :data:`UPLOAD_BUFFER_SIZE` bytes stay in memory and go out in one PUT.  Past it,
    an fsspec filesystem gets a multipart upload (completed by :meth:`commit`, aborted by
    :meth:`discard`); a FileIO stream, which may not abort, gets its bytes from an unnamed
    local spool file at :meth:`commit`.
    """

    def __init__(
        self,
        url: str,
        *,
        fs: Any = None,
        path: str = "",
        output: Any = None,
        overwrite: bool = True,
    ) -> None:
        self.name = url
        self._fs, self._path, self._output = fs, path, output
        self._overwrite = overwrite  # an OutputFile handed over means "a new file"
        self._buffer = bytearray()
        self._spill: Any = None  # a multipart stream (fsspec) or a spool file (FileIO)
        self._done = False

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._done:
            raise ValueError(f"write to a finished upload of {self.name}")
        size = memoryview(data).nbytes
        if self._spill is None and len(self._buffer) + size <= UPLOAD_BUFFER_SIZE:
            self._buffer += data
            return size
        if self._spill is None:
            self._spill = self._start_spill()
            self._spill.write(bytes(self._buffer))
            self._buffer = bytearray()
        self._spill.write(data)
        return size

    def _start_spill(self) -> Any:
        if self._fs is not None and aborts_uploads(self._fs):
            return self._fs.open(self._path, "wb", block_size=UPLOAD_BUFFER_SIZE)
        # Other stores (and FileIO streams) may show or keep a partial object: spool to an
        # unnamed local file (nothing to leave behind) and send it whole at commit.
        return tempfile.TemporaryFile()

    @property
    def _streaming(self) -> bool:
        """Whether the spill is the store's own multipart upload (not a local spool)."""
        return self._spill is not None and self._fs is not None and aborts_uploads(self._fs)

    def commit(self) -> None:
        """Make the object visible, whole: one PUT, or complete the multipart upload."""
        if self._done:
            return
        try:
            with storage_errors(self.name):
                self._commit()
        except FileNotFoundError as exc:  # a missing bucket
            self.discard()
            raise _not_found(self.name, exc) from None
        except BaseException:
            self.discard()
            raise
        self._done = True
        self._buffer = bytearray()

    def _commit(self) -> None:
        if self._fs is not None and self._spill is None:
            self._fs.pipe_file(self._path, bytes(self._buffer))
        elif self._streaming:
            self._spill.close()  # completes the multipart upload
        elif self._fs is not None:  # a store that cannot abort: one copy, at the end
            self._spill.seek(0)
            with self._fs.open(self._path, "wb") as out:
                shutil.copyfileobj(self._spill, out, UPLOAD_BUFFER_SIZE)
            self._spill.close()
        else:
            self._upload_through_fileio()

    def _upload_through_fileio(self) -> None:
        stream = self._output.create(overwrite=self._overwrite)
        try:
            if self._spill is None:
                stream.write(bytes(self._buffer))
            else:
                self._spill.seek(0)
                while chunk := self._spill.read(UPLOAD_BUFFER_SIZE):
                    stream.write(chunk)
                self._spill.close()
        finally:
            stream.close()

    def discard(self) -> None:
        """Abandon the upload: no object appears, a multipart upload is aborted."""
        if self._done:
            return
        self._done = True
        self._buffer = bytearray()
        streaming = self._streaming
        spill, self._spill = self._spill, None
        if spill is None:
            return
        if not streaming:
            spill.close()
            return
        # Cleanup must never hide the error that led here: failures to abort are dropped.
        with contextlib.suppress(Exception):
            spill.discard()  # s3fs, gcsfs, adlfs: abort the multipart upload
        with contextlib.suppress(Exception):
            spill.closed = True  # so that its __del__ does not complete the upload after all

    def __del__(self) -> None:
        self.discard()


# fsspec protocols whose files upload in parts that are completed only at close and
# aborted by ``discard()`` (s3fs, gcsfs, adlfs).  Other filesystems' writable files may show
# the object while it is written (memory), write in place (local) or not abort at all.
_ABORTABLE = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl"})


def protocols(fs: Any) -> tuple[str, ...]:
    """An fsspec filesystem's protocol names (fsspec gives a string or a tuple)."""
    return tuple(fs.protocol) if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)


def aborts_uploads(fs: Any) -> bool:
    return any(p in _ABORTABLE for p in protocols(fs))


