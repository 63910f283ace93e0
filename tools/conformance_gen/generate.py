"""The whole conformance corpus, the same bytes on every run (``python -m tools.conformance_gen``).

Nothing here reads the clock, the environment or an unseeded random source; sets are
emitted in sorted order and JSON with a fixed layout, so a fresh generation can be compared
byte for byte with the committed copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from puffin.version import __version__
from tools.conformance_gen.corpus import CORPUS_FORMAT, Corpus
from tools.conformance_gen.gen_captured import captured_vectors
from tools.conformance_gen.gen_captured_java import java_spark_vectors
from tools.conformance_gen.gen_container import valid_vectors
from tools.conformance_gen.gen_container_bad import invalid_vectors
from tools.conformance_gen.gen_dv import dv_vectors
from tools.conformance_gen.gen_dv_bad import dv_invalid_vectors
from tools.conformance_gen.gen_table import table_vectors
from tools.conformance_gen.gen_theta import theta_vectors
from tools.conformance_gen.gen_theta_bad import theta_rule_vectors
from tools.conformance_gen.gen_writer import writer_vectors

__all__ = ["build_corpus", "write_corpus"]


def build_corpus() -> dict[str, bytes]:
    """Every corpus file as ``{relative path: bytes}``."""
    corpus = Corpus()
    corpus.extend(valid_vectors())
    corpus.extend(invalid_vectors())
    corpus.extend(dv_vectors())
    corpus.extend(dv_invalid_vectors())
    corpus.extend(theta_vectors())
    corpus.extend(theta_rule_vectors())
    corpus.extend(writer_vectors())
    corpus.extend(captured_vectors())
    corpus.extend(java_spark_vectors())
    corpus.extend(table_vectors())
    return corpus.finish(f"iceberg-puffin {__version__}")


def write_corpus(directory: str | Path) -> int:
    """Write the corpus into ``directory`` (replacing an earlier corpus there).

    Refuses a non-empty directory that does not hold a corpus, so a typo cannot wipe files.
    Returns the number of vectors.
    """
    root = Path(directory)
    files = build_corpus()  # before removing anything: the captured tier may read from root
    if root.exists() and any(root.iterdir()):
        index = root / "index.json"
        if not index.is_file() or CORPUS_FORMAT not in index.read_text(encoding="utf-8"):
            raise FileExistsError(f"{root} is not empty and holds no conformance corpus")
        for child in root.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    index = json.loads(files["index.json"])
    return int(index["total"])
