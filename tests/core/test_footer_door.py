"""One door for the footer: ``puffin.open`` and ``FileMetadata.from_json`` accept exactly the
same footers, and refuse the same ones with the same error.

Before the door, ``from_json`` used only the exact parser and refused any footer past
``Limits.max_json_values``, which ``puffin.open`` reads through the streaming backend.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import puffin
from _hostile import puffin_file

_TIGHT = puffin.Limits(max_json_values=50)  # past it: the streaming backend


def _blob(i: int) -> dict[str, Any]:
    return {"type": "t", "fields": [i], "snapshot-id": i, "sequence-number": 1,
            "offset": 4, "length": 0, "properties": {"k": str(i)}}


def _outcome(read: Any) -> Any:
    try:
        return read()
    except puffin.PuffinError as exc:
        return type(exc), exc.blob_index, exc.field


def _both(payload: bytes, limits: puffin.Limits) -> tuple[Any, Any]:
    def through_open() -> Any:
        with puffin.open(puffin_file(payload), limits=limits) as reader:
            return reader.metadata

    def through_from_json() -> Any:
        return puffin.FileMetadata.from_json(payload, limits=limits)

    return _outcome(through_open), _outcome(through_from_json)


def test_from_json_reads_a_footer_past_the_values_cap_as_open_does() -> None:
    payload = json.dumps({"blobs": [_blob(i) for i in range(40)]}).encode()
    by_open, by_from_json = _both(payload, _TIGHT)
    assert isinstance(by_open, puffin.FileMetadata) and len(by_open.blobs) == 40
    assert by_from_json == by_open


_EDITS = {
    "none": lambda b: None,
    "float offset": lambda b: b.update({"offset": 1.5}),
    "bool length": lambda b: b.update({"length": True}),
    "string field": lambda b: b.update({"fields": ["1"]}),
    "long past 64 bits": lambda b: b.update({"snapshot-id": 2**63}),
    "no type": lambda b: b.pop("type"),
    "int property": lambda b: b["properties"].update({"k": 1}),
    "fields not a list": lambda b: b.update({"fields": 3}),
    "unknown field": lambda b: b.update({"x": {"y": [1, 2]}}),
}


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=30),
    at=st.integers(min_value=0, max_value=29),
    edit=st.sampled_from(sorted(_EDITS)),
    tight=st.booleans(),
)
def test_open_and_from_json_agree(count: int, at: int, edit: str, tight: bool) -> None:
    blobs = [_blob(i) for i in range(count)]
    _EDITS[edit](blobs[at % count])
    payload = json.dumps({"blobs": blobs, "properties": {"created-by": "x"}}).encode()
    by_open, by_from_json = _both(payload, _TIGHT if tight else puffin.Limits())
    assert by_from_json == by_open
    assert isinstance(by_open, puffin.FileMetadata) == (edit in ("none", "unknown field"))


@pytest.mark.parametrize("text", ['{"blobs": [] ', '{"blobs": [], "blobs": []}', "[]", "{}"])
def test_malformed_json_is_refused_alike(text: str) -> None:
    by_open, by_from_json = _both(text.encode(), puffin.Limits())
    assert by_open == by_from_json
    assert by_open[0] is puffin.InvalidFooterError
