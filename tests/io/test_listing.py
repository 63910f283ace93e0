"""``puffin.io.listing`` on fsspec's in-memory filesystem (any fsspec store goes this way):
listings spelled as the root is, sub-folders apart, deletes that name each refusal, and the
modification times each package reports in its own way."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fsspec")

import fsspec

from puffin.io.listing import ObjectStore, _seconds, object_store
from puffin.io.locations import location_key

UTC = datetime.timezone.utc
KEYS = ["t/data/a.parquet", "t/data/p=1/b.parquet", "t/metadata/v1.metadata.json", "t/x"]


@pytest.fixture
def store() -> Iterator[ObjectStore]:
    fs = fsspec.filesystem("memory")
    for key in KEYS:
        fs.pipe_file(f"/lake/{key}", b"12345")
    fs.pipe_file("/lake/t2/not-under-t", b"")
    yield object_store("memory://lake/t")
    fs.rm("/lake", recursive=True)


def test_a_walk_lists_every_object_under_the_root_and_nothing_beside(store: ObjectStore) -> None:
    found = list(store.walk("memory://lake/t/"))
    assert [f.location for f in found] == [f"memory://lake/{k}" for k in sorted(KEYS)]
    assert {f.size for f in found} == {5} and all(f.modified for f in found)
    assert list(store.walk("memory://lake/nothing")) == []
    assert store.requests["list"] == 2


def test_a_level_gives_objects_and_folders_apart(store: ObjectStore) -> None:
    files, folders = store.level("memory://lake/t")
    assert [f.location for f in files] == ["memory://lake/t/x"]
    assert folders == ["memory://lake/t/data", "memory://lake/t/metadata"]
    assert [f.location for f in store.children("memory://lake/t/data")] == [
        "memory://lake/t/data/a.parquet"
    ]


def test_deletes_report_what_the_store_refused(
    store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = "/lake/t/data/a.parquet"
    real = store.fs.rm_file

    def rm_file(path: str, **kwargs: Any) -> None:
        if path == refused:
            raise PermissionError(13, "Access Denied", path)
        real(path, **kwargs)

    monkeypatch.setattr(store.fs, "rm_file", rm_file)
    failed = store.delete(
        ["memory://lake/t/data/a.parquet", "memory://lake/t/x", "memory://lake/t/gone"]
    )
    assert [(f.location, f.reason.split(":")[0]) for f in failed] == [
        ("memory://lake/t/data/a.parquet", "PermissionError")
    ]
    assert [f.location for f in store.walk("memory://lake/t")] == [
        "memory://lake/t/data/a.parquet",
        "memory://lake/t/data/p=1/b.parquet",
        "memory://lake/t/metadata/v1.metadata.json",
    ]
    assert store.requests["delete"] == 3  # no bulk delete here: one request an object


def test_small_objects_are_put_and_read_back(store: ObjectStore) -> None:
    store.put("memory://lake/t/.mark", b"{}")
    assert store.get("memory://lake/t/.mark") == b"{}"
    with pytest.raises(FileNotFoundError):
        store.get("memory://lake/t/.nothing")


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        (
            {"LastModified": datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)},
            1767312000.0,
        ),
        ({"last_modified": datetime.datetime(2026, 1, 2)}, 1767312000.0),  # naive: UTC
        ({"updated": "2026-01-02T00:00:00Z"}, 1767312000.0),  # gcsfs
        ({"mtime": 1767312000}, 1767312000.0),
        ({"created": "not a time"}, None),
        ({}, None),
    ],
)
def test_each_packages_modification_time_is_read(info: dict[str, Any], expected: Any) -> None:
    assert _seconds(info) == expected


def test_s3a_and_s3n_name_the_objects_of_s3() -> None:
    assert location_key("s3a://b/k") == location_key("s3n://b/k") == "s3://b/k"
    assert location_key("S3://b/k") == "s3://b/k" and location_key("gs://b/k") == "gs://b/k"


@pytest.mark.parametrize(
    "message",
    [
        "AWS Error NO_SUCH_KEY during GetObject operation: The specified key does not exist.",
        "AWS Error RESOURCE_NOT_FOUND during GetObject operation: ",
    ],
)
def test_an_object_removed_while_read_is_not_found(message: str) -> None:
    from puffin.io.stores import gone_as_not_found

    with pytest.raises(FileNotFoundError) as caught, gone_as_not_found("s3://b/k"):
        raise OSError(message)
    assert caught.value.filename == "s3://b/k"
    with pytest.raises(OSError, match="SLOW_DOWN"), gone_as_not_found("s3://b/k"):
        raise OSError("AWS Error SLOW_DOWN during GetObject operation")
