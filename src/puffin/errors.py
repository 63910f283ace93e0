"""Errors raised for bad input.

Every problem with a file or a payload raises a subclass of :class:`PuffinError`, which is
itself a :class:`ValueError`, so callers can catch one type.  The message names what is
wrong and where: a byte offset, a footer field, a blob index, or a caller-given location.
"""

from __future__ import annotations

__all__ = [
    "CodecError",
    "DeletionVectorError",
    "InvalidBlobError",
    "InvalidFileError",
    "InvalidFooterError",
    "LimitExceededError",
    "PuffinError",
    "ThetaSketchError",
    "UnknownCodecError",
]


class PuffinError(ValueError):
    """Base of every error this library raises for malformed or unacceptable input.

    ``offset`` (a byte offset in the file or payload), ``field`` (a footer field name) and
    ``blob_index`` (position of the blob in the footer) are set when known and are also
    written into the message.
    """

    def __init__(
        self,
        message: str,
        *,
        offset: int | None = None,
        field: str | None = None,
        blob_index: int | None = None,
        location: str | None = None,
    ) -> None:
        self.reason = message
        self.offset = offset
        self.field = field
        self.blob_index = blob_index
        self.location = location
        where = []
        if location is not None:
            where.append(location)
        if blob_index is not None:
            where.append(f"blob {blob_index}")
        if field is not None:
            where.append(f"field {field!r}")
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)

    def __reduce__(self) -> tuple[object, ...]:
        # Keep keyword-only context across pickling (multiprocessing, Spark executors).
        return (
            _rebuild,
            (type(self), self.reason, self.offset, self.field, self.blob_index, self.location),
        )


def _rebuild(
    cls: type[PuffinError],
    reason: str,
    offset: int | None,
    field: str | None,
    blob_index: int | None,
    location: str | None,
) -> PuffinError:
    return cls(reason, offset=offset, field=field, blob_index=blob_index, location=location)


class InvalidFileError(PuffinError):
    """The container layout is broken: magic, sizes, flags, truncation."""


class InvalidFooterError(PuffinError):
    """The footer payload is not a valid ``FileMetadata`` JSON document."""


class CodecError(PuffinError):
    """A compressed blob or footer cannot be decompressed as the codec requires."""


class UnknownCodecError(CodecError):
    """A ``compression-codec`` names a codec this library does not know."""


class LimitExceededError(PuffinError):
    """A size declared by the input exceeds a configured cap (see :class:`puffin.Limits`)."""


class InvalidBlobError(PuffinError):
    """A blob's payload does not follow the rules of its blob type."""


class DeletionVectorError(InvalidBlobError):
    """A ``deletion-vector-v1`` payload or its footer metadata is invalid."""


class ThetaSketchError(InvalidBlobError):
    """An ``apache-datasketches-theta-v1`` payload is invalid."""
