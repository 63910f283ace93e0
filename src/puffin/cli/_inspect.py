"""``puffin inspect``: the footer and every blob, with decoded theta and DV contents."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from puffin.blobs.standard import APACHE_DATASKETCHES_THETA_V1, DELETION_VECTOR_V1
from puffin.cli._blobs import dv_info, theta_info
from puffin.cli._common import InputError, error_dict, opened, printable, write_json
from puffin.cli._style import Colours, colours_for
from puffin.layout import MIN_FOOTER_SIZE

__all__ = ["SCHEMA_VERSION", "describe", "failed", "run"]

#: Version of the ``--json`` shape (docs/cli.md); bumped on any incompatible change.
SCHEMA_VERSION = 1


def describe(path: str, *, positions: int | None, std_devs: int) -> dict[str, Any]:
    """The inspect report of one file, as ``--json`` prints it."""
    with opened(path) as reader:
        blobs = list(_entries(reader, positions=positions, std_devs=std_devs))
        return {
            **_head(path, reader),
            "blobs": blobs,
            "valid": all(b["error"] is None for b in blobs),
        }


def _head(path: str, reader: Any) -> dict[str, Any]:
    """The report's fields about the file and its footer (everything but the blobs)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "inspect",
        "file": path,
        "file_size": reader.file_size,
        "footer_size": reader.footer_size,
        "footer_payload_size": reader.footer_size - MIN_FOOTER_SIZE,
        "footer_compressed": bool(reader.footer_compressed),
        "properties": reader.properties,
        "blob_count": len(reader.blobs),
    }


def _entries(reader: Any, *, positions: int | None, std_devs: int) -> Iterator[dict[str, Any]]:
    """Each blob's report entry, in footer order, its theta or DV decoded (or its error)."""
    for index, meta in enumerate(reader.blobs):
        entry: dict[str, Any] = {
            "index": index,
            "type": meta.type,
            "fields": list(meta.fields),
            "snapshot_id": meta.snapshot_id,
            "sequence_number": meta.sequence_number,
            "offset": meta.offset,
            "length": meta.length,
            "compression_codec": meta.compression_codec,
            "properties": dict(meta.properties),
            "theta": None,
            "deletion_vector": None,
            "error": None,
        }
        if meta.type in (APACHE_DATASKETCHES_THETA_V1, DELETION_VECTOR_V1):
            try:
                data = reader.read_blob(index)
                if meta.type == APACHE_DATASKETCHES_THETA_V1:
                    entry["theta"] = theta_info(data, meta, index, std_devs=std_devs)
                else:
                    entry["deletion_vector"] = dv_info(data, meta, index, limit=positions)
            except (ValueError, OSError) as exc:  # PuffinError is a ValueError
                if isinstance(exc, BrokenPipeError):
                    raise
                entry["error"] = error_dict(exc)
        yield entry


def failed(path: str, exc: InputError) -> dict[str, Any]:
    """The ``--json`` report of a file whose footer cannot be read, as ``verify --json``
    reports one: the error in the shape of a blob's ``error``, with the format hint."""
    error = error_dict(exc.__cause__ if exc.__cause__ is not None else exc)
    error["message"] += exc.hint
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "inspect",
        "file": path,
        "valid": False,
        "error": error,
    }


def run(args: argparse.Namespace) -> int:
    if not args.json:  # each blob written as it is read: no report of every blob held
        valid = True
        out, c = sys.stdout, colours_for(sys.stdout, args.color)
        with opened(args.file) as reader:
            render_head(_head(args.file, reader), out, c)
            for blob in _entries(reader, positions=args.positions, std_devs=args.std_devs):
                render_blob(blob, out, c)
                valid = valid and blob["error"] is None
        return 0 if valid else 1
    try:
        with opened(args.file) as reader:
            return _stream_json(args, reader)
    except InputError as exc:  # the footer cannot be read: nothing was written yet
        write_json(failed(args.file, exc))
        return 1


def _stream_json(args: argparse.Namespace, reader: Any) -> int:
    """The ``--json`` report written a blob at a time (the report of a footer of 200,000
    blobs, held whole, took 400 MiB): the same document as :func:`describe`'s, ``valid``
    after the blobs."""
    import json

    out = sys.stdout
    ascii_only = (getattr(out, "encoding", None) or "").lower().replace("-", "") != "utf8"

    def text(value: Any, indent: str) -> str:
        dumped = json.dumps(value, indent=2, ensure_ascii=ascii_only)
        return dumped.replace("\n", "\n" + indent)

    head = _head(args.file, reader)
    out.write("{\n" + "".join(f"  {json.dumps(k)}: {text(v, '  ')},\n" for k, v in head.items()))
    out.write('  "blobs": [')
    valid = True
    entries = _entries(reader, positions=args.positions, std_devs=args.std_devs)
    for index, entry in enumerate(entries):
        out.write(("," if index else "") + "\n    " + text(entry, "    "))
        valid = valid and entry["error"] is None
    out.write(("\n  " if head["blob_count"] else "") + f'],\n  "valid": {json.dumps(valid)}\n}}\n')
    return 0 if valid else 1


# --- human output ------------------------------------------------------------------------

_LABEL_WIDTH = 17


def _number(value: float) -> str:
    """A float shown to a useful precision, integers without a fraction."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.2f}"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def render(report: dict[str, Any], out: Any, c: Colours) -> None:
    """Write the aligned human-readable form of an inspect report."""
    render_head(report, out, c)
    for blob in report["blobs"]:
        render_blob(blob, out, c)


def _writers(out: Any, c: Colours) -> tuple[Any, Any]:
    """``line(label, value)`` and ``properties(props)``, writing aligned lines to ``out``."""

    def line(label: str, value: str) -> None:
        out.write(f"  {c.cyan(label.ljust(_LABEL_WIDTH))}{value}\n")

    def properties(props: dict[str, str]) -> None:
        if not props:
            line("properties", c.dim("(none)"))
            return
        width = max(len(printable(k)) for k in props)
        for i, (key, value) in enumerate(props.items()):
            text = f"{printable(key).ljust(width)} = {printable(value)}"
            if i == 0:
                line("properties", text)
            else:
                out.write(f"  {' ' * _LABEL_WIDTH}{text}\n")

    return line, properties


def render_head(report: dict[str, Any], out: Any, c: Colours) -> None:
    """The file's lines of the human-readable form (all but the blobs)."""
    line, properties = _writers(out, c)
    out.write(f"{c.bold(printable(report['file']))}\n")
    line("file size", _plural(report["file_size"], "byte"))
    compressed = "lz4-compressed" if report["footer_compressed"] else "uncompressed"
    line(
        "footer size",
        f"{_plural(report['footer_size'], 'byte')} "
        f"(payload {report['footer_payload_size']:,}, {compressed})",
    )
    properties(report["properties"])
    line("blobs", f"{report['blob_count']:,}")


def render_blob(blob: dict[str, Any], out: Any, c: Colours) -> None:
    """One blob's lines of the human-readable form."""
    line, properties = _writers(out, c)
    out.write("\n")
    title = f"blob {blob['index']}"
    out.write(f"{c.bold(title)}  {c.bold(printable(blob['type']))}\n")
    line("fields", "[" + ", ".join(str(f) for f in blob["fields"]) + "]")
    line("snapshot-id", str(blob["snapshot_id"]))
    line("sequence-number", str(blob["sequence_number"]))
    line("offset", f"{blob['offset']:,}")
    line("length", _plural(blob["length"], "byte"))
    line("codec", printable(blob["compression_codec"] or "") or c.dim("none"))
    properties(blob["properties"])
    if blob["theta"] is not None:
        _render_theta(blob["theta"], line, c)
    if blob["deletion_vector"] is not None:
        _render_dv(blob["deletion_vector"], line, c)
    if blob["error"] is not None:
        err = blob["error"]
        line(c.red("error"), c.red(f"{err['type']}: {printable(err['message'])}"))


def _render_theta(theta: dict[str, Any], line: Any, c: Colours) -> None:
    if theta["ndv"] is None:
        line("ndv", c.dim("(no ndv property)"))
    else:
        verdict = (
            c.green("matches the estimate")
            if theta["ndv_matches_estimate"]
            else c.yellow(f"estimate truncated is {int(theta['estimate']):,}")
        )
        line("ndv", f"{theta['ndv']:,} ({verdict})")
    devs = theta["std_devs"]
    line(
        "estimate",
        f"{_number(theta['estimate'])} ({_number(theta['lower_bound'])} to "
        f"{_number(theta['upper_bound'])} at {devs} std dev{'s' if devs != 1 else ''})",
    )
    mode = "estimation mode" if theta["estimation_mode"] else "exact"
    line(
        "retained",
        f"{_plural(theta['num_retained'], 'entry').replace('entrys', 'entries')}, "
        f"theta {theta['theta']:.6g} ({mode})",
    )


def _render_dv(dv: dict[str, Any], line: Any, c: Colours) -> None:
    referenced = dv["referenced_data_file"]
    line("data file", printable(referenced) if referenced is not None else c.dim("(none)"))
    line("cardinality", f"{dv['cardinality']:,}")
    shown = dv["positions"]
    text = ", ".join(str(p) for p in shown) if shown else c.dim("(none)")
    if not dv["positions_complete"]:
        text += c.dim(
            f"  … first {len(shown):,} of {dv['cardinality']:,} (--positions all for every one)"
        )
    line("positions", text)
