"""The ``--json`` envelope every command prints: the same two keys first, then its own.

``{"schema_version": 1, "command": "table delete", …}``: a script can check both before it
reads the rest.  ``schema_version`` is bumped when a field of any command changes meaning.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["SCHEMA_VERSION", "envelope", "print_json"]

#: Version of every ``--json`` document.
SCHEMA_VERSION = 1


def envelope(command: str, doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` behind the two keys every ``--json`` document starts with."""
    return {"schema_version": SCHEMA_VERSION, "command": command, **doc}


def print_json(command: str, doc: Mapping[str, Any]) -> None:
    """Print ``doc`` as the ``--json`` output of ``puffin COMMAND``."""
    print(json.dumps(envelope(command, doc), indent=2, ensure_ascii=False))
