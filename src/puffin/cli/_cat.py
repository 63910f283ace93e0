"""``puffin cat``: one blob's payload, as bytes, to standard output."""

from __future__ import annotations

import argparse
import sys

from puffin.cli._common import UsageError, opened

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    with opened(args.file) as reader:
        count = len(reader.blobs)
        if not -count <= args.blob < count:
            raise UsageError(
                f"blob index {args.blob} is out of range: {args.file} has "
                f"{count} blob{'' if count == 1 else 's'}"
            )
        data = reader.read_raw(args.blob) if args.raw else reader.read_blob(args.blob)
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return 0
