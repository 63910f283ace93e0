"""The one place that turns a table location into a file to read or write.

Iceberg locations are URIs (``file:/...``, ``s3://...``) or plain paths.  A local one is
opened directly (native reads, atomic writes through :func:`puffin.create`); any other
goes through the table's pyiceberg ``FileIO``.  The Iceberg and Spark integrations read and
write Puffin files only through these functions, so both resolve a location the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlparse

if TYPE_CHECKING:
    from pyiceberg.io import FileIO

__all__ = ["local_path", "open_input", "open_output"]


def local_path(location: str) -> str | None:
    """The local path of a ``file:`` (or scheme-less) location, else ``None``.

    Mirrors how pyiceberg's own FileIO maps such locations, so both see the same file.
    """
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return f"{parsed.netloc}{parsed.path}" if parsed.netloc else parsed.path
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return os.path.abspath(location)
    return None


def open_input(io: FileIO, location: str) -> Any:
    """A seekable binary file for ``location``: the local file, or the FileIO's stream."""
    path = local_path(location)
    if path is not None:
        return open(path, "rb")  # the caller closes it
    return io.new_input(location).open(seekable=True)


@contextmanager
def open_output(location: str, io: FileIO | None = None) -> Iterator[str | BinaryIO]:
    """Where to write a new Puffin file at ``location``: give the result to a Puffin writer.

    A local location yields its path (its folder created), so :func:`puffin.create` and
    ``write_deletion_vectors`` write it atomically (a temporary file renamed into place).
    Any other location yields a binary stream from ``io`` (the table's pyiceberg FileIO,
    which refuses to overwrite) or, without one, from fsspec; it is closed on leaving.

    Example::

        with open_output(location, table.io) as target:
            entries = write_deletion_vectors(target, vectors)
    """
    path = local_path(location)
    if path is not None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        yield path
        return
    if io is not None:
        stream: Any = io.new_output(location).create(overwrite=False)
    else:
        from puffin._integration.deps import require

        stream = require("fsspec", "iceberg").open(location, "wb").open()
    try:
        yield stream
    finally:
        stream.close()
