"""The argument parser of the built-in commands, their options and help texts.

Argument types validate here, so a bad option is a usage error (exit status 2) with
argparse's message before any work starts.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from puffin.errors import UsageError

__all__ = ["BUILTIN_COMMANDS", "add_progress_option", "build_builtin_parser", "common_options"]

BUILTIN_COMMANDS = frozenset({"inspect", "verify", "cat", "dv", "ndv"})

_HELP_FORMATTER = argparse.RawDescriptionHelpFormatter


def common_options() -> argparse.ArgumentParser:
    """A parent parser with ``--debug`` and ``--color``, for subcommands (``parents=[...]``).

    The defaults are suppressed so an option given before the command is not reset by the
    subcommand's parser.
    """
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("common options")
    group.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the Python traceback on errors",
    )
    group.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default=argparse.SUPPRESS,
        help="colour the output: auto (default: only on a terminal, unless NO_COLOR is set), "
        "always or never",
    )
    return parent


def add_progress_option(parser: argparse.ArgumentParser, when: str = "") -> None:
    """``--progress``/``--no-progress`` (``--quiet`` says the latter): the one spelling of
    every long-running command.

    ``args.progress`` is True (draw even off a terminal), False (never), or None, the
    default: draw when stderr is a terminal (``Progress(enabled=None)``); a ``puffin table``
    command given ``--json`` makes None False.
    """
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="force the progress line on stderr, or turn it off (default: only when stderr "
        f"is a terminal{', ' + when if when else ''})",
    )
    parser.add_argument(
        "--quiet",
        dest="progress",
        action="store_const",
        const=False,
        help="no progress line (as --no-progress)",
    )


def _lazy(module: str, function: str = "run") -> Callable[[argparse.Namespace], int]:
    """A handler that imports its module only when the command runs (keeps --help fast)."""

    def handler(args: argparse.Namespace) -> int:
        run: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(module), function
        )
        return run(args)

    return handler


def _positions_limit(text: str) -> int | None:
    if text == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or 'all', got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a count >= 0 or 'all', got {value}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def _any_int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _java_long(text: str) -> int:
    """A snapshot id or sequence number: a Java long, as the footer stores it."""
    value = _any_int(text)
    if not -(1 << 63) <= value < 1 << 63:
        raise argparse.ArgumentTypeError(f"expected a 64-bit signed integer, got {text!r}")
    return value


def _lg_k(text: str) -> int:
    """``--lg-k``: an integer that the sketch library's own check accepts."""
    from puffin.blobs.theta.files import check_lg_k

    value = _any_int(text)
    try:
        check_lg_k(value)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _std_devs(text: str) -> int:
    if text not in ("1", "2", "3"):
        raise argparse.ArgumentTypeError(f"expected 1, 2 or 3, got {text!r}")
    return int(text)


_MAIN_EPILOG = """\
examples:
  puffin inspect stats.puffin                 blobs, theta estimates, DV cardinalities
  puffin inspect --json stats.puffin | jq .   the same as one JSON object
  puffin verify metadata/*.puffin             every check; exit 1 if any file is invalid
  puffin cat stats.puffin 0 > blob0.bin       one blob's payload
  puffin dv deletes.puffin | head             deleted row positions
  puffin ndv data/*.parquet -o stats.puffin   sketch Parquet columns, write a stats file

exit status: 0 ok, 1 invalid or unreadable input, 2 usage error (or a missing extra),
3 internal error
"""

_INSPECT_EPILOG = """\
examples:
  puffin inspect stats.puffin
  puffin inspect --json stats.puffin
  puffin inspect --positions all deletes.puffin      list every deleted position
  puffin inspect --std-devs 3 stats.puffin           theta bounds at 3 standard deviations

Theta blobs (apache-datasketches-theta-v1) show the decoded estimate, its bounds and the
retained count beside the 'ndv' property; deletion-vector-v1 blobs show the referenced data
file, the cardinality and the first positions.  A blob that does not decode is reported
(exit status 1) after the rest of the file is shown.
"""

_VERIFY_EPILOG = """\
examples:
  puffin verify stats.puffin
  puffin verify --json metadata/*.puffin > report.json
  puffin verify -q a.puffin b.puffin && echo valid

Checks: magic, footer size and flags, footer JSON, blob ranges and codecs; every blob
decompressed; deletion-vector-v1: footer rules (snapshot-id and sequence-number -1, no codec,
referenced-data-file, cardinality), length, magic, CRC, Roaring body and cardinality;
apache-datasketches-theta-v1: the sketch decodes (seed hash included) and 'ndv' is a
decimal Java long equal to what an Iceberg writer records for the sketch.
One line per problem: FILE, blob N, offset O, field F: ErrorType: message (the parts that
are known), and FILE: OK (N blobs) for a valid file.  Exit 1 if any file is invalid.
"""

_CAT_EPILOG = """\
examples:
  puffin cat stats.puffin 0 > sketch.bin       decompressed payload of blob 0
  puffin cat stats.puffin 0 -o sketch.bin      the same, without a redirect
  puffin cat --raw stats.puffin 0 | zstd -d    the stored (compressed) bytes
  puffin cat stats.puffin -1 | xxd | head      the last blob

The payload is binary: cat refuses to write it to a terminal (exit status 2); redirect
standard output or pass --output.
"""

_DV_EPILOG = """\
examples:
  puffin dv deletes.puffin                           every DV's positions, one per line
  puffin dv deletes.puffin --data-file s3://b/t/data/f.parquet --format ranges
  puffin dv deletes.puffin --format json | jq '.deletion_vectors[0].cardinality'
  puffin dv deletes.puffin --offset 4 --length 50    one DV by its manifest range
                                                     (content_offset, content_size_in_bytes)

--format lines prints one position per line; with several DVs, each DV's positions follow a
'# DATA-FILE (N positions)' line.  --format ranges prints runs as START-END (inclusive) or
START.  --format json prints one object (see docs/cli.md).
"""

_NDV_EPILOG = """\
examples:
  puffin ndv data/*.parquet                          estimates for every column
  puffin ndv part-0.parquet --columns id,name --json
  puffin ndv data/*.parquet -o stats.puffin --snapshot-id 3055729675574597004 \\
      --sequence-number 1

Columns are sketched as Iceberg would: each value converted with Iceberg's single-value
serialization for the column's Iceberg type (derived from the Arrow type), hashed into an
apache-datasketches-theta-v1 sketch; nulls are skipped.  The field id is the Parquet field id
(PARQUET:field_id) when the file has one, else the column's position + 1.  All files must
have the same types for the chosen columns.  Files are read one batch at a time.
"""


_Add = Callable[[str, str, str, str], argparse.ArgumentParser]


def build_builtin_parser() -> tuple[argparse.ArgumentParser, Any]:
    """The top-level parser with the built-in commands, and its subparsers (for plugins)."""
    from puffin.version import __version__

    parser = argparse.ArgumentParser(
        prog="puffin",
        description="Inspect, verify and write Apache Iceberg Puffin files.",
        epilog=_MAIN_EPILOG,
        formatter_class=_HELP_FORMATTER,
    )
    parser.add_argument("--version", action="version", version=f"puffin {__version__}")
    parser.add_argument(
        "--debug", action="store_true", default=False, help="show the Python traceback on errors"
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the output (default auto: only on a terminal, unless NO_COLOR is set)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    common = common_options()

    def add(name: str, help_text: str, description: str, epilog: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=help_text,
            description=description,
            epilog=epilog,
            parents=[common],
            formatter_class=_HELP_FORMATTER,
        )

    for add_command in (_add_inspect, _add_verify, _add_cat, _add_dv, _add_ndv):
        add_command(add)
    return parser, sub


def _add_inspect(add: _Add) -> None:
    p = add(
        "inspect",
        "show a Puffin file's footer and blobs",
        "Show the file's properties, footer size and every blob, with decoded theta sketch "
        "estimates and deletion-vector contents.",
        _INSPECT_EPILOG,
    )
    p.add_argument("file", metavar="FILE", help="a Puffin file")
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/cli.md)")
    p.add_argument(
        "--positions",
        metavar="N|all",
        type=_positions_limit,
        default=10,
        help="deleted positions to show per DV (default 10; 'all' for every one)",
    )
    p.add_argument(
        "--std-devs",
        metavar="{1,2,3}",
        type=_std_devs,
        default=2,
        help="standard deviations of the theta bounds (default 2, about 95%%)",
    )
    p.set_defaults(func=_lazy("puffin.cli._inspect"))


def _add_verify(add: _Add) -> None:
    p = add(
        "verify",
        "check Puffin files thoroughly; exit 1 if any is invalid",
        "Run every check the library has on each file and print one line per problem.",
        _VERIFY_EPILOG,
    )
    p.add_argument("files", metavar="FILE", nargs="+", help="Puffin files")
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/cli.md)")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="print problems only, not the OK lines"
    )
    p.set_defaults(func=_lazy("puffin.cli._verify"))


def _add_cat(add: _Add) -> None:
    p = add(
        "cat",
        "write a blob's payload to stdout",
        "Write one blob's payload to standard output, decompressed unless --raw.",
        _CAT_EPILOG,
    )
    p.add_argument("file", metavar="FILE", help="a Puffin file")
    p.add_argument(
        "blob", metavar="BLOB", type=_any_int, help="blob index in footer order (-1 = last)"
    )
    p.add_argument("--raw", action="store_true", help="the stored bytes, not decompressed")
    p.add_argument(
        "-o", "--output", metavar="OUT", help="write the payload to OUT instead of stdout"
    )
    p.set_defaults(func=_lazy("puffin.cli._cat"))


def _add_dv(add: _Add) -> None:
    p = add(
        "dv",
        "print the deleted positions of deletion vectors",
        "Print the row positions that deletion-vector-v1 blobs mark as deleted.",
        _DV_EPILOG,
    )
    p.add_argument("file", metavar="FILE", help="a Puffin file (or any file, with --offset)")
    p.add_argument(
        "--data-file",
        metavar="PATH",
        help="only the DV whose referenced-data-file is PATH (with --offset: the expected one)",
    )
    p.add_argument(
        "--format",
        choices=("lines", "json", "ranges"),
        default="lines",
        help="output format (default lines)",
    )
    p.add_argument(
        "--offset",
        metavar="N",
        type=_non_negative,
        help="read one DV at this byte offset without the footer (needs --length)",
    )
    p.add_argument(
        "--length", metavar="M", type=_non_negative, help="the DV's length in bytes (with --offset)"
    )
    p.add_argument(
        "--record-count",
        metavar="N",
        type=_non_negative,
        help="with --offset: the cardinality the manifest records; checked against the DV",
    )
    p.set_defaults(func=_lazy("puffin.cli._dv"))


def _add_ndv(add: _Add) -> None:
    p = add(
        "ndv",
        "sketch Parquet columns; estimate distinct values; write a stats file",
        "Build apache-datasketches-theta-v1 sketches of Parquet columns (needs pyarrow), "
        "print the estimates, and with -o write them to a Puffin statistics file.",
        _NDV_EPILOG,
    )
    p.add_argument("files", metavar="FILE.parquet", nargs="+", help="Parquet files")
    p.add_argument(
        "--columns", metavar="A,B", help="comma-separated column names (default: every column)"
    )
    p.add_argument("-o", "--output", metavar="OUT.puffin", help="write a Puffin statistics file")
    p.add_argument(
        "--snapshot-id", type=_java_long, default=-1, help="snapshot-id of the blobs (default -1)"
    )
    p.add_argument(
        "--sequence-number",
        type=_java_long,
        default=-1,
        help="sequence-number of the blobs (default -1)",
    )
    p.add_argument(
        "--lg-k",
        type=_lg_k,
        default=12,
        help="log2 of the sketches' nominal entries (default 12)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/cli.md)")
    p.add_argument(
        "--batch-rows",
        type=_non_negative,
        default=128 * 1024,
        help="rows read per batch (default 131072); bounds memory",
    )
    add_progress_option(p, "for inputs taking over a second")
    p.set_defaults(func=_lazy("puffin.cli._ndv"))
