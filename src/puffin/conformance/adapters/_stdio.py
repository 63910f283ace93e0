"""A built-in adapter served over the JSON-lines protocol: ``python -m ... _stdio NAME``.

The runner starts peers this way, each in its own process with a memory cap, so a peer
that crashes or allocates without bound on a hostile vector fails that vector only.  It is
also the reference for writing an adapter in another language: read a line, answer a line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["serve"]


def serve(name: str) -> int:
    """Answer requests from stdin until it closes."""
    from puffin.conformance.adapters import LOCAL_ADAPTERS

    adapter = LOCAL_ADAPTERS[name]()
    for line in sys.stdin:
        request = json.loads(line)
        response: dict[str, Any]
        if request.get("op") == "hello":
            response = {"ok": True, "result": {"name": adapter.name, "ops": sorted(adapter.ops)}}
        elif request.get("op") not in adapter.ops:
            response = {"ok": False, "unsupported": True, "error": "unknown op"}
        else:
            try:
                response = adapter.handle(request)
            except MemoryError:
                response = {"ok": False, "crashed": True, "error": "MemoryError (memory cap)"}
        sys.stdout.write(json.dumps(response) + "\n")
        sys.stdout.flush()
    adapter.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(serve(sys.argv[1]))
