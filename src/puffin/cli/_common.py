"""Helpers shared by the subcommands: input errors, safe text, blob selection."""

from __future__ import annotations

import contextlib
import os
import sys
import unicodedata
from collections.abc import Iterator
from typing import Any, TextIO

from puffin.cli._style import colours_for
from puffin.errors import IntegrationError, InvalidFileError, PuffinError, UsageError

__all__ = [
    "InputError",
    "error_dict",
    "not_regular",
    "opened",
    "parse_size",
    "printable",
    "reading",
    "require_output",
    "require_regular",
    "write_error",
    "write_json",
]


class InputError(IntegrationError):
    """An input file is invalid or unreadable (exit status 1); the message names the file.

    The commands wrap library and I/O errors in it to put the file's name first.  ``hint``
    is what the file seems to be when it is not a Puffin file (``"; this is a Parquet
    file ..."``), already in the message.
    """

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def _describe(exc: BaseException, path: str | None = None) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, PuffinError):
        # The reason and where it is, leaving out a location that only repeats the path.
        where = []
        location = exc.location
        if location is not None and path is not None and location.startswith(path):
            location = location[len(path) :].strip() or None
        if location is not None:
            where.append(location)
        if exc.blob_index is not None:
            where.append(f"blob {exc.blob_index}")
        if exc.field is not None:
            where.append(f"field {exc.field!r}")
        if exc.offset is not None:
            where.append(f"offset {exc.offset}")
        return f"{exc.reason} ({', '.join(where)})" if where else exc.reason
    text = str(exc) or type(exc).__name__
    if path is not None and text.startswith(f"{path}: "):  # the caller names the path
        text = text[len(path) + 2 :]
    return text


@contextlib.contextmanager
def reading(path: str, also: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Turn library and I/O errors about ``path`` into an :class:`InputError` naming it.

    ``also`` adds exception types that mean a bad input (such as pyarrow's ArrowException).
    """
    caught: tuple[type[BaseException], ...] = (PuffinError, OSError, *also)
    try:
        yield
    except BrokenPipeError:
        raise
    except caught as exc:
        hint = ""
        if isinstance(exc, InvalidFileError):
            from puffin.cli._sniff import format_hint

            hint = format_hint(path)
        raise InputError(f"{path}: {_describe(exc, path)}{hint}", hint=hint) from exc


def _local(path: str) -> str | None:
    """The local file a command argument names, as :func:`puffin.io.locations.open_source`
    reads it: a plain path as given, a ``file:`` URL's path; None for any other URL."""
    from puffin.io.locations import is_url, local_path

    return local_path(path) if is_url(path) else path


def not_regular(path: str, what: str = "a Puffin file") -> InputError | None:
    """The error for an input that is a FIFO, a directory, a device: the library's own
    check (:func:`puffin.io.local.check_regular`), at once, naming ``path``.

    None for a regular file, a remote URL, or a path that cannot be opened at all (missing,
    no permission): the command reports that as it reports any unreadable input.
    """
    from puffin.io.local import check_regular

    local = _local(path)
    if local is None:
        return None
    try:
        check_regular(local, what=what)
    except InvalidFileError as exc:
        return InputError(f"{path}: {_describe(exc, local)}")
    except OSError:
        return None
    return None


def require_regular(path: str, what: str = "a Puffin file") -> None:
    """Raise :func:`not_regular`'s error, if any, before anything reads ``path``."""
    error = not_regular(path, what)
    if error is not None:
        raise error


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (False for closed or unusual streams): binary output
    is refused there, since it shows garbage and escape sequences can drive the terminal."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def require_output(path: str, option: str = "--output") -> None:
    """A usage error (exit status 2) when the file to write is an existing directory, raised
    before any work, rather than failing at the end with ``Is a directory``."""
    local = _local(path)
    if local is not None and os.path.isdir(local):
        raise UsageError(f"{path}: a directory, not a file: {option} names the file to write")


def write_error(command: str | None, message: str, mode: str) -> None:
    """The one error line on stderr: ``puffin COMMAND: error: message``."""
    colours = colours_for(sys.stderr, mode)
    prog = f"puffin {command}" if command else "puffin"
    sys.stderr.write(f"{prog}: {colours.red('error')}: {message}\n")


@contextlib.contextmanager
def opened(path: str) -> Iterator[Any]:
    """``puffin.open(path)`` with errors naming the file."""
    from puffin.reader import open as open_puffin

    with reading(path):
        reader = open_puffin(path)
    try:
        with reading(path):
            yield reader
    finally:
        reader.close()


def error_dict(exc: BaseException) -> dict[str, Any]:
    """The JSON form of an error: its type, message and where it is, when known."""
    if isinstance(exc, PuffinError):
        return {
            "type": type(exc).__name__,
            "message": exc.reason,
            "blob_index": exc.blob_index,
            "offset": exc.offset,
            "field": exc.field,
        }
    return {
        "type": type(exc).__name__,
        "message": _describe(exc),
        "blob_index": None,
        "offset": None,
        "field": None,
    }


def printable(text: str) -> str:
    """``text`` with control characters escaped, so a file cannot drive the terminal."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif unicodedata.category(ch) in ("Zs",):
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


def write_json(obj: Any, stream: TextIO | None = None) -> None:
    """Indented JSON and a newline; non-ASCII raw when the stream is UTF-8, else escaped."""
    import json

    out = sys.stdout if stream is None else stream
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "")
    json.dump(obj, out, indent=2, ensure_ascii=encoding != "utf8")
    out.write("\n")


_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``"64MB"``, ``"8MiB"``, ``"512k"``, ``"1048576"`` as bytes (units count in 1024s, as
    Iceberg's size properties are meant); :class:`UsageError` for anything else."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if match is None or (not match.group(2) and text.strip().lower().endswith("ib")):
        raise UsageError(f"{text!r} is not a size such as 64MB, 512k or 1048576 (bytes)")
    size = int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])
    if size < 1:
        raise UsageError(f"{text!r}: a size must be at least one byte")
    return size
