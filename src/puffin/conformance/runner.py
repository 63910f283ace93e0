"""Run the corpus against an adapter and compare each response with the vector's expectation.

A vector passes when the adapter returns the expected result (decoded values compared as
JSON; estimates to 1e-9 relative) or rejects an input the vector expects rejected (and, if it
names a category, the expected one).  Operations an adapter does not speak are skipped.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from puffin.conformance.adapters._base import Adapter
from puffin.conformance.results import TIERS, positions_digest
from puffin.conformance.tables import rows_digest
from puffin.errors import MissingDependencyError
from puffin.io.locations import local_path

__all__ = ["Outcome", "Report", "corpus_dir", "load_vectors", "run_vectors"]


def corpus_dir() -> Path:
    """The corpus shipped inside the package."""
    return Path(__file__).resolve().parent / "corpus"


def load_vectors(root: Path, tiers: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The vectors listed in ``root/index.json``, optionally only some tiers."""
    index = json.loads((root / "index.json").read_text(encoding="utf-8"))
    wanted = set(TIERS if tiers is None else tiers)
    out = []
    for rel in index["vectors"]:
        if rel.split("/", 1)[0] in wanted:
            out.append(json.loads((root / rel).read_text(encoding="utf-8")))
    return out


@dataclass(frozen=True)
class Outcome:
    """One vector's result: ``status`` is "pass", "fail" or "skip"."""

    id: str
    tier: str
    status: str
    reason: str = ""
    known: str | None = None


@dataclass(frozen=True)
class Report:
    adapter: str
    outcomes: tuple[Outcome, ...] = field(default_factory=tuple)

    def count(self, status: str, tier: str | None = None) -> int:
        return sum(o.status == status and tier in (None, o.tier) for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        tiers = {}
        for tier in TIERS:
            run = [o for o in self.outcomes if o.tier == tier and o.status != "skip"]
            if run:
                tiers[tier] = {"total": len(run), "passed": self.count("pass", tier)}
        return {
            "adapter": self.adapter,
            "total": self.count("pass") + self.count("fail"),
            "passed": self.count("pass"),
            "failed": self.count("fail"),
            "skipped": self.count("skip"),
            "tiers": tiers,
            "unexplained": sum(o.status == "fail" and o.known is None for o in self.outcomes),
            "failures": [
                {"id": o.id, "reason": o.reason, "known": o.known}
                for o in self.outcomes
                if o.status == "fail"
            ],
        }


def request_for(vector: Mapping[str, Any], root: Path) -> dict[str, Any]:
    request: dict[str, Any] = {"op": vector["op"]}
    if "input" in vector:
        request["path"] = str(root / vector["tier"] / vector["input"])
    request.update(vector.get("args", {}))
    return request


@contextmanager
def prepared(vector: Mapping[str, Any], root: Path) -> Iterator[dict[str, Any]]:
    """The request for ``vector``; a ``scan-table`` vector's table is built for its duration.

    The table goes into a fresh folder under the system's temporary folder (removed after
    the request), built with this library's writers from the vector's recipe.
    """
    if vector["op"] != "scan-table":
        yield request_for(vector, root)
        return
    from puffin.conformance.tables import materialize

    rows = json.loads((root / vector["tier"] / vector["input"]).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="puffin-table-") as tmp:
        location = materialize(vector["args"], rows, Path(tmp))
        yield {
            "op": "scan-table",
            "metadata": local_path(location) or location,
            "columns": [c["name"] for c in vector["args"]["schema"]],
        }


def run_vectors(
    adapter: Adapter, vectors: list[dict[str, Any]], root: Path, *, known_as: str | None = None
) -> Report:
    """Every vector against ``adapter``; ``known_as`` names its entry in
    :data:`puffin.conformance.known.KNOWN_FAILURES` (a built-in adapter's name)."""
    from puffin.conformance.known import explain

    outcomes = []
    for vector in vectors:
        if vector["op"] not in adapter.ops:
            outcomes.append(Outcome(vector["id"], vector["tier"], "skip", "op not supported"))
            continue
        try:
            with prepared(vector, root) as request:
                response = adapter.handle(request)
        except MissingDependencyError as exc:  # the table tier without pyiceberg
            outcomes.append(Outcome(vector["id"], vector["tier"], "skip", str(exc)))
            continue
        except Exception as exc:  # an adapter crash fails this vector, not the run
            response = {"ok": False, "crashed": True, "error": f"{type(exc).__name__}: {exc}"}
        reason = check(vector, response)
        if reason is None and response.get("unsupported"):
            reason = "unsupported"
        status = "skip" if reason == "unsupported" else "pass" if reason is None else "fail"
        known = explain(known_as, vector["id"]) if known_as and status == "fail" else None
        outcomes.append(Outcome(vector["id"], vector["tier"], status, reason or "", known))
    return Report(adapter.name, tuple(outcomes))


def check(vector: Mapping[str, Any], response: Mapping[str, Any]) -> str | None:
    """None when ``response`` is what ``vector`` expects, else why not."""
    if response.get("unsupported"):
        return "unsupported"
    expected = vector["expected"]
    if "error" in expected:
        if response.get("ok"):
            return f"accepted; expected a rejection ({expected['error']})"
        if response.get("crashed"):
            return f"crashed instead of rejecting: {response.get('error')}"
        got = response.get("category")
        if got is not None and got != expected["error"]:
            return f"rejected as {got}, expected {expected['error']}: {response.get('error')}"
        return None
    if not response.get("ok"):
        return f"rejected a valid input: {response.get('category', '')} {response.get('error')}"
    return _compare(vector["op"], expected["result"], response.get("result"))


def _compare(op: str, want: Any, got: Any) -> str | None:
    if not isinstance(got, dict):
        return f"result is not an object: {got!r}"[:300]
    if op in ("read-dv", "read-bitmap"):
        got = _normalize_positions(want, got)
    elif op == "read-dvs":
        vectors = got.get("vectors")
        if not isinstance(vectors, dict):
            return "result has no vectors object"
        got = {
            "vectors": {
                k: _normalize_positions(want["vectors"].get(k, {}), v) for k, v in vectors.items()
            }
        }
    elif op == "read-theta":
        return _compare_sketch(want, got)
    elif op == "build-theta":
        singles = got.get("single-values")
        if singles is not None and singles != want["single-values"]:
            return "single-value serialization differs"
        return _compare_sketch(want["sketch"], got.get("sketch", {}))
    elif op.startswith("write-"):
        got = {"size": got.get("size"), "sha256": got.get("sha256")}
    elif op == "scan-table":
        got = _normalize_rows(got)
    return None if got == want else _diff(want, got)


def _normalize_positions(want: Mapping[str, Any], got: Mapping[str, Any]) -> dict[str, Any]:
    positions = got.get("positions")
    out: dict[str, Any] = {"count": got.get("count")}
    if "positions-sha256" in want and isinstance(positions, list):
        out["positions-sha256"] = positions_digest(positions)
    elif positions is not None:
        out["positions"] = positions
    else:
        out["positions-sha256"] = got.get("positions-sha256")
    return out


def _normalize_rows(got: Mapping[str, Any]) -> dict[str, Any]:
    rows = got.get("rows")
    if isinstance(rows, list):
        try:
            digest = rows_digest(rows)
        except (TypeError, ValueError) as exc:  # rows that are not lists of JSON values
            digest = f"not computable: {exc}"
        return {"count": len(rows), "rows-sha256": digest}
    return {"count": got.get("count"), "rows-sha256": got.get("rows-sha256")}


def _compare_sketch(want: Mapping[str, Any], got: Mapping[str, Any]) -> str | None:
    for key, value in want.items():
        other = got.get(key)
        if key == "estimate":
            if not isinstance(other, (int, float)) or not math.isclose(value, other, rel_tol=1e-9):
                return f"estimate {other!r}, expected {value!r}"
        elif other != value:
            return f"{key} {other!r}, expected {value!r}"
    return None


def _diff(want: Any, got: Any, path: str = "") -> str:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in list(want) + [k for k in got if k not in want]:
            if want.get(key) != got.get(key):
                return _diff(want.get(key), got.get(key), f"{path}.{key}")
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got, strict=False)):
            if a != b:
                return _diff(a, b, f"{path}[{i}]")
    return f"{path or 'result'}: got {json.dumps(got)[:120]}, expected {json.dumps(want)[:120]}"
