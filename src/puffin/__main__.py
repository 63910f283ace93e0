"""``python -m puffin``: the command-line tool (see :mod:`puffin.cli`)."""

from __future__ import annotations

from puffin.cli import run

run()
