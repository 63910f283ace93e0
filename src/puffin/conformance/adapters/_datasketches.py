"""Apache DataSketches C++ through its Python binding: reading and building theta sketches.

The binding's ``update`` takes an int (hashed as its 8 little-endian bytes), a float or a
str (hashed as UTF-8), not bytes; a single value of 8 bytes is fed as the int with those
bytes, one that is valid UTF-8 as that str, and a build whose values fit neither is reported
unsupported.  The result is canonicalized through a union with the same ``lg_k``, as
Iceberg's writers do.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from puffin.conformance.adapters._base import Response, error, ok, theta_result

__all__ = ["DatasketchesAdapter"]


def _describe(sketch: Any) -> Response:
    hashes = [int(h) for h in sketch]
    return theta_result(sketch.num_retained, sketch.theta64, sketch.get_estimate(), hashes)


class DatasketchesAdapter:
    """``datasketches``: read-theta, build-theta."""

    ops = frozenset({"read-theta", "build-theta"})

    def __init__(self) -> None:
        import datasketches

        self._ds = datasketches
        self.name = f"datasketches C++ {getattr(datasketches, '__version__', '')}".strip()

    def handle(self, request: Mapping[str, Any]) -> Response:
        ds = self._ds
        if request["op"] == "read-theta":
            data = Path(request["path"]).read_bytes()
            try:
                return ok(_describe(ds.compact_theta_sketch.deserialize(data)))
            except Exception as exc:  # the binding raises RuntimeError or ValueError
                return error(exc)
        lg_k = int(request["lg-k"])
        sketch = ds.update_theta_sketch(lg_k)
        for text in request["single-values"]:
            raw = bytes.fromhex(text)
            if len(raw) == 8:
                sketch.update(int.from_bytes(raw, "little", signed=True))
                continue
            try:
                sketch.update(raw.decode("utf-8"))
            except UnicodeDecodeError:
                return {"ok": False, "unsupported": True, "error": "bytes the binding cannot hash"}
        union = ds.theta_union(lg_k)
        union.update(sketch)
        return ok({"sketch": _describe(union.get_result())})

    def close(self) -> None:
        pass
