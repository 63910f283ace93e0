"""Google Cloud Storage and Azure Blob Storage on 127.0.0.1, for tests of tables there.

* GCS: ``gcp-storage-emulator`` (PyPI, pure Python), its JSON API served from a thread of the
  test process, objects in memory. gcsfs reaches it through ``gcs.service.host``.
* Azure: Azurite (Microsoft's own emulator, from the npm registry; ``make peers`` installs
  it into ``.node-peers``), a child process with its blobs in memory. adlfs reaches it
  through ``adls.connection-string`` with Azurite's well-known development account.

Each yields an :class:`Emulated`: the warehouse URL, the pyiceberg catalog properties
(``FsspecFileIO``, as a user on that cloud configures it) and an fsspec filesystem to put
objects behind the table's back. Both servers stop when their ``with`` block ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _paths import ROOT
from _processes import free_port, stop

# gcsfs asks Google's control plane (gRPC) for a bucket's layout before its first request;
# the emulator has no such API, and each attempt waits out its retries.
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

AZURITE = ROOT / ".node-peers" / "node_modules" / ".bin" / "azurite-blob"
# Azurite's development account: documented, public, accepted by Azurite only.
AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class Emulated:
    """A bucket (container) on an emulated store."""

    name: str
    #: ``gs://lake`` or ``abfs://lake@devstoreaccount1.dfs.core.windows.net``
    root: str
    #: pyiceberg catalog properties that reach it
    properties: dict[str, str]
    #: an fsspec filesystem on it
    fs: Any

    def key(self, location: str) -> str:
        """The path ``fs`` knows ``location`` by."""
        return str(self.fs._strip_protocol(location))


def _wait_listening(port: int, what: str, alive: Any = None) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise RuntimeError(f"{what} exited before it listened on 127.0.0.1:{port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} in {START_TIMEOUT} s")


@contextlib.contextmanager
def gcs(bucket: str = "lake") -> Iterator[Emulated]:
    """``gcp-storage-emulator`` on a free port, with ``bucket`` made."""
    pytest.importorskip("gcsfs")
    emulator = pytest.importorskip("gcp_storage_emulator.server")
    import gcsfs

    port = free_port()
    server = emulator.create_server("127.0.0.1", port, in_memory=True, default_bucket=bucket)
    server.start()
    try:
        _wait_listening(port, "gcp-storage-emulator")
        endpoint = f"http://127.0.0.1:{port}"
        properties = {
            "py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
            "gcs.service.host": endpoint,
            "gcs.project-id": "puffin-tests",
            "gcs.token": "anon",
        }
        fs = gcsfs.GCSFileSystem(endpoint_url=endpoint, token="anon", project="puffin-tests",
                                 skip_instance_cache=True)  # fmt: skip
        yield Emulated("gcs", f"gs://{bucket}", properties, fs)
    finally:
        server.stop()


def _azurite_command(port: int) -> list[str]:
    if not AZURITE.is_file():
        message = f"Azurite is not installed ({AZURITE}): run `make peers` (needs Node.js and npm)"
        if os.environ.get("PUFFIN_REQUIRE_PEERS") == "1" and shutil.which("npm"):
            pytest.fail(message)
        pytest.skip(message)
    return [
        str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--silent",
        "--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck", "--loose",
    ]  # fmt: skip


@contextlib.contextmanager
def azurite(container: str = "lake") -> Iterator[Emulated]:
    """Azurite's blob service on a free port, with ``container`` made."""
    pytest.importorskip("adlfs")
    import adlfs

    port = free_port()
    work = Path(tempfile.mkdtemp(prefix="puffin-azurite-"))  # its debug files, if any
    log = (work / "azurite.log").open("w+")
    proc = subprocess.Popen(_azurite_command(port), stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, cwd=work)  # fmt: skip
    try:
        try:
            _wait_listening(port, "Azurite", alive=lambda: proc.poll() is None)
        except RuntimeError as exc:
            log.seek(0)
            raise RuntimeError(f"{exc}: {log.read()[-2000:]}") from None
        connection = (
            f"DefaultEndpointsProtocol=http;AccountName={AZURE_ACCOUNT};AccountKey={AZURE_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{AZURE_ACCOUNT};"
        )
        properties = {
            "py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
            "adls.connection-string": connection,
            "adls.account-name": AZURE_ACCOUNT,
        }
        fs = adlfs.AzureBlobFileSystem(connection_string=connection, skip_instance_cache=True)
        fs.mkdir(container)
        yield Emulated("azure", f"abfs://{container}@{AZURE_ACCOUNT}.dfs.core.windows.net",
                       properties, fs)  # fmt: skip
    finally:
        stop(proc)
        log.close()
        shutil.rmtree(work, ignore_errors=True)
