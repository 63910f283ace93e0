"""Default caps that accept every footer Iceberg Java reads, and refuse hostile ones cheaply.

Issue 23: with the old defaults (16 MiB footers, 64 levels, 1,000,000 JSON values) these
valid files were refused, though Java reads them: a blob field nested 100 deep, a footer of
200,000 deletion-vector blobs, an LZ4 footer of exactly 64 MiB. Each is read here, and its
hostile variant is refused; the memory cases run in a fresh interpreter that reports its
peak RSS (tests/core/test_memory_bounds.py), against the same 256 MiB budget.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import lz4.frame
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import puffin
from _hostile import puffin_file
from puffin.footer import caps
from tests.core.test_memory_bounds import _check, _peak

MiB = 1 << 20


def _dv_blob(i: int) -> dict[str, object]:
    return {
        "type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1,
        "sequence-number": -1, "offset": 4, "length": 0,
        "properties": {"referenced-data-file": f"s3://bucket/db/t/data/{i:08d}.parquet",
                       "cardinality": str(i % 1000)},
    }


def _lz4_footer(payload: bytes) -> bytes:
    return puffin_file(bytes(lz4.frame.compress(payload, store_size=True)), flags=1)


# --- nesting ---------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [100, 999])
def test_an_unknown_blob_field_nested_deep_is_read(depth: int) -> None:
    """Jackson allows 1,000 levels; the blob object is level 3, so its field may nest 997."""
    nested = min(depth, 997)
    blob = json.dumps(_dv_blob(1)).encode()[:-1] + b',"x":' + b"[" * nested + b"]" * nested
    payload = b'{"blobs":[' + blob + b"}]}"
    with puffin.open(puffin_file(payload)) as reader:
        assert reader.blobs[0].properties["cardinality"] == "1"


def test_nesting_past_javas_limit_is_refused_where_it_happens() -> None:
    payload = b'{"blobs":[],"x":' + b"[" * 1000 + b"]" * 1000 + b"}"
    with pytest.raises(puffin.InvalidFooterError, match=r"Limits\.max_json_depth") as info:
        puffin.open(puffin_file(payload))
    assert info.value.offset == 8 + 16 + 999  # the 1,001st level's bracket, in the file


def test_hostile_nesting_is_refused_cheaply(tmp_path: Path) -> None:
    # 200,000 levels, and 24 M levels behind a large (skipped) field on the large path.
    deep = b'{"blobs":[],"x":' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    _check(_peak(tmp_path, puffin_file(deep)), "InvalidFooterError")
    large = (b'{"blobs":[],"y":"' + b"s" * (20 * MiB) + b'","x":' + b"[" * (12 * MiB)
             + b"]" * (12 * MiB) + b"}")
    _check(_peak(tmp_path, _lz4_footer(large)), "InvalidFooterError")


def _deepest_model(data: bytes, cap: int) -> int | None:
    """The first bracket outside strings past ``cap`` levels, byte by byte (the oracle)."""
    depth, in_string, escaped = 0, False, False
    for i, byte in enumerate(data):
        if in_string:
            escaped, in_string = (not escaped and byte == 0x5C), in_string and (
                escaped or byte != 0x22
            )
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            if depth > cap:
                return i
        elif byte in b"]}":
            depth -= 1
    return None


#: Pieces of JSON-like text: brackets, and whole strings holding brackets, escaped quotes
#: and backslashes (a backslash outside a string is not JSON: the decoder refuses it).
_PIECES = [b"[", b"]", b"{", b"}", b",", b"1", b'""', b'"]"', b'"a\\"[\\\\"', b'"\\\\"',
           b'"{\\""', b'"' + b"x" * 40 + b'"']


@settings(max_examples=300)
@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=60),
    cap=st.integers(0, 8),
    chunk=st.sampled_from([1, 2, 3, 7, 64, caps.DEPTH_CHUNK]),
)
def test_the_chunked_depth_scan_is_the_byte_by_byte_model(
    pieces: list[bytes], cap: int, chunk: int
) -> None:
    data = b"".join(pieces)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(caps, "DEPTH_CHUNK", chunk)  # strings and runs cut at every place
        assert caps.first_too_deep(data, cap) == _deepest_model(data, cap)
        assert caps.first_too_deep(bytearray(data), cap) == _deepest_model(data, cap)


@settings(max_examples=500)
@given(
    skeleton=st.lists(st.sampled_from(b"[]{}"), max_size=80).map(bytes),
    depth=st.integers(-3, 6),
    cap=st.integers(0, 12),
)
def test_the_shallow_chunk_check_never_passes_a_chunk_the_exact_count_refuses(
    skeleton: bytes, depth: int, cap: int
) -> None:
    # _shallow_end spares numpy (12 MiB of peak) where a chunk surely stays within the cap:
    # whenever it answers, the exact count finds nothing past the cap and the same end.
    import numpy as np

    shallow = caps._shallow_end(skeleton, depth, cap)
    past, end = caps._levels(skeleton, depth, cap, np.empty(len(skeleton) + 1, np.int32))
    if shallow is not None:
        assert past is None and shallow == end
    if past is None and len(skeleton) <= 16 and depth + 16 <= cap:
        assert shallow == end  # room for any 8-pass nesting: it answers


def test_a_writers_footer_is_scanned_without_numpy(tmp_path: Path) -> None:
    blob = (b'{"type":"apache-datasketches-theta-v1","fields":[1],"snapshot-id":1,'
            b'"sequence-number":1,"offset":4,"length":0,"properties":{"ndv":"1"}}')
    payload = b'{"blobs":[' + b",".join([blob] * 20_000) + b'],"properties":{}}'
    assert len(payload) > 2 * caps.DEPTH_CHUNK
    for at in range(0, len(payload), caps.DEPTH_CHUNK):
        _, skeleton = caps._outside_strings(payload[at : at + caps.DEPTH_CHUNK])
        assert caps._shallow_end(skeleton, 2, 1000) is not None
    (tmp_path / "payload.json").write_bytes(payload)
    code = (
        "import sys; from puffin.footer import caps; "
        "assert caps.first_too_deep(open(sys.argv[1], 'rb').read(), 1000) is None; "
        "print('numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "payload.json")],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _json(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    # Strings hold what the byte-level checks must not count: brackets, quotes, backslashes.
    text = st.text(alphabet='ab[]{}",:\\ ', max_size=6)
    leaves = st.none() | st.booleans() | st.integers(-5, 500) | text
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=3),
        max_leaves=max_leaves,
    )


def _depth_and_values(doc: Any) -> tuple[int, int]:
    """Nesting (a scalar is 0) and values (containers and scalars; keys not counted)."""
    if isinstance(doc, list):
        inner = [_depth_and_values(v) for v in doc]
    elif isinstance(doc, dict):
        inner = [_depth_and_values(v) for v in doc.values()]
    else:
        return 0, 1
    return 1 + max((d for d, _ in inner), default=0), 1 + sum(v for _, v in inner)


def _checked(doc: Any, spaced: bool, limits: puffin.Limits) -> tuple[bytes, tuple[int, int], Any]:
    """``doc`` as JSON text, its depth and values, and what the byte-level caps find."""
    payload = json.dumps(doc, separators=(", ", ": ") if spaced else (",", ":")).encode()
    return payload, _depth_and_values(doc), caps.json_cap_violation(payload, limits)


@settings(max_examples=300)
@given(doc=_json(), cap=st.integers(0, 6), spaced=st.booleans())
def test_the_exact_path_depth_check_is_the_documents_depth(
    doc: Any, cap: int, spaced: bool
) -> None:
    payload, (depth, _), found = _checked(doc, spaced, puffin.Limits(max_json_depth=cap))
    if depth <= cap:
        assert found is None
    else:
        assert found is not None
        error, at = found
        assert isinstance(error, puffin.InvalidFooterError)
        assert at == _deepest_model(payload, cap) == caps.first_too_deep(payload, cap)
        assert f"more than {cap} levels" in str(error)


@settings(max_examples=300)
@given(doc=_json(), cap=st.integers(0, 40), spaced=st.booleans())
def test_the_exact_path_value_count_is_the_documents(doc: Any, cap: int, spaced: bool) -> None:
    payload, (_, values), found = _checked(doc, spaced, puffin.Limits(max_json_values=cap))
    if values <= cap:
        assert found is None
    else:
        assert found is not None
        error, at = found
        assert isinstance(error, puffin.LimitExceededError)
        assert f"more than {cap} values" in str(error)
        # At the token that makes the count too high; a string is counted at the token
        # after it (it may be a key), or at itself when it ends the document.
        assert 0 <= at < len(payload)


@pytest.mark.parametrize(
    ("payload", "cap", "at"),
    [
        (b"[1,2,3]", 1, 1),  # the first value past the cap: "1"
        (b'["a","b"]', 2, 8),  # a string is counted at the token after it (a key or not)
        (b'"abc"', 0, 0),  # a string that ends the document is counted at itself
    ],
)
def test_the_value_cap_is_placed_at_the_token_past_it(payload: bytes, cap: int, at: int) -> None:
    found = caps.json_cap_violation(payload, puffin.Limits(max_json_values=cap))
    assert found is not None
    error, place = found
    assert str(error) == (
        f"footer payload JSON holds more than {cap} values (Limits.max_json_values)"
    )
    assert place == at


@pytest.mark.parametrize(
    "payload",
    [
        b'{"blobs":[' + b",".join([b'{"a":[1,2]}'] * 50) + b"]}",  # 4 deep, in 2 rounds
        b'{"blobs":[' + b",".join([b'{"a":[1,"[[[[{{"]}'] * 50) + b"]}",  # brackets in strings
        b'{"blobs":[' + b",".join([b'{"a":[1,"\\"[[{{"]}'] * 50) + b"]}",  # and an escape
    ],
)
def test_a_shallow_footer_is_judged_on_its_bytes_without_the_token_scan(
    payload: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many brackets (more than the cap), nested only 4 deep: the byte-level bound decides,
    # at a cap of exactly its depth, and the slow token scan never runs.
    def no_scan(*args: Any) -> Any:
        raise AssertionError("the token scan ran")

    monkeypatch.setattr(caps, "_exact_scan", no_scan)
    assert caps.json_cap_violation(payload, puffin.Limits(max_json_depth=4)) is None
    limits = puffin.Limits(max_json_values=payload.count(b",") + 2 * payload.count(b"[") + 1)
    assert caps.json_cap_violation(payload, limits) is None  # values: bounded by the counts too
    monkeypatch.undo()
    found = caps.json_cap_violation(payload, puffin.Limits(max_json_depth=3))
    assert found is not None and found[1] == payload.index(b"[1")  # the 4th level, exactly


@pytest.mark.parametrize("cap", [4, 10, 999])  # the blob's properties are level 4
def test_the_large_path_enforces_any_depth_cap_where_the_exact_path_does(cap: int) -> None:
    # The same nesting in an unknown field, once small (the exact parser) and once behind a
    # 17 MiB string (the streaming parser): the same error at the same byte.
    nested = b"[" * (cap + 5) + b"]" * (cap + 5)
    blob = json.dumps(_dv_blob(1)).encode()[:-1] + b',"x":' + nested + b"}"
    small = b'{"blobs":[' + blob + b"]}"
    large = b'{"pad":"' + b"p" * (17 * MiB) + b'",' + small[1:]
    limits = puffin.Limits(max_json_depth=cap)
    for payload in (small, large):
        with pytest.raises(puffin.InvalidFooterError) as info:
            puffin.open(puffin_file(payload), limits=limits)
        # The bracket opening level cap + 1: the footer, the blobs and the blob are three.
        at = payload.index(nested) + cap - 3
        assert info.value.reason == (
            f"footer payload JSON is nested too deeply: more than {cap} levels "
            f"(Limits.max_json_depth) (at byte {at} of the footer payload)"
        )
        assert info.value.offset == 8 + at
    with puffin.open(puffin_file(large), limits=puffin.Limits(max_json_depth=cap + 8)) as reader:
        assert reader.blobs[0].properties["cardinality"] == "1"


# --- many blobs ------------------------------------------------------------------------------


def test_a_footer_of_200000_deletion_vectors_is_read(tmp_path: Path) -> None:
    payload = json.dumps({"blobs": [_dv_blob(i) for i in range(200_000)]},
                         separators=(",", ":")).encode()
    assert len(payload) > 16 * MiB
    data = puffin_file(payload)
    start = time.perf_counter()
    with puffin.open(data) as reader:
        assert len(reader.blobs) == 200_000
        assert reader.blobs[-1] == puffin.BlobMetadata(**{
            "type": "deletion-vector-v1", "fields": (2147483645,), "snapshot_id": -1,
            "sequence_number": -1, "offset": 4, "length": 0,
            "properties": _dv_blob(199_999)["properties"],  # type: ignore[arg-type]
        })
    print(f"\n200,000 blobs ({len(payload) / MiB:.0f} MiB): {time.perf_counter() - start:.1f} s")
    result = _peak(tmp_path, data)
    assert result["outcome"] == "ok", result
    print(f"peak RSS {result['peak_rss'] / MiB:.0f} MiB")


_THETA_CHILD = r"""
import json, sys
mode, path = sys.argv[1:3]
import puffin
if mode == "open":
    with puffin.open(path) as reader:
        # The footer read without numpy (12 MiB less).
        outcome = f"{len(reader.blobs)} blobs, numpy {'numpy' in sys.modules}"
elif mode == "read_theta_blobs":  # as a user calls it: the sketch module (numpy) first
    try:
        puffin.read_theta_blobs(path)
        outcome = "no error"
    except puffin.ThetaSketchError as exc:
        outcome = f"{exc.blob_index}: {exc.reason}"
elif mode == "verify_file":
    problems = puffin.verify_file(path)
    outcome = f"{len(problems)} problems"
else:  # the command line: "puffin verify", "puffin inspect", "puffin inspect --json"
    import contextlib, os
    from puffin.cli import main
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        outcome = f"exit {main([*mode.split()[1:], path])}"
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
print(json.dumps({"outcome": outcome, "peak_rss": peak}))
"""


#: Two footers of 200,000 theta blobs: the smallest a blob can be (22 MB in all), and as
#: Java writes them, one field each and an ndv property (31 MB).
_THETA_BLOBS = {
    "minimal": lambda i: {"type": "apache-datasketches-theta-v1", "fields": [1],
                          "snapshot-id": 1, "sequence-number": 1, "offset": 4, "length": 0},
    "ndv": lambda i: {"type": "apache-datasketches-theta-v1", "fields": [i % 1000 + 1],
                      "snapshot-id": 1234567890123, "sequence-number": 7, "offset": 4,
                      "length": 0, "properties": {"ndv": str(i)}},
}


@pytest.mark.parametrize("shape", sorted(_THETA_BLOBS))
@pytest.mark.parametrize(
    "mode",
    [
        "open",
        "read_theta_blobs",
        "verify_file",
        "puffin verify",
        "puffin inspect",
        "puffin inspect --json",
    ],
)
def test_a_footer_of_200000_theta_blobs_is_read_within_the_budget(
    tmp_path: Path, mode: str, shape: str
) -> None:
    # Valid footer, empty (so invalid) sketches: the reader and verify hold every blob's
    # metadata, and verify a problem for each. Measured before the fixes (minimal / ndv):
    # the large path imported numpy for its depth scan (+12 MiB on any large footer) and
    # held msgspec's structs beside every blob built (read_theta_blobs 178 / 259 MiB);
    # verify_file kept a copy of the same message per blob (199 / 259); `puffin verify`
    # also parsed the footer a second time for its blob count while holding the 200,000
    # problems (323 / 418); `puffin inspect` built its whole report before writing it
    # (327 / 412, and its --json form until issue 42's end).
    if not Path("/proc/self/status").exists():
        pytest.skip("reads VmHWM from /proc")
    blobs = [_THETA_BLOBS[shape](i) for i in range(200_000)]
    payload = json.dumps({"blobs": blobs}, separators=(",", ":")).encode()
    del blobs
    assert len(payload) > 16 * MiB  # the large-footer path
    path = tmp_path / "theta.puffin"
    path.write_bytes(puffin_file(payload))
    proc = subprocess.run([sys.executable, "-c", _THETA_CHILD, mode, str(path)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    print(f"\n200,000 theta blobs ({shape}, {len(payload) / 1e6:.0f} MB), {mode}: "
          f"peak RSS {result['peak_rss'] / MiB:.1f} MiB")
    expected = {
        "open": "200000 blobs, numpy False",
        "read_theta_blobs": "0: truncated sketch: the preamble needs 8 bytes",
        "verify_file": "200000 problems",
        "puffin verify": "exit 1",
        "puffin inspect": "exit 1",
        "puffin inspect --json": "exit 1",
    }
    assert result["outcome"].startswith(expected[mode]), result
    assert result["peak_rss"] < 256 * MiB, result


def test_the_large_path_reads_what_the_exact_parser_reads() -> None:
    blobs = [_dv_blob(i) for i in range(2000)]
    blobs[5]["compression-codec"] = "zstd"
    blobs[7]["unknown"] = {"a": [1, {"b": None}], "c": 1.5}
    payload = json.dumps({"blobs": blobs, "properties": {"created-by": "t"}, "z": [[]]}).encode()
    exact = puffin.FileMetadata.from_json(payload, limits=puffin.Limits(max_json_values=10**7))
    with puffin.open(puffin_file(payload), limits=puffin.Limits(max_json_values=100)) as r:
        assert r.metadata == exact


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda b: b.update({"snapshot-id": 1.5}), "Expected `int`, got `float`"),
        (lambda b: b.update({"offset": True}), "Expected `int`, got `bool`"),
        (lambda b: b.update({"fields": [1, "2"]}), "fields"),
        (lambda b: b.update({"snapshot-id": 2**64}), "snapshot-id"),
        (lambda b: b.pop("type"), "type"),
        (lambda b: b["properties"].update({"cardinality": 7}), "cardinality"),  # type: ignore[attr-defined]
    ],
)
def test_the_large_path_names_the_blob_and_field_at_fault(edit: object, message: str) -> None:
    blobs = [_dv_blob(i) for i in range(200)]
    edit(blobs[150])  # type: ignore[operator]
    payload = json.dumps({"blobs": blobs}).encode()
    with pytest.raises(puffin.InvalidFooterError, match=message) as info:
        puffin.open(puffin_file(payload), limits=puffin.Limits(max_json_values=100))
    assert info.value.blob_index == 150


def test_hostile_many_value_footers_stay_in_budget(tmp_path: Path) -> None:
    # 40 M tiny values in an unknown field: skipped, never built (80 MiB of JSON).
    skipped = b'{"blobs":[],"x":[' + b"0," * (40_000_000) + b"0]}"
    _check(_peak(tmp_path, _lz4_footer(skipped)), "ok")
    # A blob's field ids are kept, so built: 2 M of them are refused before being built.
    fields = (b'{"blobs":[{"type":"t","fields":[' + b"1," * 2_000_000 + b'1],"snapshot-id":1,'
              b'"sequence-number":1,"offset":4,"length":0}]}')
    _check(_peak(tmp_path, _lz4_footer(fields)), "LimitExceededError")
    # 20 M empty blob objects: refused at the first, missing its fields.
    empty = b'{"blobs":[' + b"{}," * 20_000_000 + b"{}]}"
    _check(_peak(tmp_path, _lz4_footer(empty)), "InvalidFooterError")


# --- large and compressed footers ------------------------------------------------------------


def _padded(size: int) -> bytes:
    head, tail = b'{"blobs":[],"pad":"', b'"}'
    return head + b"p" * (size - len(head) - len(tail)) + tail


def test_an_lz4_footer_of_exactly_64_mib_is_read(tmp_path: Path) -> None:
    data = _lz4_footer(_padded(64 * MiB))
    with puffin.open(data) as reader:
        assert reader.blobs == [] and reader.footer_size == len(data) - 4
    _check(_peak(tmp_path, data), "ok")


def test_footers_past_256_mib_are_refused_cheaply(tmp_path: Path) -> None:
    # An LZ4 footer declaring one byte more than the cap, and a stored one as large (the
    # file is sparse: its hole costs no disk).
    bomb = bytearray(lz4.frame.compress(b"{}", store_size=True))
    bomb[6:14] = (256 * MiB + 1).to_bytes(8, "little")
    _check(_peak(tmp_path, puffin_file(bytes(bomb), flags=1)), "LimitExceededError")
    sparse = tmp_path / "sparse.puffin"
    size = 256 * MiB + 1
    with sparse.open("wb") as f:
        f.write(b"PFA1PFA1")
        f.seek(8 + size)
        f.write(size.to_bytes(4, "little") + bytes(4) + b"PFA1")
    with pytest.raises(puffin.LimitExceededError, match="max_footer_size"):
        puffin.open(sparse)


@pytest.mark.parametrize("key", ["type", "offset", "properties"])
def test_the_large_path_refuses_a_repeated_blob_key(key: str) -> None:
    blobs = [_dv_blob(i) for i in range(300)]
    payload = json.dumps({"blobs": blobs}, separators=(",", ":")).encode()
    first = json.dumps(blobs[200], separators=(",", ":")).encode()
    value = json.dumps(blobs[200][key], separators=(",", ":")).encode()
    repeated = first[:-1] + b',"' + key.encode() + b'":' + value + b"}"
    payload = payload.replace(first, repeated)
    limits = puffin.Limits(max_json_values=100)  # the large path
    with pytest.raises(puffin.InvalidFooterError, match="duplicate key") as info:
        puffin.open(puffin_file(payload), limits=limits)
    assert info.value.blob_index == 200
    # The same name in a property or an unknown field is no repeat.
    blobs[10]["properties"]["offset"] = "x"  # type: ignore[index]
    blobs[11]["unknown"] = {"type": 1, "length": 2}
    fine = json.dumps({"blobs": blobs}, separators=(",", ":")).encode()
    with puffin.open(puffin_file(fine), limits=limits) as reader:
        assert len(reader.blobs) == 300


def test_the_largest_hostile_lz4_footer_stays_in_budget(tmp_path: Path) -> None:
    # 256 MiB (the cap) of empty arrays in an ignored field, 1 MB compressed: decompressed
    # once into a buffer of its real size (no copy into bytes), skipped without building.
    size = 256 * MiB
    head, tail = b'{"blobs":[],"x":[', b"[]]}"
    payload = head + b"[]," * ((size - len(head) - len(tail)) // 3) + tail
    payload += b" " * (size - len(payload))
    data = _lz4_footer(payload)
    del payload
    result = _peak(tmp_path, data)
    assert result["outcome"] == "ok", result
    # The footer's own 256 MiB, the interpreter (about 20 MiB) and about 26 MiB more (the
    # compressed copy, decoder chunks): measured 302 MiB. Holding the footer whole is the
    # floor of this design; docs/reliability.md says so.
    assert result["peak_rss"] < size + 64 * MiB, result
