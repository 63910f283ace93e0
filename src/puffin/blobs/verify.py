"""``verify_file``: every check the library knows, as a list of problems.

The container (magic, sizes, flags, footer JSON, blob ranges), every codec frame, and the
rules of each standard blob type (:mod:`puffin.blobs.standard`) are checked; a blob with a
problem does not stop the checks of the next one.  The CLI's ``puffin verify`` and
``puffin inspect`` and :func:`puffin.iceberg.verify_table` all call this.

Example::

    import puffin
    problems = puffin.verify_file("stats.puffin")
    for p in problems:
        print(p)            # "blob 0, offset 4: ThetaSketchError: seed hash …"
    assert not problems     # empty: the file is valid
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from puffin.blobs import standard
from puffin.errors import (
    CodecError,
    DeletionVectorError,
    InvalidBlobError,
    InvalidFileError,
    InvalidFooterError,
    LimitExceededError,
    PuffinError,
    TableMetadataError,
    ThetaSketchError,
    UnknownCodecError,
)
from puffin.reader import open as _open

if TYPE_CHECKING:  # pragma: no cover
    from puffin.io.local import Source
    from puffin.limits import Limits
    from puffin.metadata import BlobMetadata

__all__ = ["Problem", "category_of", "check_blob", "verify_file", "verify_file_counted"]

# Most specific first: a subclass must come before its base.
_CATEGORIES: tuple[tuple[type[BaseException], str], ...] = (
    (InvalidFileError, "invalid-file"),
    (InvalidFooterError, "invalid-footer"),
    (UnknownCodecError, "unknown-codec"),
    (CodecError, "codec"),
    (LimitExceededError, "limit-exceeded"),
    (DeletionVectorError, "deletion-vector"),
    (ThetaSketchError, "theta-sketch"),
    (InvalidBlobError, "invalid-blob"),
    (PuffinError, "invalid"),
    (TableMetadataError, "table-metadata"),  # a table's manifests that break its spec
    (OSError, "io"),
)


def category_of(exc: BaseException) -> str:
    """The error's category, a stable language-neutral name (``"codec"``, ``"io"``, …)."""
    for cls, name in _CATEGORIES:
        if isinstance(exc, cls):
            return name
    return "error"


@dataclass(frozen=True)
class Problem:
    """One rule a file breaks: what (``category``, ``error``, ``message``) and where.

    ``offset`` is a byte offset in the file; ``blob_index`` and ``field`` name the footer
    entry.  Any of the three is None when it does not apply.
    """

    category: str
    error: str
    message: str
    offset: int | None = None
    blob_index: int | None = None
    field: str | None = None

    @classmethod
    def from_exception(cls, exc: BaseException) -> Problem:
        """The problem an exception reports (``PuffinError`` context, or an ``OSError``)."""
        if isinstance(exc, PuffinError):
            message = exc.reason if exc.location is None else f"{exc.location}: {exc.reason}"
            return cls(
                category_of(exc),
                type(exc).__name__,
                # One copy of a message that many blobs share (200,000 empty sketches: 26 MiB).
                sys.intern(message),
                exc.offset,
                exc.blob_index,
                exc.field,
            )
        message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return cls(category_of(exc), type(exc).__name__, message or type(exc).__name__)

    def __str__(self) -> str:
        where = []
        if self.blob_index is not None:
            where.append(f"blob {self.blob_index}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        prefix = f"{', '.join(where)}: " if where else ""
        return f"{prefix}{self.error}: {self.message}"


def _check_theta(data: bytes, meta: BlobMetadata, index: int) -> None:
    from puffin.blobs.theta.files import decode_blob  # NumPy: only when a theta blob is checked

    _, sketch, ndv = decode_blob(data, meta, index)
    if ndv is not None and not standard.ndv_agrees(
        ndv, sketch.num_retained, sketch.theta64, sketch.estimate
    ):
        raise ThetaSketchError(
            f"ndv property {ndv} does not match the sketch's estimate {sketch.estimate!r} "
            f"(Java records {standard.java_ndv(sketch.num_retained, sketch.theta64)})",
            blob_index=index,
            field=standard.NDV,
        )


def _check_deletion_vector(data: bytes, meta: BlobMetadata, index: int) -> None:
    from puffin.blobs.dv.files import decode_blob

    decode_blob(data, meta, index)  # the error carries the blob index itself


_CHECKS: dict[str, Callable[[bytes, BlobMetadata, int], None]] = {
    standard.APACHE_DATASKETCHES_THETA_V1: _check_theta,
    standard.DELETION_VECTOR_V1: _check_deletion_vector,
}


def check_blob(data: bytes, meta: BlobMetadata, index: int) -> None:
    """Every rule of the blob's standard type on its decompressed bytes and footer entry.

    Blobs of other types pass: the spec lets readers skip types they do not know.  Raises
    the first problem as an :class:`~puffin.errors.InvalidBlobError` subclass whose
    ``offset`` is a file offset.
    """
    check = _CHECKS.get(meta.type)
    if check is not None:
        check(data, meta, index)



def verify_file(source: Source, *, limits: Limits | None = None) -> list[Problem]:
    """Check a Puffin file against every rule this library knows; ``[]`` means valid.

    ``source`` is what :func:`puffin.open` takes.  Bad content never raises: each problem
    is returned, one per blob at most, plus the rules across blobs.  A file that cannot be
    opened at all (missing, unreadable) is one problem of category ``"io"``.

    Example::

        problems = puffin.verify_file("stats.puffin")
        if problems:
            for p in problems:  # e.g. theta-sketch ThetaSketchError ... 4 0
                print(p.category, p.error, p.message, p.offset, p.blob_index)
    """
    return verify_file_counted(source, limits=limits)[0]


def verify_file_counted(
    source: Source, *, limits: Limits | None = None
) -> tuple[list[Problem], int | None]:
    """:func:`verify_file`'s problems and the footer's blob count (None when the file does
    not open), from the one read: ``puffin verify`` reports both without parsing a large
    footer a second time while the problems of the first are held."""
    try:
        reader = _open(source, limits=limits)
    except (PuffinError, OSError) as exc:
        return [Problem.from_exception(exc)], None
    problems: list[Problem] = []
    with reader:
        blobs = reader.blobs
        for index, meta in enumerate(blobs):
            try:
                data = reader.read_blob(index)  # decompresses: every codec frame is checked
                check_blob(data, meta, index)
            except PuffinError as exc:
                exc.with_context(blob_index=index, offset=meta.offset)
                problems.append(Problem.from_exception(exc))
            except OSError as exc:  # a read that failed midway: where it was going
                message = exc.strerror or str(exc) or type(exc).__name__
                problems.append(Problem("io", type(exc).__name__, message, meta.offset, index))
        problems.extend(Problem.from_exception(e) for e in standard.check_file_rules(blobs))
    return problems, len(blobs)
