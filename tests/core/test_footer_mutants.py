"""Tests written against the mutants that survived mutation testing of the footer parser and
the metadata model (``footer/rules.py``, ``footer/streaming.py``, ``metadata.py``;
``make mutation``).

Through the public model only: :meth:`FileMetadata.from_json` (text or bytes; the exact
parser, or the streaming one when ``Limits.max_json_values`` is passed),
:meth:`FileMetadata.from_json_dict` with and without ``check_text`` (the detailed checker and
the one-pass fast path must accept and refuse exactly the same documents, with the same
error), :meth:`BlobMetadata.from_json_dict`, and the writers ``to_json`` /
``to_json_dict`` / ``to_bytes``.  Errors are pinned to their exact reason, ``field`` and
``blob_index``; written JSON to its exact text in Iceberg Java's key order.  One test
replaces the detailed checker (``rules.blob_attrs``) to hold that well-formed blobs take the
one-pass path.  Budget: well under 1 s.
"""

from __future__ import annotations

import copy
import json
import pickle
from types import MappingProxyType
from typing import Any

import pytest

from _hostile import DROP as _DROP
from _hostile import footer_blob as blob
from puffin import BlobMetadata, FileMetadata, InvalidFooterError, Limits
from puffin.footer import rules

#: Past this many JSON values the footer takes the streaming (msgspec) parser.
STREAMING = Limits(max_json_values=10)


def refused(doc: object) -> InvalidFooterError:
    """The error ``doc`` gets from the detailed checker; the fast path gives the same."""
    with pytest.raises(InvalidFooterError) as checked:
        FileMetadata.from_json_dict(doc)
    with pytest.raises(InvalidFooterError) as fast:
        FileMetadata.from_json_dict(copy.deepcopy(doc), check_text=False)
    assert (fast.value.reason, fast.value.field, fast.value.blob_index) == (
        checked.value.reason,
        checked.value.field,
        checked.value.blob_index,
    )
    return checked.value


def refused_blob(bad: dict[str, Any]) -> InvalidFooterError:
    """``bad`` as the second blob of a footer: its index is 1."""
    return refused({"blobs": [blob(), bad]})


# ---- the footer document --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "kind"),
    [
        ([], "a list"),
        (None, "null"),
        (True, "a boolean"),
        (3, "an integer"),
        (1.5, "a number with a fraction or exponent"),
        ("x", "a string"),
        ((1, 2), "tuple"),
    ],
)
def test_a_footer_that_is_not_an_object_names_the_json_type(doc: object, kind: str) -> None:
    error = refused(doc)
    assert error.reason == f"footer payload must be a JSON object, got {kind}"
    assert (error.field, error.blob_index) == (None, None)


def test_a_footer_without_blobs() -> None:
    error = refused({"properties": {}})
    assert (error.reason, error.field, error.blob_index) == (
        "footer payload has no 'blobs' field",
        "blobs",
        None,
    )


def test_blobs_that_are_not_a_list() -> None:
    error = refused({"blobs": {"0": blob()}})
    assert (error.reason, error.field, error.blob_index) == (
        "'blobs' must be a JSON list, got an object",
        "blobs",
        None,
    )


@pytest.mark.parametrize(("item", "kind"), [([], "a list"), ("b", "a string"), (None, "null")])
def test_a_blob_that_is_not_an_object_is_named_by_index(item: object, kind: str) -> None:
    error = refused({"blobs": [blob(), item]})
    assert (error.reason, error.field, error.blob_index) == (
        f"blob metadata must be a JSON object, got {kind}",
        None,
        1,
    )


def test_file_properties_are_checked_and_kept() -> None:
    error = refused({"blobs": [], "properties": {"created-by": 1}})
    assert (error.reason, error.field, error.blob_index) == (
        "'properties' value of 'created-by' must be a JSON string, got an integer",
        "properties",
        None,
    )
    error = refused({"blobs": [], "properties": ["created-by"]})
    assert error.reason == "'properties' must be a JSON object, got a list"
    meta = FileMetadata.from_json_dict({"blobs": [], "properties": {"created-by": "me"}})
    assert dict(meta.properties) == {"created-by": "me"}
    assert FileMetadata.from_json_dict({"blobs": []}).properties == {}


# ---- one blob's fields ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["type", "fields", "snapshot-id", "sequence-number", "offset", "length"]
)
def test_a_missing_required_field(name: str) -> None:
    error = refused_blob(blob(**{name: _DROP}))
    assert (error.reason, error.field, error.blob_index) == (
        f"required field {name!r} is missing",
        name,
        1,
    )


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"type": 1}, "type", "'type' must be a JSON string, got an integer"),
        ({"type": None}, "type", "'type' must be a JSON string, got null"),
        ({"fields": {"a": 1}}, "fields", "'fields' must be a JSON list of ints, got an object"),
        ({"fields": "1"}, "fields", "'fields' must be a JSON list of ints, got a string"),
        ({"fields": [1, True]}, "fields[1]", "'fields[1]' must be an int, got a boolean"),
        (
            {"fields": [1.0]},
            "fields[0]",
            "'fields[0]' must be an int, got a number with a fraction or exponent",
        ),
        (
            {"fields": [0, 1, 2**31]},
            "fields[2]",
            "'fields[2]' is out of range for an int: 2147483648",
        ),
        (
            {"fields": [-(2**31) - 1]},
            "fields[0]",
            "'fields[0]' is out of range for an int: -2147483649",
        ),
        ({"snapshot_id": "7"}, "snapshot-id", "'snapshot-id' must be a long, got a string"),
        ({"snapshot_id": False}, "snapshot-id", "'snapshot-id' must be a long, got a boolean"),
        (
            {"sequence_number": 2**63},
            "sequence-number",
            "'sequence-number' is out of range for a long: 9223372036854775808",
        ),
        (
            {"sequence_number": -(2**63) - 1},
            "sequence-number",
            "'sequence-number' is out of range for a long: -9223372036854775809",
        ),
        ({"offset": 2**63}, "offset", "'offset' is out of range for a long: 9223372036854775808"),
        (
            {"offset": -(2**63) - 1},
            "offset",
            "'offset' is out of range for a long: -9223372036854775809",
        ),
        ({"length": 2**63}, "length", "'length' is out of range for a long: 9223372036854775808"),
        (
            {"length": -(2**63) - 1},
            "length",
            "'length' is out of range for a long: -9223372036854775809",
        ),
        (
            {"snapshot_id": 2**63},
            "snapshot-id",
            "'snapshot-id' is out of range for a long: 9223372036854775808",
        ),
        (
            {"snapshot_id": -(2**63) - 1},
            "snapshot-id",
            "'snapshot-id' is out of range for a long: -9223372036854775809",
        ),
        (
            {"length": 1.0},
            "length",
            "'length' must be a long, got a number with a fraction or exponent",
        ),
        ({"offset": True}, "offset", "'offset' must be a long, got a boolean"),
        (
            {"sequence_number": None},
            "sequence-number",
            "'sequence-number' must be a long, got null",
        ),
        (
            {"compression_codec": 1},
            "compression-codec",
            "'compression-codec' must be a JSON string, got an integer",
        ),
        (
            {"compression_codec": ["zstd"]},
            "compression-codec",
            "'compression-codec' must be a JSON string, got a list",
        ),
        ({"properties": []}, "properties", "'properties' must be a JSON object, got a list"),
        (
            {"properties": {"a": "1", "b": 2}},
            "properties",
            "'properties' value of 'b' must be a JSON string, got an integer",
        ),
        (
            {"properties": {"a": None}},
            "properties",
            "'properties' value of 'a' must be a JSON string, got null",
        ),
    ],
)
def test_a_blob_field_of_the_wrong_type_or_range(
    changes: dict[str, Any], field: str, reason: str
) -> None:
    error = refused_blob(blob(**changes))
    assert (error.reason, error.field, error.blob_index) == (reason, field, 1)


def test_the_edges_of_the_integer_ranges_are_accepted() -> None:
    edges = blob(
        fields=[-(2**31), 2**31 - 1],
        snapshot_id=-(2**63),
        sequence_number=2**63 - 1,
        offset=2**63 - 1,
        length=-(2**63),
    )
    for check_text in (True, False):
        (b,) = FileMetadata.from_json_dict({"blobs": [edges]}, check_text=check_text).blobs
        assert b.fields == (-(2**31), 2**31 - 1)
        assert (b.snapshot_id, b.sequence_number, b.offset, b.length) == (
            -(2**63),
            2**63 - 1,
            2**63 - 1,
            -(2**63),
        )


#: Well-formed blobs at every edge the one-pass path tests: each long at both ends of its
#: range, field ids at both ends of theirs, no fields, a codec, properties, an unknown key.
_WELL_FORMED = [
    blob(fields=[-(2**31)], snapshot_id=-(2**63), sequence_number=-(2**63),
         offset=-(2**63), length=-(2**63)),
    blob(fields=[2**31 - 1, 0], snapshot_id=2**63 - 1, sequence_number=2**63 - 1,
         offset=2**63 - 1, length=2**63 - 1),
    blob(fields=[], compression_codec="zstd", properties={"a": "b", "c": ""}),
    blob(compression_codec=None, properties={}, unknown=[1, {"x": None}]),
]


@pytest.mark.parametrize("index", range(len(_WELL_FORMED)))
def test_the_one_pass_path_takes_every_well_formed_blob(
    index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check_text=False`` is the path statistics files with thousands of blobs take: a
    well-formed blob must not fall back to the field-by-field checker (same result, slower),
    and what it gives must be what that checker gives."""
    doc = {"blobs": [_WELL_FORMED[index]]}
    (checked,) = FileMetadata.from_json_dict(copy.deepcopy(doc)).blobs

    def no_fallback(obj: object, *, blob_index: int | None = None) -> dict[str, Any]:
        raise AssertionError(f"blob {blob_index} fell back to the detailed checker")

    monkeypatch.setattr(rules, "blob_attrs", no_fallback)
    (fast,) = FileMetadata.from_json_dict(doc, check_text=False).blobs
    assert fast == checked
    assert type(fast.fields) is tuple and isinstance(fast.properties, MappingProxyType)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"type": "t\ud800"}, "type"),
        ({"compression_codec": "zstd\udc00"}, "compression-codec"),
        ({"properties": {"k\ud800": "v"}}, "properties"),
        ({"properties": {"k": "v\udfff"}}, "properties"),
    ],
)
def test_unpaired_surrogates_are_refused_where_the_text_is_checked(
    changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidFooterError) as info:
        FileMetadata.from_json_dict({"blobs": [blob(), blob(**changes)]})
    assert (info.value.reason, info.value.field, info.value.blob_index) == (
        f"{field!r} holds an unpaired surrogate escape, not valid Unicode",
        field,
        1,
    )
    with pytest.raises(InvalidFooterError) as info:
        FileMetadata.from_json_dict({"blobs": [], "properties": {"k": "\ud800"}})
    assert (info.value.reason, info.value.field, info.value.blob_index) == (
        "'properties' holds an unpaired surrogate escape, not valid Unicode",
        "properties",
        None,
    )


@pytest.mark.parametrize("check_text", [True, False])
def test_a_parsed_blob_holds_every_field(check_text: bool) -> None:
    doc = {
        "blobs": [
            blob(compression_codec="zstd", properties={"ndv": "4", "a": "b"}, unknown={"x": [1]}),
            blob(),
        ]
    }
    meta = FileMetadata.from_json_dict(doc, check_text=check_text)
    first, second = meta.blobs
    assert first == BlobMetadata(
        type="apache-datasketches-theta-v1",
        fields=(1, 2),
        snapshot_id=7,
        sequence_number=3,
        offset=4,
        length=10,
        compression_codec="zstd",
        properties={"ndv": "4", "a": "b"},
    )
    assert type(first.fields) is tuple and list(first.properties) == ["ndv", "a"]
    assert isinstance(first.properties, MappingProxyType)
    with pytest.raises(TypeError):
        first.properties["ndv"] = "5"  # type: ignore[index]
    assert second.compression_codec is None and dict(second.properties) == {}
    assert isinstance(second.properties, MappingProxyType)


def test_a_blob_parsed_alone_names_its_index() -> None:
    with pytest.raises(InvalidFooterError) as info:
        BlobMetadata.from_json_dict(blob(offset="4"), blob_index=6)
    assert (info.value.reason, info.value.field, info.value.blob_index) == (
        "'offset' must be a long, got a string",
        "offset",
        6,
    )
    with pytest.raises(InvalidFooterError) as info:
        BlobMetadata.from_json_dict(blob(offset="4"))
    assert info.value.blob_index is None
    assert BlobMetadata.from_json_dict(blob()).fields == (1, 2)


# ---- writing: Iceberg Java's key order, absent codec and empty properties left out ----------


def test_to_json_writes_javas_keys_in_javas_order() -> None:
    meta = FileMetadata(
        blobs=(
            BlobMetadata("t", (5,), -1, -2, 4, 9, "zstd", {"b": "1", "a": "é"}),
            BlobMetadata("u", [], 1, 2, 13, 0),
        ),
        properties={"created-by": "me"},
    )
    text = (
        '{"blobs":[{"type":"t","fields":[5],"snapshot-id":-1,"sequence-number":-2,"offset":4,'
        '"length":9,"compression-codec":"zstd","properties":{"b":"1","a":"é"}},'
        '{"type":"u","fields":[],"snapshot-id":1,"sequence-number":2,"offset":13,"length":0}],'
        '"properties":{"created-by":"me"}}'
    )
    assert meta.to_json() == text
    assert meta.to_bytes() == text.encode("utf-8")
    assert meta.to_json_dict() == json.loads(text)
    assert list(meta.to_json_dict()["blobs"][0]) == list(json.loads(text)["blobs"][0])
    assert meta.blobs[1].to_json_dict() == json.loads(text)["blobs"][1]
    assert FileMetadata(blobs=()).to_json() == '{"blobs":[]}'
    assert FileMetadata.from_json(text) == meta


def test_the_model_freezes_its_inputs_and_pickles() -> None:
    props = {"k": "v"}
    b = BlobMetadata("t", [1, 2], 1, 2, 4, 5, None, props)
    meta = FileMetadata([b], props)
    props["k"] = "changed"
    assert b.fields == (1, 2) and dict(b.properties) == {"k": "v"}
    assert type(meta.blobs) is tuple and dict(meta.properties) == {"k": "v"}
    assert isinstance(meta.properties, MappingProxyType)
    assert BlobMetadata("t", (), 1, 2, 4, 5).properties == {}
    assert FileMetadata(()).properties == {}
    again = pickle.loads(pickle.dumps(meta))
    assert again == meta and again.blobs[0].properties == {"k": "v"}
    assert isinstance(again.blobs[0].properties, MappingProxyType)
    parsed = FileMetadata.from_json(meta.to_json())
    assert pickle.loads(pickle.dumps(parsed)) == meta


# ---- from_json: both parsers behind one door -------------------------------------------------


def payload(*blobs: dict[str, Any], properties: dict[str, str] | None = None) -> bytes:
    doc: dict[str, Any] = {"blobs": list(blobs)}
    if properties is not None:
        doc["properties"] = properties
    return json.dumps(doc).encode()


@pytest.mark.parametrize("limits", [None, STREAMING], ids=["exact", "streaming"])
def test_from_json_reads_text_bytes_and_buffers_alike(limits: Limits | None) -> None:
    data = payload(
        blob(properties={"k": "v"}), blob(compression_codec="lz4"), properties={"created-by": "x"}
    )
    expected = FileMetadata.from_json_dict(json.loads(data))
    for form in (data, data.decode(), bytearray(data), memoryview(data)):
        assert FileMetadata.from_json(form, limits=limits) == expected
    assert dict(FileMetadata.from_json(data, limits=limits).properties) == {"created-by": "x"}


@pytest.mark.parametrize("limits", [None, STREAMING], ids=["exact", "streaming"])
def test_from_json_places_a_fault_at_its_byte(limits: Limits | None) -> None:
    data = b'{"blobs": [] x'
    with pytest.raises(InvalidFooterError) as info:
        FileMetadata.from_json(data, limits=limits)
    assert info.value.reason.endswith("(at byte 13 of the footer payload)")
    assert info.value.reason.startswith("footer payload is not valid JSON")
    assert info.value.offset is None


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"offset": "4"}, "offset"),
        ({"fields": [True]}, "fields[0]"),
        ({"fields": 3}, "fields"),
        ({"length": 2**63}, "length"),
        ({"properties": {"k": 1}}, "properties"),
    ],
)
def test_the_streaming_parser_names_the_blob_and_field(changes: dict[str, Any], field: str) -> None:
    data = payload(blob(), blob(), blob(**changes))
    for limits in (None, STREAMING):
        with pytest.raises(InvalidFooterError) as info:
            FileMetadata.from_json(data, limits=limits)
        assert (info.value.field, info.value.blob_index) == (field, 2), limits


def test_the_streaming_parser_names_the_blob_missing_a_field() -> None:
    # msgspec reports a missing field on the blob, not on the field (the exact parser names
    # the field too): the blob index is what both give.
    data = payload(blob(), blob(), blob(type=_DROP))
    with pytest.raises(InvalidFooterError) as info:
        FileMetadata.from_json(data, limits=STREAMING)
    assert info.value.blob_index == 2 and "`type`" in info.value.reason
    assert info.value.reason.startswith("blob metadata: ")


def test_a_streamed_footer_that_is_not_an_object_says_so_once() -> None:
    """Found by mutation testing: the streaming parser's error repeated msgspec's text on
    both sides of "at" when it names no path (the payload itself is the wrong type)."""
    with pytest.raises(InvalidFooterError) as info:
        FileMetadata.from_json(b"[" + b"1," * 20 + b"1]", limits=Limits(max_json_values=10))
    assert str(info.value).count("Expected `object`") == 1, str(info.value)
