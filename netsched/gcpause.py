"""The cyclic garbage collector paused while large, cycle-free structures are built.

Decoding a list page builds hundreds of thousands of dicts; with the cyclic
GC on, each decode also triggers collections that traverse the whole
(growing) cache: 4-5x the decode. Decoded JSON and the records parsed from it
hold no reference cycles, so there is nothing for the GC to find meanwhile.
Used where the API client decodes large bodies (netsched.kube.client), where
a reflector applies a list (netsched.kube.reflector) and while the initial
lists build the cache (netsched.app.SchedulerApp.start_informers).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = True


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off for the block (thread-safe, nested: the last one out turns it back on,
    unless it was off before the first one came in). Decoded JSON holds no cycles to collect."""
    global _gc_pausers, _gc_was_enabled
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and _gc_was_enabled:
                gc.enable()
