"""Hypothesis: whatever we write, we read back the same; the footer JSON round-trips."""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import puffin
from puffin.footer.rules import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

# Any Unicode text that UTF-8 can encode (no lone surrogates), control characters included.
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
props = st.dictionaries(text, text, max_size=4)
int32 = st.integers(INT32_MIN, INT32_MAX)
int64 = st.integers(INT64_MIN, INT64_MAX)

blob_specs = st.fixed_dictionaries(
    {
        "data": st.binary(max_size=2000) | st.builds(lambda b, n: b * n, st.binary(min_size=1,
                                                     max_size=8), st.integers(1, 500)),
        "type": text.filter(bool),
        "fields": st.lists(int32, max_size=5),
        "snapshot_id": int64,
        "sequence_number": int64,
        "properties": props,
        "codec": st.sampled_from([None, "lz4", "zstd"]),
    }
)


@given(
    blobs=st.lists(blob_specs, max_size=8),
    file_props=props,
    compress_footer=st.booleans(),
)
def test_write_then_read_gives_same_metadata_and_payloads(
    blobs: list[dict[str, Any]], file_props: dict[str, str], compress_footer: bool
) -> None:
    out = io.BytesIO()
    with puffin.create(out, properties=file_props, compress_footer=compress_footer) as writer:
        written = [writer.add_blob(**spec) for spec in blobs]
    data = out.getvalue()
    assert writer.file_size == len(data)

    with puffin.open(data, footer_size=writer.footer_size, file_size=len(data)) as reader:
        assert reader.blobs == written == writer.blobs
        assert reader.properties == file_props
        assert reader.footer_compressed == compress_footer
        for spec, meta in zip(blobs, reader.blobs, strict=True):
            assert meta.type == spec["type"]
            assert meta.fields == tuple(spec["fields"])
            assert meta.compression_codec == spec["codec"]
            assert dict(meta.properties) == spec["properties"]
            assert reader.read_blob(meta) == spec["data"]
        assert [d for _, d in reader.read_all()] == [s["data"] for s in blobs]
    # Without hints too, through a file object.
    with puffin.open(io.BytesIO(data)) as reader:
        assert reader.blobs == written


@given(blobs=st.lists(blob_specs, max_size=5), file_props=props)
def test_footer_json_round_trips_through_file_metadata(
    blobs: list[dict[str, Any]], file_props: dict[str, str]
) -> None:
    metas = [
        puffin.BlobMetadata(
            type=s["type"], fields=s["fields"], snapshot_id=s["snapshot_id"],
            sequence_number=s["sequence_number"], offset=4 + i, length=len(s["data"]),
            compression_codec=s["codec"], properties=s["properties"],
        )
        for i, s in enumerate(blobs)
    ]
    meta = puffin.FileMetadata(metas, file_props)
    text_json = meta.to_json()
    assert puffin.FileMetadata.from_json(text_json) == meta
    assert puffin.FileMetadata.from_json(text_json.encode()) == meta
    # The standard library reads the same document (our writer emits plain JSON).
    assert json.loads(text_json) == meta.to_json_dict()
    # Compact, as Java writes it: nothing to strip when re-dumping with compact separators.
    assert json.dumps(json.loads(text_json), separators=(",", ":"), ensure_ascii=False).lower() \
        == text_json.lower()


# Sizes next to the boundaries the code works in: LZ4's 64 KiB blocks (lz4.frame's default),
# the codecs' 4 MiB decode chunk, and the reader's 16 MiB coalesced reads (several blobs).
_EDGES = [0, 1, (64 << 10) - 1, 64 << 10, (64 << 10) + 1, (4 << 20) - 1, 4 << 20, (4 << 20) + 1]


def _payload(seed: int, size: int, repetitive: bool) -> bytes:
    import random

    if repetitive:  # compresses well: the frame is small, the output crosses the chunks
        return (random.Random(seed).randbytes(97) * (size // 97 + 1))[:size]
    return random.Random(seed).randbytes(size)


large_blobs = st.builds(
    _payload,
    st.integers(0, 2**32),
    st.sampled_from(_EDGES) | st.integers(0, 9 << 20),
    st.booleans(),
)


@settings(max_examples=12)
@given(
    payloads=st.lists(large_blobs, min_size=1, max_size=4),
    codecs=st.lists(st.sampled_from([None, "lz4", "zstd"]), min_size=4, max_size=4),
)
def test_large_blobs_cross_every_block_and_chunk(payloads: list[bytes], codecs: list[Any]) -> None:
    out = io.BytesIO()
    with puffin.create(out) as writer:
        for i, data in enumerate(payloads):
            writer.add_blob(data, type="t", fields=[i], codec=codecs[i])
    with puffin.open(out.getvalue()) as reader:
        assert [reader.read_blob(i) for i in range(len(payloads))] == payloads
        assert [d for _, d in reader.read_all()] == payloads
