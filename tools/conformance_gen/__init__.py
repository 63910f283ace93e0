"""The conformance corpus generator: a repository tool, not part of the installed package.

``python -m tools.conformance_gen DIR`` (from the repository root) writes the corpus, the
same bytes on every run; ``src/puffin/conformance/corpus/`` is the committed copy the wheel
ships, and ``tests/conformance/test_conformance.py`` checks it equals a fresh generation.  Each
``gen_*`` module makes one tier's vectors (``*_bad``: the invalid ones); ``build`` writes
and edits files, ``corpus`` holds the vector model and the quoted spec sentences.
"""
