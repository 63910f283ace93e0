"""The ``puffin`` command-line tool (also ``python -m puffin``).

Subcommands: ``inspect``, ``verify``, ``cat``, ``dv``, ``ndv``, plus those of installed
plugins (``table`` from the iceberg extra, ``spark`` from the spark extra).  Run ``puffin
COMMAND --help`` for each one's options and examples; docs/cli.md documents them, the
``--json`` shapes and the exit statuses.

Exit statuses follow the error tree of :mod:`puffin.errors` (:func:`exit_status`): 0
success; 1 a :class:`~puffin.errors.PuffinError`, a table error, another integration error
or an ``OSError`` (or ``verify`` found a problem); 2 a usage error, a missing extra or an
environment that cannot run the job; 3 anything else (a bug: rerun with ``--debug``);
130 interrupted; 141 the reader of stdout went away (``puffin dv f | head``).

Adding a command group from another package (the hook)
------------------------------------------------------
Declare an entry point in the group ``puffin.cli`` (see :mod:`puffin.cli._plugins`)::

    [project.entry-points."puffin.cli"]
    iceberg = "puffin.iceberg.cli:register_cli"

that names a function::

    def register_cli(subparsers: argparse._SubParsersAction) -> None:
        parser = subparsers.add_parser(
            "table", help="...", parents=[puffin.cli.common_options()])
        ...
        parser.set_defaults(func=run)      # run(args: argparse.Namespace) -> int

It is loaded when the command line names a command that is not built in (or asks for the
top-level help).  A plugin whose extra is missing is one line and exit status 2; one that
fails otherwise is skipped with a one-line warning (the traceback with ``--debug``).  Keep
the plugin's import light (import pyiceberg/pyspark inside ``run``), so ``puffin --help``
stays fast.

The handler ``func(args)`` returns the exit code.  ``args.debug`` and ``args.color`` are
always set.  It raises errors of :mod:`puffin.errors` (or ``OSError``), which become one
line on stderr and the exit status above; :func:`colours_for` gives colour helpers that
honour ``--color``, ``NO_COLOR`` and whether the stream is a terminal;
:func:`add_progress_option` gives a long-running command the one ``--progress/--no-progress``
spelling.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from puffin.cli._common import InputError, write_error
from puffin.cli._parser import (
    BUILTIN_COMMANDS,
    add_progress_option,
    build_builtin_parser,
    common_options,
)
from puffin.cli._plugins import global_options, register_plugins
from puffin.cli._style import Colours, colours_for
from puffin.errors import (
    IntegrationError,
    MissingDependencyError,
    PuffinError,
    SetupError,
    UsageError,
)

__all__ = [
    "BUILTIN_COMMANDS",
    "Colours",
    "InputError",
    "UsageError",
    "add_progress_option",
    "build_parser",
    "colours_for",
    "common_options",
    "describe_error",
    "exit_status",
    "main",
]

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def build_parser(
    *, load_plugins: bool = True, debug: bool = False, command: str | None = None
) -> argparse.ArgumentParser:
    """The full argument parser; with ``load_plugins``, the plugin providing ``command``
    (every plugin when ``command`` is None) adds its commands."""
    parser, sub = build_builtin_parser()
    if load_plugins and command not in BUILTIN_COMMANDS:
        register_plugins(sub, command, debug=debug)
    return parser


def exit_status(exc: BaseException) -> int:
    """The exit status for an error that ended a command (docs/cli.md has the table)."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        return EXIT_BROKEN_PIPE
    if isinstance(exc, (UsageError, MissingDependencyError, SetupError)):
        return EXIT_USAGE
    if isinstance(exc, (PuffinError, IntegrationError, OSError)):
        return EXIT_INVALID
    return EXIT_INTERNAL


def describe_error(exc: BaseException) -> str:
    """A one-line message for an error, without a traceback."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename is not None else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


def _report(exc: BaseException, command: str | None, *, debug: bool, mode: str) -> int:
    """Write the one-line message for ``exc`` (and the traceback with --debug)."""
    status = exit_status(exc)
    if status == EXIT_BROKEN_PIPE:
        # The reader of our output went away (`puffin dv f | head`): stop quietly, and keep
        # the interpreter's final flush from complaining about the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return status
    if debug:
        traceback.print_exc()
    if status == EXIT_INTERRUPTED:
        message = "interrupted"
    elif status == EXIT_INTERNAL:
        message = (
            f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
            "traceback, and please report it)"
        )
    else:
        message = describe_error(exc)
    write_error(command, message, mode)
    return status


def _command_path(args: argparse.Namespace) -> str | None:
    """``table delete`` for ``puffin table delete``: each group keeps its chosen subcommand
    in ``<group>_command`` (``table_command``, ``stats_command``)."""
    words: list[str] = []
    word = getattr(args, "command", None)
    while isinstance(word, str) and word:
        words.append(word)
        word = getattr(args, f"{word}_command", None)
    return " ".join(words) or None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    early = global_options(words)
    try:
        parser = build_parser(debug=early.debug, command=early.command)
    except MissingDependencyError as exc:
        return _report(exc, early.command, debug=early.debug, mode=early.color)
    try:
        args = parser.parse_args(words)
    except SystemExit as exc:  # --help, --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args.debug = bool(getattr(args, "debug", False))
    args.color = str(getattr(args, "color", "auto"))
    try:
        status = int(func(args) or 0)
        sys.stdout.flush()
        return status
    except (Exception, KeyboardInterrupt) as exc:
        return _report(exc, _command_path(args), debug=args.debug, mode=args.color)
