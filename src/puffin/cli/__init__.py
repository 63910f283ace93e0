"""The ``puffin`` command-line tool (also ``python -m puffin``).

Subcommands: ``inspect``, ``verify``, ``cat``, ``dv``, ``ndv``.  Run ``puffin COMMAND --help``
for each one's options and examples; docs/cli.md documents them and the ``--json`` shapes.

Exit codes: 0 success; 1 an input is invalid or unreadable (or ``verify`` found a problem);
2 usage error; 3 internal error (a bug: rerun with ``--debug`` for the traceback);
130 interrupted; 141 the reader of stdout went away (``puffin dv f | head``).

Adding a command group from another module (the hook)
-----------------------------------------------------
Integration modules named in :data:`PLUGIN_MODULES` (``puffin.iceberg``, ``puffin.spark``)
can add subcommands.  A module that exists and defines::

    def register_cli(subparsers: argparse._SubParsersAction) -> None:
        parser = subparsers.add_parser(
            "table", help="...", parents=[puffin.cli.common_options()])
        ...
        parser.set_defaults(func=run)      # run(args: argparse.Namespace) -> int

is imported when the command line names a command that is not built in (or asks for the
top-level help), and its ``register_cli`` is called with the top-level subparsers.  Modules
that do not exist are skipped silently; one that fails to import or register is skipped with
a one-line warning (the traceback with ``--debug``).  Keep the module's import light (import
pyiceberg/pyspark inside ``run``), so ``puffin --help`` stays fast.

The handler ``func(args)`` returns the exit code.  ``args.debug`` and ``args.color`` are
always set.  It may raise :class:`UsageError` (exit 2), :class:`InputError`,
:class:`puffin.PuffinError` or ``OSError`` (exit 1, message only); :func:`colours_for`
gives colour helpers that honour ``--color``, ``NO_COLOR`` and whether the stream is a
terminal.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from puffin.cli._common import InputError, UsageError
from puffin.cli._style import Colours, colours_for
from puffin.errors import PuffinError

__all__ = [
    "PLUGIN_MODULES",
    "Colours",
    "InputError",
    "UsageError",
    "build_parser",
    "colours_for",
    "common_options",
    "main",
]

#: Modules asked for a ``register_cli(subparsers)`` hook, in this order.
PLUGIN_MODULES: tuple[str, ...] = ("puffin.iceberg", "puffin.spark")

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


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

exit status: 0 ok, 1 invalid or unreadable input, 2 usage error, 3 internal error
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
non-negative integer equal to the estimate truncated, as Java and Trino write it.
One line per problem: FILE: blob N, offset O: message.  Exit 1 if any file is invalid.
"""

_CAT_EPILOG = """\
examples:
  puffin cat stats.puffin 0 > sketch.bin       decompressed payload of blob 0
  puffin cat --raw stats.puffin 0 | zstd -d    the stored (compressed) bytes
  puffin cat stats.puffin -1 | xxd | head      the last blob
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


def build_parser(*, load_plugins: bool = True, debug: bool = False) -> argparse.ArgumentParser:
    """The full argument parser (plugins included unless ``load_plugins`` is false)."""
    from puffin import __version__

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
    p.set_defaults(func=_lazy("puffin.cli._cat"))

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
        "--snapshot-id", type=_any_int, default=-1, help="snapshot-id of the blobs (default -1)"
    )
    p.add_argument(
        "--sequence-number",
        type=_any_int,
        default=-1,
        help="sequence-number of the blobs (default -1)",
    )
    p.add_argument(
        "--lg-k", type=int, default=12, help="log2 of the sketches' nominal entries (default 12)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/cli.md)")
    p.add_argument(
        "--batch-rows",
        type=_non_negative,
        default=128 * 1024,
        help="rows read per batch (default 131072); bounds memory",
    )
    p.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress line on stderr (default auto: on a terminal, for inputs taking > 1 s)",
    )
    p.set_defaults(func=_lazy("puffin.cli._ndv"))

    if load_plugins:
        _register_plugins(sub, debug=debug)
    return parser


BUILTIN_COMMANDS = frozenset({"inspect", "verify", "cat", "dv", "ndv"})


def _register_plugins(sub: Any, *, debug: bool) -> None:
    for name in PLUGIN_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                continue
            module = importlib.import_module(name)
            hook = getattr(module, "register_cli", None)
            if hook is not None:
                hook(sub)
        except Exception as exc:  # a broken integration must not break the built-in commands
            _warn(f"could not load the commands of {name}: {type(exc).__name__}: {exc}")
            if debug:
                traceback.print_exc()


def _command_word(argv: Sequence[str]) -> str | None:
    """The first word that is not a top-level option: the command (or None)."""
    skip_value = False
    for word in argv:
        if skip_value:
            skip_value = False
            continue
        if word == "--color":
            skip_value = True
            continue
        if word.startswith("-"):
            continue
        return word
    return None


def _warn(message: str) -> None:
    colours = colours_for(sys.stderr, "auto")
    sys.stderr.write(f"puffin: {colours.yellow('warning')}: {message}\n")


def _error(command: str | None, message: str, mode: str) -> None:
    colours = colours_for(sys.stderr, mode)
    prog = f"puffin {command}" if command else "puffin"
    sys.stderr.write(f"{prog}: {colours.red('error')}: {message}\n")


def describe_error(exc: BaseException) -> str:
    """A one-line message for an error, without a traceback."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename is not None else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in words
    command = _command_word(words)
    parser = build_parser(load_plugins=command not in BUILTIN_COMMANDS, debug=debug)
    try:
        args = parser.parse_args(words)
    except SystemExit as exc:  # --help, --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    debug = bool(getattr(args, "debug", False))
    mode = str(getattr(args, "color", "auto"))
    if not hasattr(args, "debug"):
        args.debug = debug
    if not hasattr(args, "color"):
        args.color = mode
    try:
        status = int(func(args) or 0)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # The reader of our output went away (`puffin dv f | head`): stop quietly, and keep
        # the interpreter's final flush from complaining about the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        _error(args.command, "interrupted", mode)
        return EXIT_INTERRUPTED
    except UsageError as exc:
        if debug:
            traceback.print_exc()
        _error(args.command, str(exc), mode)
        return EXIT_USAGE
    except (InputError, PuffinError, OSError) as exc:
        if debug:
            traceback.print_exc()
        _error(args.command, describe_error(exc), mode)
        return EXIT_INVALID
    except Exception as exc:
        if debug:
            traceback.print_exc()
        _error(
            args.command,
            f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
            "traceback, and please report it)",
            mode,
        )
        return EXIT_INTERNAL
