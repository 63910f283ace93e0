"""Cyclic garbage collection held off while a job builds many objects that live on.

CPython's collector runs a full collection once the objects that survived younger ones
outnumber a quarter of the long-lived ones; each full collection walks every tracked object
of the process. A plan of 20,000 files makes about 60,000 such objects, and with the
process's cache of decoded manifests (hundreds of thousands of objects) a full collection
fell inside three warm plans in seven, each adding about 0.25 s to a 0.11 s plan. The objects
such a job makes hold no reference cycles, so nothing is left uncollected; the collector is
enabled again as it was when the job ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for the ``with`` block, then as it was (reference counting
    frees objects as usual). Another thread's collections are held off too, for as long."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
