"""A table's metadata files by number: which ones are newer than the catalog's current one.

Every commit writes ``<version>-<uuid>.metadata.json`` (Hadoop tables ``v<version>...``) one
version above the file it replaces, into the folder of the current metadata file, *before*
the catalog swaps its pointer. A metadata file numbered above the current one (or beside
it, at the same version) that the current one does not log is therefore either a commit in
flight (it is about to become current, and every file it references must stay) or a table
history the catalog does not know: another catalog writing to the same folder, a copy of a
warehouse whose catalog still names the original's paths, or the debris of a failed
commit. Orphan cleanup keeps everything such a file reaches, and refuses to run
at all when one is older than its grace period (no commit stays in flight that long);
``verify_table`` warns about it.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.io.locations import local_path, location_key
from puffin.io.stores import gone_as_not_found

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadata

__all__ = [
    "IN_FLIGHT_WINDOW",
    "NewerMetadata",
    "metadata_version",
    "newer_metadata",
    "still_there",
]

#: A newer metadata file written longer ago than this is no commit in flight: a commit swaps
#: the catalog's pointer moments after it writes the file.
IN_FLIGHT_WINDOW = datetime.timedelta(minutes=10)

_NUMBERED = re.compile(r"^v?(\d+)[-.].*\.metadata\.json(?:\.gz)?$")
# A metadata file is written in one go, in milliseconds; one being written is read again.
_PARTIAL_RETRIES = 5
_PARTIAL_WAIT_S = 0.1


def metadata_version(location: str) -> int | None:
    """The version a metadata file's name carries (``00012-<uuid>.metadata.json`` or
    ``v12.metadata.json``), ``None`` for a name without one."""
    match = _NUMBERED.match(os.path.basename(location.rstrip("/")))
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class NewerMetadata:
    """A metadata file numbered above the catalog's current one."""

    path: str
    version: int
    modified: datetime.datetime
    #: the metadata it holds; ``None`` when the file could not be read as table metadata
    metadata: TableMetadata | None
    #: why it could not be read, when it could not
    unreadable: str | None = None
    #: whether its log ends at the catalog's current file: a commit based on the current
    #: state (one in flight, or a copy one commit behind), not a longer foreign history
    based_on_current: bool = False

    def in_flight(self, window: datetime.timedelta) -> bool:
        """Whether this may be a commit in flight: readable, based on the current metadata
        and written less than ``window`` ago (a commit swaps the catalog's pointer moments
        after it writes the file)."""
        age = datetime.datetime.now(datetime.timezone.utc) - self.modified
        return self.metadata is not None and self.based_on_current and age < window

    def describe(self, current_version: int | None) -> str:
        """Why this file matters, for an error or a warning."""
        above = (
            f"at or above the current version {current_version}"
            if current_version is not None
            else "newer"
        )
        if self.metadata is None:
            return f"numbered {above} and unreadable ({self.unreadable})"
        if not self.based_on_current:
            return (
                f"numbered {above}, with a history the catalog does not know (another "
                "catalog, or a copy of this warehouse, writes to this table's folder)"
            )
        age = datetime.datetime.now(datetime.timezone.utc) - self.modified
        return (
            f"numbered {above}, based on the current metadata, written "
            f"{self.modified:%Y-%m-%d %H:%M:%S} UTC ({_age(age)} ago) and not taken by the "
            "catalog since: another catalog's or a copy's commit, or a failed commit's file"
        )


def _age(age: datetime.timedelta) -> str:
    seconds = max(int(age.total_seconds()), 0)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 2 * 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


def newer_metadata(table: Table) -> list[NewerMetadata]:
    """The metadata files in the folder of the table's current metadata file that are
    numbered at or above it (itself and the files its log names aside), oldest first: a
    sibling of the current version is another history's (a stale copy of the catalog that
    committed, or a failed commit's debris). A local folder is listed natively, an object
    store's prefix through :func:`~puffin.io.listing.object_store` (one listing request);
    when the current file has no number, files newer by their own ``last-updated-ms``
    count."""
    current = table.metadata_location
    folder = _Folder.of(os.path.dirname(current), table.io)
    floor = metadata_version(current)
    logged = {os.path.basename(e.metadata_file) for e in table.metadata.metadata_log}
    found = []
    for path, mtime in folder.entries():
        name = os.path.basename(path)
        version = metadata_version(name)
        if version is None or name in logged or name == os.path.basename(current):
            continue
        if floor is not None and version < floor:
            continue  # a sibling of the same version counts: another history's
        metadata, why = _read(folder, path)
        if metadata is None and not folder.exists(path):
            continue  # a failed commit removed it while we read it: nothing of the table's
        if floor is None and metadata is not None:
            if metadata.last_updated_ms <= table.metadata.last_updated_ms:
                continue  # no number to compare: the older by its own clock
        when = datetime.datetime.fromtimestamp(mtime, tz=datetime.timezone.utc)
        based = metadata is not None and _last_logged(metadata) == location_key(current)
        found.append(NewerMetadata(path, version, when, metadata, why, based))
    return sorted(found, key=lambda m: (m.version, m.path))


def still_there(table: Table, newer: NewerMetadata) -> bool:
    """Whether the newer metadata file is still there (a commit that lost removes it)."""
    return _Folder.of(os.path.dirname(newer.path), table.io).exists(newer.path)


@dataclass(frozen=True)
class _Folder:
    """The metadata folder, local or an object store's prefix: listed, read, checked."""

    location: str
    local: str | None
    io: Any

    @classmethod
    def of(cls, location: str, io: Any) -> _Folder:
        return cls(location, local_path(location), io)

    def entries(self) -> list[tuple[str, float]]:
        """``(path, modification time)`` of each file in the folder; a file removed while
        listed is left out. An object the store gives no time for counts as new."""
        if self.local is None:
            from puffin.io.listing import object_store

            listed = object_store(self.location, self.io).children(self.location)
            return [(e.location, e.written) for e in listed]
        if not os.path.isdir(self.local):
            return []
        found = []
        for name in os.listdir(self.local):
            path = os.path.join(self.local, name)
            try:
                found.append((path, os.stat(path).st_mtime))
            except FileNotFoundError:  # a failed commit removed it while we looked
                continue
        return found

    def read(self, path: str) -> bytes:
        if self.local is not None:
            with open(path, "rb") as f:
                return f.read()
        with gone_as_not_found(path), self.io.new_input(path).open() as f:
            return bytes(f.read())

    def exists(self, path: str) -> bool:
        return os.path.exists(path) if self.local is not None else self.io.new_input(path).exists()


def _last_logged(metadata: TableMetadata) -> str | None:
    log = metadata.metadata_log
    return location_key(log[-1].metadata_file) if log else None


def _read(folder: _Folder, path: str) -> tuple[TableMetadata | None, str | None]:
    """The table metadata in ``path``; a file still being written is read again, briefly."""
    import gzip

    from pyiceberg.table.metadata import TableMetadataUtil

    why = ""
    for attempt in range(_PARTIAL_RETRIES):
        try:
            data = folder.read(path)
            if path.endswith(".gz"):
                data = gzip.decompress(data)
            return TableMetadataUtil.parse_obj(json.loads(data)), None
        except FileNotFoundError:
            return None, "removed while it was read (a failed commit's)"
        except Exception as exc:  # truncated JSON, or not table metadata at all
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if attempt < _PARTIAL_RETRIES - 1:
            time.sleep(_PARTIAL_WAIT_S)
    return None, why
