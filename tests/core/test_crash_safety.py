"""Atomic writes: a killed writer never leaves a partial file at the target path, nor any other.

A writer runs in a separate interpreter and is killed with SIGKILL at random points of its
write (more than 100 times).  After each kill the target must be absent (if it was) or hold
complete contents: its previous file, or the new one if the kill came after it was
published; never anything in between.  On Linux the temporary file is unnamed
(``O_TMPFILE``), so a killed writer leaves nothing; with the named-temporary fallback
(other systems) the killed write's hidden temporary file may remain.  Clean exits and
exceptions leave nothing either way.
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import puffin
import puffin.io.staging
from _hostile import generation_payloads, write_generation
from _paths import TESTS

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

MIN_KILLS = 110  # writers actually killed (the issue asks for at least 100)
MAX_TRIALS = 300

UNNAMED = puffin.io.staging._USE_O_TMPFILE and sys.platform.startswith("linux")

# The child imports everything first, says "ready", waits for "go", then writes.
_CHILD = f"""
import os, sys
sys.path.insert(0, {str(TESTS)!r})
import puffin.io.staging
from _hostile import write_generation
if os.environ.get("PUFFIN_TEST_NAMED_TEMPORARY"):
    puffin.io.staging._USE_O_TMPFILE = False
sys.stdout.write("ready\\n")
sys.stdout.flush()
sys.stdin.readline()
write_generation(sys.argv[1], sys.argv[2])
sys.stdout.write("done\\n")
sys.stdout.flush()
"""


def _expected(generation: str) -> bytes:
    out = io.BytesIO()
    write_generation(out, generation)
    return out.getvalue()


def _check_complete(data: bytes, generation: str) -> None:
    with puffin.open(data) as reader:
        assert reader.properties == {"created-by": generation}
        assert [reader.read_blob(b) for b in reader.blobs] == generation_payloads(generation)


class _Writer:
    """A child interpreter that writes one generation of the file when told to."""

    def __init__(self, target: Path, generation: str, *, named: bool = False) -> None:
        self.generation = generation
        env = dict(os.environ, PUFFIN_TEST_NAMED_TEMPORARY="1" if named else "")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(target), generation],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def wait_ready(self) -> None:
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == "ready\n"

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self) -> None:
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == "done\n"
        assert self.proc.wait(timeout=60) == 0

    def kill(self) -> int:
        self.proc.send_signal(signal.SIGKILL)
        code = self.proc.wait(timeout=60)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        return code


def _written(writer: _Writer, directory: Path) -> int | None:
    """Bytes in the writer's temporary file (named or not), None if it has none open."""
    try:
        fds = os.listdir(f"/proc/{writer.proc.pid}/fd")
    except OSError:
        return None
    for fd in fds:
        link = f"/proc/{writer.proc.pid}/fd/{fd}"
        try:
            if os.readlink(link).startswith(str(directory) + os.sep):
                return os.stat(link).st_size
        except OSError:  # closed meanwhile
            continue
    return None


def _wait_for_progress(writer: _Writer, directory: Path, size: int) -> None:
    """Start the write and return once its temporary file holds ``size`` bytes."""
    writer.go()
    deadline = time.monotonic() + 30
    seen = False
    while writer.proc.poll() is None and time.monotonic() < deadline:
        written = _written(writer, directory)
        if written is not None:
            seen = True
            if written >= size:
                return
        elif seen:  # published and closed meanwhile
            return
        time.sleep(0)


def _leftovers(directory: Path, target: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p != target)


def _sigkill_writers(directory: Path, min_kills: int, *, named: bool) -> Counter[str]:
    """Kill writers at random points until ``min_kills`` died; check the target each time."""
    target = directory / "stats.puffin"
    previous, new = "generation-A", "generation-B"
    expected = {previous: _expected(previous), new: _expected(new)}

    # Time a whole write, so kill points can be spread over all of it.
    durations = []
    for _ in range(3):
        w = _Writer(target, new, named=named)
        w.wait_ready()
        start = time.perf_counter()
        w.go()
        w.finish()
        durations.append(time.perf_counter() - start)
        assert target.read_bytes() == expected[new]
        assert _leftovers(directory, target) == []  # a clean exit leaves no temporary file
    full = sorted(durations)[1]

    # Fixed in CI; PUFFIN_CRASH_SEED varies the kill points across repeated runs.
    rng = random.Random(int(os.environ.get("PUFFIN_CRASH_SEED", "20240611")))
    outcomes: Counter[str] = Counter()
    spare = writer = _Writer(target, new, named=named)
    killed = trial = 0
    try:
        while killed < min_kills:
            trial += 1
            assert trial <= MAX_TRIALS, outcomes
            had_previous = trial % 3 != 0
            if had_previous:
                target.write_bytes(expected[previous])
            elif target.exists():
                target.unlink()
            writer, spare = spare, _Writer(target, new, named=named)  # next child starts meanwhile
            writer.wait_ready()
            if trial % 2:
                # Kill after a random time: anywhere from before the first byte to after the end.
                delay = rng.uniform(0, full * 1.2)
                writer.go()
                time.sleep(delay)
            else:
                # Kill once the temporary file holds a random number of bytes (up to all of
                # them: then the kill lands in the final flush, fsync or publication).
                _wait_for_progress(writer, directory, rng.randint(0, len(expected[new])))
            mid_write = bool(_written(writer, directory))
            code = writer.kill()

            leftovers = _leftovers(directory, target)
            if target.exists():
                data = target.read_bytes()
                if data == expected[new]:
                    outcome = "new file published"
                    _check_complete(data, new)
                else:
                    assert had_previous, f"trial {trial}: a file appeared that is not the new one"
                    assert data == expected[previous], f"trial {trial}: target holds partial bytes"
                    _check_complete(data, previous)
                    outcome = "previous file kept"
            else:
                assert not had_previous, f"trial {trial}: the previous file vanished"
                outcome = "target still absent"
            if code == -signal.SIGKILL:
                killed += 1
                outcomes["killed mid-write"] += mid_write
            else:
                outcome += " (writer finished first)"
            # With named temporaries, only the killed write's own file may remain, hidden.
            # Unnamed, only a kill between linkat to the hidden name and the rename over the
            # existing target leaves one: the complete new file (docs/reliability.md).
            assert len(leftovers) <= 1, leftovers
            for path in leftovers:
                assert path.name.startswith(f".{target.name}.") and path.name.endswith(".tmp")
                if not named:
                    assert had_previous and path.read_bytes() == expected[new], (
                        f"trial {trial}: the killed writer left {path.name}, not its new file"
                        " between naming and renaming"
                    )
                    outcomes["complete new file left between linkat and rename"] += 1
                else:
                    outcomes["temporary file left by the kill"] += 1
                path.unlink()
            outcomes[outcome] += 1
    finally:  # no child outlives a failed assertion
        spare.kill()
        writer.kill()

    print(json.dumps({"trials": trial, "killed": killed, "write_seconds": round(full, 4),
                      **outcomes}))
    counted = ("temporary file left by the kill", "killed mid-write")
    assert sum(n for k, n in outcomes.items() if k not in counted) == trial
    return outcomes


@pytest.mark.skipif(not UNNAMED, reason="needs O_TMPFILE (Linux)")
def test_sigkill_at_random_points_leaves_no_partial_file(tmp_path: Path) -> None:
    outcomes = _sigkill_writers(tmp_path, MIN_KILLS, named=False)
    # The kills really landed inside writes, not only before or after them.
    assert outcomes["killed mid-write"] >= 30, outcomes


def test_sigkill_with_named_temporaries_never_leaves_a_partial_file(tmp_path: Path) -> None:
    # The fallback of systems without O_TMPFILE: fewer kills, the same guarantees for the
    # target, and at most the killed write's own hidden temporary file left.
    outcomes = _sigkill_writers(tmp_path, 30 if UNNAMED else MIN_KILLS, named=True)
    assert outcomes["temporary file left by the kill"] >= 5, outcomes


# --- clean exits and exceptions leave no temporary files -------------------------------------


def _only_target(directory: Path, target: Path) -> None:
    assert [p.name for p in directory.iterdir()] == ([target.name] if target.exists() else [])


def test_clean_exit(tmp_path: Path) -> None:
    target = tmp_path / "a.puffin"
    write_generation(target, "clean")
    _only_target(tmp_path, target)
    _check_complete(target.read_bytes(), "clean")


@pytest.mark.parametrize("previous", [False, True])
@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_exception_inside_the_block(tmp_path: Path, previous: bool,
                                    error: type[BaseException]) -> None:
    target = tmp_path / "a.puffin"
    if previous:
        write_generation(target, "old")
    with pytest.raises(error):
        with puffin.create(target) as w:
            w.add_blob(b"x" * 100_000, type="t", fields=[1], codec="zstd")
            raise error("stop")
    _only_target(tmp_path, target)
    if previous:
        _check_complete(target.read_bytes(), "old")
    else:
        assert not target.exists()


def test_bad_add_blob_arguments(tmp_path: Path) -> None:
    target = tmp_path / "a.puffin"
    with pytest.raises(ValueError):
        with puffin.create(target) as w:
            w.add_blob(b"x", type="t", fields=[1])
            w.add_blob(b"y", type="t", fields=["not an int"])  # type: ignore[list-item]
    _only_target(tmp_path, target)
    with pytest.raises(puffin.UnknownCodecError):
        with puffin.create(target) as w:
            w.add_blob(b"x", type="t", fields=[1], codec="snappy")
    _only_target(tmp_path, target)
    assert not target.exists()


def test_writer_dropped_unclosed(tmp_path: Path) -> None:
    target = tmp_path / "a.puffin"
    w = puffin.create(target)
    w.add_blob(b"x" * 1000, type="t", fields=[1])
    # The temporary file exists meanwhile, unnamed where O_TMPFILE works.
    assert len(list(tmp_path.iterdir())) == (0 if UNNAMED else 1)
    del w
    _only_target(tmp_path, target)
    assert not target.exists()


def test_abort(tmp_path: Path) -> None:
    target = tmp_path / "a.puffin"
    write_generation(target, "old")
    w = puffin.create(target)
    w.add_blob(b"x", type="t", fields=[1])
    w.abort()
    w.close()  # closing an aborted writer publishes nothing
    _only_target(tmp_path, target)
    _check_complete(target.read_bytes(), "old")


def test_failure_at_rename(tmp_path: Path) -> None:
    # The target is a non-empty directory, so the final rename fails inside close().
    target = tmp_path / "a.puffin"
    target.mkdir()
    (target / "keep").write_bytes(b"k")
    with pytest.raises(OSError):
        with puffin.create(target) as w:
            w.add_blob(b"x" * 1000, type="t", fields=[1])
    assert [p.name for p in tmp_path.iterdir()] == ["a.puffin"]
    assert (target / "keep").read_bytes() == b"k"


_DISK_FULL = f"""
import resource, signal, sys
sys.path.insert(0, {str(TESTS)!r})
import puffin
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
try:
    with puffin.create(sys.argv[1]) as w:
        for i in range(10):
            w.add_blob(bytes([i]) * 100_000, type="t", fields=[i])
except OSError as exc:
    print(type(exc).__name__, exc.errno)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE")
@pytest.mark.parametrize("previous", [False, True])
def test_disk_full_during_write(tmp_path: Path, previous: bool) -> None:
    # RLIMIT_FSIZE makes the write fail with EFBIG partway, as a full disk would.
    target = tmp_path / "a.puffin"
    if previous:
        target.write_bytes(_expected("old"))
    proc = subprocess.run([sys.executable, "-c", _DISK_FULL, str(target)],
                          capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.split()[0] in ("OSError", "FileTooLargeError"), proc.stdout
    assert int(proc.stdout.split()[1]) == 27  # EFBIG
    _only_target(tmp_path, target)
    if previous:
        _check_complete(target.read_bytes(), "old")
    else:
        assert not target.exists()


def test_published_file_permissions_follow_umask(tmp_path: Path) -> None:
    # The temporary file must not leave the published file private (mkstemp's 0600).
    target = tmp_path / "a.puffin"
    old = os.umask(0o022)
    try:
        write_generation(target, "perm")
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o644
