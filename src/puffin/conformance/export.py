"""``puffin conformance export DIR``: the corpus as plain files any language's tests can read.

Every vector of the chosen tiers is copied with its input files and an ``index.json`` of the
same format as the shipped one (``docs/conformance.md``), so a C++, Go or Rust test reads the
expectations without Python. The ``table`` tier's vectors are recipes (steps that build a
small Iceberg table); exported, each table is also built, under ``DIR/table/NAME/``, and the
vector gains ``"materialized": {"metadata": PATH}`` (relative to ``DIR``): the table's
metadata.json, ready for a reader. Iceberg metadata names files by absolute location, so
those tables stay where they were exported (export again to move them).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from puffin.conformance.runner import corpus_dir, load_vectors
from puffin.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["ExportResult", "export_corpus"]


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_corpus` wrote: vectors by tier, and the tables it built."""

    target: Path
    vectors: dict[str, int]
    tables: int


def export_corpus(
    target: Path, tiers: Iterable[str] | None = None, *, source: Path | None = None
) -> ExportResult:
    """Write the corpus (``source``, default the shipped one; only ``tiers`` if given) into
    ``target``, an empty or new folder; the ``table`` tier's tables built there too.

    Raises :class:`~puffin.errors.UsageError` when ``target`` holds anything already."""
    root = source if source is not None else corpus_dir()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} is not an empty folder: export into a new one")
    vectors = load_vectors(root, tiers)
    target.mkdir(parents=True, exist_ok=True)
    index = json.loads((root / "index.json").read_text(encoding="utf-8"))
    counts: dict[str, int] = {}
    listed: list[str] = []
    tables = 0
    for vector in vectors:
        tier, name = vector["id"].split("/", 1)
        folder = target / tier
        folder.mkdir(exist_ok=True)
        for file in vector.get("inputs", {}):
            if not (folder / file).exists():
                shutil.copyfile(root / tier / file, folder / file)
        if vector["op"] == "scan-table":
            vector = {**vector, "materialized": {"metadata": _build(root, target, vector)}}
            tables += 1
        (folder / f"{name}.json").write_text(
            json.dumps(vector, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        listed.append(f"{tier}/{name}.json")
        counts[tier] = counts.get(tier, 0) + 1
    index.update({"total": len(listed), "tiers": counts, "vectors": listed})
    (target / "index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return ExportResult(target, counts, tables)


def _build(root: Path, target: Path, vector: dict[str, Any]) -> str:
    """The vector's table built under ``target/table/NAME``; its metadata.json, relative."""
    from puffin.conformance.tables import materialize
    from puffin.io.locations import local_path

    rows = json.loads((root / vector["tier"] / vector["input"]).read_text(encoding="utf-8"))
    folder = target / "table" / vector["id"].split("/", 1)[1]
    folder.mkdir(parents=True)
    location = materialize(vector["args"], rows, folder.resolve())
    path = Path(local_path(location) or location)
    return str(path.relative_to(target.resolve()))
