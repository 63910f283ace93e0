"""Commands added by other packages: entry points in the group ``puffin.cli``.

An entry point names a ``register_cli(subparsers)`` function (``iceberg =
"puffin.iceberg.cli:register_cli"``).  Only the plugin that provides the command on the
command line is imported (the one whose entry-point name is the command word is tried
first), and all of them for the top-level help, so the built-in commands never pay for the
integrations.  The entry point's name is also the extra that plugin needs, unless the entry
point lists extras (``"mod:register_cli [extra]"``).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import TYPE_CHECKING, Any

from puffin.errors import MissingDependencyError
from puffin.support.deps import install_hint

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["GROUP", "global_options", "plugin_entry_points", "register_plugins"]

#: The entry-point group plugins register in.
GROUP = "puffin.cli"


class _NoExit(Exception):
    """A pre-parse error; the full parser reports it properly afterwards."""


class _GlobalParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # never print or exit while pre-parsing
        raise _NoExit(message)


def global_options(words: list[str]) -> argparse.Namespace:
    """The top-level options and the command word, read with argparse before the full parse.

    ``command`` is None when the command line names none (or is malformed before it).
    """
    parser = _GlobalParser(add_help=False, allow_abbrev=False)
    parser.add_argument("-h", "--help", action="store_true")
    parser.add_argument("--version", action="store_true")
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("--color", default="auto")
    parser.add_argument("command", nargs="?")
    try:
        found, _ = parser.parse_known_args(words)
    except _NoExit:
        found = argparse.Namespace(help=False, version=False, debug="--debug" in words)
        found.color, found.command = "auto", None
    return found


def plugin_entry_points() -> list[EntryPoint]:
    """The installed plugins, by name."""
    from importlib.metadata import entry_points  # 12 ms: only when plugins are wanted

    return sorted(entry_points(group=GROUP), key=lambda ep: ep.name)


def register_plugins(sub: Any, command: str | None, *, debug: bool) -> None:
    """Add the commands of the plugin providing ``command`` (every plugin when None).

    Raises :class:`MissingDependencyError` when ``command`` is not found and a plugin
    could not load because its extra is not installed.
    """
    eps = plugin_entry_points()
    if command is not None:
        eps.sort(key=lambda ep: ep.name != command)  # stable: the namesake first
    missing: MissingDependencyError | None = None
    for ep in eps:
        try:
            _register(ep, sub)
        except MissingDependencyError as exc:
            if command is None:
                _warn(f"the {ep.name} commands are not available: {exc}")
            missing = missing or exc
        except Exception as exc:  # a broken plugin must not break the built-in commands
            _warn(f"could not load the {ep.name} commands: {type(exc).__name__}: {exc}")
            if debug:
                traceback.print_exc()
        if command is not None and command in sub.choices:
            return
    if command is not None and missing is not None:
        raise missing


def _register(ep: EntryPoint, sub: Any) -> None:
    extra = ep.extras[0] if ep.extras else ep.name
    try:
        hook = ep.load()
    except ModuleNotFoundError as exc:
        name = exc.name or ""
        if name == "puffin" or name.startswith("puffin."):
            raise  # the plugin itself is broken or absent, not an extra
        raise MissingDependencyError(
            f"the {ep.name} commands need {name or 'a package'}, which is not installed: "
            f"{install_hint(extra)}"
        ) from exc
    hook(sub)


def _warn(message: str) -> None:
    from puffin.cli._style import colours_for

    colours = colours_for(sys.stderr, "auto")
    sys.stderr.write(f"puffin: {colours.yellow('warning')}: {message}\n")
