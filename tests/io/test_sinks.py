"""The writer writes to a Sink and knows nothing else: a caller's own sink gets the bytes,
one commit on close, one discard on failure, and nothing written after either."""

from __future__ import annotations

import io

import pytest

import puffin


class RecordingSink:
    def __init__(self) -> None:
        self.buffer = io.BytesIO()
        self.calls: list[str] = []

    @property
    def name(self) -> str:
        return "memory://recording"

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.calls, "written after commit or discard"
        self.buffer.write(data)

    def commit(self) -> None:
        self.calls.append("commit")

    def discard(self) -> None:
        self.calls.append("discard")


def test_a_callers_sink_gets_the_file_and_one_commit() -> None:
    sink = RecordingSink()
    with puffin.create(sink, created_by="t") as writer:
        writer.add_blob(b"abc", type="x", fields=[1])
    assert sink.calls == ["commit"]
    assert writer.path == "memory://recording"
    with puffin.open(sink.buffer.getvalue()) as reader:
        assert reader.read_blob(0) == b"abc"


def test_a_failed_write_discards_once_and_never_commits() -> None:
    sink = RecordingSink()
    with pytest.raises(RuntimeError), puffin.create(sink) as writer:
        writer.add_blob(b"abc", type="x", fields=[1])
        raise RuntimeError("stop")
    assert sink.calls == ["discard"]


def test_a_plain_binary_file_is_written_and_left_open() -> None:
    out = io.BytesIO()
    with puffin.create(out) as writer:
        writer.add_blob(b"abc", type="x", fields=[1])
    assert not out.closed
    assert puffin.open(out.getvalue()).read_blob(0) == b"abc"


def test_the_recording_sink_is_a_sink_for_the_type_checker() -> None:
    from puffin.io.base import Sink

    sink: Sink = RecordingSink()  # mypy --strict checks this assignment
    assert sink.name == "memory://recording"
