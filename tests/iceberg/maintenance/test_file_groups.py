"""``file_groups.pack``: a partition's files dealt into groups of about the target size."""

from __future__ import annotations

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
