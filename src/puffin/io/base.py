"""The two interfaces of file access: a source to read at offsets, a sink to write once.

Every reader takes a :class:`RandomAccessSource` and every writer a :class:`Sink`; the local
and remote implementations live beneath (:mod:`puffin.io.local`, :mod:`puffin.io.remote`)
and :mod:`puffin.io.locations` picks one for whatever the caller hands over.
"""

from __future__ import annotations

from typing import Protocol

from puffin.errors import InvalidFileError

__all__ = ["RandomAccessSource", "Sink", "check_range", "short_read", "write_all"]


class RandomAccessSource(Protocol):
    """What the reader needs from a file: its size and positional reads."""

    size: int
    name: str | None

    def read_at(self, offset: int, length: int) -> bytes:
        """Exactly ``length`` bytes at ``offset``; raises if the file holds fewer."""
        ...

    def close(self) -> None: ...


class Sink(Protocol):
    """Where a writer's bytes go: nothing is visible at the target before :meth:`commit`
    (for a path or an object store), and :meth:`discard` leaves nothing behind."""

    @property
    def name(self) -> str | None:
        """The target's path or URL, for messages; None for a caller's file object."""
        ...

    def write(self, data: bytes | bytearray | memoryview) -> object:
        """Take all of ``data``."""
        ...

    def commit(self) -> None:
        """Make the written bytes the target's, whole (atomically where the target allows)."""
        ...

    def discard(self) -> None:
        """Abandon the bytes written; safe to call more than once, and after a failure."""
        ...


def check_range(offset: int, length: int, size: int) -> None:
    if offset < 0 or length < 0 or offset + length > size:
        raise InvalidFileError(
            f"read of {length} bytes at offset {offset} is outside the file of {size} bytes",
            offset=offset,
        )


def short_read(offset: int, length: int, got: int) -> InvalidFileError:
    return InvalidFileError(
        f"file truncated: wanted {length} bytes at offset {offset}, got {got}", offset=offset
    )


def write_all(out: object, data: bytes | bytearray | memoryview) -> None:
    """Write all of ``data`` to a binary file object (raw streams may take part of it)."""
    view = memoryview(data)
    write = out.write  # type: ignore[attr-defined]
    while view:
        written = write(view)
        if written is None:  # raw streams may return None when they would block
            raise OSError("output did not accept the write")
        view = view[written:]
