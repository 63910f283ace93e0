"""Rough edges of the core a new user met (issue 23): each test failed on the code before.

``codec="none"`` was an ``UnknownCodecError`` although the README and ``inspect`` use the
word; a file one byte short said ``expected 50464131, found 00504641``; ``puffin verify``
gave no hint for a Parquet file; ``writer.file_size`` was ``int | None`` after close.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

import puffin


def _file(**kw: object) -> tuple[bytes, puffin.PuffinWriter]:
    buf = io.BytesIO()
    with puffin.create(buf) as writer:
        writer.add_blob(b"abc" * 10, type="t", fields=[1], **kw)  # type: ignore[arg-type]
    return buf.getvalue(), writer


def test_codec_none_is_stored_as_is_and_named_in_no_footer() -> None:
    data, _ = _file(codec="none")
    with puffin.open(data) as reader:
        (blob,) = reader.blobs
        assert blob.compression_codec is None and reader.read_blob(blob) == b"abc" * 10
    assert data == _file()[0]  # the same bytes as codec=None
    assert b'"compression-codec"' not in data
    with pytest.raises(puffin.UnknownCodecError):
        _file(codec="NONE")  # names stay case-sensitive


def test_sizes_are_ints_after_close_and_an_error_before() -> None:
    data, writer = _file()
    size: int = writer.file_size  # typed int: no Optional left for mypy --strict
    assert size == len(data) and writer.footer_size < size
    with puffin.create(io.BytesIO()) as open_writer:
        with pytest.raises(ValueError, match="still open"):
            open_writer.file_size  # noqa: B018


def test_a_file_one_byte_short_says_it_may_be_truncated() -> None:
    data, _ = _file()
    with pytest.raises(puffin.InvalidFileError) as info:
        puffin.open(data[:-1])
    message = str(info.value)
    assert "'PFA1'" in message and "may be truncated" in message


def test_verify_names_a_parquet_file(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "data.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), path)
    proc = subprocess.run(
        [sys.executable, "-m", "puffin", "verify", str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "this is a Parquet file" in proc.stdout and "puffin ndv" in proc.stdout
