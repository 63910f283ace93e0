"""Equality delete files in the delete-file index, against the spec's rules written as a model.

The spec: an equality delete file applies to a data file whose data sequence number is
strictly lower, in the same partition (spec id and values), or in every partition when the
delete file's spec has no fields. Position deletes and vectors keep their rules (at or after
the data file's number; by the file they name, else by partition and ``file_path`` bounds).
The entries are drawn by hypothesis over three specs (one unpartitioned), and every data
file's set is compared with the model's, which tests every delete file against it.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry
from pyiceberg.manifest import ManifestEntryStatus as Status
from pyiceberg.typedef import Record

from puffin.iceberg.scan.delete_file_index import PATH_FIELD_ID, DeleteFileIndex

UNPARTITIONED = frozenset({0})  # spec 0 has no fields; specs 1 and 2 one field each
SEQUENCES = st.integers(1, 5)


def _file(content: DataFileContent, path: str, spec: int, value: int, **extra: Any) -> DataFile:
    made = DataFile.from_args(
        _table_format_version=3,
        content=content,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record() if spec == 0 else Record(value),
        record_count=10,
        file_size_in_bytes=100,
        **extra,
    )
    made.spec_id = spec  # set from the manifest when read
    return made


def _entry(data_file: DataFile, sequence: int) -> ManifestEntry:
    return ManifestEntry.from_args(
        status=Status.ADDED, snapshot_id=1, sequence_number=sequence, data_file=data_file
    )


@st.composite
def plans(draw: Any) -> tuple[list[tuple[ManifestEntry, dict[str, Any]]], list[Any]]:
    """Data entries and delete entries, each with the plain facts the model reads."""
    data = []
    for i in range(draw(st.integers(1, 10))):
        spec, value, seq = draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(SEQUENCES)
        path = f"s3://b/data/f{i:03d}.parquet"
        facts = {"path": path, "spec": spec, "value": value if spec else None, "seq": seq}
        data.append((_entry(_file(DataFileContent.DATA, path, spec, value), seq), facts))
    deletes = []
    for j in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["equality", "vector", "position"]))
        spec, value, seq = draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(SEQUENCES)
        path = f"s3://b/data/d{j:03d}-{kind}.parquet"
        facts = {"kind": kind, "spec": spec, "value": value if spec else None, "seq": seq}
        if kind == "equality":
            made = _file(DataFileContent.EQUALITY_DELETES, path, spec, value, equality_ids=[1])
        elif kind == "vector":
            target = draw(st.sampled_from([f["path"] for _, f in data] + ["s3://b/other"]))
            facts["target"] = target
            made = _file(
                DataFileContent.POSITION_DELETES, path, spec, value, referenced_data_file=target
            )
        else:
            low, high = sorted(draw(st.sampled_from([f["path"] for _, f in data])) for _ in "lh")
            facts["bounds"] = (low, high)
            made = _file(
                DataFileContent.POSITION_DELETES, path, spec, value,
                lower_bounds={PATH_FIELD_ID: low.encode()},
                upper_bounds={PATH_FIELD_ID: high.encode()},
            )  # fmt: skip
            if low == high:  # bounds naming one file: found by that file, as Java does
                facts["target"] = low
        deletes.append((_entry(made, seq), facts))
    return data, deletes


def _applies(d: dict[str, Any], f: dict[str, Any]) -> bool:
    """The spec's rules, one data file against one delete file."""
    same_partition = f["spec"] == d["spec"] and f["value"] == d["value"]
    if f["kind"] == "equality":
        return f["seq"] > d["seq"] and (f["spec"] in UNPARTITIONED or same_partition)
    if "target" in f:
        return bool(f["target"] == d["path"] and f["seq"] >= d["seq"])
    low, high = f["bounds"]
    return same_partition and f["seq"] >= d["seq"] and low <= d["path"] <= high


@settings(max_examples=300, deadline=None)
@given(plan=plans())
def test_each_data_file_gets_the_delete_files_the_spec_applies(plan: Any) -> None:
    data, deletes = plan
    index = DeleteFileIndex(UNPARTITIONED)
    for entry, _ in deletes:
        index.add(entry)
    for entry, facts in data:
        found = {str(d.file_path) for d in index.for_data_file(entry)}
        expected = {str(e.data_file.file_path) for e, f in deletes if _applies(facts, f)}
        assert found == expected, facts


def test_an_equality_delete_of_the_same_sequence_number_does_not_apply() -> None:
    """Rows written in the same commit as an equality delete are not deleted by it (an
    upsert's insert survives its own delete); a position delete of that number applies."""
    data = _entry(_file(DataFileContent.DATA, "s3://b/data/a.parquet", 1, 7), 3)
    equality = _file(DataFileContent.EQUALITY_DELETES, "s3://b/e.parquet", 1, 7, equality_ids=[1])
    position = _file(DataFileContent.POSITION_DELETES, "s3://b/p.parquet", 1, 7)
    index = DeleteFileIndex(UNPARTITIONED)
    index.add(_entry(equality, 3))
    index.add(_entry(position, 3))
    assert {str(d.file_path) for d in index.for_data_file(data)} == {"s3://b/p.parquet"}
    index.add(_entry(equality, 4))
    assert len(index.for_data_file(data)) == 2


def test_a_plan_is_refused_only_where_an_equality_delete_applies() -> None:
    """Equality deletes are read by no reader yet: a plan holding one that applies to a data
    file is refused (pyiceberg's words, which scan_table turns into UnsupportedTableError);
    one that applies to no file of the plan (older rows, another partition) is not."""
    from puffin.iceberg.scan.plan import _digest, _planned_digests

    def _planned(groups: list[list[Any]], unpartitioned: frozenset[int]) -> Any:
        """The plan of manifest entries, as one manifest's digest."""
        return _planned_digests([_digest(e for group in groups for e in group)], unpartitioned)

    data = [
        _entry(_file(DataFileContent.DATA, "s3://b/data/a.parquet", 1, 7), 5),
        _entry(_file(DataFileContent.DATA, "s3://b/data/b.parquet", 1, 8), 2),
    ]
    older = _file(DataFileContent.EQUALITY_DELETES, "s3://b/e1.parquet", 1, 7, equality_ids=[1])
    elsewhere = _file(DataFileContent.EQUALITY_DELETES, "s3://b/e2.parquet", 2, 8, equality_ids=[1])
    planned = _planned([data, [_entry(older, 5), _entry(elsewhere, 9)]], UNPARTITIONED)
    assert [(p.path, list(p.delete_files)) for p in planned] == [
        ("s3://b/data/a.parquet", []),
        ("s3://b/data/b.parquet", []),
    ]
    applies = _file(DataFileContent.EQUALITY_DELETES, "s3://b/e3.parquet", 1, 8, equality_ids=[1])
    with pytest.raises(ValueError, match="equality deletes"):
        _planned([data, [_entry(applies, 3)]], UNPARTITIONED)
    everywhere = _file(
        DataFileContent.EQUALITY_DELETES, "s3://b/e4.parquet", 0, 0, equality_ids=[1]
    )
    with pytest.raises(ValueError, match="equality deletes"):
        _planned([data, [_entry(everywhere, 6)]], UNPARTITIONED)
