"""``puffin verify``: every check the library has, one line per problem."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from puffin.cli._common import not_regular, printable, write_error, write_json
from puffin.cli._style import colours_for

__all__ = ["SCHEMA_VERSION", "check_file", "run"]

#: Version of the ``--json`` shape (docs/cli.md); bumped on any incompatible change.
SCHEMA_VERSION = 1


def check_file(path: str) -> dict[str, Any]:
    """Check one file with :func:`puffin.verify_file`; one entry of ``--json``'s ``files``.

    ``blob_count`` is the footer's, or None when the footer cannot be read.
    """
    from puffin.blobs.verify import verify_file_counted

    problems, blob_count = verify_file_counted(path)
    entries = [
        {
            "type": p.error,
            "message": p.message,
            "blob_index": p.blob_index,
            "offset": p.offset,
            "field": p.field,
        }
        for p in problems
    ]
    del problems  # the entries say it all: not both at once
    if entries and entries[0]["type"] == "InvalidFileError":
        from puffin.cli._sniff import format_hint  # what the file is, as the others say

        entries[0]["message"] = f"{entries[0]['message']}{format_hint(path)}"
    return {
        "file": path,
        "valid": not entries,
        "blob_count": blob_count,
        "problems": entries,
    }


def _where(path: str, problem: dict[str, Any]) -> str:
    parts = [printable(path)]
    if problem["blob_index"] is not None:
        parts.append(f"blob {problem['blob_index']}")
    if problem["offset"] is not None:
        parts.append(f"offset {problem['offset']}")
    if problem["field"] is not None:
        parts.append(f"field {printable(problem['field'])}")
    return ", ".join(parts)


def run(args: argparse.Namespace) -> int:
    # A FIFO, a directory, a device: refused at once by the library's own check, and in the
    # text output an error on stderr (naming the file), not a problem line; still invalid.
    refused = {path: error for path in args.files if (error := not_regular(path)) is not None}
    results = [check_file(path) for path in args.files]
    valid = all(r["valid"] for r in results)
    if args.json:
        write_json(
            {
                "schema_version": SCHEMA_VERSION,
                "command": "verify",
                "valid": valid,
                "files": results,
            }
        )
        return 0 if valid else 1
    c = colours_for(sys.stdout, args.color)
    for result in results:
        if result["file"] in refused:
            write_error("verify", str(refused[result["file"]]), args.color)
            continue
        if result["valid"]:
            if not args.quiet:
                n = result["blob_count"]
                sys.stdout.write(
                    f"{printable(result['file'])}: {c.green('OK')} "
                    f"({n} blob{'' if n == 1 else 's'})\n"
                )
            continue
        for problem in result["problems"]:
            what = f"{problem['type']}: {printable(problem['message'])}"
            sys.stdout.write(f"{_where(result['file'], problem)}: {c.red(what)}\n")
    if not args.quiet and len(results) > 1:
        bad = sum(not r["valid"] for r in results)
        summary = f"{len(results) - bad} of {len(results)} files valid"
        sys.stdout.write(f"{c.green(summary) if bad == 0 else c.red(summary)}\n")
    return 0 if valid else 1
