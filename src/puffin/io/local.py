"""Local files: random access to the bytes of whatever the caller hands us, and sinks.

A source is a path (``str`` or ``os.PathLike``), a bytes-like object, or a binary file object
with ``seek`` and ``read`` (local files, ``fsspec`` and ``pyarrow`` files).  Reads are
positional and thread-safe: ``os.pread`` on paths, slices on bytes, a lock around
``seek`` + ``read`` on file objects.  A path is written atomically (:class:`LocalSink`, over
:mod:`puffin.io.staging`); a caller's file object as it is (:class:`StreamSink`).
"""

from __future__ import annotations

import io
import os
import stat
import threading
from typing import IO, Any, Union

from puffin.errors import InvalidFileError
from puffin.io.base import RandomAccessSource, check_range, short_read, write_all
from puffin.io.staging import Staging

__all__ = [
    "LocalSink",
    "Source",
    "StreamSink",
    "check_regular",
    "local_source",
    "open_regular",
]

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes], Any]


class _BytesSource:
    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self._data = memoryview(data).cast("B")
        self.size = len(self._data)
        self.name: str | None = None

    def read_at(self, offset: int, length: int) -> bytes:
        check_range(offset, length, self.size)
        return bytes(self._data[offset : offset + length])

    def close(self) -> None:
        pass


def open_regular(path: str, *, what: str = "a Puffin file") -> tuple[int, int]:
    """Open ``path`` to read, at once: its descriptor and size, or InvalidFileError (naming
    ``path``) when it is not a regular file, such as a FIFO, a directory or ``/dev/zero``.

    The one check of every local read: :func:`local_source` and the ``puffin`` commands
    (their Parquet inputs too, ``what`` naming the format) refuse the same files with the
    same words.  OSError when the path cannot be opened (missing, no permission).
    """
    # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidFileError(
                f"{_kind(info.st_mode)}, not a regular file: cannot be read as {what}",
                location=path,
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def check_regular(path: str, *, what: str = "a Puffin file") -> None:
    """Raise as :func:`open_regular` does unless ``path`` is a regular file; opens nothing
    that stays open, and never blocks."""
    fd, _ = open_regular(path, what=what)
    os.close(fd)


class _PathSource:
    def __init__(self, path: str, file_size: int | None) -> None:
        self.name: str | None = path
        self._fd, actual = open_regular(path)
        self.size = actual if file_size is None else file_size
        self._lock = None if hasattr(os, "pread") else threading.Lock()
        # Reads in flight: close() waits for them, so a descriptor number that the OS hands
        # to another file after close is never read by a thread that fetched it before.
        self._state = threading.Condition()
        self._reading = 0

    def read_at(self, offset: int, length: int) -> bytes:
        check_range(offset, length, self.size)
        if self._lock is None:
            with self._state:
                fd = self._fd
                if fd < 0:
                    raise ValueError("I/O operation on a closed Puffin reader")
                self._reading += 1
            try:
                return self._pread(fd, offset, length)
            finally:
                with self._state:
                    self._reading -= 1
                    if not self._reading:
                        self._state.notify_all()
        with self._lock:  # pragma: no cover - platforms without pread
            os.lseek(self._fd, offset, os.SEEK_SET)
            data = os.read(self._fd, length)
            if len(data) != length:
                raise short_read(offset, length, len(data))
            return data

    @staticmethod
    def _pread(fd: int, offset: int, length: int) -> bytes:
        chunks = []
        got = 0
        while got < length:
            chunk = os.pread(fd, length - got, offset + got)
            if not chunk:
                raise short_read(offset, length, got)
            chunks.append(chunk)
            got += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def close(self) -> None:
        with self._state:
            fd, self._fd = self._fd, -1
            while self._reading:
                self._state.wait()
        if fd >= 0:
            os.close(fd)


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return kind
    return "a special file"


_TEXT_MODE = "the file object was opened in text mode: open the file in binary mode ('rb')"


class _FileObjectSource:
    def __init__(self, fileobj: Any, file_size: int | None) -> None:
        self._file = fileobj
        self._lock = threading.Lock()
        self.name = getattr(fileobj, "name", None)
        if not isinstance(self.name, str):
            self.name = getattr(fileobj, "path", None) if isinstance(
                getattr(fileobj, "path", None), str
            ) else None
        if file_size is None:
            with self._lock:
                file_size = fileobj.seek(0, os.SEEK_END)
                if not isinstance(file_size, int):  # some file objects return None
                    file_size = fileobj.tell()
        self.size = int(file_size)

    def read_at(self, offset: int, length: int) -> bytes:
        check_range(offset, length, self.size)
        with self._lock:
            self._file.seek(offset)
            parts: list[bytes] = []
            got = 0
            while got < length:
                chunk = self._file.read(length - got)
                if isinstance(chunk, str):
                    raise TypeError(_TEXT_MODE)
                if not chunk:
                    raise short_read(offset, length, got)
                parts.append(bytes(chunk))
                got += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def close(self) -> None:
        pass  # the caller owns the file object


def local_source(source: Source, *, file_size: int | None = None) -> RandomAccessSource:
    """Wrap a local ``source`` (bytes, a path, a binary file object) for positional reads.

    ``file_size`` skips the size lookup (as Iceberg's ``file-size-in-bytes`` does); the
    reader then treats the file as ending there.  Paths are opened here and closed by
    :meth:`RandomAccessSource.close`; file objects stay the caller's to close.  URLs are
    :func:`puffin.io.locations.open_source`'s.
    """
    if file_size is not None and (
        isinstance(file_size, bool) or not isinstance(file_size, int) or file_size < 0
    ):
        raise ValueError(f"file_size must be a non-negative int, got {file_size!r}")
    if isinstance(source, (bytes, bytearray, memoryview)):
        src: RandomAccessSource = _BytesSource(source)
        if file_size is not None and file_size != src.size:
            raise InvalidFileError(
                f"file_size {file_size} does not match the {src.size} bytes given"
            )
        return src
    if isinstance(source, (str, os.PathLike)):
        return _PathSource(os.fspath(source), file_size)
    if isinstance(source, io.TextIOBase):  # would fail later with a UnicodeDecodeError
        raise TypeError(_TEXT_MODE)
    if hasattr(source, "read") and hasattr(source, "seek"):
        return _FileObjectSource(source, file_size)
    raise TypeError(
        "source must be a path, a bytes-like object or a binary file object with read and "
        f"seek, got {type(source).__name__}"
    )


class LocalSink:
    """A path written atomically: a temporary beside it, synced and put in place at
    :meth:`commit`, removed by :meth:`discard`."""

    def __init__(self, path: str, *, name: str | None = None) -> None:
        self.name: str | None = path if name is None else name  # what messages call it
        self._staging: Staging | None = Staging(path)
        self._file = os.fdopen(self._staging.fd, "wb")

    def write(self, data: bytes | bytearray | memoryview) -> None:
        write_all(self._file, data)

    def commit(self) -> None:
        staging = self._staging
        if staging is None:
            raise ValueError(f"{self.name}: commit after the file was committed or discarded")
        self._file.flush()
        os.fsync(staging.fd)
        staging.publish()
        self._staging = None
        self._file.close()

    def discard(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass
        if self._staging is not None:
            self._staging.discard()
            self._staging = None

    def __del__(self) -> None:
        # An unfinished sink never publishes a partial file.
        if getattr(self, "_staging", None) is not None:
            self.discard()


class StreamSink:
    """A binary file object the caller owns: written as it is, flushed at :meth:`commit`,
    left open; what was written before a :meth:`discard` stays written."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.name: str | None = None
        self._stream = stream

    def write(self, data: bytes | bytearray | memoryview) -> None:
        write_all(self._stream, data)

    def commit(self) -> None:
        self._stream.flush()

    def discard(self) -> None:
        pass
