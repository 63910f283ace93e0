"""puffin.locations: one way to resolve a table location for reading and writing."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import puffin
from puffin.locations import local_path, open_input, open_output


def _write(target: Any) -> int:
    with puffin.create(target) as writer:
        writer.add_blob(b"abc", type="x", fields=[1], snapshot_id=1, sequence_number=1)
    assert writer.file_size is not None
    return writer.file_size


def test_local_path_of_file_uris_and_plain_paths(tmp_path: Path) -> None:
    assert local_path(f"file://{tmp_path}/a.puffin") == f"{tmp_path}/a.puffin"
    assert local_path(f"file:{tmp_path}/a.puffin") == f"{tmp_path}/a.puffin"
    assert local_path("relative/a.puffin") == str(Path("relative/a.puffin").resolve())
    assert local_path("s3://bucket/a.puffin") is None


def test_open_output_local_creates_the_folder_and_yields_the_path(tmp_path: Path) -> None:
    location = f"file://{tmp_path}/new/dir/a.puffin"
    with open_output(location) as target:
        assert target == f"{tmp_path}/new/dir/a.puffin"
        size = _write(target)
    assert (tmp_path / "new/dir/a.puffin").stat().st_size == size
    with open_input(None, location) as f:  # type: ignore[arg-type]  # local: io unused
        assert puffin.verify_file(f) == []


class _Output:
    def __init__(self, store: dict[str, bytes], location: str) -> None:
        self.store, self.location = store, location

    def create(self, overwrite: bool = False) -> io.BytesIO:
        assert overwrite is False  # a new Puffin file never replaces one
        store, location = self.store, self.location

        class Stream(io.BytesIO):
            def close(self) -> None:
                store[location] = self.getvalue()
                super().close()

        return Stream()


class _FileIO:
    def __init__(self) -> None:
        self.store: dict[str, bytes] = {}

    def new_output(self, location: str) -> _Output:
        return _Output(self.store, location)


def test_open_output_remote_writes_through_the_file_io_and_closes_it() -> None:
    fio = _FileIO()
    with open_output("s3://bucket/a.puffin", fio) as target:  # type: ignore[arg-type]
        assert not isinstance(target, str)
        size = _write(target)
    data = fio.store["s3://bucket/a.puffin"]
    assert len(data) == size
    assert puffin.verify_file(data) == []


def test_open_output_remote_without_io_uses_fsspec() -> None:
    fsspec = pytest.importorskip("fsspec")
    location = "memory://puffin-locations-test/a.puffin"
    with open_output(location) as target:
        size = _write(target)
    with fsspec.open(location, "rb") as f:
        data = f.read()
    assert len(data) == size and puffin.verify_file(data) == []
