"""Why each built-in peer fails the vectors it fails (docs/conformance.md has reproducers).

Each entry is (id patterns, explanation); a failure whose vector id matches a pattern
(``fnmatch``) is reported with the explanation as ``known``.  A test keeps this list equal
to what the peers actually do, so a peer that improves or regresses is noticed.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

__all__ = ["KNOWN_FAILURES", "explain"]

_THETA_RANGE = (
    "deserialization does not check theta's range or the retained hashes (each in "
    "(0, theta), ascending when the ordered flag is set)"
)
_THETA_BAD = (
    "theta/invalid-theta-zero",
    "theta/invalid-theta-above-max",
    "theta/invalid-hash-at-theta",
    "theta/invalid-unordered",
    "theta/invalid-zero-hash",
)
_PRE_LONGS = (
    "a compact sketch with pre-longs 1 is read as a single-item sketch although its flags say "
    "otherwise and a count, theta and 32 hashes follow"
)
_TRAILING = "bitmaps are read until the declared count; bytes left before the CRC are ignored"
_DUCKDB_NULL_OFFSET = (
    'a DV entry without content_offset is an internal error ("Calling GetValue on a value '
    'that is NULL") that invalidates the whole database: every later query fails until it '
    "is restarted"
)
_DUCKDB_COUNT = (
    "a DV's cardinality is not checked against its entry's record_count: a range that holds "
    "another file's vector is applied as it is"
)
_DUCKDB_SCOPE = (
    "a vector in another partition spec than its data file is applied, and one below its data "
    "file's sequence number is skipped (the rows its writer deleted come back), where Java "
    "and iceberg-rust refuse the table"
)

KNOWN_FAILURES: dict[str, list[tuple[tuple[str, ...], str]]] = {
    "puffin": [],
    "pyiceberg": [
        (
            ("container/*lz4*", "container/mixed-codecs-*"),
            "pyiceberg 0.12 reads neither LZ4-compressed blobs nor LZ4-compressed footers "
            "(PuffinFile raises ValueError)",
        ),
        (
            (
                "container/invalid-footer-start-magic",
                "container/invalid-offset-*",
                "container/invalid-length-*",
            ),
            "PuffinFile checks only the first and the last 4 bytes, and slices blob ranges "
            "without checking them against the file: an offset inside the magic, a negative one "
            "or a range past the footer returns other bytes",
        ),
        (("container/invalid-flags-reserved-byte3",), "only flag byte 0 is checked"),
        (
            (
                "container/invalid-footer-duplicate-key",
                "container/invalid-fields-not-ints",
                "container/invalid-field-not-int32",
                "container/invalid-snapshot-id-beyond-long",
                "container/invalid-offset-string",
            ),
            'the footer model (pydantic, lax mode) coerces "1" to 1, accepts field ids beyond '
            "an int and snapshot ids beyond a long, and keeps the last of duplicate keys",
        ),
        (
            ("container/invalid-zstd-two-frames", "container/invalid-zstd-trailing-bytes"),
            "zstandard's decompress() returns the first frame and ignores what follows",
        ),
        (
            ("deletion-vector/*-empty", "captured/iceberg-java-deletes-empty-position-index"),
            "an empty DV fails in to_vector: pyarrow cannot build a chunked array of no chunks "
            "without a type",
        ),
        (
            ("deletion-vector/*-key-one-only", "deletion-vector/*-explicit-empty-bitmaps"),
            "a DV whose first bitmap is empty (positions only at 2^32 and above, as Iceberg Java "
            "writes them) fails in to_vector with ArrowInvalid: the empty chunk is typed null",
        ),
        (
            ("deletion-vector/*-max-key",),
            "one Python object is appended per key below the largest: key 0x7FFFFFFE means 2^31 "
            "objects (MemoryError under the runner's 3 GiB cap)",
        ),
        (
            (
                "deletion-vector/*-invalid-crc-*",
                "deletion-vector/*-invalid-magic",
                "deletion-vector/*-invalid-length-*",
                "deletion-vector/*-invalid-truncated",
                "deletion-vector/*-invalid-trailing-bytes",
            ),
            "_extract_vector_payload checks neither the magic, nor the CRC, nor the length "
            "prefix against the blob; the bitmap reader ignores bytes after the last bitmap",
        ),
        (
            (
                "deletion-vector/invalid-record-count",
                "deletion-vector/invalid-footer-*cardinality*",
            ),
            "the decoded cardinality is compared with neither the cardinality property nor the "
            "manifest's record count",
        ),
        (
            (
                "deletion-vector/invalid-footer-snapshot-id",
                "deletion-vector/invalid-footer-sequence-number",
                "deletion-vector/invalid-footer-compressed",
                "deletion-vector/invalid-footer-empty-referenced-data-file",
            ),
            "the DV footer rules are not checked (snapshot-id and sequence-number -1, no "
            "compression codec, a non-empty referenced-data-file); a zstd DV is decompressed",
        ),
        (
            ("deletion-vector/invalid-footer-same-data-file-twice",),
            "two DVs for one data file: the last one silently wins",
        ),
        (
            ("table/dv-blob-names-another-file",),
            "its scan reads a Puffin delete file whole and applies each blob to the data file "
            "its footer's referenced-data-file names, not to the one the manifest entry names: "
            "the vector lands on the other file",
        ),
        (
            (
                "table/dv-range-of-another-blob",
                "table/dv-content-offset-*",
                "table/dv-content-size-short",
                "table/dv-record-count-differs",
            ),
            "its scan ignores a DV entry's content_offset, content_size_in_bytes and "
            "record_count (it reads every blob through the footer), so none is checked",
        ),
        (
            (
                "table/dv-in-another-spec",
                "table/two-live-dvs-for-one-file",
                "table/dv-below-its-data-file",
            ),
            "its planner checks none of the DV rules of a table: a vector in another partition "
            "spec is applied, two vectors of one data file are both applied, a vector below its "
            "data file's sequence number is skipped (the rows its writer deleted come back)",
        ),
    ],
    "datasketches": [(_THETA_BAD, _THETA_RANGE), (("theta/invalid-pre-longs",), _PRE_LONGS)],
    "java": [
        (_THETA_BAD, _THETA_RANGE),
        (("theta/invalid-pre-longs",), _PRE_LONGS),
        (
            ("theta/invalid-seed-hash",),
            "datasketches-java's Sketch.heapify does not check a compact sketch's seed hash",
        ),
        (
            ("deletion-vector/range-max-key",),
            "Iceberg Java's RoaringPositionBitmap (ported) keeps a bitmap for every key below "
            "the largest: key 0x7FFFFFFE is 2^31 objects (OutOfMemoryError with -Xmx1g)",
        ),
        (("deletion-vector/range-invalid-trailing-bytes",), _TRAILING),
    ],
    "pyroaring": [
        (
            ("deletion-vector/range-invalid-key-*", "captured/croaring-64maphighvals"),
            "CRoaring's 64-bit bitmaps take any 32-bit key; Iceberg allows keys up to 0x7FFFFFFE "
            "(positions below 2^63), which is an Iceberg rule, not a Roaring one",
        ),
        (("deletion-vector/range-invalid-trailing-bytes",), _TRAILING),
        (
            ("writer/dv-gap-keys", "writer/dv-key-one-only"),
            "CRoaring writes non-empty keys only; Iceberg Java writes an empty bitmap for every "
            "key below the largest, so the bytes differ (both decode to the same positions)",
        ),
    ],
    "iceberg-rust": [],
    "duckdb": [
        (("table/dv-content-offset-missing",), _DUCKDB_NULL_OFFSET),
        (("table/dv-range-of-another-blob", "table/dv-record-count-differs"), _DUCKDB_COUNT),
        (
            ("table/dv-content-size-short",),
            "DuckDB 1.4.4 reads a vector one byte short of its blob without an error (1.5.5 "
            "refuses it)",
        ),
        (
            ("table/two-live-dvs-for-one-file",),
            "DuckDB 1.4.4 applies both vectors of one data file (1.5.5 refuses the table)",
        ),
        (("table/dv-in-another-spec", "table/dv-below-its-data-file"), _DUCKDB_SCOPE),
    ],
    "duckdb-1.5.5": [
        (
            ("table/dvs-in-one-puffin-larger-first",),
            "DuckDB 1.5.5 applies one data file's deletion vector to another when a Puffin file "
            "holds several, the larger first: the first file's 667 positions are deleted from "
            "each of the three files (3,999 rows instead of 4,920); 1.4.4 reads it right",
        ),
        (("table/dv-content-offset-missing",), _DUCKDB_NULL_OFFSET),
        (("table/dv-range-of-another-blob", "table/dv-record-count-differs"), _DUCKDB_COUNT),
        (("table/dv-in-another-spec", "table/dv-below-its-data-file"), _DUCKDB_SCOPE),
    ],
    "sail": [
        (
            ("table/dv-in-another-spec", "table/dv-below-its-data-file"),
            "Sail 0.7.2 applies a vector committed in another partition spec than its data file, "
            "and skips one below its data file's sequence number (those rows come back) "
            "instead of refusing the table",
        ),
    ],
    "iceberg-java": [
        (
            ("container/*lz4*", "container/mixed-codecs-*"),
            "Iceberg Java 1.10.2 implements only zstd of the spec's codecs: an LZ4 blob or an "
            "LZ4-compressed footer is UnsupportedOperationException: Unsupported codec: LZ4",
        ),
        (
            ("container/invalid-leading-magic",),
            "PuffinReader checks the two footer magics only, never the file's leading magic",
        ),
        (
            ("container/invalid-offset-in-magic", "container/invalid-offset-past-footer"),
            "PuffinReader reads a blob from any offset and length inside the file: a range "
            "overlapping the leading magic or the footer is not checked",
        ),
        (
            (
                "container/invalid-footer-bad-utf8",
                "container/invalid-footer-trailing-data",
                "container/invalid-footer-duplicate-key",
            ),
            "the footer JSON is decoded leniently: invalid UTF-8 becomes U+FFFD "
            "(StandardCharsets.UTF_8.decode), Jackson stops after the first JSON value, and a "
            "duplicate key keeps its last value",
        ),
        (
            ("deletion-vector/*-max-key",),
            "RoaringPositionBitmap keeps a bitmap for every key below the largest: key "
            "0x7FFFFFFE is 2^31 objects (OutOfMemoryError with -Xmx1g)",
        ),
        (("deletion-vector/*-invalid-trailing-bytes",), _TRAILING),
        (
            (
                "deletion-vector/invalid-footer-snapshot-id",
                "deletion-vector/invalid-footer-sequence-number",
                "deletion-vector/invalid-footer-*referenced-data-file",
                "deletion-vector/invalid-footer-same-data-file-twice",
            ),
            "Java reads a DV through its manifest entry (offset, length, record count) and "
            "checks none of the spec's DV footer rules: snapshot-id and sequence-number -1, "
            "referenced-data-file present and non-empty, one DV per data file",
        ),
        (
            ("table/dv-in-another-spec",),
            "Iceberg Java 1.10.2 applies a vector committed in another partition spec than its "
            "data file; the check that fails such scans (apache/iceberg#16957) came later",
        ),
    ],
}


def explain(adapter: str, vector_id: str) -> str | None:
    """The known reason ``adapter`` fails ``vector_id``, or None."""
    for patterns, why in KNOWN_FAILURES.get(adapter, []):
        if any(fnmatchcase(vector_id, p) for p in patterns):
            return why
    return None
