"""``puffin ndv``: theta sketches of Parquet columns, as Iceberg builds them.

Each chosen column gets the Iceberg type :func:`puffin.types.iceberg_type_for_arrow`
gives its Arrow type, and a field id (the Parquet field id, else position + 1).  Files are
read one batch at a time, so memory stays bounded by the batch size and the sketches (a few
hundred KiB per column).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.cli._common import (
    InputError,
    printable,
    reading,
    require_output,
    require_regular,
    write_json,
)
from puffin.cli._style import colours_for
from puffin.errors import ColumnNotFoundError, PuffinError, UsageError
from puffin.support.deps import require
from puffin.support.progress import Progress

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from puffin.types import IcebergType

__all__ = ["SCHEMA_VERSION", "ColumnPlan", "plan_columns", "run"]

#: Version of the ``--json`` shape (docs/cli.md); bumped on any incompatible change.
SCHEMA_VERSION = 1

_FIELD_ID_KEY = b"PARQUET:field_id"
_READ_BUFFER = 4 << 20  # bytes of a column chunk read at a time


def _spelling(iceberg_type: IcebergType) -> str:
    """The type as the CLI has always printed it (``decimal(9,2)``, no space)."""
    if iceberg_type.name == "decimal":
        return f"decimal({iceberg_type.precision},{iceberg_type.scale})"
    return str(iceberg_type)


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
            raise ColumnNotFoundError(
                f"no column {', '.join(repr(m) for m in missing)} in the Parquet schema "
                f"(columns: {', '.join(names)})"
            )
        positions = [names.index(w) for w in wanted]
    else:
        positions = list(range(len(names)))
    from puffin.types import UnsupportedArrowTypeError, arrow_type_for, iceberg_type_for_arrow

    plans: list[ColumnPlan] = []
    skipped: list[Skipped] = []
    for position in positions:
        field = schema.field(position)
        try:
            ice = iceberg_type_for_arrow(
                field.type, field=field, uuid_hint=field.name in uuid_columns
            )
        except UnsupportedArrowTypeError as exc:
            if wanted is not None:
                raise UsageError(
                    f"column {field.name!r} of Arrow type {field.type} cannot be sketched: {exc}"
                ) from None
            skipped.append(Skipped(field.name, str(field.type), str(exc)))
            continue
        plans.append(
            ColumnPlan(
                field.name,
                _field_id(field, position),
                str(field.type),
                _spelling(ice),
                arrow_type_for(ice),
            )
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


def run(args: argparse.Namespace) -> int:
    pa = require("pyarrow", "arrow")
    pq = require("pyarrow.parquet", "arrow")
    wanted = _wanted_columns(args)
    if args.output is not None:
        require_output(args.output)
    for path in args.files:  # every input before the first is read: a FIFO would block it
        require_regular(path, "a Parquet file")
    bad_input = (pa.ArrowException,)
    files: list[Any] = []
    for path in args.files:
        with reading(path, bad_input):
            # No pre-buffering and a buffered stream: otherwise pyarrow keeps every row group
            # it has read, and memory grows with the file.
            files.append(pq.ParquetFile(path, pre_buffer=False, buffer_size=_READ_BUFFER))
    plans, skipped = _plan_all(args.files, files, wanted)
    sketches, non_null, rows = _sketch(args, files, plans, bad_input)
    written = None if args.output is None else _write(args, plans, sketches)
    report = {
        "schema_version": SCHEMA_VERSION,
        "command": "ndv",
        "files": list(args.files),
        "rows": rows,
        "lg_k": args.lg_k,
        "output": written,
        "columns": [
            _column_result(plan, sketch, count)
            for plan, sketch, count in zip(plans, sketches, non_null, strict=True)
        ],
        "skipped": [
            {"name": s.name, "arrow_type": s.arrow_type, "reason": s.reason} for s in skipped
        ],
    }
    if args.json:
        write_json(report)
    else:
        _render(report, args)
    return 0


def _wanted_columns(args: argparse.Namespace) -> list[str] | None:
    """``--columns`` as a list (None: every column); ``--batch-rows`` checked too."""
    if args.batch_rows < 1:
        raise UsageError("--batch-rows must be at least 1")
    if args.columns is None:
        return None
    wanted = [c.strip() for c in args.columns.split(",") if c.strip()]
    if not wanted:
        raise UsageError("--columns names no column")
    twice = sorted({c for c in wanted if wanted.count(c) > 1})
    if twice:
        raise UsageError(f"--columns names {', '.join(map(repr, twice))} more than once")
    return wanted


def _plan_all(
    paths: list[str], files: list[Any], wanted: list[str] | None
) -> tuple[list[ColumnPlan], list[Skipped]]:
    """The first file's plan, which every other file must match."""
    plans, skipped = plan_columns(files[0], wanted)
    for path, parquet_file in zip(paths[1:], files[1:], strict=True):
        other, _ = plan_columns(parquet_file, [p.name for p in plans])
        for a, b in zip(plans, other, strict=True):
            if (a.iceberg_type, a.field_id) != (b.iceberg_type, b.field_id):
                raise InputError(
                    f"{path}: column {a.name!r} is {b.iceberg_type} with field id {b.field_id}, "
                    f"but {a.iceberg_type} with field id {a.field_id} in {paths[0]}"
                )
    if not plans:
        raise UsageError("no column can be sketched" + _skipped_note(skipped))
    return plans, skipped


def _sketch(
    args: argparse.Namespace,
    files: list[Any],
    plans: list[ColumnPlan],
    bad_input: tuple[type[BaseException], ...],
) -> tuple[list[Any], list[int], int]:
    """Every column's sketch, its non-null count, and the rows read."""
    from puffin.ndv.engine import keep_freed_memory
    from puffin.ndv.parquet import NdvColumn, sketch_parquet
    from puffin.types import parse_type

    total_rows = sum(f.metadata.num_rows for f in files)
    progress = Progress(
        total_rows, label="ndv: ", enabled=args.progress, delay=1.0, transient=True, width=20
    )
    by_name = {p.name: p for p in plans}

    @contextlib.contextmanager
    def guard(path: str, column: str | None) -> Iterator[None]:
        with reading(path, bad_input):
            if column is None:
                yield
            else:
                with _column_values(path, by_name[column]):
                    yield

    def on_batch(rows: int, file_index: int) -> None:
        progress.update(rows, note=f"file {file_index + 1}/{len(files)}")

    keep_freed_memory()  # this process is ours
    with progress:
        result = sketch_parquet(
            [os.fspath(p) for p in args.files],
            [NdvColumn(p.name, parse_type(p.iceberg_type)) for p in plans],
            lg_k=args.lg_k,
            batch_rows=args.batch_rows,
            metadata=[f.metadata for f in files],
            on_batch=on_batch,
            guard=guard,
        )
    return result.sketches, result.non_null, result.rows


@contextlib.contextmanager
def _column_values(path: str, plan: ColumnPlan) -> Iterator[None]:
    """A value the column's type cannot take is bad input, named by its file and column."""
    try:
        yield
    except (PuffinError, BrokenPipeError):
        raise
    except (ValueError, TypeError) as exc:
        raise InputError(f"{path}: column {plan.name!r} ({plan.iceberg_type}): {exc}") from exc


def _column_result(plan: ColumnPlan, sketch: Any, count: int) -> dict[str, Any]:
    estimate = float(sketch.estimate)
    return {
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


def _skipped_note(skipped: list[Skipped]) -> str:
    if not skipped:
        return ""
    return ": " + "; ".join(f"{s.name} ({s.arrow_type}): {s.reason}" for s in skipped)


def _write(args: argparse.Namespace, plans: list[ColumnPlan], sketches: list[Any]) -> Any:
    from puffin.blobs.theta.files import add_theta_blob
    from puffin.version import __version__
    from puffin.writer import create

    with create(args.output, created_by=f"puffin-cli {__version__}") as writer:
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
