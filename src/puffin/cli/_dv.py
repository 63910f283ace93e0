"""``puffin dv``: the deleted row positions of deletion-vector-v1 blobs."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from puffin.blobs.standard import DELETION_VECTOR_V1, REFERENCED_DATA_FILE
from puffin.cli._common import InputError, opened, printable, reading
from puffin.errors import UsageError

__all__ = ["SCHEMA_VERSION", "run"]

#: Version of the ``--json`` shape (docs/cli.md); bumped on any incompatible change.
SCHEMA_VERSION = 1

_CHUNK = 1 << 16  # positions formatted per write


@dataclass
class _Selected:
    blob_index: int | None
    referenced_data_file: str | None
    offset: int
    length: int
    positions: Any  # sorted int64 NumPy array


def _select(args: argparse.Namespace) -> list[_Selected]:
    if (args.offset is None) != (args.length is None):
        raise UsageError("--offset and --length go together")
    if args.offset is not None:
        from puffin.blobs.dv.files import read_deletion_vector

        with reading(args.file):
            dv = read_deletion_vector(
                args.file,
                args.offset,
                args.length,
                record_count=args.record_count,
                referenced_data_file=args.data_file,
            )
        return [_Selected(None, args.data_file, args.offset, args.length, dv.to_numpy())]
    if args.record_count is not None:
        raise UsageError("--record-count needs --offset and --length")
    from puffin.blobs.dv.files import decode_blob

    selected: list[_Selected] = []
    with opened(args.file) as reader:
        found: list[str] = []
        for index, meta in enumerate(reader.blobs):
            if meta.type != DELETION_VECTOR_V1:
                continue
            referenced = meta.properties.get(REFERENCED_DATA_FILE)
            found.append(referenced if referenced is not None else "(none)")
            if args.data_file is not None and referenced != args.data_file:
                continue
            dv = decode_blob(reader.read_blob(index), meta, index, f"blob {index}")
            selected.append(_Selected(index, referenced, meta.offset, meta.length, dv.to_numpy()))
    if not found:
        raise InputError(f"{args.file}: no {DELETION_VECTOR_V1} blob in the file")
    if not selected:
        raise InputError(
            f"{args.file}: no deletion vector for data file {args.data_file!r} "
            f"(the file has DVs for: {', '.join(printable(f) for f in found)})"
        )
    return selected


def _write_numbers(out: TextIO, values: Any) -> None:
    for start in range(0, len(values), _CHUNK):
        out.write("\n".join(map(str, values[start : start + _CHUNK].tolist())))
        out.write("\n")


def _runs(positions: Any) -> tuple[Any, Any]:
    """First and last position of each run of consecutive positions."""
    import numpy as np

    if len(positions) == 0:
        return positions, positions
    breaks = np.flatnonzero(np.diff(positions) != 1)
    starts = np.concatenate(([positions[0]], positions[breaks + 1]))
    ends = np.concatenate((positions[breaks], [positions[-1]]))
    return starts, ends


def _write_ranges(out: TextIO, positions: Any) -> None:
    starts, ends = _runs(positions)
    for begin in range(0, len(starts), _CHUNK):
        s = starts[begin : begin + _CHUNK].tolist()
        e = ends[begin : begin + _CHUNK].tolist()
        out.write("".join(f"{a}\n" if a == b else f"{a}-{b}\n" for a, b in zip(s, e, strict=True)))


def _write_json(out: TextIO, path: str, selected: list[_Selected]) -> None:
    # Streamed, so millions of positions never sit in memory as one JSON string.
    out.write("{\n")
    out.write(f'  "schema_version": {SCHEMA_VERSION},\n  "command": "dv",\n')
    out.write(f'  "file": {json.dumps(path)},\n  "deletion_vectors": [')
    for n, item in enumerate(selected):
        head = {
            "blob_index": item.blob_index,
            "referenced_data_file": item.referenced_data_file,
            "offset": item.offset,
            "length": item.length,
            "cardinality": len(item.positions),
        }
        out.write("," if n else "")
        out.write("\n    {")
        out.write(", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()))
        out.write(', "positions": [')
        positions = item.positions
        for start in range(0, len(positions), _CHUNK):
            if start:
                out.write(", ")
            out.write(", ".join(map(str, positions[start : start + _CHUNK].tolist())))
        out.write("]}")
    out.write("\n  ]\n}\n" if selected else "]\n}\n")


def run(args: argparse.Namespace) -> int:
    selected = _select(args)
    out = sys.stdout
    if args.format == "json":
        _write_json(out, args.file, selected)
        return 0
    for item in selected:
        if len(selected) > 1:
            name = item.referenced_data_file
            out.write(
                f"# {printable(name) if name is not None else '(no referenced-data-file)'} "
                f"({len(item.positions):,} positions)\n"
            )
        if args.format == "ranges":
            _write_ranges(out, item.positions)
        else:
            _write_numbers(out, item.positions)
    return 0
