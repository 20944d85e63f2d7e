"""Gang state that expires by time, with a bound: what the manager remembers about a gang.

The manager remembers things per gang for a while (a minResources check that
passed, a backoff, the members it released, a member turned away for too few
siblings).  Each entry has an end on the injected clock; an ended one reads as
absent and is dropped when next seen, and the map never holds more than its
bound: past it, ended entries go first, then the oldest.  So a scheduler that
sees a million gangs over its life keeps only the recent ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")

# Entries per map before the oldest are dropped (gangs in flight at once are far fewer).
DEFAULT_BOUND = 10_000


class Expiring(Generic[V]):
    """key -> (value, until) on the caller's clock; thread-safe."""

    def __init__(self, bound: int = DEFAULT_BOUND) -> None:
        self._bound = bound
        self._items: dict[str, tuple[V, float]] = {}  # insertion order: the oldest first
        self._lock = threading.Lock()

    def put(self, key: str, value: V, until: float, now: float) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = (value, until)
            if len(self._items) > self._bound:
                self._prune(now)

    def get(self, key: str, now: float) -> V | None:
        """The value, None when absent or ended (an ended entry is dropped)."""
        with self._lock:
            got = self._items.get(key)
            if got is None:
                return None
            if got[1] <= now:
                del self._items[key]
                return None
            return got[0]

    def update(self, key: str, change: Callable[[V | None], V], until: float, now: float) -> V:
        """Replace the entry by change(current value or None), ending at `until`."""
        with self._lock:
            got = self._items.pop(key, None)
            value = change(got[0] if got is not None and got[1] > now else None)
            self._items[key] = (value, until)
            if len(self._items) > self._bound:
                self._prune(now)
            return value

    def pop(self, key: str) -> V | None:
        with self._lock:
            got = self._items.pop(key, None)
            return None if got is None else got[0]

    def ended(self, key: str, now: float) -> bool:
        """There is an entry and it has ended (nobody took notice yet)."""
        with self._lock:
            got = self._items.get(key)
            return got is not None and got[1] <= now

    def take_ended(self, now: float) -> list[str]:
        """The keys whose entries ended, dropped from now on (sorted)."""
        with self._lock:
            done = sorted(k for k, (_v, until) in self._items.items() if until <= now)
            for k in done:
                del self._items[k]
            return done

    def remaining(self, key: str, now: float) -> float:
        """Time left of the entry (0 when absent or ended; an ended one is dropped)."""
        with self._lock:
            got = self._items.get(key)
            if got is None:
                return 0.0
            if got[1] <= now:
                del self._items[key]
                return 0.0
            return got[1] - now

    def live(self, now: float) -> list[str]:
        """The keys whose entries have not ended (sorted)."""
        with self._lock:
            return sorted(k for k, (_v, until) in self._items.items() if until > now)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def _prune(self, now: float) -> None:
        for k in [k for k, (_v, until) in self._items.items() if until <= now]:
            del self._items[k]
        while len(self._items) > self._bound:
            del self._items[next(iter(self._items))]
