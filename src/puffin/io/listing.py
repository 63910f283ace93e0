"""Many objects under a prefix: listed with size and age, deleted in bulk, each failure named.

Orphan cleanup and ``verify_table`` look at every object under a table's location, and
orphan cleanup deletes thousands of them. On an object store that is a listing (S3:
``ListObjectsV2``, 1,000 keys a request) and bulk deletes (S3: ``DeleteObjects``, 1,000 keys
a request), never a request per object. :func:`object_store` finds the client for a URL:

* a pyiceberg ``FsspecFileIO`` lends its filesystem;
* otherwise the fsspec filesystem of the scheme (``s3fs``, ``gcsfs``, ``adlfs``, ...), made
  from the FileIO's properties as pyiceberg's ``FsspecFileIO`` makes it (so a
  ``PyArrowFileIO`` table lists with the same endpoint and credentials), or from fsspec's
  own configuration when there is no FileIO;
* failing that, a ``PyArrowFileIO``'s own filesystem, which lists but deletes one object a
  request.

A location nothing here can list is a :class:`CannotListError` (a
:class:`~puffin.errors.StorageError`: exit 1 on the command line) naming the scheme and what
to install: never an empty listing. Local folders are listed natively elsewhere
(:mod:`puffin.iceberg.verify.orphans`); this module is for URLs.
"""

from __future__ import annotations

import datetime
import importlib.util
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from puffin.errors import MissingDependencyError, StorageError
from puffin.io.remote import protocols
from puffin.io.stores import PACKAGES, first_line, fsspec_fs, storage_errors

__all__ = [
    "BULK_DELETE_KEYS",
    "CannotListError",
    "Failed",
    "Listed",
    "ObjectStore",
    "object_store",
]

#: Keys in one S3 ``DeleteObjects`` request (the API's limit).
BULK_DELETE_KEYS = 1000
# fsspec filesystems whose rm() of a list of paths goes in batch requests (gcsfs, adlfs).
_BULK = {"gs", "gcs", "abfs", "abfss", "az"}
# Where fsspec filesystems keep an object's modification time, by package.
_MODIFIED = ("LastModified", "last_modified", "updated", "mtime", "created", "timeCreated")


@dataclass(frozen=True)
class Listed:
    """An object found by a listing."""

    location: str  #: its URL, spelled as the listed root is
    size: int
    #: when the store says it was written (seconds since the epoch, the store's clock);
    #: ``None`` when the store does not say
    modified: float | None

    @property
    def written(self) -> float:
        """:attr:`modified`, or now where the store does not say: an object of unknown age
        counts as new (no grace period has passed for it)."""
        return time.time() if self.modified is None else self.modified


@dataclass(frozen=True)
class Failed:
    """An object a bulk delete did not delete, and the store's reason."""

    location: str
    reason: str


@dataclass
class ObjectStore:
    """Listing and bulk deletes on one store, through an fsspec filesystem or a pyarrow one.

    ``requests`` counts what this client asked of the store: ``list`` (on S3 one per page of
    1,000 keys; elsewhere one per listing call, paged by the client), ``delete`` (one per
    bulk request, or per object where the store has no bulk delete), ``put``, ``get``, and
    ``retried``: the attempts S3's client made again for the listings and bulk deletes."""

    fs: Any
    #: ``fsspec`` or ``arrow``
    kind: str
    requests: Counter[str] = field(default_factory=Counter)

    # -- listing --------------------------------------------------------------------------

    def walk(self, root: str) -> Iterator[Listed]:
        """Every object under the folder URL ``root``, at any depth, in key order. On S3 a
        page of 1,000 keys at a time (memory stays bounded, each page a request counted);
        other stores list the whole prefix first."""
        base = root.rstrip("/")
        if self._s3:
            for path, size, modified in self._s3_pages(base):
                yield Listed(self._url(base, path), size, modified)
            return
        self.requests["list"] += 1
        with storage_errors(root):
            if self.kind == "arrow":
                entries = self._arrow_entries(base, recursive=True)
            else:
                entries = self._fsspec_entries(base, recursive=True)
        for path, size, modified in entries:
            yield Listed(self._url(base, path), size, modified)

    def _s3_pages(self, base: str) -> Iterator[tuple[str, int, float | None]]:
        """``ListObjectsV2`` page by page: ``(bucket/key, size, time)`` of each object (the
        zero-byte ``key/`` objects that stand for folders left out)."""
        bucket, _, key = self._path(base).partition("/")
        request = {"Bucket": bucket, "Prefix": f"{key.rstrip('/')}/" if key else ""}
        while True:
            self.requests["list"] += 1
            with storage_errors(base):
                page = self.fs.call_s3("list_objects_v2", **request)
            self._retried(page)
            for obj in page.get("Contents", []):
                if not obj["Key"].endswith("/"):
                    yield f"{bucket}/{obj['Key']}", int(obj["Size"]), _seconds(obj)
            if not page.get("IsTruncated"):
                return
            request["ContinuationToken"] = page["NextContinuationToken"]

    def children(self, folder: str) -> list[Listed]:
        """The objects directly in the folder URL ``folder`` (its sub-folders left out)."""
        return self.level(folder)[0]

    def level(self, folder: str) -> tuple[list[Listed], list[str]]:
        """The objects directly in the folder URL ``folder``, and the URLs of the folders
        in it (one delimited listing)."""
        base = folder.rstrip("/")
        self.requests["list"] += 1
        with storage_errors(folder):
            if self.kind == "arrow":
                entries = self._arrow_entries(base, recursive=False, folders=True)
            else:
                entries = self._fsspec_entries(base, recursive=False, folders=True)
        files = [Listed(self._url(base, p), s, m) for p, s, m in entries if s >= 0]
        return files, [self._url(base, p) for p, s, _ in entries if s < 0]

    def _fsspec_entries(
        self, base: str, recursive: bool, folders: bool = False
    ) -> list[tuple[str, int, float | None]]:
        """``(path, size, time)`` of each object; with ``folders``, the folders too, with a
        size of -1."""
        path = self._path(base)
        self.fs.invalidate_cache(path)  # a cached listing would miss what writers just put
        try:
            if recursive:
                found = self.fs.find(path, detail=True, withdirs=False)
                infos = list(found.values())
            else:
                wanted = ("file", "directory") if folders else ("file",)
                infos = [i for i in self.fs.ls(path, detail=True) if i.get("type") in wanted]
        except FileNotFoundError:
            return []  # nothing under the prefix: an object store has no empty folders
        return sorted(
            (str(i["name"]).rstrip("/"), -1, None)
            if i.get("type") == "directory"
            else (str(i["name"]), int(i.get("size") or 0), _seconds(i))
            for i in infos
        )

    def _arrow_entries(
        self, base: str, recursive: bool, folders: bool = False
    ) -> list[tuple[str, int, float | None]]:
        from pyarrow.fs import FileSelector, FileType

        selector = FileSelector(self._path(base), recursive=recursive, allow_not_found=True)
        return sorted(
            (i.path, -1, None)
            if i.type == FileType.Directory
            else (i.path, int(i.size or 0), None if i.mtime is None else i.mtime.timestamp())
            for i in self.fs.get_file_info(selector)
            if i.type == FileType.File or (folders and i.type == FileType.Directory)
        )

    @property
    def _s3(self) -> bool:
        """Whether this is s3fs, whose requests are made here (paged listings, bulk deletes)."""
        return self.kind == "fsspec" and "s3" in protocols(self.fs)

    def _path(self, location: str) -> str:
        """The path the filesystem knows the URL ``location`` by."""
        if self.kind == "arrow":
            parts = urlsplit(location)
            return f"{parts.netloc}{parts.path}"
        return str(self.fs._strip_protocol(location))

    def _url(self, base: str, path: str) -> str:
        """The URL of the listed ``path``: the root URL's own spelling, then the key."""
        stripped = self._path(base)
        if not path.startswith(stripped):
            raise StorageError(f"{base}: the store listed {path}, which is not under it")
        return base + path[len(stripped) :]

    # -- deletes ---------------------------------------------------------------------------

    def delete(self, locations: Sequence[str]) -> list[Failed]:
        """Delete ``locations`` (URLs of this store), in bulk where the store has it; the ones
        it did not delete, with its reason. An object already gone counts as deleted."""
        failed: list[Failed] = []
        for start in range(0, len(locations), BULK_DELETE_KEYS):
            batch = list(locations[start : start + BULK_DELETE_KEYS])
            if self._s3:
                failed += self._s3_bulk(batch)
            elif self.kind == "fsspec" and _BULK & set(protocols(self.fs)):
                failed += self._fsspec_bulk(batch)
            else:
                failed += self._one_by_one(batch)
        return failed

    def _fsspec_bulk(self, batch: list[str]) -> list[Failed]:
        """gcsfs and adlfs delete a list of paths in batch requests; when that fails, each
        path is tried alone to say which ones the store refused."""
        self.requests["delete"] += 1
        try:
            with storage_errors(batch[0]):
                self.fs.rm([self._path(loc) for loc in batch])
        except Exception:
            return self._one_by_one(batch)
        return []

    def _s3_bulk(self, batch: list[str]) -> list[Failed]:
        """One ``DeleteObjects`` request per bucket: s3fs's own ``rm`` drops the per-key
        errors of a quiet bulk delete, so the request is made here and its errors read."""
        by_bucket: dict[str, dict[str, str]] = {}
        for location in batch:
            bucket, _, key = self._path(location).partition("/")
            by_bucket.setdefault(bucket, {})[key] = location
        failed: list[Failed] = []
        for bucket, keys in by_bucket.items():
            self.requests["delete"] += 1
            objects = [{"Key": k} for k in keys]
            try:
                with storage_errors(f"s3://{bucket}"):
                    out = self.fs.call_s3(
                        "delete_objects", Bucket=bucket, Delete={"Objects": objects, "Quiet": True}
                    )
            except Exception as exc:  # the whole request failed: every key is still there
                failed += [Failed(loc, _reason(exc)) for loc in keys.values()]
                continue
            self._retried(out)
            for error in out.get("Errors", []):
                location = keys.get(error.get("Key", ""), f"s3://{bucket}/{error.get('Key')}")
                failed.append(Failed(location, f"{error.get('Code')}: {error.get('Message')}"))
            for key in keys:
                self.fs.invalidate_cache(f"{bucket}/{key}")
        return failed

    def _retried(self, response: dict[str, Any]) -> None:
        """Count the retries botocore made for a request (``ResponseMetadata``)."""
        retries = int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0)
        if retries:
            self.requests["retried"] += retries

    def _one_by_one(self, batch: list[str]) -> list[Failed]:
        failed: list[Failed] = []
        for location in batch:
            self.requests["delete"] += 1
            try:
                with storage_errors(location):
                    if self.kind == "arrow":
                        self.fs.delete_file(self._path(location))
                    else:
                        self.fs.rm_file(self._path(location))
            except FileNotFoundError:
                continue  # gone already: what a delete wants
            except Exception as exc:
                failed.append(Failed(location, _reason(exc)))
        return failed

    # -- small objects ----------------------------------------------------------------------

    def put(self, location: str, data: bytes) -> None:
        """Write the small object ``location`` in one request."""
        self.requests["put"] += 1
        with storage_errors(location):
            if self.kind == "arrow":
                with self.fs.open_output_stream(self._path(location)) as out:
                    out.write(data)
            else:
                self.fs.pipe_file(self._path(location), data)

    def get(self, location: str) -> bytes:
        """The bytes of the small object ``location`` (``FileNotFoundError`` when gone)."""
        self.requests["get"] += 1
        with storage_errors(location):
            if self.kind == "arrow":
                with self.fs.open_input_stream(self._path(location)) as f:
                    return bytes(f.read())
            return bytes(self.fs.cat_file(self._path(location)))


def object_store(location: str, io: Any = None) -> ObjectStore:
    """The :class:`ObjectStore` that lists and deletes under the URL ``location``, through
    the table's FileIO ``io`` where it can (see the module's docstring)."""
    scheme = urlsplit(location).scheme.lower()
    if io is not None and callable(getattr(io, "get_fs", None)):  # FsspecFileIO
        return ObjectStore(fsspec_fs(location, io)[0], "fsspec")
    package = PACKAGES.get(scheme)
    if io is not None and package is not None and importlib.util.find_spec(package):
        from pyiceberg.io.fsspec import FsspecFileIO

        lent = FsspecFileIO(properties=dict(getattr(io, "properties", {})))
        return ObjectStore(fsspec_fs(location, lent)[0], "fsspec")
    arrow = getattr(io, "fs_by_scheme", None)  # PyArrowFileIO
    if callable(arrow):
        parts = urlsplit(location)
        return ObjectStore(arrow(parts.scheme, parts.netloc), "arrow")
    what = package or f"an fsspec filesystem for {scheme}://"
    if io is not None:
        raise CannotListError(
            f"{location}: cannot list {scheme}:// objects: the table's FileIO "
            f"({type(io).__name__}) cannot list and {what} is not installed; "
            f"pip install {package or 'the fsspec filesystem of ' + scheme}"
        )
    try:
        return ObjectStore(fsspec_fs(location, None)[0], "fsspec")
    except MissingDependencyError as exc:
        raise CannotListError(f"{location}: cannot list {scheme}:// objects: {exc}") from None
    except FileNotFoundError:  # a scheme fsspec does not know
        raise CannotListError(
            f"{location}: cannot list {scheme}:// objects: no fsspec filesystem knows the "
            f"scheme; pip install the fsspec filesystem of {scheme}"
        ) from None


class CannotListError(StorageError):
    """Nothing here can list the objects under a location: the message names the scheme and
    the package to install (a listing never comes back empty instead)."""


def _seconds(info: dict[str, Any]) -> float | None:
    """An fsspec listing entry's modification time, whatever the package calls it."""
    for key in _MODIFIED:
        value = info.get(key)
        if isinstance(value, datetime.datetime):
            aware = value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
            return aware.timestamp()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and value:
            try:
                parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            aware = parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)
            return aware.timestamp()
    return None


def _reason(exc: BaseException) -> str:
    text = first_line(exc)
    return text if text == type(exc).__name__ else f"{type(exc).__name__}: {text}"
