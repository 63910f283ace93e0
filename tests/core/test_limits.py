"""Resource caps: sizes a file declares never turn into allocations, and every cap is a keyword.

Memory is measured in a fresh subprocess: its peak resident set (``VmHWM`` from
``/proc/self/status``; ``ru_maxrss`` is no good here, because Linux carries the parent's
peak across ``fork``/``exec`` into it) and ``tracemalloc``'s peak, which also sees
allocations whose pages are never touched.  So neither pytest's own footprint nor earlier
tests blur the figure.
"""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lz4.frame
import pytest
import zstandard

import puffin
from _hostile import lz4_set_content_size, puffin_file, zstd_set_content_size

MiB = 1 << 20
GiB = 1 << 30
PEAK_RSS_BUDGET = 50 * MiB

# The child reads the case from disk before measuring, then reports its peaks as JSON.
_CHILD = r"""
import io, json, resource, sys, tracemalloc
import psutil
import puffin

path, mode, hint, limits_json, rlimit_as = sys.argv[1:6]
data = open(path, "rb").read()
limits = puffin.Limits(**json.loads(limits_json))
footer_size = None if hint == "none" else int(hint)
if int(rlimit_as):
    resource.setrlimit(resource.RLIMIT_AS, (int(rlimit_as), int(rlimit_as)))
base_rss = psutil.Process().memory_info().rss
tracemalloc.start()
stage = "open"
try:
    src = {"bytes": data, "path": path, "fileobj": io.BytesIO(data)}[mode]
    with puffin.open(src, footer_size=footer_size, limits=limits) as reader:
        stage = "read"
        for blob in reader.blobs:
            reader.read_blob(blob)
    outcome = "ok"
except puffin.PuffinError as exc:
    outcome = type(exc).__name__ + ": " + str(exc)
except BaseException as exc:
    outcome = "UNEXPECTED " + type(exc).__name__ + ": " + str(exc)
traced_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
try:
    with open("/proc/self/status") as status:
        peak_rss = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmHWM:"))
except OSError:
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({
    "outcome": outcome,
    "stage": stage,
    "peak_rss": peak_rss,
    "base_rss": base_rss,
    "traced_peak": traced_peak,
}))
"""


def _measure(
    tmp_path: Path,
    data: bytes,
    *,
    mode: str = "bytes",
    footer_size: int | None = None,
    limits: dict[str, int] | None = None,
    rlimit_as: int = 0,
) -> dict[str, Any]:
    path = tmp_path / "case.puffin"
    path.write_bytes(data)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(path),
            mode,
            "none" if footer_size is None else str(footer_size),
            json.dumps(limits or {}),
            str(rlimit_as),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _report(result: dict[str, Any]) -> None:
    # The figures docs/reliability.md quotes (shown with pytest -s).
    print(f"\n{result['outcome'][:60]!r}: peak RSS {result['peak_rss'] / MiB:.1f} MiB "
          f"(baseline {result['base_rss'] / MiB:.1f} MiB), "
          f"tracemalloc peak {result['traced_peak'] / 1024:.0f} KiB")


def _assert_rejected(result: dict[str, Any], error: type[puffin.PuffinError]) -> None:
    _report(result)
    assert result["outcome"].startswith(error.__name__ + ":"), result
    assert result["peak_rss"] < PEAK_RSS_BUDGET, result
    # Nothing close to the claimed size was even requested from the allocator (zstd's
    # incremental decoder has a 4 MiB output buffer).
    assert result["traced_peak"] < 8 * MiB, result


def _blob_file(frame: bytes, codec: str) -> bytes:
    """A one-blob Puffin file holding ``frame`` as is, footer JSON written by hand."""
    footer = {
        "blobs": [
            {
                "type": "hostile",
                "fields": [1],
                "snapshot-id": 1,
                "sequence-number": 1,
                "offset": 4,
                "length": len(frame),
                "compression-codec": codec,
            }
        ]
    }
    return puffin_file(json.dumps(footer).encode(), body=frame)


def _lz4(data: bytes) -> bytes:
    return bytes(lz4.frame.compress(data, store_size=True, content_checksum=True))


def _zstd(data: bytes) -> bytes:
    cctx = zstandard.ZstdCompressor(level=3, write_content_size=True, write_checksum=True)
    return cctx.compress(data)


def _forty_byte_file(flags: int = 0) -> bytes:
    payload = b'{"blobs":[]}        '  # 20 bytes, so the file is 40
    data = puffin_file(payload, payload_size=0x7FFFFFFF, flags=flags)
    assert len(data) == 40
    return data


# --- the acceptance cases ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["bytes", "path", "fileobj"])
@pytest.mark.parametrize("flags", [0, 1])
def test_forty_byte_file_claiming_2gib_footer(tmp_path: Path, mode: str, flags: int) -> None:
    result = _measure(tmp_path, _forty_byte_file(flags), mode=mode)
    _assert_rejected(result, puffin.InvalidFileError)
    assert "2147483647" in result["outcome"]
    assert result["stage"] == "open"


def test_forty_byte_file_rejected_even_with_caps_raised(tmp_path: Path) -> None:
    # The file size, not only the cap, bounds what the footer may claim.
    limits = {"max_footer_size": 8 * GiB}
    result = _measure(tmp_path, _forty_byte_file(), limits=limits)
    _assert_rejected(result, puffin.InvalidFileError)


def test_forty_byte_file_with_footer_size_hint(tmp_path: Path) -> None:
    # A hint that agrees with the lying payload size cannot fit the file either.
    result = _measure(tmp_path, _forty_byte_file(), footer_size=0x7FFFFFFF + 16)
    _assert_rejected(result, puffin.InvalidFileError)


SIXTY_FOUR_GIB = 64 * GiB


def _lz4_64gib_blob() -> bytes:
    return _blob_file(lz4_set_content_size(_lz4(b"tiny payload" * 10), SIXTY_FOUR_GIB), "lz4")


def _zstd_64gib_blob() -> bytes:
    return _blob_file(zstd_set_content_size(_zstd(b"tiny payload" * 10), SIXTY_FOUR_GIB), "zstd")


def _lz4_64gib_footer() -> bytes:
    frame = lz4_set_content_size(_lz4(b'{"blobs":[]}'), SIXTY_FOUR_GIB)
    return puffin_file(frame, flags=1)


@pytest.mark.parametrize(
    "build", [_lz4_64gib_blob, _zstd_64gib_blob, _lz4_64gib_footer], ids=["lz4", "zstd", "footer"]
)
@pytest.mark.parametrize("mode", ["bytes", "path", "fileobj"])
def test_frame_claiming_64gib_is_rejected(
    tmp_path: Path, build: Callable[[], bytes], mode: str
) -> None:
    result = _measure(tmp_path, build(), mode=mode)
    _assert_rejected(result, puffin.LimitExceededError)
    assert str(SIXTY_FOUR_GIB) in result["outcome"]


def test_edited_frames_claim_what_we_think() -> None:
    # The frame libraries themselves read the edited headers as 64 GiB claims.
    lz4_frame = lz4_set_content_size(_lz4(b"x" * 100), SIXTY_FOUR_GIB)
    assert lz4.frame.get_frame_info(lz4_frame)["content_size"] == SIXTY_FOUR_GIB
    zstd_frame = zstd_set_content_size(_zstd(b"x" * 100), SIXTY_FOUR_GIB)
    assert zstandard.frame_content_size(zstd_frame) == SIXTY_FOUR_GIB
    # And editing the size back to the truth gives a frame that still decodes.
    assert lz4.frame.decompress(lz4_set_content_size(lz4_frame, 100)) == b"x" * 100
    restored = zstd_set_content_size(zstd_frame, 100)
    assert zstandard.ZstdDecompressor().decompress(restored) == b"x" * 100


@pytest.mark.parametrize("build", [_lz4_64gib_blob, _zstd_64gib_blob], ids=["lz4", "zstd"])
def test_64gib_claim_with_cap_raised_stays_small(
    tmp_path: Path, build: Callable[[], bytes]
) -> None:
    # With the cap lifted the claim reaches the decoder, which must still not believe it.
    result = _measure(tmp_path, build(), limits={"max_decompressed_size": 1 << 40})
    _assert_rejected(result, puffin.CodecError)


# --- decompression stops early ----------------------------------------------------------


def _big_zero_lz4(n: int) -> bytes:
    comp = lz4.frame.LZ4FrameCompressor(content_checksum=True)
    chunk = bytes(MiB)
    parts = [comp.begin(source_size=n)]
    parts += [comp.compress(chunk) for _ in range(n // MiB)]
    parts.append(comp.flush())
    return b"".join(parts)


def _big_zero_zstd(n: int) -> bytes:
    cctx = zstandard.ZstdCompressor(level=3, write_content_size=True, write_checksum=True)
    obj = cctx.compressobj(size=n)
    chunk = bytes(MiB)
    parts = [obj.compress(chunk) for _ in range(n // MiB)]
    parts.append(obj.flush())
    return b"".join(parts)


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    """128 MiB of zeros as one LZ4 frame (~0.5 MiB) and one zstd frame (~4 KiB)."""
    n = 128 * MiB
    return {"lz4": _big_zero_lz4(n), "zstd": _big_zero_zstd(n)}


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_bomb_over_the_cap_is_refused_before_decompressing(
    tmp_path: Path, bombs: dict[str, bytes], codec: str
) -> None:
    result = _measure(
        tmp_path, _blob_file(bombs[codec], codec), limits={"max_decompressed_size": 16 * MiB}
    )
    _assert_rejected(result, puffin.LimitExceededError)


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_bomb_that_understates_its_size_stops_early(
    tmp_path: Path, bombs: dict[str, bytes], codec: str
) -> None:
    # The frame says 1 MiB but holds 128 MiB: decoding must stop near 1 MiB.
    edit = lz4_set_content_size if codec == "lz4" else zstd_set_content_size
    result = _measure(tmp_path, _blob_file(edit(bombs[codec], MiB), codec))
    _report(result)
    assert result["outcome"].startswith("CodecError:"), result
    assert result["peak_rss"] < PEAK_RSS_BUDGET, result
    assert result["traced_peak"] < 8 * MiB, result


# The largest cap a caller may set without thinking: Java's array limit.
JAVA_CAPS = {"max_decompressed_size": 0x7FFFFFFF, "max_footer_size": 0x7FFFFFFF}


def test_zstd_claim_under_the_cap_decodes_incrementally(tmp_path: Path) -> None:
    # 1 GiB claimed (under a 2 GiB cap) by a frame holding 1 KiB.
    frame = zstd_set_content_size(_zstd(b"y" * 1024), GiB)
    result = _measure(tmp_path, _blob_file(frame, "zstd"), limits=JAVA_CAPS)
    _assert_rejected(result, puffin.CodecError)


# Regression tests: lz4's decompress(max_length=n) allocates n bytes up front, so the codec
# must not pass it the declared size.  A 33-byte frame claiming 2 GiB - 1 (under the default
# cap, then 2 GiB - 1) used to allocate 2 GiB, and raise MemoryError under an address-space
# limit, until codecs.py began to decompress large frames in chunks.
@pytest.mark.parametrize("where", ["blob", "footer"])
def test_lz4_claim_under_the_cap_does_not_allocate_it(tmp_path: Path, where: str) -> None:
    if where == "blob":
        frame = lz4_set_content_size(_lz4(b"z" * 16), 0x7FFFFFFF)
        data = _blob_file(frame, "lz4")
    else:
        frame = lz4_set_content_size(_lz4(b'{"blobs":[]}'), GiB)
        data = puffin_file(frame, flags=1)
    result = _measure(tmp_path, data, limits=JAVA_CAPS)
    _assert_rejected(result, puffin.CodecError)


def test_lz4_claim_under_address_space_limit_raises_puffin_error(tmp_path: Path) -> None:
    # With 1 GiB of address space, an up-front allocation would be a MemoryError.
    frame = lz4_set_content_size(_lz4(b"z" * 16), 0x7FFFFFFF)
    result = _measure(tmp_path, _blob_file(frame, "lz4"), limits=JAVA_CAPS, rlimit_as=GiB)
    assert result["outcome"].startswith("CodecError:"), result


# --- every cap is a keyword ----------------------------------------------------------------


def _file(blobs: list[tuple[bytes, str | None]], *, compress_footer: bool = False) -> bytes:
    out = io.BytesIO()
    with puffin.create(out, created_by="limits test", compress_footer=compress_footer) as w:
        for data, codec in blobs:
            w.add_blob(data, type="t", fields=[1], codec=codec)
    return out.getvalue()


def _footer_payload_size(data: bytes) -> int:
    return int(struct.unpack_from("<i", data, len(data) - 12)[0])


@pytest.mark.parametrize("hint", [False, True])
def test_max_footer_size(hint: bool) -> None:
    data = _file([(b"a" * 10, None)] * 3)
    payload = _footer_payload_size(data)
    footer_size = payload + 16 if hint else None
    with pytest.raises(puffin.LimitExceededError, match="max_footer_size"):
        puffin.open(data, footer_size=footer_size,
                    limits=puffin.Limits(max_footer_size=payload - 1))
    with puffin.open(data, footer_size=footer_size,
                     limits=puffin.Limits(max_footer_size=payload)) as r:
        assert len(r.blobs) == 3


def test_max_footer_size_bounds_the_decompressed_footer() -> None:
    data = _file([(b"a", None)] * 50, compress_footer=True)
    stored = _footer_payload_size(data)
    with puffin.open(data) as r:
        json_size = len(r.metadata.to_bytes())
    assert stored < json_size  # the footer really is compressed
    with pytest.raises(puffin.LimitExceededError, match=str(json_size)):
        puffin.open(data, limits=puffin.Limits(max_footer_size=json_size - 1))
    with puffin.open(data, limits=puffin.Limits(max_footer_size=json_size)) as r:
        assert len(r.blobs) == 50


@pytest.mark.parametrize("codec", [None, "lz4", "zstd"])
def test_max_blob_size(codec: str | None) -> None:
    data = _file([(b"b" * 1000, codec)])
    with puffin.open(data) as r:
        stored = r.blobs[0].length
    with pytest.raises(puffin.LimitExceededError, match="max_blob_size") as info:
        puffin.open(data, limits=puffin.Limits(max_blob_size=stored - 1))
    assert info.value.blob_index == 0
    with puffin.open(data, limits=puffin.Limits(max_blob_size=stored)) as r:
        assert r.read_blob(0) == b"b" * 1000


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
@pytest.mark.parametrize("size", [1000, 20 * MiB])  # 20 MiB takes zstd's incremental path
def test_max_decompressed_size(codec: str, size: int) -> None:
    payload = (bytes(range(256)) * (size // 256 + 1))[:size]
    data = _file([(payload, codec)])
    with puffin.open(data, limits=puffin.Limits(max_decompressed_size=size - 1)) as r:
        with pytest.raises(puffin.LimitExceededError, match=str(size)) as info:
            r.read_blob(0)
        assert info.value.blob_index == 0
        assert len(r.read_raw(0)) == r.blobs[0].length  # the stored bytes stay readable
    with puffin.open(data, limits=puffin.Limits(max_decompressed_size=size)) as r:
        assert r.read_blob(0) == payload


def test_default_limits_are_documented_values() -> None:
    limits = puffin.Limits()
    assert limits.max_footer_size == 256 * MiB
    assert limits.max_blob_size == 2**31 - 1
    assert limits.max_decompressed_size == 64 * MiB
    assert limits.tail_read_size == 64 * 1024
    assert limits.max_json_depth == 1000
    assert limits.max_json_values == 1_000_000


class _CountingFile(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads = 0

    def read(self, size: int | None = -1, /) -> bytes:
        self.reads += 1
        return super().read(size)


def test_tail_read_size() -> None:
    data = _file([(b"c", None)] * 200)  # a footer of about 15 KiB
    footer = _footer_payload_size(data) + 16
    # A tail read covering the whole file also holds the leading magic; otherwise the magic
    # costs a read, and a footer longer than the tail one more.
    cases = [(64 * 1024, 1), (len(data), 1), (footer, 2), (footer - 1, 3), (16, 3)]
    for tail, reads in cases:
        f = _CountingFile(data)
        with puffin.open(f, limits=puffin.Limits(tail_read_size=tail)) as r:
            assert len(r.blobs) == 200
        assert f.reads == reads, (tail, f.reads)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_footer_size": -1},
        {"max_blob_size": True},
        {"max_decompressed_size": 1.5},
        {"tail_read_size": 8},
        {"max_json_depth": -1},
        {"max_json_values": None},
    ],
)
def test_limits_reject_nonsense(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        puffin.Limits(**kwargs)


def test_zero_caps_refuse_everything_nonempty() -> None:
    zero = puffin.Limits(max_footer_size=0, max_blob_size=0, max_decompressed_size=0)
    with pytest.raises(puffin.LimitExceededError):
        puffin.open(_file([]), limits=zero)
    empty = puffin_file(b"")  # an empty footer payload is not JSON, but it is within the cap
    with pytest.raises(puffin.InvalidFooterError):
        puffin.open(empty, limits=zero)

