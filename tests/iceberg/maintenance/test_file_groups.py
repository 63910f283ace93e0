"""``file_groups.pack``: a partition's files dealt into groups of about the target size; and the
files of a group's Spark attempts that were not taken, found by name and removed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from puffin.iceberg.maintenance.file_groups import pack


def test_groups_are_about_the_target_size() -> None:
    class File:
        def __init__(self, path: str, size: int) -> None:
            self.path = path
            self.data_file = type("DataFile", (), {"file_size_in_bytes": size})()

    files = [File(f"f{i}", size) for i, size in enumerate([50, 40, 30, 30, 20, 10, 10, 10])]
    bins = pack({(0, None): files, (1, "p"): files[:1]}, 70)  # type: ignore[dict-item]
    sizes = [sum(f.data_file.file_size_in_bytes for f in chosen) for _, chosen in bins]
    assert len(bins) == 3 + 1 and sorted(sizes[:3]) == [60, 70, 70]  # ceil(200 / 70) = 3
    assert [key for key, _ in bins] == [(0, None)] * 3 + [(1, "p")]
    for _, chosen in bins:
        assert [f.path for f in chosen] == sorted(f.path for f in chosen)
    assert sorted(f.path for _, chosen in bins[:3] for f in chosen) == sorted(f.path for f in files)


def test_the_files_of_attempts_not_taken_are_found_by_name_and_removed(tmp_path: Any) -> None:
    """What a retried or speculative Spark task wrote (spark/compact.py): every attempt's
    files but the taken one's, up to the attempts Spark may make, are removed; a bin whose
    every attempt failed loses them all; nothing else is touched."""
    import uuid

    from pyiceberg.table.locations import load_location_provider

    from iceberg_fixtures import make_catalog
    from puffin.iceberg import create_sample_table
    from puffin.iceberg.writes._streaming import data_file_location
    from puffin.io.locations import local_path
    from puffin.spark.compact import attempt_uuid, remove_untaken_attempts

    table = create_sample_table(make_catalog(tmp_path), "db.t", rows=10)
    locations = load_location_provider(table.metadata.location, table.metadata.properties)
    job = uuid.uuid4()
    written = {}
    for number, attempt, files in [(0, 0, 2), (0, 1, 1), (0, 3, 1), (1, 0, 1), (2, 0, 1)]:
        for n in range(files):
            path = local_path(data_file_location(locations, attempt_uuid(job, number, attempt), n))
            assert path is not None
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(b"x")
            written[(number, attempt, n)] = Path(path)
    # bin 0 taken from attempt 3 (after three failures), bin 1 from attempt 0, bin 2 none
    remove_untaken_attempts(table, job, 3, {0: 3, 1: 0}, attempts=1)
    left = {key for key, path in written.items() if path.exists()}
    assert left == {(0, 3, 0), (1, 0, 0)}
