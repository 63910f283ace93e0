"""Object-store filesystems: which one serves a URL, bounded in time, failures said plainly.

fsspec finds the filesystem for a scheme; this module adds what a user of a data library
expects from it: the package to install when a scheme's filesystem is missing (``gcsfs`` for
``gs://``, not the extra that is already installed), timeouts so an endpoint that does not
answer fails within :func:`storage_timeout` seconds instead of botocore's default retries,
and missing credentials or an unreachable endpoint as :class:`~puffin.errors.StorageError`
naming the URL and what to do, instead of the store client's own exception.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlparse

from puffin.errors import MissingDependencyError, SetupError, StorageError

__all__ = [
    "PACKAGES",
    "STORAGE_TIMEOUT_ENV",
    "first_line",
    "fsspec_fs",
    "gone_as_not_found",
    "says_store_failures",
    "storage_errors",
    "storage_timeout",
    "store_failed",
]

#: Seconds a request to an object store may take to fail, all retries included.
STORAGE_TIMEOUT_ENV = "PUFFIN_STORAGE_TIMEOUT"
_DEFAULT_TIMEOUT = 15.0

#: The fsspec filesystem package of each scheme, for the error that names what to install.
PACKAGES = {
    "s3": "s3fs", "s3a": "s3fs", "s3n": "s3fs",
    "gs": "gcsfs", "gcs": "gcsfs",
    "abfs": "adlfs", "abfss": "adlfs", "az": "adlfs", "adl": "adlfs",
    "oss": "ossfs", "hf": "huggingface_hub", "http": "aiohttp", "https": "aiohttp",
}  # fmt: skip
_CREDENTIALS = {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError"}
_UNREACHABLE = {
    "EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError",
    "ConnectionClosedError", "ClientConnectorError", "ServerTimeoutError", "FSTimeoutError",
}  # fmt: skip


def storage_timeout() -> float:
    """:data:`STORAGE_TIMEOUT_ENV` (seconds), 15 by default."""
    text = os.environ.get(STORAGE_TIMEOUT_ENV, "")
    try:
        value = float(text) if text else _DEFAULT_TIMEOUT
    except ValueError:
        raise SetupError(f"{STORAGE_TIMEOUT_ENV}={text!r} is not a number of seconds") from None
    return value if value > 0 else _DEFAULT_TIMEOUT


def _options(scheme: str) -> dict[str, Any]:
    """Storage options that bound the time a failing request takes."""
    total = storage_timeout()
    if scheme in ("s3", "s3a", "s3n"):
        # botocore's legacy retries take ~10 s to give up on a refused connection.
        return {
            "config_kwargs": {
                "connect_timeout": total / 3,
                "read_timeout": total,
                "retries": {"max_attempts": 2, "mode": "standard"},
            }
        }
    return {}


def fsspec_fs(url: str, io: Any) -> tuple[Any, str]:
    """The fsspec filesystem for ``url`` and the path it knows the object by.

    A pyiceberg ``FsspecFileIO`` lends its filesystem (with the FileIO's properties);
    otherwise fsspec's own, configured as fsspec is (``FSSPEC_S3_ENDPOINT_URL``, …), with
    the timeouts above.
    """
    parsed = urlparse(url)
    if io is not None:
        return io.get_fs(parsed.scheme, parsed.netloc), url
    scheme = parsed.scheme.lower()
    package = PACKAGES.get(scheme, f"the fsspec filesystem for {scheme}://")
    try:
        import fsspec.core
    except ImportError:
        raise MissingDependencyError(
            f"{url}: reading URLs needs fsspec: pip install 'iceberg-puffin[iceberg]' (and "
            f"{package} for {scheme}://)"
        ) from None
    options = _options(scheme)
    try:
        with storage_errors(url):
            return fsspec.core.url_to_fs(url, **options)  # type: ignore[no-any-return]
    except ImportError:  # fsspec knows the scheme but its package is missing
        raise MissingDependencyError(
            f"{url}: {scheme}:// URLs need the {package} package: pip install {package}"
        ) from None
    except ValueError as exc:  # an unknown scheme
        raise FileNotFoundError(errno.ENOENT, f"cannot open this URL: {exc}", url) from None


# How a store client says a request failed on the store's side or on the way, after its own
# retries: pyarrow's AWS errors (its curl layer too) and botocore's error codes.
_FAILED = re.compile(
    r"AWS Error (INTERNAL_FAILURE|SLOW_DOWN|SERVICE_UNAVAILABLE|NETWORK_CONNECTION|"
    r"REQUEST_TIMEOUT|THROTTLING|UNKNOWN \(HTTP status 5\d\d\))|curlCode: \d+|"
    r"\b(InternalError|SlowDown|ServiceUnavailable|RequestTimeout)\b"
)


def store_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is an object store failing a request (a 5xx answer, throttling, a
    timeout or a dropped connection) once its client gave up retrying."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _UNREACHABLE:
        return True
    return isinstance(exc, OSError) and bool(_FAILED.search(str(exc)))


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (a store client's can run to many), or its type's
    name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_P = ParamSpec("_P")
_R = TypeVar("_R")
_NOTHING_COMMITTED = "nothing was committed; run it again"


def says_store_failures(
    job: str, then: str = _NOTHING_COMMITTED
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A job whose object store fails a request (:func:`store_failed`) raises
    :class:`StorageError` naming the job, the store's answer and ``then``: what it means
    for the table."""

    def wrap(function: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(function)
        def job_call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return function(*args, **kwargs)
            except OSError as exc:
                if isinstance(exc, StorageError) or not store_failed(exc):
                    raise
                raise StorageError(
                    f"{job} stopped: the object store failed a request after its client's "
                    f"retries ({first_line(exc)}); {then}"
                ) from exc

        return job_call

    return wrap


# How a store client's plain OSError says the object is not there.
_GONE = ("NO_SUCH_KEY", "NoSuchKey", "RESOURCE_NOT_FOUND")


@contextlib.contextmanager
def gone_as_not_found(url: str) -> Iterator[None]:
    """An object removed between a client's HEAD and its GET raises ``FileNotFoundError``
    naming ``url``, as one missing from the start does (pyarrow's S3 client says
    ``NO_SUCH_KEY`` or ``RESOURCE_NOT_FOUND`` in a plain ``OSError`` then)."""
    try:
        yield
    except FileNotFoundError:
        raise
    except OSError as exc:
        if not any(code in str(exc) for code in _GONE):
            raise
        raise FileNotFoundError(errno.ENOENT, "removed while it was read", url) from exc


@contextlib.contextmanager
def storage_errors(url: str) -> Iterator[None]:
    """Turn a store client's credential and connection errors into :class:`StorageError`."""
    try:
        yield
    except Exception as exc:
        names = {cls.__name__ for cls in type(exc).__mro__}
        if names & _CREDENTIALS:
            raise StorageError(
                f"{url}: no credentials for the object store ({exc}); set them as the store "
                "expects (for S3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or "
                "anonymous access for a public bucket)"
            ) from None
        if names & _UNREACHABLE or isinstance(exc, TimeoutError):
            raise StorageError(
                f"{url}: the object store did not answer ({exc}); check the endpoint "
                f"(AWS_ENDPOINT_URL, FSSPEC_S3_ENDPOINT_URL, a FileIO's s3.endpoint) and the "
                f"network; requests give up after {STORAGE_TIMEOUT_ENV}="
                f"{storage_timeout():g} s"
            ) from None
        raise
