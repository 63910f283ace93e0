"""Paths that are not regular files, and how the writer names, publishes and cleans up.

The SIGKILL tests live in ``test_crash_safety.py``; these cover what a kill cannot show:
FIFOs and directories refused at once, errors that name the target and never our temporary
file, and each way the writer publishes (an unnamed file linked as the target, linked under a
hidden name and renamed over an existing target, copied where linking is impossible, and the
named temporary of systems without ``O_TMPFILE``).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import puffin
import puffin.io.staging

UNNAMED = puffin.io.staging._USE_O_TMPFILE and sys.platform.startswith("linux")


def _write(target: Path, payload: bytes) -> None:
    with puffin.create(target) as w:
        w.add_blob(payload, type="t", fields=[1], codec="zstd")


def _read(target: Path) -> bytes:
    with puffin.open(target) as r:
        return r.read_blob(0)


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# --- reading what is not a regular file -------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_at_once(tmp_path: Path) -> None:
    # In a child, so a regression (open blocking until a writer comes, which never does)
    # fails by the timeout instead of hanging the suite.
    fifo = tmp_path / "stats.puffin"
    os.mkfifo(fifo)
    code = (
        "import sys, puffin\n"
        "try:\n"
        "    puffin.open(sys.argv[1])\n"
        "except puffin.InvalidFileError as exc:\n"
        "    print(exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True,
                          text=True, timeout=60, check=True)
    message = proc.stdout
    assert "a FIFO, not a regular file" in message and str(fifo) in message


def test_directory_is_refused_by_open(tmp_path: Path) -> None:
    for source in (tmp_path, str(tmp_path)):
        with pytest.raises(puffin.InvalidFileError, match="a directory, not a regular") as info:
            puffin.open(source)
        assert info.value.location == str(tmp_path)


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
def test_character_device_is_refused() -> None:
    with pytest.raises(puffin.InvalidFileError, match="a character device"):
        puffin.open("/dev/null")


# --- writing over what cannot be replaced -------------------------------------------------------


def test_directory_target_is_refused_at_create(tmp_path: Path) -> None:
    target = tmp_path / "a.puffin"
    target.mkdir()
    with pytest.raises(IsADirectoryError, match="is a directory") as info:
        puffin.create(target)
    assert info.value.filename == str(target)
    assert _names(tmp_path) == ["a.puffin"]


def test_target_turned_directory_before_close(tmp_path: Path) -> None:
    # The rename fails inside close(): the error names the target, nothing is left behind.
    target = tmp_path / "a.puffin"
    w = puffin.create(target)
    w.add_blob(b"x" * 1000, type="t", fields=[1])
    target.mkdir()
    (target / "keep").write_bytes(b"k")
    with pytest.raises(OSError) as info:
        w.close()
    assert info.value.filename == str(target)
    assert ".tmp" not in str(info.value)
    assert _names(tmp_path) == ["a.puffin"]
    assert (target / "keep").read_bytes() == b"k"


def test_missing_directory_names_the_target(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "a.puffin"
    with pytest.raises(FileNotFoundError) as info:
        puffin.create(target)
    assert info.value.filename == str(target)
    assert "temporary file beside a.puffin" in str(info.value)


NOBODY = 65534


def test_read_only_directory_names_the_target(tmp_path: Path) -> None:
    """Root writes into a read-only folder anyway, so as root (CI) the check runs in a forked
    child that drops to ``nobody`` (the library already imported: nothing is read from a
    checkout that user may not enter), on a folder that user owns and may not write."""
    with puffin.create(tmp_path / "warm.puffin") as writer:  # every module it needs, loaded
        writer.add_blob(b"x", type="t", fields=[1])
    folder = Path(tempfile.mkdtemp(prefix="puffin-ro-"))
    target = folder / "a.puffin"
    try:
        if os.geteuid() == 0:
            os.chown(folder, NOBODY, NOBODY)
        folder.chmod(0o500)
        said = _in_child_as_nobody(lambda: _create_refused(target))
        assert said == f"{str(target)!r} False", said
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)
        shutil.rmtree(folder)


def _create_refused(target: Path) -> str:
    os.listdir(target.parent)  # reachable and readable: only not writable
    try:
        puffin.create(target)
    except PermissionError as exc:
        return f"{exc.filename!r} {'.tmp' in str(exc)}"
    return "created"


def _in_child_as_nobody(work: Callable[[], str]) -> str:
    """``work()``'s answer from a forked child running as ``nobody`` when we are root."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            answer = str(work())
        except BaseException as exc:
            answer = f"error {exc!r}"
        os.write(write, answer.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = pipe.read().decode()
    os.waitpid(pid, 0)
    return answer


# --- each way of publishing ---------------------------------------------------------------------


@pytest.fixture(params=["unnamed", "named"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "unnamed" and not UNNAMED:
        pytest.skip("needs O_TMPFILE (Linux)")
    if request.param == "named":
        monkeypatch.setattr(puffin.io.staging, "_USE_O_TMPFILE", False)
    yield request.param


def test_new_target(tmp_path: Path, mode: str) -> None:
    target = tmp_path / "a.puffin"
    w = puffin.create(target)
    w.add_blob(b"x" * 1000, type="t", fields=[1])
    # Meanwhile an unnamed file is invisible; a named one is hidden beside the target.
    names = _names(tmp_path)
    if mode == "unnamed":
        assert names == []
    else:
        assert len(names) == 1 and names[0].startswith(".a.puffin.")
        assert names[0].endswith(".tmp")
    w.close()
    assert _names(tmp_path) == ["a.puffin"]
    assert _read(target) == b"x" * 1000


def test_existing_target_is_replaced_whole(tmp_path: Path, mode: str) -> None:
    target = tmp_path / "a.puffin"
    _write(target, b"old")
    old_inode = target.stat().st_ino
    with open(target, "rb") as held:  # a reader of the old file keeps reading it
        _write(target, b"new" * 1000)
        assert held.read(4) == b"PFA1"
    assert _names(tmp_path) == ["a.puffin"]
    assert _read(target) == b"new" * 1000
    assert target.stat().st_ino != old_inode


def test_exception_leaves_nothing(tmp_path: Path, mode: str) -> None:
    target = tmp_path / "a.puffin"
    _write(target, b"old")
    with pytest.raises(RuntimeError):
        with puffin.create(target) as w:
            w.add_blob(b"x", type="t", fields=[1])
            raise RuntimeError("stop")
    assert _names(tmp_path) == ["a.puffin"]
    assert _read(target) == b"old"


@pytest.mark.skipif(not UNNAMED, reason="needs O_TMPFILE (Linux)")
@pytest.mark.parametrize("existing", [False, True])
def test_copy_where_an_unnamed_file_cannot_be_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    # Some systems refuse every linkat of an unnamed file (EXDEV, EPERM): the writer copies
    # it to a named temporary at close, and later writers on that device start named.
    def refuse(fd: int, path: str) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(puffin.io.staging, "_link_fd", refuse)
    monkeypatch.setattr(puffin.io.staging, "_UNLINKABLE", set())
    target = tmp_path / "a.puffin"
    if existing:
        target.write_bytes(b"previous")
    payload = os.urandom(300_000)
    _write(target, payload)
    assert _names(tmp_path) == ["a.puffin"]
    assert _read(target) == payload
    assert puffin.io.staging._UNLINKABLE == {tmp_path.stat().st_dev}
    w = puffin.create(target)  # the next writer goes straight to a named temporary
    assert len(_names(tmp_path)) == 2
    w.abort()
    assert _names(tmp_path) == ["a.puffin"]


def test_unsupported_o_tmpfile_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE on this system")
    real_open = os.open

    def no_tmpfile(path: str, flags: int, mode: int = 0o777) -> int:
        if flags & os.O_TMPFILE == os.O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", no_tmpfile)
    target = tmp_path / "a.puffin"
    w = puffin.create(target)
    assert len(_names(tmp_path)) == 1  # a named temporary
    w.close()
    assert _names(tmp_path) == ["a.puffin"]


def test_write_errors_name_the_target_not_a_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "out.puffin"
    attempts = (
        lambda: puffin.create(target).__enter__(),
        lambda: puffin.write_deletion_vectors(target, {"s3://b/f.parquet": [1]}),
    )
    for attempt in attempts:
        with pytest.raises(FileNotFoundError) as info:
            attempt()
        assert info.value.filename == str(target)
        assert ".tmp" not in str(info.value)
    assert not (tmp_path / "no").exists()
