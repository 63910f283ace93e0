"""Atomic local writes: the temporary file behind a path target, and how it takes the
target's place.

On Linux the temporary file is unnamed (``O_TMPFILE``) and named only when published
(``linkat``), so a killed writer leaves nothing behind; elsewhere, or on file systems
without ``O_TMPFILE``, it is a hidden ``.<name>.<random>.tmp`` renamed over the target
(docs/reliability.md, "Crash safety").
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterator

__all__ = ["Staging"]


class Staging:
    """The temporary file behind a path target, and how it takes the target's place.

    Linux: an unnamed file (``O_TMPFILE``) in the target's directory, named only at
    :meth:`publish` (``linkat``): straight as the target when there is none, else as a
    hidden name renamed over the target at once.  Elsewhere, or where the file system has
    no ``O_TMPFILE``: a hidden named file from the start.  Errors name the target, never
    the temporary file.
    """

    def __init__(self, target: str) -> None:
        self.target = target
        self.directory = os.path.dirname(os.path.abspath(target))
        if not os.path.basename(target):  # "", "dir/", a file: URL without a path
            raise IsADirectoryError(
                errno.EISDIR, "names a directory, not a file: give the file's name", target
            )
        if os.path.isdir(target):
            raise IsADirectoryError(
                errno.EISDIR, "is a directory: cannot write a Puffin file over it", target
            )
        self.tmp_path: str | None = None
        try:
            fd = _open_unnamed(self.directory) if _USE_O_TMPFILE else None
            if fd is None:
                fd, self.tmp_path = _create_temporary(self.directory, os.path.basename(target))
        except OSError as exc:
            raise _naming(exc, "cannot create a temporary file beside", target) from None
        self.fd = fd

    def publish(self) -> None:
        """Put the (flushed and synced) file in place of the target, atomically."""
        try:
            if self.tmp_path is None and not self._link_unnamed():
                return
            assert self.tmp_path is not None
            os.replace(self.tmp_path, self.target)
        except OSError as exc:
            self.discard()
            raise _naming(exc, "cannot publish", self.target) from None
        finally:
            _fsync_directory(self.directory)
        self.tmp_path = None

    def _link_unnamed(self) -> bool:
        """Name the unnamed file: the target if free (False: done), else a hidden name."""
        try:
            _link_fd(self.fd, self.target)
            return False
        except FileExistsError:
            pass
        except OSError as exc:
            if not _cannot_link(exc, self.directory):
                raise  # the target's own problem (no space, no directory, ...): say so
            # This system cannot name an unnamed file: copy it (rare).
            _UNLINKABLE.add(os.fstat(self.fd).st_dev)
            fd, self.tmp_path = _create_temporary(self.directory, os.path.basename(self.target))
            try:
                size, done = os.fstat(self.fd).st_size, 0
                while done < size:
                    sent = os.sendfile(fd, self.fd, done, size - done)
                    if not sent:
                        raise OSError(errno.EIO, "the temporary file shrank while copied")
                    done += sent
                os.fsync(fd)
            finally:
                os.close(fd)
            return True
        for path in _temporary_names(self.directory, os.path.basename(self.target)):
            try:
                _link_fd(self.fd, path)
            except FileExistsError:
                continue
            self.tmp_path = path
            return True
        raise AssertionError("unreachable")

    def discard(self) -> None:
        if self.tmp_path is not None:
            try:
                os.unlink(self.tmp_path)
            except FileNotFoundError:
                pass
            self.tmp_path = None


# Cleared by tests to exercise the named-temporary fallback.
_USE_O_TMPFILE = hasattr(os, "O_TMPFILE")
_NO_O_TMPFILE = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL}
_UNLINKABLE: set[int] = set()  # devices where an unnamed file could not be named
_AT_FDCWD, _AT_EMPTY_PATH = -100, 0x1000


def _open_unnamed(directory: str) -> int | None:
    """An unnamed file in ``directory``, or None where the file system has none."""
    if os.stat(directory).st_dev in _UNLINKABLE:
        return None
    try:  # readable too, for the copy in _link_unnamed's last resort
        return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno in _NO_O_TMPFILE:
            return None
        raise


# What linkat of an unnamed file gives when the system, not the target, is the obstacle:
# /proc in another mount (EXDEV) or missing (ENOENT), AT_EMPTY_PATH without
# CAP_DAC_READ_SEARCH (ENOENT), or a sandbox that forbids it (EPERM, EOPNOTSUPP, EINVAL).
_LINK_UNSUPPORTED = {errno.EXDEV, errno.ENOENT, errno.EPERM, errno.EOPNOTSUPP, errno.EINVAL}


def _cannot_link(exc: OSError, directory: str) -> bool:
    """Whether ``exc`` from :func:`_link_fd` means this system cannot link unnamed files
    (so later writers on the device should start with a named file), not that the target
    is unusable (its directory gone, a full disk, a read-only file system, ...)."""
    return exc.errno in _LINK_UNSUPPORTED and os.path.isdir(directory)


def _link_fd(fd: int, path: str) -> None:
    """``linkat`` the open file ``fd`` to ``path``: through /proc, else AT_EMPTY_PATH."""
    try:
        os.link(f"/proc/self/fd/{fd}", path, follow_symlinks=True)
        return
    except FileExistsError:
        raise
    except OSError as exc:
        first = exc  # no /proc, or /proc in another mount (EXDEV) as in some sandboxes
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.linkat(fd, b"", _AT_FDCWD, os.fsencode(path), _AT_EMPTY_PATH) != 0:
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            raise FileExistsError(code, os.strerror(code), path)
        raise first


def _naming(exc: OSError, doing: str, target: str) -> OSError:
    """``exc`` as the same kind of OSError, naming the target instead of our temporary."""
    return OSError(exc.errno, f"{doing} {os.path.basename(target)}: {exc.strerror}", target)


def _temporary_names(directory: str, name: str) -> Iterator[str]:
    for _ in range(100):
        yield os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
    raise FileExistsError(errno.EEXIST, "no free temporary name", directory)


def _create_temporary(directory: str, name: str) -> tuple[int, str]:
    # Like mkstemp, but with the permissions the umask gives a normal new file (mkstemp
    # would leave the published file readable by its owner only).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for path in _temporary_names(directory, name):
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def _fsync_directory(directory: str) -> None:
    # Makes the rename durable on POSIX; not possible (or needed) everywhere.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
