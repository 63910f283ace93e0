"""Where a location lives, and how to open it: the one home for paths and URLs.

Iceberg records every location as a URL, so every API that takes a source or a target
takes one too.  There is one mapping of ``file:`` URLs to local paths, :func:`local_path`:
everything after the authority is the path, as in Iceberg Java (Hadoop's ``Path``) and
fsspec.  A local location is read natively and written atomically (a temporary file renamed
into place); any other goes through the table's pyiceberg ``FileIO`` when there is one,
else through fsspec (:mod:`puffin.io.remote`).

- :func:`open_source` (readers) and :func:`open_sink` (writers) take any source or target;
- :func:`open_input` and :func:`open_output` are what the Iceberg and Spark integrations
  call for a table's files: the one input opener and the one output opener.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from puffin.io.base import RandomAccessSource, Sink
from puffin.io.local import LocalSink, Source, StreamSink, local_source
from puffin.io.remote import (
    Upload,
    fsspec_fs,
    is_input_file,
    is_output_file,
    open_url_source,
    protocols,
)

if TYPE_CHECKING:
    from pyiceberg.io import FileIO

__all__ = [
    "SAME_SCHEME",
    "cut_by_pyiceberg",
    "is_input_file",
    "is_output_file",
    "is_url",
    "local_path",
    "location_key",
    "open_input",
    "open_output",
    "open_sink",
    "open_source",
]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+://")


def is_url(location: object) -> bool:
    """Whether ``location`` is a URL (``scheme://…`` or ``file:…``), not a local path.

    One-letter schemes are Windows drive letters; ``file:/x`` is Iceberg Java's own form.
    """
    return isinstance(location, str) and (
        _SCHEME.match(location) is not None or location.startswith("file:")
    )


def local_path(location: str) -> str | None:
    """The local path of a location: a plain path (made absolute) or a ``file:`` URL's
    path; ``None`` for any other URL.

    Everything after a ``file:`` URL's authority is the path, ``#`` and ``?`` included:
    Iceberg writers (Hadoop's ``Path``, fsspec) do not escape them, so they name the file,
    not a fragment or a query.  Percent escapes are kept as they are, as Hadoop and
    pyiceberg do.  (pyiceberg's own FileIO drops a ``#…`` or ``?…`` part: docs/interop.md.)
    """
    if not is_url(location):
        if re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*:", location) and not _drive(location):
            return None  # scheme:opaque, not a path
        return os.path.abspath(location)
    if location[:5].lower() != "file:":
        return None
    rest = location[5:]
    if not rest.startswith("//"):
        return rest  # file:/x, Iceberg Java's form
    netloc, slash, path = rest[2:].partition("/")
    if netloc in ("", "localhost"):
        return slash + path
    return f"{netloc}{slash}{path}"


def cut_by_pyiceberg(location: str) -> str | None:
    """The ``#`` or ``?`` in ``location`` where pyiceberg's file IO would cut it, or None.

    pyiceberg parses every location with ``urlparse``, so ``file:///wh/my #1/t`` is the file
    ``/wh/my `` to it: the files it writes there land outside the folder, one over the other.
    Iceberg Java and this library read the same location as the folder ``my #1``, and no
    spelling makes all of them agree: percent-encoding (``%23``) is a different folder to
    both, since neither decodes ``file:`` locations (docs/interop.md).  Such a location is
    refused for writes rather than written to the wrong place.
    """
    for mark in ("#", "?"):
        if mark in location:
            return mark
    return None


#: Schemes that name the same store: one is compared as the other (Iceberg Java's orphan
#: cleanup takes ``s3a`` and ``s3n`` for ``s3`` by default).
SAME_SCHEME = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs"}


def location_key(location: str) -> str:
    """What identifies a file however its location is spelled (``/t/x``, ``file:/t/x``,
    ``file:///t/x``, a relative path): its normalized local path, or the URL with its
    scheme in one form (:data:`SAME_SCHEME`: ``s3a://b/k`` is ``s3://b/k``)."""
    local = local_path(location)
    if local is not None:
        return os.path.normpath(local)
    scheme, sep, rest = location.partition("://")
    if not sep:
        return location
    lowered = scheme.lower()
    return f"{SAME_SCHEME.get(lowered, lowered)}://{rest}"


class _Borrowed:
    """A caller's open source, read through and left open."""

    def __init__(self, source: RandomAccessSource) -> None:
        self._source = source
        self.size = source.size
        self.name = source.name

    def read_at(self, offset: int, length: int) -> bytes:
        return self._source.read_at(offset, length)

    def close(self) -> None:
        pass


def _drive(location: str) -> bool:
    return os.name == "nt" and len(location) > 1 and location[1] == ":"


def open_source(
    source: Source, *, file_size: int | None = None, file_io: Any = None
) -> RandomAccessSource:
    """Wrap ``source`` for positional reads: a URL or pyiceberg InputFile (through
    ``file_io`` when given, else fsspec), a path, bytes, or a binary file object.  A
    source opened already (one with ``read_at``) is borrowed: closing what this returns
    leaves it open for the caller's next read."""
    opened = callable(getattr(source, "read_at", None))
    if opened and isinstance(getattr(source, "size", None), int):
        return _Borrowed(cast("RandomAccessSource", source))
    if is_url(source) or is_input_file(source):
        path = local_path(source) if isinstance(source, str) else None
        if path is None:
            return open_url_source(source, file_size=file_size, io=file_io)
        source = path
    return local_source(source, file_size=file_size)


def open_sink(target: Any, *, io: Any = None) -> Sink:
    """Where a writer's bytes go for ``target``: a path (or ``file:`` URL, or a local
    pyiceberg OutputFile) written atomically, an object uploaded whole at commit (through
    ``io``, the OutputFile, or fsspec), a caller's binary file object, or a
    :class:`~puffin.io.base.Sink` of the caller's own."""
    if is_output_file(target):
        location = target.location
        path = local_path(location) if is_url(location) else location
        if path is not None:  # a local file: the atomic local writer, not create(overwrite)
            return LocalSink(path, name=location)
        return Upload(location, output=target, overwrite=False)
    if isinstance(target, (str, os.PathLike)):
        text = os.fspath(target)
        path = local_path(text) if is_url(text) else text
        if path is not None:
            return LocalSink(path, name=text)
        if io is not None and not callable(getattr(io, "get_fs", None)):
            return Upload(text, output=io.new_output(text))
        fs, fs_path = fsspec_fs(text, io)
        if "file" in protocols(fs):
            return LocalSink(str(fs_path), name=text)  # local:// and the like
        return Upload(text, fs=fs, path=fs_path)
    if all(callable(getattr(target, m, None)) for m in ("write", "commit", "discard")):
        sink: Sink = target  # already a Sink (puffin.io.base.Sink)
        return sink
    if hasattr(target, "write"):
        return StreamSink(target)
    raise TypeError(
        f"target must be a path or a writable binary file object, got {type(target).__name__}"
    )


def open_input(io: FileIO, location: str) -> Any:
    """A seekable binary file for a table's ``location``: the local file, or the FileIO's
    stream.  The caller closes it."""
    path = local_path(location)
    if path is not None:
        return open(path, "rb")
    return io.new_input(location).open(seekable=True)


@contextmanager
def open_output(location: str, io: FileIO | None = None) -> Iterator[Any]:
    """What to give a Puffin writer (:func:`puffin.create`, ``write_deletion_vectors``) to
    write a new file at a table's ``location``.

    A local location yields its path (its folder created), written atomically; any other
    yields ``io.new_output(location)`` (the table's pyiceberg FileIO, whose object the
    writer uploads only when complete) or, without ``io``, the URL itself (fsspec).

    Example::

        with open_output(location, table.io) as target:
            entries = write_deletion_vectors(target, vectors)
    """
    path = local_path(location)
    if path is not None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        yield path
    elif io is not None:
        yield io.new_output(location)
    else:
        yield location
