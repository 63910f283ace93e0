"""``puffin cat``: one blob's payload, as bytes, to standard output or ``--output``."""

from __future__ import annotations

import argparse
import sys

from puffin.cli._common import is_terminal, opened, require_output
from puffin.errors import UsageError

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    if args.output is None and is_terminal(sys.stdout):
        # Binary on a terminal shows garbage and can drive it (escape sequences).
        raise UsageError(
            "refusing to write a blob's binary payload to a terminal: redirect standard "
            "output (> FILE) or pass --output FILE"
        )
    if args.output is not None:
        require_output(args.output)
    with opened(args.file) as reader:
        count = len(reader.blobs)
        if not -count <= args.blob < count:
            raise UsageError(
                f"blob index {args.blob} is out of range: {args.file} has "
                f"{count} blob{'' if count == 1 else 's'}"
            )
        data = reader.read_raw(args.blob) if args.raw else reader.read_blob(args.blob)
    if args.output is not None:
        with open(args.output, "wb") as out:
            out.write(data)
        return 0
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return 0
