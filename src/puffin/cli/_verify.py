"""``puffin verify``: every check the library has, one line per problem."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from puffin.cli._blobs import DV_TYPE, THETA_TYPE, check_blob
from puffin.cli._common import error_dict, printable, write_json
from puffin.cli._style import colours_for

__all__ = ["SCHEMA_VERSION", "run", "verify_file"]

#: Version of the ``--json`` shape (docs/cli.md); bumped on any incompatible change.
SCHEMA_VERSION = 1


def _problem(exc: BaseException, *, blob_index: int | None, offset: int | None) -> dict[str, Any]:
    found = error_dict(exc)
    if found["blob_index"] is None:
        found["blob_index"] = blob_index
    if found["offset"] is None:
        found["offset"] = offset
    return found


def verify_file(path: str) -> dict[str, Any]:
    """Check one file; the result is one entry of ``--json``'s ``files`` list."""
    import puffin

    problems: list[dict[str, Any]] = []
    try:
        reader = puffin.open(path)
    except BrokenPipeError:
        raise
    except (ValueError, OSError) as exc:  # PuffinError is a ValueError
        problems.append(_problem(exc, blob_index=None, offset=None))
        return {"file": path, "valid": False, "blob_count": None, "problems": problems}
    with reader:
        blobs = reader.blobs
        dv_files: dict[str, int] = {}
        for index, meta in enumerate(blobs):
            try:
                data = reader.read_blob(index)  # decompresses: every codec frame is checked
                if meta.type in (THETA_TYPE, DV_TYPE):
                    check_blob(data, meta, index)
                if meta.type == DV_TYPE:
                    _check_one_dv_per_data_file(meta, index, dv_files)
            except BrokenPipeError:
                raise
            except (ValueError, OSError) as exc:
                problems.append(_problem(exc, blob_index=index, offset=meta.offset))
    return {"file": path, "valid": not problems, "blob_count": len(blobs), "problems": problems}


def _check_one_dv_per_data_file(meta: Any, index: int, seen: dict[str, int]) -> None:
    """Two DVs for one data file are ambiguous (``puffin.read_deletion_vectors`` refuses them)."""
    from puffin.errors import DeletionVectorError

    referenced = meta.properties.get("referenced-data-file")
    if referenced is None:
        return
    if referenced in seen:
        raise DeletionVectorError(
            f"a second deletion vector for data file {referenced!r} (the first is blob "
            f"{seen[referenced]})",
            blob_index=index,
            field="referenced-data-file",
        )
    seen[referenced] = index


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
    results = [verify_file(path) for path in args.files]
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
