"""Iceberg locations are URLs: ``file:`` directly, other schemes through fsspec.

Object-store behaviour (ranged requests, one PUT, multipart) is in tests/test_s3.py; here
the local and in-memory cases and the errors.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import puffin
from puffin.io import locations
from puffin.io import remote as _remote

fsspec = pytest.importorskip("fsspec")


@pytest.fixture
def memory() -> Iterator[object]:
    fs = fsspec.filesystem("memory")
    yield fs
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")


@pytest.mark.parametrize(
    ("location", "url"),
    [
        ("file:///tmp/a.puffin", True),
        ("file:/tmp/a.puffin", True),  # Iceberg Java's form
        ("s3://bucket/a.puffin", True),
        ("memory://b/a.puffin", True),
        ("abfss://c@acct.dfs.core.windows.net/a", True),
        ("/tmp/a.puffin", False),
        ("a.puffin", False),
        ("C:\\data\\a.puffin", False),  # a drive letter, not a scheme
        ("c://data/a.puffin", False),
        ("odd:name.puffin", False),  # a local file with a colon
    ],
)
def test_is_url(location: str, url: bool) -> None:
    assert locations.is_url(location) is url


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("file:///tmp/a.puffin", "/tmp/a.puffin"),
        ("file:/tmp/a.puffin", "/tmp/a.puffin"),
        ("file://localhost/tmp/a.puffin", "/tmp/a.puffin"),
        ("FILE:///tmp/a.puffin", "/tmp/a.puffin"),
        # '#' and '?' name the file: Iceberg writers do not escape them
        ("file:///tmp/stats#1.puffin", "/tmp/stats#1.puffin"),
        ("file:/tmp/a?b.puffin", "/tmp/a?b.puffin"),
        ("file:///tmp/a%20b.puffin", "/tmp/a%20b.puffin"),  # kept, as pyiceberg does
        ("file://", ""),
        ("s3://bucket/a.puffin", None),
    ],
)
def test_local_path(location: str, path: str | None) -> None:
    assert locations.local_path(location) == path


def _write(target: str, **kw: object) -> puffin.PuffinWriter:
    with puffin.create(target, created_by="t", **kw) as writer:  # type: ignore[arg-type]
        writer.add_blob(b"hello", type="t", fields=[1], codec="zstd")
        writer.add_blob(b"world", type="t", fields=[2])
    return writer


@pytest.mark.parametrize("form", ["file://{}", "file:{}"])
def test_file_urls_open_and_create(tmp_path: Path, form: str) -> None:
    url = form.format(tmp_path / "a.puffin")
    writer = _write(url)
    assert writer.path == url
    assert os.listdir(tmp_path) == ["a.puffin"]  # written in place, atomically
    with puffin.open(url, footer_size=writer.footer_size) as reader:
        assert [reader.read_blob(b) for b in reader.blobs] == [b"hello", b"world"]


def test_file_url_errors_name_the_target_not_a_temporary(tmp_path: Path) -> None:
    url = f"file://{tmp_path}/missing-dir/a.puffin"
    with pytest.raises(OSError) as info:
        _write(url)
    assert ".tmp" not in str(info.value)
    assert "a.puffin" in str(info.value)


def test_memory_url_create_and_open(memory: object) -> None:
    writer = _write("memory://b/stats.puffin")
    assert writer.path == "memory://b/stats.puffin"
    with puffin.open("memory://b/stats.puffin", file_size=writer.file_size,
                     footer_size=writer.footer_size) as reader:
        assert reader.name == "memory://b/stats.puffin"
        assert reader.read_blob(0) == b"hello"
        assert [data for _, data in reader.read_all()] == [b"hello", b"world"]


def test_memory_url_error_leaves_no_object(memory: object) -> None:
    with pytest.raises(RuntimeError), puffin.create("memory://b/x.puffin") as writer:
        writer.add_blob(b"x", type="t", fields=[1])
        raise RuntimeError("boom")
    assert not fsspec.filesystem("memory").exists("memory://b/x.puffin")


def test_helpers_write_to_the_url_not_a_local_folder(
    memory: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = "memory://b/d.puffin"
    entries = puffin.write_deletion_vectors(url, {"f.parquet": [1, 2, 3]})
    assert os.listdir(tmp_path) == []  # not ./memory:/b/d.puffin
    assert entries[0].path == url
    assert puffin.read_deletion_vectors(url)["f.parquet"].to_numpy().tolist() == [1, 2, 3]
    e = entries[0]
    dv = puffin.read_deletion_vector(url, e.content_offset, e.content_size_in_bytes)
    assert len(dv) == 3

    sketch = puffin.ThetaSketch.from_values([1, 2, 3], "long")
    with puffin.create("memory://b/t.puffin") as writer:
        puffin.add_theta_blob(writer, sketch, field_id=1, snapshot_id=1, sequence_number=1)
    assert [b.field_id for b in puffin.read_theta_blobs("memory://b/t.puffin")] == [1]
    assert puffin.verify_file("memory://b/t.puffin") == []


def test_a_bad_leading_magic_is_caught_by_the_first_read_near_it(memory: object) -> None:
    url = "memory://b/m.puffin"
    with puffin.create(url) as writer:
        writer.add_blob(b"a" * 100_000, type="t", fields=[1])  # the footer lies far past 64 KiB
    fs = fsspec.filesystem("memory")
    data = bytearray(fs.cat_file(url))
    data[0:4] = b"XXXX"
    fs.pipe_file(url, bytes(data))
    # with the footer hint, the footer read starts far from the magic: no request of its
    # own for the magic, which the first blob read (from offset 4) brings along
    with puffin.open(url, footer_size=writer.footer_size) as reader:
        with pytest.raises(puffin.InvalidFileError, match="start of file") as info:
            reader.read_blob(0)
    assert info.value.offset == 0
    # a small file comes in one read with its footer: caught at once
    small = _write("memory://b/small.puffin")
    fs.pipe_file("memory://b/small.puffin", b"XXXX" + fs.cat_file("memory://b/small.puffin")[4:])
    with pytest.raises(puffin.InvalidFileError, match="start of file"):
        puffin.open("memory://b/small.puffin", footer_size=small.footer_size)


def test_missing_object_names_the_url(memory: object) -> None:
    with pytest.raises(FileNotFoundError) as info:
        puffin.open("memory://b/none.puffin")
    assert info.value.filename == "memory://b/none.puffin"


def test_unknown_scheme_names_the_url() -> None:
    with pytest.raises(FileNotFoundError) as info:
        puffin.open("nosuchscheme://b/x.puffin")
    assert info.value.filename == "nosuchscheme://b/x.puffin"


def test_missing_fsspec_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)
    monkeypatch.setitem(sys.modules, "fsspec.core", None)
    for call in (lambda: puffin.open("s3://b/x.puffin"), lambda: puffin.create("gs://b/x")):
        extra = r"iceberg-puffin\[iceberg\]"
        with pytest.raises(puffin.errors.MissingDependencyError, match=extra):
            call()


def test_cli_reads_file_urls(tmp_path: Path) -> None:
    url = f"file://{tmp_path}/cli.puffin"
    _write(url)
    for args in (["inspect", url], ["verify", url], ["cat", url, "1"]):
        run = subprocess.run([sys.executable, "-m", "puffin", *args],
                             capture_output=True, timeout=120)
        assert run.returncode == 0, run.stderr
    assert run.stdout == b"world"


def test_a_file_url_with_a_hash_writes_that_file(tmp_path: Path) -> None:
    (tmp_path / "stats").write_bytes(b"unrelated")
    _write(f"file://{tmp_path}/stats#1.puffin")
    assert (tmp_path / "stats").read_bytes() == b"unrelated"
    with puffin.open(f"file://{tmp_path}/stats#1.puffin") as reader:
        assert reader.read_blob(1) == b"world"


@pytest.mark.parametrize("target", ["file:", "file://localhost", "{}/dir/"])
def test_a_target_without_a_file_name_is_refused_up_front(tmp_path: Path, target: str) -> None:
    from puffin.io import staging as _staging

    (tmp_path / "dir").mkdir()
    with pytest.raises(IsADirectoryError, match="give the file's name"):
        puffin.create(target.format(tmp_path))
    assert _staging._UNLINKABLE == set()  # the device keeps its unnamed temporaries


def _large_write(target: str, monkeypatch: pytest.MonkeyPatch, fail: bool) -> None:
    monkeypatch.setattr(_remote, "UPLOAD_BUFFER_SIZE", 1024)
    with puffin.create(target) as writer:
        for i in range(8):
            writer.add_blob(bytes([i]) * 1000, type="t", fields=[i])
        if fail:
            raise RuntimeError("boom")


def test_a_large_memory_write_is_invisible_until_closed_and_gone_on_error(
    memory: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs = fsspec.filesystem("memory")
    with pytest.raises(RuntimeError, match="boom"):
        _large_write("memory://b/big.puffin", monkeypatch, fail=True)
    assert not fs.exists("/b/big.puffin")
    _large_write("memory://b/big.puffin", monkeypatch, fail=False)
    with puffin.open("memory://b/big.puffin") as reader:
        assert reader.read_blob(7) == bytes([7]) * 1000


def test_a_local_fsspec_url_writes_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "t.puffin"
    target.write_bytes(b"previous")
    with pytest.raises(RuntimeError, match="boom"):  # the caller's error, not a cleanup's
        _large_write(f"local://{target}", monkeypatch, fail=True)
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.puffin"]


def test_a_local_pyiceberg_output_file_writes_atomically(tmp_path: Path) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO

    target = tmp_path / "t.puffin"
    target.write_bytes(b"previous")
    output = PyArrowFileIO().new_output(f"file://{target}")
    with pytest.raises(RuntimeError, match="boom"), puffin.create(output) as writer:
        writer.add_blob(b"x" * 100_000, type="t", fields=[1])
        raise RuntimeError("boom")
    assert target.read_bytes() == b"previous"
    with puffin.create(output) as writer:
        writer.add_blob(b"new", type="t", fields=[1])
    assert writer.path == f"file://{target}"
    with puffin.open(str(target)) as reader:
        assert reader.read_blob(0) == b"new"


def test_unencodable_properties_fail_at_create_not_at_close(tmp_path: Path) -> None:
    with pytest.raises(UnicodeEncodeError):
        puffin.create(tmp_path / "a.puffin", created_by="bad \udc80")
    with pytest.raises(UnicodeEncodeError):
        puffin.create(tmp_path / "a.puffin", properties={"k": "bad \udc80"})
    assert list(tmp_path.iterdir()) == []
