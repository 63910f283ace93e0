"""The Puffin container: golden files from Iceberg Java and iceberg-go, the public API."""

from __future__ import annotations

import io
import os
import pickle
import threading
from pathlib import Path

import pytest

import puffin

JAVA = "iceberg-java/puffin"
SECOND_PAYLOAD = (
    "some blob \u0000 binary data \U0001f92f that is not very very very very very very long, "
    "is it?"
).encode()


def _copy_blobs(reader: puffin.PuffinReader, writer: puffin.PuffinWriter) -> None:
    for blob in reader.blobs:
        writer.add_blob(
            reader.read_blob(blob),
            type=blob.type,
            fields=blob.fields,
            snapshot_id=blob.snapshot_id,
            sequence_number=blob.sequence_number,
            properties=blob.properties,
            codec=blob.compression_codec,
        )


# --- golden files ------------------------------------------------------------------------


def test_java_empty_file(testdata: Path) -> None:
    path = testdata / JAVA / "empty-puffin-uncompressed.bin"
    with puffin.open(path) as reader:
        assert reader.blobs == []
        assert reader.properties == {}
        assert reader.footer_size == 28
        assert reader.file_size == 32
    # The payload is exactly {"blobs":[]}: no properties key.
    assert path.read_bytes()[8 : 8 + 12] == b'{"blobs":[]}'


@pytest.mark.parametrize(
    ("name", "size", "footer_size", "layout", "codec"),
    [
        ("sample-metric-data-uncompressed.bin", 355, 259, [(4, 9), (13, 83)], None),
        ("sample-metric-data-compressed-zstd.bin", 417, 314, [(4, 22), (26, 77)], "zstd"),
    ],
)
def test_java_sample_files(
    testdata: Path,
    name: str,
    size: int,
    footer_size: int,
    layout: list[tuple[int, int]],
    codec: str | None,
) -> None:
    with puffin.open(testdata / JAVA / name) as reader:
        assert reader.file_size == size
        assert reader.footer_size == footer_size
        assert reader.properties == {"created-by": "Test 1234"}
        first, second = reader.blobs
        assert (first.type, first.fields, first.snapshot_id, first.sequence_number) == (
            "some-blob", (1,), 2, 1)
        assert (second.type, second.fields, second.snapshot_id, second.sequence_number) == (
            "some-other-blob", (2,), 2, 1)
        assert [(b.offset, b.length) for b in reader.blobs] == layout
        assert [b.compression_codec for b in reader.blobs] == [codec, codec]
        assert all(b.properties == {} for b in reader.blobs)
        assert reader.read_blob(0) == b"abcdefghi"
        assert reader.read_blob(second) == SECOND_PAYLOAD
        assert [data for _, data in reader.read_all()] == [b"abcdefghi", SECOND_PAYLOAD]


@pytest.mark.parametrize(
    "name",
    [
        "empty-puffin-uncompressed.bin",
        "sample-metric-data-uncompressed.bin",
        "sample-metric-data-compressed-zstd.bin",
    ],
)
def test_java_files_written_back_byte_for_byte(testdata: Path, name: str) -> None:
    original = (testdata / JAVA / name).read_bytes()
    out = io.BytesIO()
    with puffin.open(original) as reader, puffin.create(
        out, properties=reader.properties
    ) as writer:
        _copy_blobs(reader, writer)
    assert out.getvalue() == original
    assert writer.file_size == len(original)


def test_java_sample_from_scratch_with_created_by(testdata: Path, tmp_path: Path) -> None:
    target = tmp_path / "sample.bin"
    with puffin.create(target, created_by="Test 1234") as writer:
        writer.add_blob(b"abcdefghi", type="some-blob", fields=[1], snapshot_id=2,
                        sequence_number=1, codec="zstd")
        writer.add_blob(SECOND_PAYLOAD, type="some-other-blob", fields=[2], snapshot_id=2,
                        sequence_number=1, codec="zstd")
    expected = (testdata / JAVA / "sample-metric-data-compressed-zstd.bin").read_bytes()
    assert target.read_bytes() == expected
    assert (writer.file_size, writer.footer_size) == (417, 314)


def test_single_blob_case_is_122_bytes() -> None:
    out = io.BytesIO()
    with puffin.create(out) as writer:
        meta = writer.add_blob(b"blob", type="blob", fields=[1], snapshot_id=2, sequence_number=1)
    data = out.getvalue()
    assert len(data) == 122 == writer.file_size
    assert (meta.offset, meta.length) == (4, 4)
    assert data[:8] == b"PFA1blob"
    assert data[8:12] == b"PFA1"
    assert b'{"blobs":[{"type":"blob","fields":[1],"snapshot-id":2,"sequence-number":1,' \
        b'"offset":4,"length":4}]}' in data


@pytest.mark.parametrize(
    ("name", "fields", "properties", "created_by"),
    [
        (
            "single-blob-dv.puffin",
            (2147483645,),
            {"referenced-data-file": "s3://warehouse/db/table/data/00000-0-abc.parquet",
             "cardinality": "5"},
            "iceberg-go DV cross-client fixtures (apache/iceberg)",
        ),
        (
            "deletion-vector-v1.puffin",
            (),
            {"cardinality": "5", "referenced-data-file": "data/test.parquet"},
            "iceberg-go test fixture",
        ),
    ],
)
def test_iceberg_go_files(
    testdata: Path,
    name: str,
    fields: tuple[int, ...],
    properties: dict[str, str],
    created_by: str | None,
) -> None:
    with puffin.open(testdata / "iceberg-go" / name) as reader:
        (blob,) = reader.blobs
        assert blob.type == "deletion-vector-v1"
        assert blob.fields == fields
        assert (blob.snapshot_id, blob.sequence_number) == (-1, -1)
        assert blob.compression_codec is None
        assert dict(blob.properties) == properties
        assert list(blob.properties) == list(properties)  # order as in the file
        assert reader.properties.get("created-by") == created_by
        raw = reader.read_raw(blob)
        assert len(raw) == blob.length
        assert raw[4:8] == bytes.fromhex("D1D33964")  # the DV magic
        assert reader.read_blob(blob) == raw


# --- sources and targets ----------------------------------------------------------------


def _sample_bytes(testdata: Path) -> bytes:
    return (testdata / JAVA / "sample-metric-data-compressed-zstd.bin").read_bytes()


@pytest.mark.parametrize("kind", ["str", "pathlib", "bytes", "bytearray", "memoryview", "fileobj",
                                  "bufferedreader"])
def test_every_source_kind(testdata: Path, kind: str) -> None:
    path = testdata / JAVA / "sample-metric-data-compressed-zstd.bin"
    data = path.read_bytes()
    sources: dict[str, object] = {
        "str": str(path),
        "pathlib": path,
        "bytes": data,
        "bytearray": bytearray(data),
        "memoryview": memoryview(data),
        "fileobj": io.BytesIO(data),
    }
    if kind == "bufferedreader":
        with path.open("rb") as handle:
            with puffin.open(handle) as reader:
                assert reader.read_blob(0) == b"abcdefghi"
            assert not handle.closed  # the caller's file stays open
        return
    with puffin.open(sources[kind]) as reader:
        assert reader.read_blob(1) == SECOND_PAYLOAD


def test_read_raw_is_the_stored_frame(testdata: Path) -> None:
    data = _sample_bytes(testdata)
    with puffin.open(data) as reader:
        blob = reader.blobs[0]
        raw = reader.read_raw(blob)
        assert raw == data[blob.offset : blob.offset + blob.length]
        assert raw[:4] == bytes.fromhex("28B52FFD")  # zstd frame magic


def test_blob_by_negative_index_and_bad_index(testdata: Path) -> None:
    with puffin.open(_sample_bytes(testdata)) as reader:
        assert reader.read_blob(-1) == SECOND_PAYLOAD
        with pytest.raises(IndexError):
            reader.read_blob(2)
        with pytest.raises(TypeError):
            reader.read_blob("0")  # type: ignore[arg-type]
        foreign = puffin.BlobMetadata("x", (1,), 1, 1, 4, 1)
        with pytest.raises(ValueError, match="not in this file"):
            reader.read_blob(foreign)


def test_closed_reader_refuses_reads(testdata: Path) -> None:
    reader = puffin.open(testdata / JAVA / "sample-metric-data-uncompressed.bin")
    reader.close()
    assert reader.closed
    with pytest.raises(ValueError, match="closed"):
        reader.read_blob(0)


def test_footer_size_hint(testdata: Path) -> None:
    data = _sample_bytes(testdata)
    with puffin.open(data, footer_size=314, file_size=len(data)) as reader:
        assert reader.read_blob(0) == b"abcdefghi"


def test_file_object_target_and_properties_order() -> None:
    out = io.BytesIO()
    with puffin.create(out, created_by="me", properties={"b": "2", "a": "1"}) as writer:
        writer.add_blob(b"x", type="t", fields=[])
    assert not out.closed
    with puffin.open(out.getvalue()) as reader:
        assert list(reader.properties.items()) == [("created-by", "me"), ("b", "2"), ("a", "1")]


def test_lz4_blobs_and_compressed_footer() -> None:
    out = io.BytesIO()
    with puffin.create(out, compress_footer=True, created_by="lz4 test") as writer:
        writer.add_blob(b"a" * 1000, type="t", fields=[1], codec="lz4")
        writer.add_blob(b"", type="t", fields=[2], codec="lz4")
        writer.add_blob(b"b" * 10, type="t", fields=[3], codec="zstd")
    data = out.getvalue()
    assert data[-8] & 1 == 1  # footer flag: compressed
    footer_payload = data[-writer.footer_size + 4 : -12]
    assert footer_payload[:4] == bytes.fromhex("04224D18")  # an LZ4 frame, not JSON
    with puffin.open(data) as reader:
        assert reader.footer_compressed
        assert reader.properties == {"created-by": "lz4 test"}
        assert [reader.read_blob(i) for i in range(3)] == [b"a" * 1000, b"", b"b" * 10]
        assert reader.read_raw(0)[:4] == bytes.fromhex("04224D18")
        assert reader.footer_size == writer.footer_size


def test_lz4_frame_header_declares_content_size() -> None:
    frame = puffin.get_codec("lz4").compress(b"hello world")  # type: ignore[union-attr]
    flg = frame[4]
    assert flg & 0x08, "content size flag must be set"
    assert int.from_bytes(frame[6:14], "little") == 11


def test_empty_lz4_frame_declares_size_zero() -> None:
    import lz4.frame

    codec = puffin.get_codec("lz4")
    assert codec is not None
    frame = codec.compress(b"")
    assert frame[4] & 0x08 and frame[6:14] == bytes(8)
    assert lz4.frame.decompress(frame) == b""  # liblz4 itself accepts the hand-built frame
    assert codec.decompress(frame, max_size=0) == b""


def test_codec_names_are_case_sensitive() -> None:
    with pytest.raises(puffin.UnknownCodecError):
        puffin.get_codec("ZSTD")
    with puffin.create(io.BytesIO()) as writer, pytest.raises(puffin.UnknownCodecError):
        writer.add_blob(b"x", type="t", fields=[], codec="gzip")
    assert puffin.available_codecs() == ["lz4", "zstd"]


def test_metadata_objects_are_frozen_and_picklable() -> None:
    meta = puffin.BlobMetadata("t", [1, 2], 3, 4, 5, 6, "zstd", {"k": "v"})
    assert meta.fields == (1, 2)
    with pytest.raises(AttributeError):
        meta.type = "u"  # type: ignore[misc]
    with pytest.raises(TypeError):
        meta.properties["k"] = "w"  # type: ignore[index]
    assert pickle.loads(pickle.dumps(meta)) == meta
    fm = puffin.FileMetadata([meta], {"created-by": "x"})
    assert pickle.loads(pickle.dumps(fm)) == fm
    assert puffin.FileMetadata.from_json(fm.to_json()) == fm


def test_json_escapes_like_jackson() -> None:
    # Jackson writes control characters with upper-case hex and keeps non-ASCII raw.
    meta = puffin.FileMetadata([], {"k": "a\x1fb\nc\u00e9\U0001f92f\"\\"})
    expected = '{"blobs":[],"properties":{"k":"a\\u001Fb\\nc\u00e9\U0001f92f\\"\\\\"}}'
    assert meta.to_json() == expected


def test_writer_argument_errors() -> None:
    with puffin.create(io.BytesIO()) as writer:
        with pytest.raises(ValueError, match="int32"):
            writer.add_blob(b"x", type="t", fields=[1 << 31])
        with pytest.raises(ValueError, match="int64"):
            writer.add_blob(b"x", type="t", fields=[1], snapshot_id=1 << 63)
        with pytest.raises(ValueError, match="non-empty"):
            writer.add_blob(b"x", type="", fields=[1])
        with pytest.raises(ValueError, match="str to str"):
            writer.add_blob(b"x", type="t", fields=[1], properties={"k": 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="created"):
        puffin.create(io.BytesIO(), created_by="a", properties={"created-by": "b"})
    with pytest.raises(TypeError):
        puffin.create(42)  # type: ignore[arg-type]
    writer = puffin.create(io.BytesIO())
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.add_blob(b"x", type="t", fields=[])


# --- atomic writes -------------------------------------------------------------------------


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_keeps_previous_contents_on_error(tmp_path: Path) -> None:
    target = tmp_path / "stats.puffin"
    target.write_bytes(b"previous contents")
    with pytest.raises(RuntimeError, match="boom"):
        with puffin.create(target) as writer:
            writer.add_blob(b"partial", type="t", fields=[1])
            # The data goes to a temporary file meanwhile (unnamed where O_TMPFILE works).
            assert target.read_bytes() == b"previous contents"
            raise RuntimeError("boom")
    assert target.read_bytes() == b"previous contents"
    assert _leftovers(tmp_path) == []


def test_atomic_write_no_file_on_error(tmp_path: Path) -> None:
    target = tmp_path / "new.puffin"
    with pytest.raises(puffin.UnknownCodecError):
        with puffin.create(target) as writer:
            writer.add_blob(b"x", type="t", fields=[1], codec="nope")
    assert not target.exists()
    assert _leftovers(tmp_path) == []


def test_abandoned_writer_publishes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "abandoned.puffin"
    writer = puffin.create(target)
    writer.add_blob(b"x", type="t", fields=[1])
    del writer
    assert not target.exists()
    assert _leftovers(tmp_path) == []


def test_published_file_has_normal_permissions(tmp_path: Path) -> None:
    target = tmp_path / "perm.puffin"
    with puffin.create(target) as writer:
        writer.add_blob(b"x", type="t", fields=[1])
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert _leftovers(tmp_path) == []


# --- read counts ---------------------------------------------------------------------------


class CountingFile(io.BytesIO):
    """A file object that records every read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads: list[int] = []
        self.lock = threading.Lock()

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.reads.append(len(data))
        return data


def _many_blob_file(count: int, payload: int = 10) -> bytes:
    out = io.BytesIO()
    with puffin.create(out, created_by="count test") as writer:
        for i in range(count):
            writer.add_blob(bytes([i % 256]) * payload, type="t", fields=[i])
    return out.getvalue()


def test_read_counts_small_footer() -> None:
    data = _many_blob_file(3)
    f = CountingFile(data)
    reader = puffin.open(f)
    # One tail read holds the whole footer and, in a small file, the leading magic.
    assert f.reads == [len(data)]
    f.reads.clear()
    reader.read_blob(1)
    assert f.reads == [10]


def test_read_counts_with_footer_size_hint() -> None:
    data = _many_blob_file(3)
    with puffin.open(data) as probe:
        footer_size = probe.footer_size
    f = CountingFile(data)
    puffin.open(f, footer_size=footer_size, file_size=len(data))
    assert f.reads == [footer_size, 4]


def test_read_counts_large_footer_needs_second_read() -> None:
    data = _many_blob_file(2000)
    f = CountingFile(data)
    reader = puffin.open(f, limits=puffin.Limits(tail_read_size=4096))
    assert reader.footer_size > 4096
    # Tail, leading magic, then only the part of the footer the tail did not hold.
    assert f.reads == [4096, 4, reader.footer_size - 4096]
    f.reads.clear()
    payloads = list(reader.read_all())
    assert len(payloads) == 2000
    assert len(f.reads) == 1  # neighbouring blobs coalesced into one read
    assert payloads[7][1] == bytes([7]) * 10


def test_read_all_is_in_file_order_when_footer_is_not() -> None:
    body = b"PFA1" + b"AAA" + b"BB"
    meta = puffin.FileMetadata([
        puffin.BlobMetadata("t", [2], 1, 1, 7, 2),
        puffin.BlobMetadata("t", [1], 1, 1, 4, 3),
    ])
    from puffin.layout import pack_footer

    data = body + pack_footer(meta.to_bytes(), compressed=False)
    with puffin.open(data) as reader:
        assert [(m.fields, d) for m, d in reader.read_all()] == [((1,), b"AAA"), ((2,), b"BB")]


def test_a_text_mode_file_object_says_open_it_in_binary_mode(tmp_path: Path) -> None:
    path = tmp_path / "f.puffin"
    with puffin.create(path) as writer:
        writer.add_blob(b"x", type="t", fields=[1], snapshot_id=1, sequence_number=1)
    with open(path) as text, pytest.raises(TypeError, match=r"open the file in binary mode"):
        puffin.open(text)

    class TextReader:  # a file-like object that is not an io.TextIOBase but returns str
        def __init__(self) -> None:
            self._data = path.read_bytes().decode("latin-1")
            self._at = 0

        def seek(self, offset: int, whence: int = 0) -> int:
            self._at = len(self._data) + offset if whence == 2 else offset
            return self._at

        def tell(self) -> int:
            return self._at

        def read(self, n: int = -1) -> str:
            chunk = self._data[self._at : self._at + n]
            self._at += len(chunk)
            return chunk

    with pytest.raises(TypeError, match=r"open the file in binary mode"):
        puffin.open(TextReader())
