"""``puffin ndv``: theta sketches of Parquet columns, as Iceberg builds them.

Each chosen column gets an Iceberg type derived from its Arrow type (see :func:`iceberg_type`)
and a field id (the Parquet field id, else position + 1).  Files are read one batch at a time,
so memory stays bounded by the batch size and the sketches (a few hundred KiB per column).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.cli._common import InputError, UsageError, printable, reading, write_json
from puffin.cli._style import colours_for

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

__all__ = ["SCHEMA_VERSION", "ColumnPlan", "iceberg_type", "plan_columns", "run"]

#: Version of the ``--json`` shape (docs/cli.md); bumped on any incompatible change.
SCHEMA_VERSION = 1

_FIELD_ID_KEY = b"PARQUET:field_id"
_READ_BUFFER = 4 << 20  # bytes of a column chunk read at a time
_EXTENSION_KEY = b"ARROW:extension:name"
_UUID_EXTENSIONS = (b"arrow.uuid", b"uuid")


class Unsupported(Exception):
    """The Arrow type has no Iceberg primitive counterpart that can be sketched."""


def iceberg_type(
    arrow_type: pa.DataType, *, field: pa.Field | None = None, uuid_hint: bool = False
) -> tuple[str, pa.DataType]:
    """The Iceberg type of an Arrow type, and the Arrow type to cast values to before hashing.

    ``uuid_hint`` says the Parquet column has the UUID logical type (files written without
    an Arrow schema read back as ``fixed_size_binary(16)``).  Raises :class:`Unsupported`.
    """
    import pyarrow as pa
    import pyarrow.types as t

    if isinstance(arrow_type, pa.BaseExtensionType):
        if arrow_type.extension_name in ("arrow.uuid", "uuid"):
            return "uuid", pa.binary(16)
        return iceberg_type(arrow_type.storage_type, field=field, uuid_hint=uuid_hint)
    if t.is_dictionary(arrow_type):
        return iceberg_type(arrow_type.value_type, field=field, uuid_hint=uuid_hint)
    if t.is_boolean(arrow_type):
        return "boolean", pa.bool_()
    if t.is_int8(arrow_type) or t.is_int16(arrow_type) or t.is_int32(arrow_type):
        return "int", pa.int32()
    if t.is_uint8(arrow_type) or t.is_uint16(arrow_type):
        return "int", pa.int32()
    if t.is_int64(arrow_type) or t.is_uint32(arrow_type):
        return "long", pa.int64()
    if t.is_uint64(arrow_type):
        raise Unsupported("uint64 values may not fit an Iceberg long")
    if t.is_float16(arrow_type) or t.is_float32(arrow_type):
        return "float", pa.float32()
    if t.is_float64(arrow_type):
        return "double", pa.float64()
    if t.is_decimal(arrow_type):
        precision, scale = arrow_type.precision, arrow_type.scale
        if precision > 38:
            raise Unsupported(f"decimal precision {precision} exceeds Iceberg's 38")
        return f"decimal({precision},{scale})", pa.decimal128(precision, scale)
    if t.is_date(arrow_type):
        return "date", pa.date32()
    if t.is_time(arrow_type):
        if arrow_type.unit == "ns":
            raise Unsupported("Iceberg has no nanosecond time type")
        return "time", pa.time64("us")
    if t.is_timestamp(arrow_type):
        zoned = arrow_type.tz is not None
        if arrow_type.unit == "ns":
            return ("timestamptz_ns" if zoned else "timestamp_ns"), pa.timestamp(
                "ns", tz=arrow_type.tz
            )
        return ("timestamptz" if zoned else "timestamp"), pa.timestamp("us", tz=arrow_type.tz)
    if t.is_string(arrow_type) or t.is_large_string(arrow_type) or _is_view(arrow_type, "string"):
        return "string", pa.large_string()
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or _is_view(arrow_type, "binary"):
        return "binary", pa.large_binary()
    if t.is_fixed_size_binary(arrow_type):
        width = arrow_type.byte_width
        metadata = (field.metadata or {}) if field is not None else {}
        if width == 16 and (uuid_hint or metadata.get(_EXTENSION_KEY) in _UUID_EXTENSIONS):
            return "uuid", pa.binary(16)
        return f"fixed[{width}]", pa.binary(width)
    if t.is_nested(arrow_type):
        raise Unsupported("nested types are not sketched (only primitive top-level columns)")
    raise Unsupported("no Iceberg primitive type for this Arrow type")


def _is_view(arrow_type: pa.DataType, kind: str) -> bool:
    return str(arrow_type) == f"{kind}_view"


@dataclass(frozen=True)
class ColumnPlan:
    """One column to sketch."""

    name: str
    field_id: int
    arrow_type: str
    iceberg_type: str
    cast_to: Any  # pa.DataType


@dataclass(frozen=True)
class Skipped:
    name: str
    arrow_type: str
    reason: str


def _uuid_columns(parquet_file: pq.ParquetFile) -> set[str]:
    """Top-level columns whose Parquet logical type is UUID."""
    names: set[str] = set()
    schema = parquet_file.schema
    for i in range(len(schema)):
        column = schema.column(i)
        if "." not in column.path and str(column.logical_type) == "UUID":
            names.add(column.name)
    return names


def plan_columns(
    parquet_file: pq.ParquetFile, wanted: list[str] | None
) -> tuple[list[ColumnPlan], list[Skipped]]:
    """The columns to sketch (in schema order, or ``wanted``'s order) and those skipped."""
    schema = parquet_file.schema_arrow
    uuid_columns = _uuid_columns(parquet_file)
    names = schema.names
    if len(set(names)) != len(names):
        raise InputError("the Parquet schema has duplicate column names")
    if wanted is not None:
        missing = [w for w in wanted if w not in names]
        if missing:
            raise UsageError(
                f"no column {', '.join(repr(m) for m in missing)} in the Parquet schema "
                f"(columns: {', '.join(names)})"
            )
        positions = [names.index(w) for w in wanted]
    else:
        positions = list(range(len(names)))
    plans: list[ColumnPlan] = []
    skipped: list[Skipped] = []
    for position in positions:
        field = schema.field(position)
        try:
            ice, cast_to = iceberg_type(
                field.type, field=field, uuid_hint=field.name in uuid_columns
            )
        except Unsupported as exc:
            if wanted is not None:
                raise UsageError(
                    f"column {field.name!r} of Arrow type {field.type} cannot be sketched: {exc}"
                ) from None
            skipped.append(Skipped(field.name, str(field.type), str(exc)))
            continue
        plans.append(
            ColumnPlan(field.name, _field_id(field, position), str(field.type), ice, cast_to)
        )
    seen: dict[int, str] = {}
    for plan in plans:
        if plan.field_id in seen:
            raise InputError(
                f"columns {seen[plan.field_id]!r} and {plan.name!r} have the same field id "
                f"{plan.field_id}"
            )
        seen[plan.field_id] = plan.name
    return plans, skipped


def _field_id(field: pa.Field, position: int) -> int:
    raw = (field.metadata or {}).get(_FIELD_ID_KEY)
    if raw is None:
        return position + 1
    try:
        return int(raw)
    except ValueError:
        raise InputError(
            f"column {field.name!r} has a PARQUET:field_id that is not an integer: {raw!r}"
        ) from None


class Progress:
    """A one-line progress report on stderr, shown only after the first second."""

    def __init__(
        self, total_rows: int, enabled: bool, *, delay: float = 1.0, stream: Any = None
    ) -> None:
        self.total = total_rows
        self.enabled = enabled
        self.delay = delay
        self.stream = sys.stderr if stream is None else stream
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def update(self, rows: int, file_index: int, file_count: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or now - self.last < 0.2:
            return
        self.last = now
        self.shown = True
        percent = f" ({100 * rows / self.total:.0f}%)" if self.total else ""
        rate = rows / max(now - self.start, 1e-9)
        self.stream.write(
            f"\rndv: {rows:,} of {self.total:,} rows{percent}, file {file_index + 1} of "
            f"{file_count}, {rate / 1e6:.1f} M rows/s \x1b[K"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _values(column: pa.Array | pa.ChunkedArray, plan: ColumnPlan) -> Any:
    """The column's values as the Arrow type the Iceberg type is hashed from."""
    import pyarrow as pa

    if isinstance(column.type, pa.BaseExtensionType):
        column = (
            column.storage
            if isinstance(column, pa.Array)
            else pa.chunked_array([c.storage for c in column.chunks], type=column.type.storage_type)
        )
    if pa.types.is_dictionary(column.type):
        column = (
            column.dictionary_decode()
            if isinstance(column, pa.Array)
            else pa.chunked_array([c.dictionary_decode() for c in column.chunks])
        )
    if column.type != plan.cast_to:
        column = column.cast(plan.cast_to)
    return column


def run(args: argparse.Namespace) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("puffin ndv needs pyarrow: pip install 'iceberg-puffin[arrow]'") from None
    from puffin.blobs.theta import ThetaSketchBuilder

    if args.lg_k < 4 or args.lg_k > 26:
        raise UsageError(f"--lg-k must be between 4 and 26, got {args.lg_k}")
    if args.batch_rows < 1:
        raise UsageError("--batch-rows must be at least 1")
    wanted = None
    if args.columns is not None:
        wanted = [c.strip() for c in args.columns.split(",") if c.strip()]
        if not wanted:
            raise UsageError("--columns names no column")
        twice = sorted({c for c in wanted if wanted.count(c) > 1})
        if twice:
            raise UsageError(f"--columns names {', '.join(map(repr, twice))} more than once")

    bad_input = (pa.ArrowException,)
    files: list[Any] = []
    for path in args.files:
        with reading(path, bad_input):
            # No pre-buffering and a buffered stream: otherwise pyarrow keeps every row group
            # it has read, and memory grows with the file.
            files.append(pq.ParquetFile(path, pre_buffer=False, buffer_size=_READ_BUFFER))

    plans, skipped = plan_columns(files[0], wanted)
    for path, parquet_file in zip(args.files[1:], files[1:], strict=True):
        other, _ = plan_columns(parquet_file, [p.name for p in plans])
        for a, b in zip(plans, other, strict=True):
            if (a.iceberg_type, a.field_id) != (b.iceberg_type, b.field_id):
                raise InputError(
                    f"{path}: column {a.name!r} is {b.iceberg_type} with field id {b.field_id}, "
                    f"but {a.iceberg_type} with field id {a.field_id} in {args.files[0]}"
                )
    if not plans:
        raise UsageError("no column can be sketched" + _skipped_note(skipped))

    total_rows = sum(f.metadata.num_rows for f in files)
    show_progress = args.progress == "always" or (args.progress == "auto" and sys.stderr.isatty())
    progress = Progress(total_rows, show_progress)
    builders = [ThetaSketchBuilder(p.iceberg_type, lg_k=args.lg_k) for p in plans]
    non_null = [0] * len(plans)
    rows = 0
    names = [p.name for p in plans]
    try:
        for file_index, (path, parquet_file) in enumerate(zip(args.files, files, strict=True)):
            with reading(path, bad_input):
                for batch in parquet_file.iter_batches(
                    batch_size=args.batch_rows, columns=names, use_threads=True
                ):
                    for i, plan in enumerate(plans):
                        column = batch.column(i)
                        non_null[i] += len(column) - column.null_count
                        builders[i].update(_values(column, plan))
                    rows += batch.num_rows
                    progress.update(rows, file_index, len(files))
    finally:
        progress.close()
    sketches = [b.result() for b in builders]

    written = None
    if args.output is not None:
        written = _write(args, plans, sketches)

    results = []
    for plan, sketch, count in zip(plans, sketches, non_null, strict=True):
        estimate = float(sketch.estimate)
        results.append(
            {
                "name": plan.name,
                "field_id": plan.field_id,
                "arrow_type": plan.arrow_type,
                "iceberg_type": plan.iceberg_type,
                "values": count,
                "ndv": int(estimate),
                "estimate": estimate,
                "lower_bound": float(sketch.lower_bound(2)),
                "upper_bound": float(sketch.upper_bound(2)),
                "num_retained": int(sketch.num_retained),
                "theta": float(sketch.theta),
            }
        )
    report = {
        "schema_version": SCHEMA_VERSION,
        "command": "ndv",
        "files": list(args.files),
        "rows": rows,
        "lg_k": args.lg_k,
        "output": written,
        "columns": results,
        "skipped": [
            {"name": s.name, "arrow_type": s.arrow_type, "reason": s.reason} for s in skipped
        ],
    }
    if args.json:
        write_json(report)
    else:
        _render(report, args)
    return 0


def _skipped_note(skipped: list[Skipped]) -> str:
    if not skipped:
        return ""
    return ": " + "; ".join(f"{s.name} ({s.arrow_type}): {s.reason}" for s in skipped)


def _write(args: argparse.Namespace, plans: list[ColumnPlan], sketches: list[Any]) -> Any:
    import puffin
    from puffin.blobs.theta import add_theta_blob

    with puffin.create(args.output, created_by=f"puffin-cli {puffin.__version__}") as writer:
        for plan, sketch in zip(plans, sketches, strict=True):
            add_theta_blob(
                writer,
                sketch,
                plan.field_id,
                snapshot_id=args.snapshot_id,
                sequence_number=args.sequence_number,
            )
    return {
        "path": os.fspath(args.output),
        "file_size": writer.file_size,
        "footer_size": writer.footer_size,
        "blob_count": len(writer.blobs),
    }


def _render(report: dict[str, Any], args: argparse.Namespace) -> None:
    c = colours_for(sys.stdout, args.color)
    header = ["column", "field id", "type", "values", "ndv", "estimate (±2σ)"]
    rows = []
    for col in report["columns"]:
        rows.append(
            [
                printable(col["name"]),
                str(col["field_id"]),
                col["iceberg_type"],
                f"{col['values']:,}",
                f"{col['ndv']:,}",
                f"{col['estimate']:,.1f} [{col['lower_bound']:,.1f}, {col['upper_bound']:,.1f}]",
            ]
        )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {1, 3, 4}

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    sys.stdout.write(c.bold(fmt(header)) + "\n")
    for r in rows:
        sys.stdout.write(fmt(r) + "\n")
    files = len(report["files"])
    sys.stdout.write(
        c.dim(f"{report['rows']:,} rows in {files} file{'' if files == 1 else 's'}") + "\n"
    )
    for s in report["skipped"]:
        sys.stderr.write(
            f"puffin ndv: note: skipped column {printable(s['name'])!r} ({s['arrow_type']}): "
            f"{s['reason']}\n"
        )
    if report["output"] is not None:
        out = report["output"]
        sys.stdout.write(
            f"wrote {printable(out['path'])}: {out['blob_count']} "
            f"blob{'' if out['blob_count'] == 1 else 's'}, "
            f"{out['file_size']:,} bytes, footer {out['footer_size']:,} bytes\n"
        )
