"""The conformance kit: versioned vectors other Puffin implementations test against.

The package ships the corpus (``puffin/conformance/corpus/``; the repository links it as
``testdata/conformance/``) and ``puffin conformance run``, which checks an implementation
against it through a built-in adapter or any program speaking the JSON-lines protocol.  The
corpus is written by the repository's generator, ``python -m tools.conformance_gen DIR``
(the same bytes on every run), which is not part of the installed package.  See
docs/conformance.md.

Tiers: ``container`` (files for every codec and footer, one invalid file per rule),
``deletion-vector`` (DV blobs by range and through the footer), ``theta`` (values of every
type to single-value bytes to sketch; ``ndv``), ``writer`` (the bytes a Java-compatible
writer produces), ``captured`` (files other implementations wrote) and ``table`` (small v3
tables with deletion vectors, built from a recipe by the runner, and the rows each returns).
"""

from __future__ import annotations

from puffin.conformance.results import CORPUS_VERSION, TIERS
from puffin.conformance.runner import Report, corpus_dir, load_vectors, run_vectors

__all__ = [
    "CORPUS_VERSION",
    "TIERS",
    "Report",
    "corpus_dir",
    "load_vectors",
    "run_vectors",
]
