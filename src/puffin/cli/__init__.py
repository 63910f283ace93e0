"""The ``puffin`` command-line tool (also ``python -m puffin``).

Subcommands: ``inspect``, ``verify``, ``cat``, ``dv``, ``ndv``, plus those of installed
plugins (``table`` from the iceberg extra, ``spark`` from the spark extra).  Run ``puffin
COMMAND --help`` for each one's options and examples; docs/cli.md documents them, the
``--json`` shapes and the exit statuses.

Exit statuses follow the error tree of :mod:`puffin.errors` (:func:`exit_status`): 0
success; 1 a :class:`~puffin.errors.PuffinError`, a table error, another integration error
or an ``OSError`` (or ``verify`` found a problem); 2 a usage error, a missing extra or an
environment that cannot run the job; 3 anything else (a bug: rerun with ``--debug``);
4 interrupted once a commit had landed (the message names the snapshot and what was left
undone); 130 interrupted (Ctrl-C or SIGTERM) before anything was committed; 141 the reader
of stdout went away (``puffin dv f | head``).

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
spelling (``--quiet`` says ``--no-progress``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

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
    InterruptedAfterCommit,
    MissingDependencyError,
    PuffinError,
    SetupError,
    UsageError,
)
from puffin.support.interrupts import forget_commits, last_commit

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
    "run",
]

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_COMMITTED_INTERRUPTED = 4
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
    if isinstance(exc, InterruptedAfterCommit):
        return EXIT_COMMITTED_INTERRUPTED
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


def _report(
    exc: BaseException, command: str | None, *, debug: bool, mode: str, note: str = ""
) -> int:
    """Write the one-line message for ``exc`` (and the traceback with --debug); ``note``
    follows it (what the command committed before the error)."""
    status = exit_status(exc)
    if status == EXIT_BROKEN_PIPE:
        # The reader of our output went away (`puffin dv f | head`): stop quietly, and keep
        # the interpreter's final flush from complaining about the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return status
    if debug:
        traceback.print_exc()
    if status == EXIT_COMMITTED_INTERRUPTED:
        message = f"interrupted after the commit landed: {exc}"
    elif status == EXIT_INTERRUPTED:
        message = "interrupted: nothing was committed and nothing written for it was kept"
    elif status == EXIT_INTERNAL:
        message = (
            f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
            "traceback, and please report it)"
        )
    else:
        message = describe_error(exc)
    write_error(command, message + note, mode)
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
    words = _attach_dash_values(list(sys.argv[1:] if argv is None else argv))
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
    if not args.debug:
        _quiet_pool_logs()
    forget_commits()
    _SIGNALLED.clear()
    try:
        with _terminate_as_interrupt():
            status = int(func(args) or 0)
            sys.stdout.flush()
        return status
    except (Exception, KeyboardInterrupt) as caught:
        error = _interrupt_behind(caught)
        if _SIGNALLED and not isinstance(error, KeyboardInterrupt):
            error = KeyboardInterrupt(f"signal {_SIGNALLED[-1]}")
        committed, snapshot_id = last_commit()
        if isinstance(error, KeyboardInterrupt) and committed:
            # After the library returned: the commit stands, only the report was cut.
            if not isinstance(error, InterruptedAfterCommit):
                error = InterruptedAfterCommit(snapshot_id, None)
        command = _command_path(args)
        note = ""
        if committed and not isinstance(error, KeyboardInterrupt):
            note = f" (snapshot {snapshot_id} had been committed before this error)"
        status = _report(error, command, debug=args.debug, mode=args.color, note=note)
        if getattr(args, "json", False) is True and status != EXIT_BROKEN_PIPE:
            _json_error(command, error, status)
        return status


# Options whose value may start with '-' (a negative age): argparse reads "-1d" as an option
# and says only "expected one argument"; as --older-than=-1d, the command's own check says
# what is wrong with the value.
_DASH_VALUES = frozenset({"--older-than"})


def _attach_dash_values(words: list[str]) -> list[str]:
    out: list[str] = []
    pending = False
    for word in words:
        if pending and word[:1] == "-" and word[1:2].isdigit():
            out[-1] = f"{out[-1]}={word}"
        else:
            out.append(word)
        pending = word in _DASH_VALUES
    return out


def run() -> None:
    """The ``puffin`` executable: :func:`main`, then exit with its status.

    Once the command has finished (and said what it did), Ctrl-C and SIGTERM are ignored
    while the interpreter tears down, so the process ends with that status: a handler would
    raise the interrupt inside whatever finalizer is running, and the signal's own action
    (which the interpreter restores near its end, and takes itself for an interrupt no
    handler caught) would report 130, "nothing was committed", after a commit that landed.
    An interrupt in the moment between the command's end and that is caught here too: the
    status stays the command's, or says whether a commit landed when it had none yet.
    """
    status: int | None = None
    while True:
        try:
            if status is None:
                status = main()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            for sig in (signal.SIGINT, signal.SIGTERM):
                # Ignored process-wide (a mask would hold only this thread; pyarrow's
                # threads would still take the signal), and the interpreter keeps it.
                signal.signal(sig, signal.SIG_IGN)
            break
        except KeyboardInterrupt as caught:
            if status is None:  # before main() guarded the command: while parsers load
                committed, snapshot_id = last_commit()
                error = InterruptedAfterCommit(snapshot_id, None) if committed else caught
                status = _report(error, None, debug=False, mode="auto")
    raise SystemExit(status)


def _quiet_pool_logs() -> None:
    """SQLAlchemy logs an exception that interrupts a connection's close, traceback and all,
    before it re-raises it: the command reports that interrupt in its one line instead
    (``--debug`` keeps the log)."""
    import logging

    logging.getLogger("sqlalchemy.pool").setLevel(logging.CRITICAL)


def _interrupt_behind(exc: BaseException) -> BaseException:
    """The ``KeyboardInterrupt`` an error was raised from, if any (Ctrl-C during an import
    surfaces as the ``RuntimeError`` of a class being built), else the error itself."""
    seen = exc
    for _ in range(10):
        if isinstance(seen, KeyboardInterrupt):
            return seen
        following = seen.__cause__ or seen.__context__
        if following is None:
            break
        seen = following
    return exc


def _json_error(command: str | None, exc: BaseException, status: int) -> None:
    """The error document a ``--json`` command prints on stdout when it fails (besides the
    line on stderr), so a script reading stdout always gets a document."""
    from puffin.cli._common import error_dict
    from puffin.cli.output import print_json

    error = {**error_dict(exc), "exit_status": status}
    if isinstance(exc, InterruptedAfterCommit):
        error.update(committed=True, snapshot_id=exc.snapshot_id, remaining=exc.remaining)
    elif isinstance(exc, KeyboardInterrupt):
        error.update(committed=False, message="interrupted")
    with contextlib.suppress(OSError):
        print_json(command or "puffin", {"ok": False, "error": error})
        sys.stdout.flush()


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM ends a command as Ctrl-C does (a ``KeyboardInterrupt``): its cleanup runs and
    it says what it committed, instead of the process vanishing mid-write."""
    def interrupt(signum: int, frame: Any) -> None:
        _SIGNALLED.append(signum)
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread (an embedding program): leave it as it is
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


#: Signals the running command received: an error raised while one was being handled (a
#: library that turns the KeyboardInterrupt into its own error, as pydantic does while it
#: builds a class) is that interrupt.
_SIGNALLED: list[int] = []
