"""A binary heap of queued pods addressed by uid.

The scheduling queue must find, update and remove a pod in a heap by its uid
(a pod update, a delete, an activation).  heapq has no removal, so entries are
removed lazily: the live entry of each uid is remembered, and entries that are
no longer live are skipped when they reach the top.  The heap is rebuilt when
dead entries outnumber live ones, so memory stays proportional to the pods held.

Ordering is given by a key built when a pod is pushed.  Keys that compare equal
fall back to push order (FIFO), so the heap is stable.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# (sort key, push sequence, uid): the sequence makes ties FIFO and uids never compared.
_Entry = tuple[Any, int, str]

KeyFn = Callable[[T, int], Any]
"""Builds the sort key of an item pushed with the given sequence number."""

# Rebuild the heap once it holds this many dead entries more than live ones.
_COMPACT_SLACK = 64


class KeyedHeap(Generic[T]):
    """Min-heap of items by key, with O(log n) push/pop and O(1) lookup and removal by uid.

    Not thread-safe: the scheduling queue guards it with its own lock.
    """

    __slots__ = ("_key", "_heap", "_live", "_seq")

    def __init__(self, key: KeyFn[T]) -> None:
        self._key = key
        self._heap: list[_Entry] = []
        self._live: dict[str, tuple[_Entry, T]] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, uid: object) -> bool:
        return uid in self._live

    def get(self, uid: str) -> T | None:
        live = self._live.get(uid)
        return None if live is None else live[1]

    def items(self) -> Iterator[T]:
        """The items in no particular order."""
        return (item for _, item in self._live.values())

    def push(self, uid: str, item: T) -> None:
        """Add item, replacing (and re-keying) any item already held under uid."""
        seq = next(self._seq)
        entry: _Entry = (self._key(item, seq), seq, uid)
        self._live[uid] = (entry, item)
        heapq.heappush(self._heap, entry)
        self._maybe_compact()

    def remove(self, uid: str) -> T | None:
        live = self._live.pop(uid, None)
        if live is None:
            return None
        self._maybe_compact()
        return live[1]

    def peek(self) -> T | None:
        self._drop_dead_top()
        if not self._heap:
            return None
        return self._live[self._heap[0][2]][1]

    def pop(self) -> T | None:
        self._drop_dead_top()
        if not self._heap:
            return None
        entry = heapq.heappop(self._heap)
        return self._live.pop(entry[2])[1]

    def _drop_dead_top(self) -> None:
        heap, live = self._heap, self._live
        while heap:
            top = heap[0]
            current = live.get(top[2])
            if current is not None and current[0] is top:
                return
            heapq.heappop(heap)

    def _maybe_compact(self) -> None:
        if len(self._heap) > 2 * len(self._live) + _COMPACT_SLACK:
            self._heap = [entry for entry, _ in self._live.values()]
            heapq.heapify(self._heap)
