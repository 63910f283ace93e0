"""testdata/ is what its SHA256SUMS says: every file listed, every listed file unaltered.

The byte-exact files of other implementations are the ground truth of many tests; a file
changed by a careless rewrite (a line-ending filter, a formatter, a regenerated fixture)
would move that truth without a word.  ``conformance`` is a link to the shipped corpus,
which carries its own hashes (``src/puffin/conformance/corpus``).
"""

from __future__ import annotations

import hashlib

from _paths import TESTDATA

_UNLISTED = {"README.md", "SHA256SUMS"}


def _listed() -> dict[str, str]:
    sums = {}
    for line in (TESTDATA / "SHA256SUMS").read_text("utf-8").splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.removeprefix("./")] = digest
    return sums


def test_every_file_matches_its_listed_sha256() -> None:
    listed = _listed()
    assert listed, "SHA256SUMS lists nothing"
    for name, digest in listed.items():
        data = (TESTDATA / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"testdata/{name} was altered"


def test_every_file_is_listed() -> None:
    present = {
        str(p.relative_to(TESTDATA))
        for p in TESTDATA.rglob("*")
        if p.is_file() and not any(part == "conformance" for part in p.relative_to(TESTDATA).parts)
    }
    assert present - _listed().keys() == _UNLISTED
