"""A real S3-compatible server on 127.0.0.1 (moto's server mode) that counts what it serves.

Every client (s3fs, pyarrow's C++ S3 client, boto3) talks HTTP to it, so the count is what
an object store would bill: requests by method and the bytes of every response body.
Used by tests/test_s3.py and bench/bench_s3.py.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

KEY, SECRET, REGION = "testing", "testing", "us-east-1"


class _QuietHandler(MotoRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None
    sent: int  # response body bytes


@dataclass
class Log:
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()

    def snapshot(self) -> list[Request]:
        with self.lock:
            return list(self.requests)


@dataclass
class Faults:
    """Requests the server fails on purpose: a ``rate`` of them, drawn from ``seed``, each
    one of ``kinds``: ``500`` (InternalError), ``503`` (SlowDown), ``timeout`` (the answer
    held back ``delay`` seconds, after the request took effect: a client that gave up does
    not know it did) and ``drop`` (the connection closed with no answer, the request not
    served). ``injected`` counts them by kind."""

    rate: float
    seed: int
    kinds: tuple[str, ...] = ("500", "503", "timeout", "drop")
    delay: float = 2.0
    #: only listings (a GET of a bucket itself), not every request
    listings_only: bool = False
    injected: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()

    def draw(self, environ: dict[str, Any]) -> str | None:
        if self.listings_only and not (
            environ["REQUEST_METHOD"] == "GET" and "/" not in environ["PATH_INFO"].strip("/")
        ):
            return None
        with self._lock:
            if self._rng.random() >= self.rate:
                return None
            kind = self._rng.choice(self.kinds)
            self.injected[kind] += 1
            return kind


_ERRORS = {
    "500": ("500 Internal Server Error", "InternalError", "We encountered an internal error."),
    "503": ("503 Slow Down", "SlowDown", "Please reduce your request rate."),
}


class CountingS3Server:
    """moto's S3 on a free port of 127.0.0.1, behind a WSGI layer that logs each request.

    ``refused_deletes``: keys (as ``bucket/key``) a bulk delete leaves in place, answering
    with an ``AccessDenied`` error for each, as S3 does for a key a policy protects.
    ``faults``: requests failed on purpose (:class:`Faults`), while it is set."""

    def __init__(self) -> None:
        self.log = Log()
        self.refused_deletes: set[str] = set()
        self.faults: Faults | None = None
        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(
            "127.0.0.1", 0, self._counting(app), True, request_handler=_QuietHandler
        )
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _counting(self, app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterator[bytes]]:
        log = self.log

        def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
            fault = self.faults.draw(environ) if self.faults is not None else None
            if fault in _ERRORS:
                status, code, message = _ERRORS[fault]
                body = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
                        f"<Message>{message}</Message></Error>").encode()  # fmt: skip
                start_response(status, [("Content-Type", "application/xml"),
                                        ("Content-Length", str(len(body)))])  # fmt: skip
                yield body
                return
            if fault == "drop":  # headers set, then no byte of them sent: the socket is shut
                start_response("500 Internal Server Error", [("Content-Length", "0")])
                sock = environ.get("werkzeug.socket")
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                return
            refused = self._refuse(environ) if self.refused_deletes else []
            if refused:
                start_response = _with_errors(start_response, refused)
            # The whole body first: the request is logged before the client sees a byte,
            # so a test that reads its log right after a call sees every request of it.
            body = b"".join(app(environ, start_response))
            with log.lock:
                log.requests.append(
                    Request(
                        environ["REQUEST_METHOD"],
                        environ.get("PATH_INFO", ""),
                        environ.get("HTTP_RANGE"),
                        len(body),
                    )
                )
            if fault == "timeout":
                time.sleep(self.faults.delay if self.faults is not None else 0)
            yield _add_errors(body, refused) if refused else body

        return wsgi

    def _refuse(self, environ: dict[str, Any]) -> list[str]:
        """For a bulk delete naming refused keys: take them out of the request; those keys."""
        if environ["REQUEST_METHOD"] != "POST" or "delete" not in environ.get("QUERY_STRING", ""):
            return []
        bucket = environ.get("PATH_INFO", "").strip("/")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        refused = []
        for match in list(re.finditer(rb"<Object>\s*<Key>([^<]*)</Key>.*?</Object>", body, re.S)):
            key = match.group(1).decode()
            if f"{bucket}/{key}" in self.refused_deletes:
                refused.append(key)
        for key in refused:
            body = re.sub(rb"<Object>\s*<Key>" + re.escape(key.encode()) + rb"</Key>.*?</Object>",
                          b"", body, flags=re.S)  # fmt: skip
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        for header in [h for h in environ if "CHECKSUM" in h or h == "HTTP_CONTENT_MD5"]:
            del environ[header]
        return refused

    def start(self) -> CountingS3Server:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    # -- clients configured for this server --------------------------------------------------

    def storage_options(self) -> dict[str, Any]:
        """s3fs options (also fsspec's ``conf["s3"]``)."""
        return {
            "endpoint_url": self.endpoint,
            "key": KEY,
            "secret": SECRET,
            "client_kwargs": {"region_name": REGION},
        }

    def fileio_properties(self) -> dict[str, str]:
        """pyiceberg FileIO properties for this server."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": KEY,
            "s3.secret-access-key": SECRET,
            "s3.region": REGION,
        }

    def catalog_properties(self, database: Any, warehouse: str, **extra: str) -> dict[str, str]:
        """A pyiceberg SQL catalog's properties: its SQLite ``database`` file, a ``warehouse``
        on this server (``s3://bucket/prefix``), this server's FileIO properties, ``extra``."""
        return {"uri": f"sqlite:///{database}", "warehouse": warehouse,
                **self.fileio_properties(), **extra}  # fmt: skip

    def sql_catalog(self, database: Any, warehouse: str, **extra: str) -> Any:
        """pyiceberg's SQL catalog named ``s3`` (see :meth:`catalog_properties`)."""
        from pyiceberg.catalog.sql import SqlCatalog

        return SqlCatalog("s3", **self.catalog_properties(database, warehouse, **extra))

    def env(self) -> dict[str, str]:
        """Environment for a `puffin` process: fsspec's own configuration variables."""
        return {
            "FSSPEC_S3_ENDPOINT_URL": self.endpoint,
            "FSSPEC_S3_KEY": KEY,
            "FSSPEC_S3_SECRET": SECRET,
            "AWS_DEFAULT_REGION": REGION,
        }

    def boto3(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            region_name=REGION,
        )


def _add_errors(body: bytes, keys: list[str]) -> bytes:
    errors = "".join(
        f"<Error><Key>{k}</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
        for k in keys
    )
    return body.replace(b"</DeleteResult>", errors.encode() + b"</DeleteResult>")


def _with_errors(start_response: Callable[..., Any], keys: list[str]) -> Callable[..., Any]:
    """``start_response`` with the Content-Length the added errors make."""
    extra = len(_add_errors(b"</DeleteResult>", keys)) - len(b"</DeleteResult>")

    def start(status: str, headers: list[tuple[str, str]], *args: Any) -> Any:
        fixed = [
            (k, str(int(v) + extra)) if k.lower() == "content-length" else (k, v)
            for k, v in headers
        ]
        return start_response(status, fixed, *args)

    return start


@contextlib.contextmanager
def running(*buckets: str) -> Iterator[CountingS3Server]:
    """A started server with ``buckets`` created, stopped on exit (a module fixture's body).

    moto keeps its buckets in the process, whatever server serves them: they are emptied on
    start and on exit, so a module never sees what another left in a bucket of that name."""
    from moto.s3.models import s3_backends

    s3_backends.reset()
    server = CountingS3Server().start()
    try:
        for bucket in buckets:
            server.boto3().create_bucket(Bucket=bucket)
        yield server
    finally:
        server.stop()
        s3_backends.reset()
