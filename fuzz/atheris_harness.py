"""Coverage-guided fuzzing of the Puffin reader with atheris (libFuzzer), for long runs.

The hypothesis fuzzer in ``tests/core/test_fuzz.py`` mutates with knowledge of the format; this
harness complements it with libFuzzer's byte-level mutations steered by coverage of the
``puffin`` package.  Every input is opened and every blob read, decompressed and decoded by
the deletion-vector and theta modules; anything but a ``PuffinError`` is a crash.  libFuzzer
itself enforces the per-input time bound (``-timeout``) and memory bounds (``-rss_limit_mb``,
``-malloc_limit_mb``).

atheris is not a project dependency (it has wheels for CPython 3.11 on Linux x86-64).
Install it anywhere, for example ``pip install --target /tmp/atheris atheris``, then::

    PYTHONPATH=/tmp/atheris .venv/bin/python fuzz/atheris_harness.py --make-corpus fuzz/corpus
    PYTHONPATH=/tmp/atheris .venv/bin/python fuzz/atheris_harness.py fuzz/corpus \\
        -max_total_time=3600 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024

``PUFFIN_FUZZ_IGNORE_KNOWN=1`` skips the known bugs listed in ``tests/core/test_fuzz.py``
(``KNOWN_BUGS``), so a long run can look past them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IGNORE_KNOWN = os.environ.get("PUFFIN_FUZZ_IGNORE_KNOWN") == "1"


def make_corpus(directory: Path) -> None:
    """Write the hypothesis fuzzer's seed files (every kind of valid file) to ``directory``."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_fuzz import seeds

    directory.mkdir(parents=True, exist_ok=True)
    for seed in seeds():
        (directory / seed.name).write_bytes(seed.data)
    print(f"wrote {len(seeds())} seed files to {directory}")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--make-corpus":
        make_corpus(Path(sys.argv[2]))
        return

    import atheris

    with atheris.instrument_imports():
        import puffin
        from puffin.blobs.dv.files import DeletionVector, read_deletion_vectors
        from puffin.blobs.theta.files import ThetaSketch, read_theta_blobs

    def known(exc: BaseException) -> bool:
        # The int-conversion bugs (see KNOWN_BUGS in tests/core/test_fuzz.py).
        return type(exc) is ValueError and "integer string conversion" in str(exc)

    def read(data: bytes) -> None:
        try:
            reader = puffin.open(data)
        except puffin.PuffinError:
            return
        with reader:
            for i, meta in enumerate(reader.blobs):
                reader.read_raw(i)
                try:
                    payload = reader.read_blob(i)
                    if meta.type == "deletion-vector-v1":
                        DeletionVector.deserialize(payload)
                    elif meta.type == "apache-datasketches-theta-v1":
                        ThetaSketch.deserialize(payload)
                except puffin.PuffinError:
                    pass
            try:
                for _ in reader.read_all():
                    pass
            except puffin.PuffinError:
                pass
            for typed in (lambda: read_deletion_vectors(data), lambda: read_theta_blobs(reader)):
                try:
                    typed()
                except puffin.PuffinError:
                    pass

    def test_one_input(data: bytes) -> None:
        try:
            read(data)
        except Exception as exc:
            if IGNORE_KNOWN and known(exc):
                return
            raise

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
