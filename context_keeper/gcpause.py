"""Pause Python's cyclic garbage collector while a large structure is built.

The collector runs after every few hundred container allocations and, now and then, walks every
object the process holds. Building the search index allocates millions of small containers and
frees none of them, so each walk finds nothing, and the walks grow with the heap. Reference
counting still frees what is dropped meanwhile.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# The server builds indexes of several projects in worker threads at once: one count of the
# blocks in progress, so the last to end (not the first) turns the collector back on.
_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for the block, and back on once no block of any thread is left,
    unless it was off before the first began."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
