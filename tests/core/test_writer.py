"""The writer's API as a new user met it (issue 23): each test failed on the code before.

``codec="none"`` was an ``UnknownCodecError`` although the README and ``inspect`` use the
word; ``writer.file_size`` was ``int | None`` after close.
"""

from __future__ import annotations

import io

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
