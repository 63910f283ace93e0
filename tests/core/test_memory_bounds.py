"""The worst inputs we can build stay under 256 MiB of peak memory with the default caps.

Also the footer-JSON caps (``Limits.max_json_depth``, ``Limits.max_json_values``) one by one.

Each case runs in a fresh interpreter that opens the file and reads every blob, then
reports its peak resident set (``VmHWM``, its own high-water mark: ``ru_maxrss`` would carry
pytest's peak across ``fork``/``exec``).  The interpreter with ``puffin`` imported starts at
about 20 MiB; the figures go into docs/reliability.md (shown with ``pytest -s``).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import lz4.frame
import pytest
import zstandard

import puffin
from _hostile import lz4_set_content_size, puffin_file, zstd_set_content_size
from puffin.footer.streaming import EXACT_BYTES

MiB = 1 << 20
BUDGET = 256 * MiB

_CHILD = r"""
import json, sys
import puffin

data = open(sys.argv[1], "rb").read()
try:
    with puffin.open(data) as reader:
        for blob in reader.blobs:
            reader.read_blob(blob)
    outcome = "ok"
except puffin.PuffinError as exc:
    outcome = type(exc).__name__ + ": " + str(exc)
except BaseException as exc:
    outcome = "UNEXPECTED " + type(exc).__name__ + ": " + str(exc)
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
print(json.dumps({"outcome": outcome, "peak_rss": peak}))
"""

def _peak(tmp_path: Path, data: bytes) -> dict[str, Any]:
    if not Path("/proc/self/status").exists():
        pytest.skip("reads VmHWM from /proc")
    path = tmp_path / "case.puffin"
    path.write_bytes(data)
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    print(f"\n{len(data):>10} bytes -> {result['outcome'][:90]!r}: "
          f"peak RSS {result['peak_rss'] / MiB:.1f} MiB")
    return result


def _check(result: dict[str, Any], outcome: str) -> None:
    assert result["outcome"].startswith(outcome), result
    assert result["peak_rss"] < BUDGET, result


def _blob_file(frame: bytes, codec: str) -> bytes:
    footer = {"blobs": [{"type": "hostile", "fields": [1], "snapshot-id": 1,
                         "sequence-number": 1, "offset": 4, "length": len(frame),
                         "compression-codec": codec}]}
    return puffin_file(json.dumps(footer).encode(), body=frame)


def _zeros_zstd(n: int) -> bytes:
    """``n`` zero bytes as one streamed zstd frame: not single-segment, a window descriptor."""
    obj = zstandard.ZstdCompressor(level=1, write_content_size=True,
                                   write_checksum=True).compressobj(size=n)
    chunk = bytes(4 * MiB)
    frame = b"".join([obj.compress(chunk) for _ in range(n // len(chunk))] + [obj.flush()])
    assert not frame[4] & 0x20  # Single_Segment_flag clear
    return frame


def _zeros_lz4(n: int) -> bytes:
    comp = lz4.frame.LZ4FrameCompressor(content_checksum=True)
    chunk = bytes(4 * MiB)
    return b"".join([comp.begin(source_size=n)]
                    + [comp.compress(chunk) for _ in range(n // len(chunk))] + [comp.flush()])


@pytest.fixture(scope="module")
def gib_of_zeros_zstd() -> bytes:
    return _zeros_zstd(1 << 30)  # about 32 KB


DEFAULT_CAP = puffin.Limits().max_decompressed_size


@pytest.mark.parametrize("declared", [20 * MiB, DEFAULT_CAP], ids=["20MiB", "cap"])
def test_zstd_frame_that_understates_its_content(
    tmp_path: Path, gib_of_zeros_zstd: bytes, declared: int
) -> None:
    # The case: a 32 KB frame of 1 GiB declaring 20 MiB once reached 1 GiB of RSS.
    frame = zstd_set_content_size(gib_of_zeros_zstd, declared)
    _check(_peak(tmp_path, _blob_file(frame, "zstd")), "CodecError")


def test_zstd_frame_that_overstates_its_content(tmp_path: Path) -> None:
    frame = zstd_set_content_size(_zeros_zstd(32 * MiB), DEFAULT_CAP)
    _check(_peak(tmp_path, _blob_file(frame, "zstd")), "CodecError")


def test_zstd_frame_exactly_at_the_cap_decodes(tmp_path: Path) -> None:
    # The most a frame may honestly hold under the default caps.
    _check(_peak(tmp_path, _blob_file(_zeros_zstd(DEFAULT_CAP), "zstd")), "ok")


def test_zstd_frame_over_the_cap(tmp_path: Path, gib_of_zeros_zstd: bytes) -> None:
    _check(_peak(tmp_path, _blob_file(gib_of_zeros_zstd, "zstd")), "LimitExceededError")


def test_lz4_frame_that_understates_its_content(tmp_path: Path) -> None:
    frame = lz4_set_content_size(_zeros_lz4(256 * MiB), DEFAULT_CAP)
    _check(_peak(tmp_path, _blob_file(frame, "lz4")), "CodecError")


def test_lz4_frame_exactly_at_the_cap_decodes(tmp_path: Path) -> None:
    _check(_peak(tmp_path, _blob_file(_zeros_lz4(DEFAULT_CAP), "lz4")), "ok")


def _lz4(data: bytes) -> bytes:
    return bytes(lz4.frame.compress(data, store_size=True, content_checksum=True))


def _compressed_footer(payload: bytes) -> bytes:
    return puffin_file(bytes(lz4.frame.compress(payload, store_size=True)), flags=1)


def test_footer_of_many_empty_arrays(tmp_path: Path) -> None:
    # The case: a 276 KB file whose footer is nested empty arrays in an ignored
    # field once took 1.7 GB.  Here: 64 MiB of them (22 M values), about 260 KB compressed:
    # over the values cap, so the large-footer path skips them without building any.
    size = 64 * MiB
    head, tail = b'{"blobs":[],"x":[', b"[]]}"
    payload = head + b"[]," * ((size - len(head) - len(tail)) // 3) + tail
    _check(_peak(tmp_path, _compressed_footer(payload)), "ok")


def test_footer_of_nested_empty_arrays(tmp_path: Path) -> None:
    payload = b'{"blobs":[],"x":[' + b"[[[]]]," * 2_000_000 + b"[]]}"
    _check(_peak(tmp_path, _compressed_footer(payload)), "ok")
    broken = b'{"blobs":[],"x":' + b"[[[]]]," * 2_000_000 + b"[]}"  # not JSON after "x"
    _check(_peak(tmp_path, _compressed_footer(broken)), "InvalidFooterError")


def test_footer_nested_to_the_cap_of_bytes(tmp_path: Path) -> None:
    n = 8 * MiB - 10
    payload = b'{"blobs":[],"x":' + b"[" * n + b"]" * n + b"}"
    _check(_peak(tmp_path, _compressed_footer(payload)), "InvalidFooterError")


def test_largest_footer_the_exact_parser_builds(tmp_path: Path) -> None:
    # Just under the value cap, in the costliest shape per value (an object holding an
    # empty list), plus one string filling the rest of the 16 MiB the exact parser takes.
    limits = puffin.Limits()
    items = b",".join([b'{"k":[]}'] * ((limits.max_json_values - 10) // 2))
    head = b'{"blobs":[],"y":"'
    middle = b'","x":['
    filler = b"s" * (EXACT_BYTES - len(head) - len(middle) - len(items) - 2)
    payload = head + filler + middle + items + b"]}"
    assert len(payload) == EXACT_BYTES
    _check(_peak(tmp_path, _compressed_footer(payload)), "ok")


def test_blob_and_footer_claims_past_the_file(tmp_path: Path) -> None:
    footer = {"blobs": [{"type": "t", "fields": [1], "snapshot-id": 1, "sequence-number": 1,
                         "offset": 4, "length": 0x7FFFFFFF}]}
    _check(_peak(tmp_path, puffin_file(json.dumps(footer).encode())), "InvalidFileError")
    _check(_peak(tmp_path, puffin_file(b"{}", payload_size=0x7FFFFFFF)), "InvalidFileError")


# --- footer JSON complexity ------------------------------------------------------------------


def _unknown_field_file(value: bytes, *, compressed: bool = False) -> bytes:
    payload = b'{"blobs":[],"x":' + value + b"}"
    if compressed:
        return puffin_file(_lz4(payload), flags=1)
    return puffin_file(payload)


@pytest.mark.parametrize("depth", [3, 5, 64])
def test_max_json_depth_boundary(depth: int) -> None:
    # The root object is level 1, so an unknown field nested `depth - 1` deep reaches `depth`
    # (and "blobs" reaches 2).
    value = b"[" * (depth - 1) + b"]" * (depth - 1)
    data = _unknown_field_file(value)
    with puffin.open(data, limits=puffin.Limits(max_json_depth=depth)) as r:
        assert r.blobs == []
    with pytest.raises(puffin.InvalidFooterError, match=r"Limits\.max_json_depth") as info:
        puffin.open(data, limits=puffin.Limits(max_json_depth=depth - 1))
    # The first bracket past the cap, as a file offset: magic, footer magic, then the payload.
    bracket = len(b'{"blobs":[],"x":') + depth - 2
    assert info.value.offset == 8 + bracket


def test_max_json_depth_ignores_brackets_in_strings() -> None:
    data = _unknown_field_file(b'"' + b"[" * 200 + b'\\"' + b"{" * 200 + b'"')
    with puffin.open(data) as r:
        assert r.blobs == []


@pytest.mark.parametrize("values", [3, 100, 1000])
def test_max_json_values_boundary(values: int) -> None:
    # Root object, blobs list, then `values - 2` ints in the unknown field's list: at the
    # cap the exact parser builds them; one over, the large-footer path skips them.
    data = _unknown_field_file(b"[" + b",".join([b"7"] * (values - 3)) + b"]")
    with puffin.open(data, limits=puffin.Limits(max_json_values=values)) as r:
        assert r.blobs == []
    with puffin.open(data, limits=puffin.Limits(max_json_values=values - 1)) as r:
        assert r.blobs == []


@pytest.mark.parametrize("name", ["fields", "properties"])
def test_max_json_values_bounds_what_a_blob_keeps(name: int) -> None:
    # What a blob keeps is built, so its lists and maps stay under the cap on either path.
    value = b"[" + b",".join([b"7"] * 50) + b"]"
    if name == "properties":
        value = b"{" + b",".join(b'"k%d":"v"' % i for i in range(50)) + b"}"
    blob = {"type": "t", "fields": [1], "snapshot-id": 1, "sequence-number": 1, "offset": 4,
            "length": 0}
    text = json.dumps({"blobs": [blob]}).encode()
    payload = text.replace(b'"fields": [1]' if name == "fields" else b'"length": 0',
                           b'"fields": ' + value if name == "fields"
                           else b'"length": 0, "properties": ' + value)
    for limits in (puffin.Limits(max_json_values=20), puffin.Limits(max_json_values=40)):
        with pytest.raises(puffin.LimitExceededError, match=r"Limits\.max_json_values") as info:
            puffin.open(puffin_file(payload), limits=limits)
        assert info.value.blob_index == 0


def test_json_cap_in_a_compressed_footer_names_the_decompressed_byte() -> None:
    data = _unknown_field_file(b"[" * 1000 + b"]" * 1000, compressed=True)
    with pytest.raises(puffin.InvalidFooterError) as info:
        puffin.open(data)
    message = str(info.value)
    assert "Limits.max_json_depth" in message
    assert "at byte 1015 of the decompressed footer payload" in message  # 16 + 999
    assert info.value.offset == 8  # where the compressed payload starts, in the file


def test_json_caps_in_from_json() -> None:
    payload = b'{"blobs":[],"x":[[[]]]}'
    with pytest.raises(puffin.InvalidFooterError, match="at byte 18 of the footer payload"):
        puffin.FileMetadata.from_json(payload, limits=puffin.Limits(max_json_depth=3))
    assert puffin.FileMetadata.from_json(payload).blobs == ()


def test_ten_thousand_blob_footer_passes_the_default_caps_with_margin() -> None:
    out = io.BytesIO()
    with puffin.create(out) as w:
        for i in range(10_000):
            w.add_blob(b"x", type="apache-datasketches-theta-v1", fields=[i, i + 1],
                       snapshot_id=1 << 40, sequence_number=7, properties={"ndv": str(i)})
    data = out.getvalue()
    with puffin.open(data) as r:
        payload = r.metadata.to_bytes()
        assert len(r.blobs) == 10_000
    defaults = puffin.Limits()
    assert len(payload) * 8 < EXACT_BYTES < defaults.max_footer_size
    # 11 values a blob: object, type, fields and its two ints, four longs, properties, ndv.
    tight = puffin.Limits(max_json_values=2 + 11 * 10_000)
    with puffin.open(data, limits=tight) as r:  # the exact parser
        exact = r.metadata
    with puffin.open(data, limits=puffin.Limits(max_json_values=1 + 11 * 10_000)) as r:
        assert r.metadata == exact  # the large-footer path reads the same
    assert 11 * 10_000 * 9 < defaults.max_json_values


def test_json_error_positions_count_bytes_not_characters() -> None:
    # Four two-byte characters before the error: the file offset counts their bytes.
    payload = '{"blobs":[],"x":"éééé",}'.encode()
    with pytest.raises(puffin.InvalidFooterError) as info:
        puffin.open(puffin_file(payload))
    offset = info.value.offset
    assert offset is not None and payload[offset - 8 :].startswith(b"}")
    assert "at byte 27 of the footer payload" in str(info.value)
