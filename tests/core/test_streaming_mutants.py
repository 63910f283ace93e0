"""Tests written against the mutants that survived mutation testing of the streaming footer
parser (``footer/streaming.py``; ``make mutation``, docs/testing.md).

A footer takes the streaming (msgspec) parser when its JSON holds more values than
``Limits.max_json_values`` (or is past 16 MiB): here through
:meth:`FileMetadata.from_json` with a small ``max_json_values``, and through
:func:`parse_streaming` itself for what only a payload past 16 MiB reaches (nesting that
no cap measured first).  Results are compared with the exact parser on the same document;
errors are pinned to their exact reason, ``field`` and ``blob_index``.  The shortcuts that
spare a well-formed footer the exact re-reads (the key count, short lists and maps decoded
directly) are held to being taken, through the module's own functions.  Budget: well under
1 s.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from _hostile import footer_blob as blob
from puffin import FileMetadata, InvalidFooterError, LimitExceededError, Limits
from puffin.footer import PayloadError, streaming
from puffin.footer.streaming import parse_streaming, recursion_room

#: Past this many JSON values a footer takes the streaming parser; a blob of ``blob()``
#: holds 10 (its object, ``fields``, two ints and six scalars) and fits it.
STREAMING = Limits(max_json_values=20)


def payload(*blobs: dict[str, Any], **top: Any) -> bytes:
    return json.dumps({"blobs": list(blobs), **top}).encode()


def streamed(data: bytes, limits: Limits = STREAMING) -> FileMetadata:
    assert 1 + data.count(b"[") + data.count(b"{") + data.count(b",") > limits.max_json_values
    return FileMetadata.from_json(data, limits=limits)


def refused(data: bytes, limits: Limits = STREAMING) -> InvalidFooterError:
    with pytest.raises(InvalidFooterError) as info:
        streamed(data, limits)
    return info.value


# --- what a streamed footer holds --------------------------------------------------------


def test_a_streamed_footer_equals_the_exact_parse() -> None:
    data = payload(
        blob(),
        blob(compression_codec="zstd", properties={"k": "v", "n": "2"}),
        blob(fields=[], properties={}),
        blob(properties={'q"uote': "back\\slash", "é": "\u2603"}),
        properties={"created-by": "puffin", "x": "y"},
    )
    exact = FileMetadata.from_json(data)
    got = streamed(data)
    assert got == exact
    assert got.blobs[1].compression_codec == "zstd"
    assert got.blobs[0].compression_codec is None
    assert dict(got.blobs[1].properties) == {"k": "v", "n": "2"}
    assert dict(got.blobs[3].properties) == {'q"uote': "back\\slash", "é": "\u2603"}
    assert dict(got.properties) == {"created-by": "puffin", "x": "y"}


def test_a_long_fields_list_within_the_caps_is_read_whole() -> None:
    # Longer (in bytes) than max_json_values: checked against the caps, then read.
    fields = list(range(100, 160))
    data = payload(blob(), blob(fields=fields), blob())
    limits = Limits(max_json_values=80)
    assert len(json.dumps(fields)) > limits.max_json_values
    assert streamed(data, limits).blobs[1].fields == tuple(fields)


def test_a_fields_list_of_exactly_the_values_cap_is_read() -> None:
    # The list and its 29 ints are 30 values: within max_json_values=30, not past it.
    fields = list(range(29))
    data = payload(blob(), blob(fields=fields), blob())
    assert streamed(data, Limits(max_json_values=30)).blobs[1].fields == tuple(fields)


def test_a_field_id_too_long_for_python_names_the_blob() -> None:
    data = payload(blob(), blob(), blob(fields=[1]))
    data = data.replace(b'"fields": [1]', b'"fields": [1' + b"0" * 5000 + b"]")
    error = refused(data)
    assert error.reason.startswith(
        "fields: Exceeds the limit (4300 digits) for integer string conversion"
    )
    assert error.blob_index == 2


def test_long_properties_within_the_caps_are_read_whole() -> None:
    properties = {f"key-{i}": f"value-{i}" for i in range(30)}
    data = payload(blob(), blob(properties=properties), properties=properties)
    got = streamed(data, Limits(max_json_values=70))
    assert dict(got.blobs[1].properties) == properties
    assert dict(got.properties) == properties


def test_blobs_past_the_first_chunk_are_read_and_placed() -> None:
    # The blobs go through the rules 8,192 at a time; an error names its index in the file.
    blobs = [blob(snapshot_id=i) for i in range(8200)]
    got = streamed(payload(*blobs), Limits(max_json_values=1000))
    assert [b.snapshot_id for b in got.blobs] == list(range(8200))
    blobs[8195] = blob(snapshot_id=1, fields=[1.5])
    error = refused(payload(*blobs), Limits(max_json_values=1000))
    assert (error.blob_index, error.field) == (8195, "fields[0]")


# --- errors: their reason, blob and field ------------------------------------------------


def test_a_payload_that_is_not_an_object_is_named_once() -> None:
    error = refused(b"[" + b"1," * 30 + b"1]")
    assert error.reason == "footer payload: Expected `object`, got `array`"
    assert (error.blob_index, error.field) == (None, None)


def test_a_wrong_type_outside_the_blobs_names_its_path() -> None:
    error = refused(json.dumps({"blobs": 3, "x": [1] * 30}).encode())
    assert error.reason == "footer payload: Expected `array`, got `int` at `$.blobs`"
    assert (error.blob_index, error.field) == (None, None)


def test_a_wrong_type_in_a_blob_names_the_blob_and_field() -> None:
    error = refused(payload(blob(), blob(), blob(offset="4")))
    assert error.reason == "blob metadata: Expected `int`, got `str`"
    assert (error.blob_index, error.field) == (2, "offset")
    error = refused(payload(blob(), blob(), blob(type=None)))
    assert error.reason == "blob metadata: Expected `str`, got `null`"
    assert (error.blob_index, error.field) == (2, "type")


def test_a_missing_field_names_the_blob_only() -> None:
    data = payload(blob(), blob(), blob())
    data = data[::-1].replace(b' ,4 :"tesffo"', b"", 1)[::-1]  # the last blob's offset
    assert data.count(b'"offset"') == 2
    error = refused(data)
    assert error.reason == "blob metadata: Object missing required field `offset`"
    assert (error.blob_index, error.field) == (2, None)


def _utf8_refusal(data: bytes) -> None:
    """Refused as the exact parser refuses it: the first bad byte, placed in the payload."""
    error, at = refused(data), data.index(b"\xff")
    assert error.reason == (
        f"footer payload is not valid UTF-8: invalid start byte (at byte {at} of the footer "
        "payload)"
    )


def test_invalid_utf8_in_a_blob_string_is_placed_in_the_payload() -> None:
    data = payload(blob(), blob(), blob(type="t-9"))
    _utf8_refusal(data.replace(b'"t-9"', b'"t\xff"'))


def test_invalid_utf8_in_long_blob_properties_is_placed_in_the_payload() -> None:
    data = payload(blob(), blob(), blob(properties={"k": "v" * 30, "m": "Q"}))
    _utf8_refusal(data.replace(b'"Q"', b'"\xff"'))


def test_invalid_utf8_in_short_properties_is_refused_not_a_crash() -> None:
    # A map short enough for msgspec's fast path (it once escaped as UnicodeDecodeError).
    data = payload(blob(), blob(), blob(properties={"m": "Q"}), properties={"a": "b"})
    _utf8_refusal(data.replace(b'"Q"', b'"\xff"'))
    _utf8_refusal(data.replace(b'"b"', b'"\xff"'))


def test_invalid_utf8_in_an_unknown_field_is_refused() -> None:
    # msgspec skips an unknown field without reading its strings; the exact parser refuses.
    data = payload(blob(), blob(), blob(extra=["Q", {"z": 1}]), other="Q")
    first, last = data.index(b'"Q"'), data.rindex(b'"Q"')  # in the blob, at the top level
    for at in (first, last):
        _utf8_refusal(data[:at] + b'"\xff"' + data[at + 3 :])


def test_a_character_split_across_the_decode_chunks_is_valid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import puffin.footer.streaming as streaming

    data = payload(blob(), blob(), blob(properties={"name": "\u00e9t\u00e9 \u2603" * 5}))
    data = json.dumps(json.loads(data), ensure_ascii=False).encode()
    for chunk in (1, 2, 3, 7):  # every split of the two- and three-byte characters
        monkeypatch.setattr(streaming, "_UTF8_CHUNK", chunk)
        assert streamed(data).blobs[2].properties["name"] == "\u00e9t\u00e9 \u2603" * 5
        bad = data.replace("\u2603".encode(), b"\xe2\x98\xff", 1)  # a broken third byte
        at = bad.index(b"\xe2\x98\xff")
        assert refused(bad).reason.endswith(f"(at byte {at} of the footer payload)")


def test_a_character_cut_off_by_the_end_of_the_payload_is_invalid_utf8(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first byte of a two-byte character, last: only the decoder's final chunk says so.
    import puffin.footer.streaming as streaming

    data = payload(blob(), blob(), blob()) + b"\xc3"
    reason = (
        "footer payload is not valid UTF-8: unexpected end of data "
        f"(at byte {len(data) - 1} of the footer payload)"
    )
    assert refused(data).reason == reason
    for chunk in (len(data), len(data) // 2 + 1, 1):  # the last chunk ends the payload
        monkeypatch.setattr(streaming, "_UTF8_CHUNK", chunk)
        assert refused(data).reason == reason, chunk


def test_a_bad_first_byte_is_invalid_utf8() -> None:
    _utf8_refusal(b"\xff" + payload(blob(), blob(), blob()))


def test_a_truncated_payload_says_so() -> None:
    data = payload(blob(), blob(), blob())[:-5]
    error = refused(data)
    assert error.reason == (
        "footer payload is not valid JSON: Input data was truncated "
        f"(at byte {len(data)} of the footer payload)"
    )


def test_malformed_json_is_placed_at_its_byte() -> None:
    data = payload(blob(), blob(), blob())
    error = refused(data + b" x ")
    # msgspec's byte: just past the first trailing character.
    assert error.reason == (
        "footer payload is not valid JSON: JSON is malformed: trailing characters "
        f"(at byte {len(data) + 2} of the footer payload)"
    )


@pytest.mark.parametrize("space", ["", " "])
def test_a_blob_that_repeats_a_key_is_refused(space: str) -> None:
    data = payload(blob(), blob(), blob(), blob())
    last = data.rindex(b'"length": 10')
    data = data[:last] + f'"offset"{space}: 9, '.encode() + data[last:]
    error = refused(data)
    assert error.reason == "duplicate key 'offset' in a JSON object"
    assert (error.blob_index, error.field) == (3, "offset")


def test_a_blob_too_large_to_search_for_a_repeat_is_refused_not_guessed() -> None:
    # The blob alone holds more values than the cap (an unknown field's list) and names
    # "offset" twice: the exact re-read that would find the repeat cannot run.
    big = blob(extra=list(range(30)))
    data = payload(blob(), big)
    last = data.rindex(b'"length": 10')
    data = data[:last] + b'"offset": 9, ' + data[last:]
    with pytest.raises(LimitExceededError) as info:
        streamed(data)
    assert info.value.blob_index == 1
    assert "max_json_values" in str(info.value)


def test_key_names_in_properties_and_strings_are_not_repeats() -> None:
    # "offset": and "type": more often than there are blobs, none of them a repeat.
    tricky = {"offset": "type", "type": '"offset": 1', "x": '\\"length":'}
    data = payload(blob(properties=tricky), blob(properties=tricky), properties=tricky)
    got = streamed(data, Limits(max_json_values=25))
    assert got == FileMetadata.from_json(data)
    assert dict(got.blobs[1].properties) == tricky


def test_a_repeated_property_key_is_refused_with_its_blob() -> None:
    data = payload(blob(), blob(properties={"a": "1", "b": "2"}), blob())
    data = data.replace(b'"b": "2"', b'"a": "2"')
    error = refused(data)
    assert error.reason.startswith("duplicate key 'a' in a JSON object")
    assert (error.blob_index, error.field) == (1, "a")


def test_a_repeated_footer_property_key_is_refused() -> None:
    data = payload(blob(), blob(), properties={"a": "1", "b": "2"})
    data = data.replace(b'"b": "2"', b'"a": "2"')
    error = refused(data)
    assert error.reason.startswith("duplicate key 'a' in a JSON object")
    assert (error.blob_index, error.field) == (None, "a")


def test_a_property_that_is_not_a_string_names_the_blob() -> None:
    error = refused(payload(blob(), blob(), blob(properties={"a": 1, "b": "c"})))
    assert error.reason == "'properties' value of 'a' must be a JSON string, got an integer"
    assert (error.blob_index, error.field) == (2, "properties")


def test_a_field_that_is_not_an_int_names_the_blob() -> None:
    error = refused(payload(blob(), blob(), blob(fields=[1.5])))
    assert error.reason == "'fields[0]' must be an int, got a number with a fraction or exponent"
    assert (error.blob_index, error.field) == (2, "fields[0]")


@pytest.mark.parametrize("where", ["fields", "properties", "footer properties"])
def test_a_list_or_map_past_the_values_cap_names_where(where: str) -> None:
    many = list(range(40))
    if where == "fields":
        data = payload(blob(), blob(fields=many), blob())
    elif where == "properties":
        data = payload(blob(), blob(properties={str(i): "v" for i in many}), blob())
    else:
        data = payload(blob(), blob(), properties={str(i): "v" for i in many})
    with pytest.raises(LimitExceededError) as info:
        streamed(data, Limits(max_json_values=30))
    error = info.value
    assert error.reason == "footer payload JSON holds more than 30 values (Limits.max_json_values)"
    expected = (None, "properties") if where == "footer properties" else (1, where)
    assert (error.blob_index, error.field) == expected


# --- nesting: the C decoder's recursion ----------------------------------------------------


def _nested(depth: int) -> bytes:
    # An unknown field of the first blob, nested ``depth`` deep: only the streaming parser
    # (for payloads past 16 MiB, which no cap measures first) recurses into it.
    unknown = b'"x": ' + b"[" * depth + b"]" * depth + b", "
    data = payload(blob(), blob())
    return data.replace(b'"type"', unknown + b'"type"', 1)


def test_nesting_within_the_depth_cap_is_read() -> None:
    limits = Limits(max_json_depth=1000)
    footer = parse_streaming(_nested(997), limits)  # the footer, blobs and blob: 1,000 levels
    assert [b["offset"] for b in footer.blobs] == [4, 4]
    assert footer.properties == {}


@pytest.mark.parametrize(("cap", "said"), [(5, 5), (1000, 1000), (1_000_000, 10_000)])
def test_nesting_past_the_depth_cap_is_refused_at_its_bracket(cap: int, said: int) -> None:
    # Scanned on the bytes before the decoder recurses: any cap (at most the ceiling) holds,
    # placed at the bracket that opens the level past it.
    data = _nested(30_000)
    with pytest.raises(PayloadError) as info:
        parse_streaming(data, Limits(max_json_depth=cap))
    error, place = info.value.args
    assert error.reason == (
        f"footer payload JSON is nested too deeply: more than {said} levels "
        "(Limits.max_json_depth)"
    )
    assert place == data.index(b"[[") + said - 3  # the footer, blobs and blob: 3 levels


def test_recursion_room_raises_the_limit_for_the_depth_and_restores_it() -> None:
    old = sys.getrecursionlimit()
    with recursion_room(5000):
        inside = sys.getrecursionlimit()
    assert sys.getrecursionlimit() == old
    assert inside >= 5000 + 64
    # Never lowered: another thread may be deep in its own calls.
    sys.setrecursionlimit(old + 50_000)
    try:
        with recursion_room(10):
            assert sys.getrecursionlimit() == old + 50_000
    finally:
        sys.setrecursionlimit(old)


def test_recursion_room_restores_the_limit_after_an_error() -> None:
    old = sys.getrecursionlimit()
    with pytest.raises(KeyError), recursion_room(20_000):
        raise KeyError("x")
    assert sys.getrecursionlimit() == old


@pytest.mark.parametrize("key", ["compression-codec", "properties"])
def test_a_repeated_optional_key_is_refused_when_other_blobs_lack_it(key: str) -> None:
    # Fewer "key": tokens than blobs, yet one blob holds two: once passed the count.
    value = '"zstd"' if key == "compression-codec" else '{"a": "b"}'
    data = payload(blob(), blob(), blob(), blob())
    last = data.rindex(b'"length": 10')
    data = data[:last] + f'"{key}": {value}, "{key}": {value}, '.encode() + data[last:]
    error = refused(data)
    assert error.reason == f"duplicate key '{key}' in a JSON object"
    assert error.blob_index == 3


# --- the fast paths: a well-formed footer never takes the exact re-reads ---------------------
# Each shortcut below gives the same result as the exact path it skips (the tests above hold
# the results); these hold that the shortcuts are taken, since a footer of thousands of blobs
# read the exact way is many times slower.


def decoded(data: bytes) -> Any:
    decoder, _ = streaming._decoder()
    return decoder.decode(data)


#: Footers in which no blob repeats a key: optional keys in some blobs only, key names
#: inside property keys and values, escaped or not, and file properties.
_NO_REPEATS = [
    payload(blob(), blob(compression_codec="zstd"), blob()),
    payload(blob(properties={"a": "b"}), blob(), blob(compression_codec="lz4")),
    payload(blob(), blob(properties={"a": "b"}), properties={"c": "d"}),
    payload(blob(properties={"v": '\\"offset": "type": 1'}), blob(compression_codec="zstd")),
    payload(blob(), properties={"x": '"properties": "compression-codec": {}'}),
    payload(blob(compression_codec="zstd"), blob(compression_codec="lz4"), blob()),
    # Property keys ending in a key name: the JSON "a\"offset": holds "offset": escaped.
    payload(blob(properties={'a"offset': "v", 'b"type': "w"}), blob()),
    payload(),
]


@pytest.mark.parametrize("index", range(len(_NO_REPEATS)))
def test_the_key_count_clears_a_footer_without_repeats(index: int) -> None:
    data = _NO_REPEATS[index]
    assert streaming._may_repeat_blob_keys(data, decoded(data)) is False


@pytest.mark.parametrize("key", streaming._BLOB_KEYS)
def test_the_key_count_flags_a_repeat_of_any_key(key: bytes) -> None:
    data = payload(blob(compression_codec="zstd", properties={"a": "b"}), blob())
    first = data.index(b'"type"')
    value = {b"type": b'"t"', b"fields": b"[]", b"compression-codec": b'"lz4"',
             b"properties": b"{}"}.get(key, b"1")
    data = data[:first] + b'"' + key + b'": ' + value + b", " + data[first:]
    # The decoder keeps the last value; the count still sees the key twice.
    assert streaming._may_repeat_blob_keys(data, decoded(data)) is True
    spaced = payload(blob(), blob()).replace(b'"offset":', b'"offset" :', 1)
    assert streaming._may_repeat_blob_keys(spaced, decoded(spaced)) is True


def test_only_a_blob_that_names_a_key_twice_is_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tricky = {"offset": "type"}  # more "offset": tokens than blobs: the count sends it on
    data = payload(blob(), blob(properties=tricky), blob(), blob(properties=tricky))
    reread: list[bytes] = []
    exact = streaming.parse_exact

    def spy(chunk: bytes, limits: Limits) -> Any:
        reread.append(chunk)
        return exact(chunk, limits)

    monkeypatch.setattr(streaming, "parse_exact", spy)
    streaming._no_repeated_blob_keys(data, decoded(data), Limits())
    assert len(reread) == 2 and all(b'"offset": "type"' in c for c in reread)


@pytest.mark.parametrize(
    "properties", [{"a": "b"}, {"k": "v", "long key": "x" * 40}, {}]
)
def test_short_lists_and_maps_are_decoded_without_the_exact_rules(
    properties: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = payload(
        blob(fields=[1, -(2**31), 2**31 - 1], properties=properties),
        blob(fields=[]),
        properties=properties,
    )
    expected = streaming.parse_exact(data, Limits())

    def exact(*args: Any) -> Any:
        raise AssertionError("a short, well-formed list or map took the exact rules")

    monkeypatch.setattr(streaming, "json_cap_violation", exact)
    monkeypatch.setattr(streaming, "parse_exact", exact)
    got = parse_streaming(data, Limits())
    assert got == expected


def test_a_map_exactly_as_long_as_the_values_cap_is_decoded_directly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fast path takes a raw map of at most max_json_values bytes (it cannot hold more
    # values than bytes): one of exactly that length is inside it.
    raw = b'{"k": "v", "a": "b"}'
    data = payload(blob(properties={"k": "v", "a": "b"}))
    assert data.count(raw) == 1

    def exact(*args: Any) -> Any:
        raise AssertionError("the map at the size edge took the exact rules")

    monkeypatch.setattr(streaming, "json_cap_violation", exact)
    monkeypatch.setattr(streaming, "parse_exact", exact)
    (got,) = parse_streaming(data, Limits(max_json_values=len(raw))).blobs
    assert dict(got["properties"]) == {"k": "v", "a": "b"}
