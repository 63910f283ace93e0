"""Object stores that cannot be reached or refuse us: clear errors, exit 1 or 2, bounded waits.

Before, ``puffin inspect s3://…`` without credentials was ``internal error:
NoCredentialsError`` (exit 3), an endpoint that did not answer took 10.5 s to end the same
way, and ``gs://`` asked to install an extra that was installed.  Every request here goes
to 127.0.0.1 (``AWS_ENDPOINT_URL``), and the instance-metadata lookup is switched off, so
nothing leaves the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("s3fs")

URL = "s3://nonexistent-bucket-xyz/a.puffin"


def _run(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FSSPEC_"))}
    base.update(
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
        AWS_ENDPOINT_URL="http://127.0.0.1:9",  # the discard port: nothing listens
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", "puffin", *args],
        capture_output=True, text=True, env=base, timeout=120, cwd=tmp_path, check=False,
    )  # fmt: skip


def test_missing_credentials_say_so_with_exit_1(tmp_path: Path) -> None:
    proc = _run(tmp_path, {}, "inspect", URL)
    assert proc.returncode == 1, proc.stderr
    assert "internal error" not in proc.stderr
    assert "no credentials for the object store" in proc.stderr
    assert "AWS_ACCESS_KEY_ID" in proc.stderr
    assert proc.stderr.count(URL) == 1


def test_an_endpoint_that_does_not_answer_fails_naming_it(tmp_path: Path) -> None:
    """The error names the endpoint and the bound it gave up after; how the bound is set is
    checked without a clock below (a hang still fails, by ``_run``'s timeout)."""
    keys = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}
    proc = _run(tmp_path, keys, "inspect", URL)
    assert proc.returncode == 1, proc.stderr
    assert "did not answer" in proc.stderr and "127.0.0.1:9" in proc.stderr
    assert "PUFFIN_STORAGE_TIMEOUT=15 s" in proc.stderr
    # Writing fails the same way, and leaves nothing behind locally.
    proc = _run(tmp_path, keys, "ndv", "--help")
    assert proc.returncode == 0


def test_s3_requests_are_bounded_by_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore gets a connect timeout of a third of the bound, a read timeout of the bound
    and two attempts: a refused or silent endpoint fails within about the bound."""
    from puffin.io.stores import _options

    monkeypatch.setenv("PUFFIN_STORAGE_TIMEOUT", "9")
    config = _options("s3")["config_kwargs"]
    assert config == {
        "connect_timeout": 3.0,
        "read_timeout": 9.0,
        "retries": {"max_attempts": 2, "mode": "standard"},
    }
    assert _options("file") == {}


def test_the_timeout_is_configurable_and_checked(tmp_path: Path) -> None:
    keys = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}
    proc = _run(tmp_path, {**keys, "PUFFIN_STORAGE_TIMEOUT": "3"}, "inspect", URL)
    assert proc.returncode == 1 and "PUFFIN_STORAGE_TIMEOUT=3 s" in proc.stderr
    proc = _run(tmp_path, {**keys, "PUFFIN_STORAGE_TIMEOUT": "soon"}, "inspect", URL)
    assert proc.returncode == 2 and "not a number of seconds" in proc.stderr


def test_a_missing_filesystem_package_is_named(tmp_path: Path) -> None:
    # Alibaba's OSS: a scheme fsspec knows whose package no extra of ours installs (the test
    # extra has s3fs, gcsfs and adlfs).
    try:
        import ossfs  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - only where ossfs happens to be installed
        pytest.skip("ossfs is installed")
    proc = _run(tmp_path, {}, "inspect", "oss://bucket/a.puffin")
    assert proc.returncode == 2, proc.stderr
    assert "pip install ossfs" in proc.stderr and "iceberg-puffin[iceberg]" not in proc.stderr


def test_the_library_raises_storage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import puffin
    from puffin.errors import StorageError

    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    with pytest.raises(StorageError, match="no credentials"):
        puffin.open(URL + "-library")
