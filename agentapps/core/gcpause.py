"""Pausing the cyclic garbage collector around bulk work that makes many objects and no cycles.

CPython runs a collection after every 2 000 new container objects, and each older-generation pass
walks every live container. Decoding 50 000 skill definitions from the index cache makes hundreds
of thousands of dicts and lists that hold no reference cycle: the collector frees nothing there,
yet its passes took about a third of a warm `check` at 50 000 skills (2.5 s -> 1.75 s of CPU with
it paused, measured 2026-11-27 on the shared 2-core machine; `benchmarks/resolution.py`). Reference
counting still frees everything that is not a cycle while paused; a cycle made meanwhile is found
by the first collection after.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block (nested blocks and an already paused collector are left
    as they were)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
