"""An Iceberg REST catalog whose server logic is Iceberg Java 1.10.2's own ``CatalogHandlers``.

``RestCatalogServer.java`` (beside this module) routes REST requests to
``org.apache.iceberg.rest.CatalogHandlers`` over a ``JdbcCatalog`` on
``<warehouse>/rest-catalog.db``, behind the JDK's ``HttpServer`` on 127.0.0.1. Every commit a
client sends is applied by Java's ``TableMetadata`` builder, which checks it: a commit Java
finds invalid comes back as a REST error (pyiceberg raises it).

The jars are ``.venv-java``'s (``make peers``): the Iceberg runtime, the relocated Jackson,
the SQLite JDBC driver, and pyspark 3.5.9's (Hadoop, for ``HadoopFileIO``). Tables on the
tests' S3 server are written with ``PlainS3FileIO.java`` (unsigned HTTP, as moto accepts:
Iceberg's ``S3FileIO`` needs the AWS SDK, which no registry here carries). The sources are
compiled with ``javac`` once per content (sources and classpath) into the temporary folder.

Usage::

    with RestCatalogServer(tmp_path) as server:
        catalog = server.catalog()  # pyiceberg RestCatalog at server.uri
"""

from __future__ import annotations

import hashlib
import os
import selectors
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

from peers._common import HERE, PeerError, side_python, stop_server
from peers.iceberg_java import JAVA_VENV, java_jars

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

SOURCES = (HERE / "RestCatalogServer.java", HERE / "PlainS3FileIO.java")
MAIN = "RestCatalogServer"
START_TIMEOUT = 120.0


def _require(condition: bool, message: str) -> None:
    """Fail under ``make test`` (``PUFFIN_REQUIRE_PEERS=1``), skip in a bare pytest run."""
    if condition:
        return
    if os.environ.get("PUFFIN_REQUIRE_PEERS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def classpath() -> str:
    """``.venv-java/jars/*`` and pyspark 3.5.9's jars (Hadoop for ``HadoopFileIO``)."""
    python = side_python(JAVA_VENV)
    jars = java_jars()
    _require((jars / "sqlite-jdbc.jar").is_file(),
             "no SQLite JDBC driver: apt-get install libxerial-sqlite-jdbc-java")
    venv = python.parent.parent  # not resolved: bin/python links to the base interpreter
    pyspark = sorted(venv.glob("lib/python3*/site-packages/pyspark/jars"))
    _require(bool(pyspark), f"{venv} has no pyspark jars: run `make peers`")
    return f"{jars}/*:{pyspark[0]}/*"


def compiled(cp: str) -> Path:
    """The folder holding ``RestCatalogServer.class``, compiled once per source and classpath."""
    _require(shutil.which("javac") is not None and shutil.which("java") is not None,
             "the REST catalog server needs a JDK: javac and java on PATH")
    sources = b"\0".join(source.read_bytes() for source in SOURCES)
    digest = hashlib.sha256(sources + b"\0" + cp.encode()).hexdigest()[:16]
    build = Path(tempfile.gettempdir()) / f"puffin-rest-catalog-{digest}"
    if (build / f"{MAIN}.class").is_file():
        return build
    staging = Path(tempfile.mkdtemp(prefix="puffin-rest-catalog-build-"))
    try:
        done = subprocess.run(
            ["nice", "-n", "10", "javac", "-nowarn", "-d", str(staging), "-cp", cp,
             *map(str, SOURCES)],
            capture_output=True, text=True, check=False, timeout=300,
        )
        if done.returncode != 0:
            raise PeerError(f"javac failed: {done.stderr.strip()[:3000]}")
        try:
            staging.rename(build)  # atomic: a concurrent worker's build is as good as ours
        except OSError:
            if not (build / f"{MAIN}.class").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return build


class RestCatalogServer:
    """``with RestCatalogServer(workdir) as server:`` a REST catalog at ``server.uri``.

    Tables live under ``workdir/warehouse``, or with ``s3=(location, endpoint)`` under that
    ``s3://`` location of the tests' S3 server; the server's request log is
    ``workdir/rest-catalog.log`` (:meth:`log`). The process is stopped on exit, error or not.
    """

    def __init__(self, workdir: Path, s3: tuple[str, str] | None = None) -> None:
        self.workdir = Path(workdir)
        self.warehouse = (self.workdir / "warehouse").resolve()
        #: ``(s3://bucket/prefix, endpoint)``: tables on the tests' S3 server instead
        self.s3 = s3
        self.uri = ""
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> RestCatalogServer:
        cp = classpath()
        build = compiled(cp)
        self.warehouse.mkdir(parents=True, exist_ok=True)
        log = (self.workdir / "rest-catalog.log").open("w")
        try:
            self._proc = subprocess.Popen(
                ["nice", "-n", "10", "java", "-Xmx512m", "-cp", f"{build}:{cp}", MAIN,
                 str(self.warehouse), *(self.s3 or ())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                cwd=self.workdir,
            )
        finally:
            log.close()
        try:
            self.port = self._read_port()
        except BaseException:
            self.stop()
            raise
        self.uri = f"http://127.0.0.1:{self.port}"
        return self

    def _read_port(self) -> int:
        assert self._proc is not None and self._proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._proc.stdout, selectors.EVENT_READ)
            if not selector.select(timeout=START_TIMEOUT):
                raise PeerError(f"the REST catalog did not start in {START_TIMEOUT} s: "
                                f"{self.log()}")
        line = self._proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "port":
            raise PeerError(f"the REST catalog did not start: {self.log()}")
        return int(line[1])

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        """Close the server's stdin (it stops itself); kill it if it has not within 15 s."""
        proc, self._proc = self._proc, None
        stop_server(proc, grace=15)

    def log(self) -> str:
        """The server's stderr: one line per request, errors with their message."""
        path = self.workdir / "rest-catalog.log"
        return path.read_text(errors="replace")[-5000:] if path.is_file() else ""

    def catalog(self, name: str = "rest", **properties: Any) -> Catalog:
        """A pyiceberg ``RestCatalog`` on this server."""
        from pyiceberg.catalog import load_catalog

        warehouse = self.s3[0] if self.s3 else str(self.warehouse)
        return load_catalog(name, type="rest", uri=self.uri, warehouse=warehouse, **properties)
