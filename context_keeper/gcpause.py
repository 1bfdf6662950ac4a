"""Pause Python's cyclic garbage collector while a large structure is built.

The collector runs after every few hundred container allocations and, now and then, walks every
object the process holds. Building the search index allocates millions of small containers and
frees none of them, so each walk finds nothing and the walks grow with the heap: indexing 50,000
entries took 44 s with the collector running and 13 s with it paused
(``benchmarks/bench_scale.py``). Reference counting still frees what is dropped meanwhile.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for the block, back on after it unless it was off already (nested use,
    or a caller that turned it off itself)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
