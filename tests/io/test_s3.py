"""Puffin files on S3: a real S3-compatible server (moto) on 127.0.0.1, every request counted.

Iceberg's StatisticsFile gives ``file_size`` and ``footer_size``: with both, the footer and
one blob cost two GET requests, and no request ever downloads more than it needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("moto.moto_server.werkzeug_app")
pytest.importorskip("s3fs")
import fsspec

import puffin
from _s3_server import CountingS3Server, Request, running
from puffin.io import remote as _remote

BUCKET = "warehouse"


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with running(BUCKET) as s:
        yield s


@pytest.fixture
def s3(server: CountingS3Server, monkeypatch: pytest.MonkeyPatch) -> CountingS3Server:
    """fsspec's s3 configured for the server, as FSSPEC_S3_* variables would; log cleared."""
    monkeypatch.setitem(fsspec.config.conf, "s3", server.storage_options())
    fsspec.filesystem("s3", **server.storage_options()).invalidate_cache()
    server.log.clear()
    return server


def _gets(log: list[Request]) -> list[Request]:
    return [r for r in log if r.method == "GET"]


class _Written:
    def __init__(self, writer: puffin.PuffinWriter) -> None:
        self.file_size: int = writer.file_size
        self.footer_size: int = writer.footer_size


def _write(url: str, blobs: int = 3, size: int = 1000, **kw: Any) -> _Written:
    with puffin.create(url, created_by="test", **kw) as writer:
        for i in range(blobs):
            writer.add_blob(bytes([i % 251]) * size, type="t", fields=[i], codec=None)
    return _Written(writer)


def test_footer_and_one_blob_with_both_hints_cost_two_gets(s3: CountingS3Server) -> None:
    url = f"s3://{BUCKET}/big.puffin"
    w = _write(url, blobs=200, size=4096)  # 800 KiB: far larger than the tail read
    s3.log.clear()
    with puffin.open(url, file_size=w.file_size, footer_size=w.footer_size) as reader:
        assert reader.read_blob(0) == bytes([0]) * 4096
    log = s3.log.snapshot()
    assert [r.method for r in log] == ["GET", "GET"]
    assert sum(r.sent for r in log) == w.footer_size + 4 + 4096  # the magic comes along
    assert log[0].range == f"bytes={w.file_size - w.footer_size}-{w.file_size - 1}"


def test_footer_hint_without_file_size_adds_one_head(s3: CountingS3Server) -> None:
    url = f"s3://{BUCKET}/hint.puffin"
    w = _write(url, blobs=200, size=4096)
    s3.log.clear()
    with puffin.open(url, footer_size=w.footer_size) as reader:
        reader.read_blob(20)
    log = s3.log.snapshot()
    assert [r.method for r in log] == ["HEAD", "GET", "GET"]
    # blob 20 lies more than 64 KiB from the magic: that is not fetched with it
    assert sum(r.sent for r in _gets(log)) == w.footer_size + 4096


def test_without_footer_hint_one_tail_read(s3: CountingS3Server) -> None:
    url = f"s3://{BUCKET}/nohint.puffin"
    w = _write(url, blobs=200, size=4096)
    s3.log.clear()
    with puffin.open(url, file_size=w.file_size) as reader:
        reader.read_blob(199)
    log = s3.log.snapshot()
    assert len(_gets(log)) == 2 and len(log) == 2
    assert sum(r.sent for r in log) == 64 * 1024 + 4096  # Limits.tail_read_size + blob


def test_small_file_one_get_holds_everything_but_the_blob(s3: CountingS3Server) -> None:
    url = f"s3://{BUCKET}/small.puffin"
    w = _write(url)
    s3.log.clear()
    with puffin.open(url, file_size=w.file_size) as reader:
        assert reader.read_blob(2) == bytes([2]) * 1000
    assert len(s3.log.snapshot()) == 2


def test_whole_10000_blob_file(s3: CountingS3Server) -> None:
    url = f"s3://{BUCKET}/many.puffin"
    w = _write(url, blobs=10_000, size=100)
    s3.log.clear()
    with puffin.open(url) as reader:
        got = [data for _, data in reader.read_all()]
    assert len(got) == 10_000 and got[9_999] == bytes([9_999 % 251]) * 100
    log = s3.log.snapshot()
    # HEAD, the 64 KiB tail, the rest of the footer, one coalesced read of every blob
    assert [r.method for r in log] == ["HEAD", "GET", "GET", "GET"]
    assert sum(r.sent for r in log) == w.file_size


def test_a_write_is_one_put(s3: CountingS3Server) -> None:
    _write(f"s3://{BUCKET}/put.puffin")
    puts = [r for r in s3.log.snapshot() if r.method in ("PUT", "POST")]
    assert len(puts) == 1


def test_an_error_inside_create_leaves_no_object(s3: CountingS3Server) -> None:
    url = f"s3://{BUCKET}/never.puffin"
    with pytest.raises(RuntimeError, match="boom"), puffin.create(url) as writer:
        writer.add_blob(b"x" * 1000, type="t", fields=[1])
        raise RuntimeError("boom")
    assert s3.log.snapshot() == []  # nothing was sent
    assert not fsspec.filesystem("s3").exists(url)


def _big_write(url: str, fail: bool) -> puffin.PuffinWriter:
    with puffin.create(url) as writer:
        for i in range(12):
            writer.add_blob(bytes([i]) * (1 << 20), type="t", fields=[i])
        if fail:
            raise RuntimeError("boom")
    return writer


def test_a_large_write_is_a_multipart_upload_completed_at_close(
    s3: CountingS3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_remote, "UPLOAD_BUFFER_SIZE", 5 << 20)  # S3's smallest part
    url = f"s3://{BUCKET}/multipart.puffin"
    w = _big_write(url, fail=False)
    assert sum(1 for r in s3.log.snapshot() if r.method == "PUT") >= 2  # parts
    with puffin.open(url, file_size=w.file_size, footer_size=w.footer_size) as reader:
        assert reader.read_blob(11) == bytes([11]) * (1 << 20)


def test_a_failed_large_write_aborts_its_multipart_upload(
    s3: CountingS3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_remote, "UPLOAD_BUFFER_SIZE", 5 << 20)
    url = f"s3://{BUCKET}/aborted.puffin"
    with pytest.raises(RuntimeError, match="boom"):
        _big_write(url, fail=True)
    assert any(r.method == "PUT" for r in s3.log.snapshot())  # parts went out...
    assert not fsspec.filesystem("s3").exists(url)  # ...but no object appeared
    uploads = s3.boto3().list_multipart_uploads(Bucket=BUCKET)
    assert uploads.get("Uploads", []) == []


def test_missing_object_and_bucket_are_named(s3: CountingS3Server) -> None:
    with pytest.raises(FileNotFoundError) as info:
        puffin.open(f"s3://{BUCKET}/absent.puffin")
    assert info.value.filename == f"s3://{BUCKET}/absent.puffin"
    with pytest.raises(FileNotFoundError) as info:
        _write("s3://no-such-bucket/x.puffin")
    assert info.value.filename == "s3://no-such-bucket/x.puffin"


def test_blob_helpers_and_verify_take_s3_urls(s3: CountingS3Server) -> None:
    url = f"s3://{BUCKET}/deletes.puffin"
    entries = puffin.write_deletion_vectors(url, {"s3://b/f1.parquet": [1, 3, 5]})
    e = entries[0]
    assert e.path == url
    dv = puffin.read_deletion_vector(url, e.content_offset, e.content_size_in_bytes,
                                     record_count=e.record_count)
    assert dv.to_numpy().tolist() == [1, 3, 5]
    assert list(puffin.read_deletion_vectors(url)) == ["s3://b/f1.parquet"]
    assert puffin.verify_file(url) == []


# -- pyiceberg FileIO ------------------------------------------------------------------------


def _fileios(s3: CountingS3Server) -> list[Any]:
    from pyiceberg.io.fsspec import FsspecFileIO
    from pyiceberg.io.pyarrow import PyArrowFileIO

    return [PyArrowFileIO(s3.fileio_properties()), FsspecFileIO(s3.fileio_properties())]


@pytest.mark.parametrize("kind", [0, 1], ids=["PyArrowFileIO", "FsspecFileIO"])
def test_fileio_reads_are_ranged(s3: CountingS3Server, kind: int) -> None:
    pytest.importorskip("pyiceberg")
    io = _fileios(s3)[kind]
    url = f"s3://{BUCKET}/fileio-{kind}.puffin"
    w = _write(url, blobs=200, size=4096, io=io)
    s3.log.clear()
    with puffin.open(url, io=io, file_size=w.file_size, footer_size=w.footer_size) as reader:
        assert reader.read_blob(0) == bytes([0]) * 4096
    log = s3.log.snapshot()
    assert len(_gets(log)) == 2
    assert sum(r.sent for r in log) == w.footer_size + 4 + 4096
    # Arrow's S3 file asks for the size when it opens, whatever the caller knows
    assert [r.method for r in log] == (["HEAD", "GET", "GET"] if kind == 0 else ["GET", "GET"])


def test_fileio_input_and_output_files_as_source_and_target(s3: CountingS3Server) -> None:
    pytest.importorskip("pyiceberg")
    io = _fileios(s3)[0]
    url = f"s3://{BUCKET}/inputfile.puffin"
    entries = puffin.write_deletion_vectors(io.new_output(url), {"d.parquet": range(10)})
    assert entries[0].path == url
    assert len(puffin.read_deletion_vectors(io.new_input(url))["d.parquet"]) == 10
    with pytest.raises(RuntimeError), puffin.create(io.new_output(url + "2")) as writer:
        writer.add_blob(b"x", type="t", fields=[1])
        raise RuntimeError
    assert not io.new_input(url + "2").exists()


# -- command line ----------------------------------------------------------------------------


def test_cli_inspect_and_verify_s3(s3: CountingS3Server) -> None:
    url = f"s3://{BUCKET}/cli.puffin"
    _write(url)
    env = {**os.environ, **s3.env()}
    for args in (["inspect", url, "--json"], ["verify", url]):
        run = subprocess.run([sys.executable, "-m", "puffin", *args], env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
    out = subprocess.run([sys.executable, "-m", "puffin", "inspect", url, "--json"], env=env,
                         capture_output=True, text=True, timeout=120).stdout
    assert len(json.loads(out)["blobs"]) == 3


def test_an_fsspec_input_file_reads_ranged(s3: CountingS3Server) -> None:
    """pyiceberg's FsspecInputFile opens a read-ahead file (s3fs: 50 MiB blocks); read
    through its filesystem instead, one ranged GET per read."""
    pytest.importorskip("pyiceberg")
    io = _fileios(s3)[1]
    url = f"s3://{BUCKET}/fsspec-input.puffin"
    w = _write(url, blobs=50, size=100_000)
    s3.log.clear()
    with puffin.open(io.new_input(url), file_size=w.file_size, footer_size=w.footer_size) as r:
        assert r.read_blob(0) == bytes([0]) * 100_000
    log = s3.log.snapshot()
    assert len(_gets(log)) == 2
    assert sum(r.sent for r in log) == w.footer_size + 100_000 + 4


def test_a_file_size_hint_past_the_object_is_a_puffin_error(s3: CountingS3Server) -> None:
    url = f"s3://{BUCKET}/hint.puffin"
    w = _write(url, blobs=5, size=1000)
    with pytest.raises(puffin.InvalidFileError, match="truncated"):
        with puffin.open(url, file_size=w.file_size * 100) as reader:
            reader.read_blob(0)
