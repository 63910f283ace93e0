"""The conformance kit: versioned vectors other Puffin implementations test against.

``puffin conformance generate DIR`` writes the corpus (the same bytes on every run; the
package ships a copy in ``puffin/conformance/corpus/``, the repository links it as
``testdata/conformance/``).  ``puffin conformance run`` checks an implementation against it,
through a built-in adapter or any program speaking the JSON-lines protocol.  See
docs/conformance.md.

Tiers: ``container`` (files for every codec and footer, one invalid file per rule),
``deletion-vector`` (DV blobs by range and through the footer), ``theta`` (values of every
type to single-value bytes to sketch; ``ndv``), ``writer`` (the bytes a Java-compatible
writer produces), ``captured`` (files other implementations wrote) and ``table`` (small v3
tables with deletion vectors, built from a recipe by the runner, and the rows each returns).
"""

from __future__ import annotations

from puffin.conformance._corpus import CORPUS_VERSION, TIERS
from puffin.conformance.generate import build_corpus, write_corpus
from puffin.conformance.runner import Report, corpus_dir, load_vectors, run_vectors

__all__ = [
    "CORPUS_VERSION",
    "TIERS",
    "Report",
    "build_corpus",
    "corpus_dir",
    "load_vectors",
    "run_vectors",
    "write_corpus",
]
