"""Every error this library raises on purpose, in two trees.

:class:`PuffinError` (a :class:`ValueError`) is about bytes: a file, footer or payload that
breaks a rule.  Its message names what is wrong and where: ``offset`` is always a byte
offset **in the file** (a position inside a decompressed payload goes into the message),
``field`` a footer field, ``blob_index`` the blob's position in the footer, ``location`` a
caller-given place such as a path.  Context found higher up the call stack is added once,
with :meth:`PuffinError.with_context`.

:class:`IntegrationError` is about everything around the bytes, raised by the command line,
the Iceberg and the Spark integrations.  The CLI maps each branch to an exit status::

    PuffinError                 malformed or unacceptable input            exit 1
    IntegrationError
      UsageError                an argument the caller gave is unacceptable exit 2
        ColumnNotFoundError     a column name or field id that does not exist
        SnapshotRangeError      a changelog range that cannot be read (a snapshot
                                expired in it, or not one line of ancestry)
      MissingDependencyError    an optional extra is not installed          exit 2
      SetupError                the environment cannot run the job          exit 2
        JavaNotFoundError       (Spark) no Java 17 or later
      StorageError              an object store that cannot be reached, or   exit 1
                                refuses us (credentials, endpoint, timeout)
      PythonWorkerError         (Spark) a Python task failed on the          exit 1
                                executors: its exception's type and message
      TableError                an Iceberg table, catalog or snapshot       exit 1
        NotFoundError           a catalog, table, snapshot or statistics file is missing
          CatalogNotFoundError, TableNotFoundError, SnapshotNotFoundError,
          StatisticsNotFoundError, TableFileNotFoundError
        UnsupportedTableError   a table feature this library does not handle
        TableMetadataError      table metadata that breaks the Iceberg spec
        CommitConflictError     a commit lost to concurrent commits, after retries
        WrittenFileGoneError    a file a write produced vanished before its commit
        NewerMetadataError      metadata newer than the catalog's current one: orphan
                                cleanup refuses
        CatalogLockedError      the embedded catalog's database stayed locked by another
                                process for longer than the wait, after retries

    KeyboardInterrupt           Ctrl-C or SIGTERM before a commit: nothing    exit 130
                                it wrote is left
      InterruptedAfterCommit    Ctrl-C or SIGTERM once the commit landed:    exit 4
                                the message names the snapshot and what was
                                left undone
"""

from __future__ import annotations

from typing import TypeVar

__all__ = [
    "CatalogLockedError",
    "CatalogNotFoundError",
    "CodecError",
    "ColumnNotFoundError",
    "CommitConflictError",
    "DeletionVectorError",
    "IntegrationError",
    "InterruptedAfterCommit",
    "InvalidBlobError",
    "InvalidFileError",
    "InvalidFooterError",
    "JavaNotFoundError",
    "LimitExceededError",
    "MissingDependencyError",
    "NewerMetadataError",
    "NotFoundError",
    "PuffinError",
    "PythonWorkerError",
    "SetupError",
    "SnapshotNotFoundError",
    "SnapshotRangeError",
    "StatisticsNotFoundError",
    "StorageError",
    "TableError",
    "TableFileNotFoundError",
    "TableMetadataError",
    "TableNotFoundError",
    "ThetaSketchError",
    "UnknownCodecError",
    "UnsupportedTableError",
    "UsageError",
    "WrittenFileGoneError",
]

_E = TypeVar("_E", bound="PuffinError")


class PuffinError(ValueError):
    """Base of every error this library raises for malformed or unacceptable input.

    ``offset`` (a byte offset in the file), ``field`` (a footer field name), ``blob_index``
    (position of the blob in the footer) and ``location`` (a path or other place) are set
    when known and are also written into the message.
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
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.location is not None:
            where.append(self.location)
        if self.blob_index is not None:
            where.append(f"blob {self.blob_index}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def with_context(
        self: _E,
        *,
        offset: int | None = None,
        field: str | None = None,
        blob_index: int | None = None,
        location: str | None = None,
        prefix: str | None = None,
    ) -> _E:
        """Fill in what the raiser could not know; context already set is kept.

        ``prefix`` goes before the reason (``"compressed footer payload: …"``).  Returns
        ``self``, so a caller writes ``raise exc.with_context(blob_index=i) from None``.
        """
        if prefix is not None:
            self.reason = f"{prefix}: {self.reason}"
        if self.offset is None:
            self.offset = offset
        if self.field is None:
            self.field = field
        if self.blob_index is None:
            self.blob_index = blob_index
        if self.location is None:
            self.location = location
        self.args = (self._render(),)
        return self

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


# -- integrations -------------------------------------------------------------------------


class IntegrationError(Exception):
    """Base of the errors the integrations (CLI, Iceberg, Spark) raise about anything but bytes."""


class UsageError(IntegrationError, ValueError):
    """An argument the caller gave is unacceptable (``lg_k=4``, an unknown engine)."""


class ColumnNotFoundError(UsageError, LookupError):
    """A column name or field id that the table's schema does not have."""


class SnapshotRangeError(UsageError, LookupError):
    """Two snapshots whose changes cannot be read: a snapshot between them was expired, or
    the first is not an ancestor of the second."""


class MissingDependencyError(IntegrationError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class SetupError(IntegrationError, RuntimeError):
    """The environment cannot run the job (for Spark: Java, the session)."""


class JavaNotFoundError(SetupError):
    """No Java 17 or later was found for Spark."""


class StorageError(IntegrationError, OSError):
    """An object store could not be reached or refused the request: no credentials, an
    endpoint that does not answer, a timeout.  The message names the URL and what to do."""


class PythonWorkerError(IntegrationError, RuntimeError):
    """A Python task failed on Spark's executors; the message is the line of the worker's
    traceback that names its exception (Py4J's own error is chained)."""


class TableError(IntegrationError):
    """An Iceberg table, catalog or snapshot is missing, unsupported or inconsistent."""


class NotFoundError(TableError, LookupError):
    """A catalog, namespace, table, snapshot or statistics file that does not exist."""


class CatalogNotFoundError(NotFoundError):
    """No catalog of that name is configured."""


class TableNotFoundError(NotFoundError):
    """The catalog has no table of that name."""


class SnapshotNotFoundError(NotFoundError):
    """The table has no such snapshot (or no snapshot at all)."""


class StatisticsNotFoundError(NotFoundError):
    """The snapshot has no statistics file."""


class TableFileNotFoundError(NotFoundError):
    """A file the table's metadata references is missing (the message names it)."""


class UnsupportedTableError(TableError, NotImplementedError):
    """The table uses a feature this library does not handle (the message says which)."""


class TableMetadataError(TableError, ValueError):
    """Table metadata (manifests, delete files) that breaks the Iceberg spec."""


class CommitConflictError(TableError):
    """A commit kept losing to concurrent commits and was given up after bounded retries.

    Nothing it wrote is left behind.
    """


class WrittenFileGoneError(TableError):
    """A file a write produced was gone before its commit (an orphan cleanup run beside the
    writer with too short a grace period, most often). Nothing was committed and the write's
    other files were removed; the message names the file."""


class NewerMetadataError(TableError):
    """The table's metadata folder holds a metadata file numbered above the catalog's current
    one that is no commit in flight (another catalog or a copy of the warehouse writes
    there, or a failed commit left it): orphan cleanup refuses, since what that file
    references would look orphaned. The message names the file."""


class CatalogLockedError(TableError):
    """Another process held the embedded catalog's SQLite database locked for longer than the
    wait (``PUFFIN_CATALOG_BUSY_TIMEOUT``), through every retry.  Nothing was committed and
    the files written for the commit were removed; the message names the database."""



class InterruptedAfterCommit(KeyboardInterrupt):
    """Ctrl-C or SIGTERM arrived once the commit had landed: the table has the new snapshot.

    A ``KeyboardInterrupt``, so a program stops as the user asked, but one that says the
    truth: ``snapshot_id`` is committed (running the job again would apply it twice) and
    ``remaining`` names the follow-up work that did not run (``None`` when nothing did not),
    such as statistics not brought up to date.  The command line exits with status 4 and
    says both.
    """

    def __init__(self, snapshot_id: int | None, table: object, remaining: str | None = None):
        super().__init__(snapshot_id, remaining)
        self.snapshot_id = snapshot_id
        self.table = table
        self.remaining = remaining

    def __str__(self) -> str:
        done = f"snapshot {self.snapshot_id} is committed"
        return f"{done}; {self.remaining}" if self.remaining else done
