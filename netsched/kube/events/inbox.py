"""A writer thread's queue, which it can wait on together with the connections of its requests.

The writer keeps a few batches of event creates in flight and reads their
replies as they come, so it must wake for whichever comes first: a new event,
or the replies to one of its batches.  A queue.Queue cannot be waited on with
sockets, so this queue pairs a deque with a socket pair: `wait` selects on the
batches' connections and the pair's read end, and `put` writes a byte to the
other end only while the writer is asleep in `wait` (no system call otherwise).

Occurrences are bounded (`maxsize`: `put_nowait` raises queue.Full); markers
(flush, stop) are not, so shutdown can always ask.

It also keeps what another thread needs to know, under its one lock, before it
writes an event itself (`claim`): what the writer owes per key (a pod's events
queued, held or unanswered: `owed`, settled one by one) and how many batches
are out (`sending`, `answered`).
"""

from __future__ import annotations

import contextlib
import queue
import select
import socket
import threading
from collections import deque
from collections.abc import Callable, Sequence


class Inbox:
    """Items for one writer thread (one reader, any number of writers)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: deque[tuple[bool, object]] = deque()  # (bounded, item)
        self._bounded = 0  # occurrences among the items
        self._lock = threading.Lock()
        self._owed: dict[str, int] = {}  # key -> items queued, held or out
        self.out = 0  # batches sent and not yet answered
        self._sleeping = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wake_fd = self._wake_r.fileno()

    def put_nowait(self, item: object, *, bounded: bool = True, key: str = "") -> None:
        """Queue `item` (owed under `key` until `settled(key)`, when given); queue.Full when it is
        bounded and `maxsize` bounded items wait already."""
        with self._lock:
            if bounded:
                if self._bounded >= self.maxsize:
                    raise queue.Full
                self._bounded += 1
            if key:
                self._owed[key] = self._owed.get(key, 0) + 1
            self._items.append((bounded, item))
            wake, self._sleeping = self._sleeping, False
        if wake:
            # Full (a wake-up is pending anyway) or closed (the writer ended): nothing to wake.
            with contextlib.suppress(OSError):
                self._wake_w.send(b"\0")

    def claim(self, key: str, limit: int, ready: Callable[[], bool], item: object) -> bool:
        """For a thread that writes one item itself: when nothing is owed under `key`, fewer
        than `limit` batches are out and `ready()`, queue `item` (its stand-in, for the writer
        to read the replies of: no wake-up, the writer finds it when it next wakes) owed under
        `key` and count its batch out. False: nothing done."""
        with self._lock:
            if self._owed.get(key) or self.out >= limit or not ready():
                return False
            self._owed[key] = 1
            self.out += 1
            self._items.append((False, item))
            return True

    def settled(self, key: str) -> None:
        """One item owed under `key` is done with (written, failed, merged or dropped)."""
        with self._lock:
            left = self._owed.get(key, 0) - 1
            if left > 0:
                self._owed[key] = left
            else:
                self._owed.pop(key, None)

    def sending(self) -> None:
        with self._lock:
            self.out += 1

    def answered(self, batches: int) -> None:
        with self._lock:
            self.out = max(0, self.out - batches)

    def take(self, limit: int) -> list[object]:
        """Up to `limit` items, oldest first, without waiting."""
        out: list[object] = []
        with self._lock:
            while self._items and len(out) < limit:
                bounded, item = self._items.popleft()
                self._bounded -= bounded
                out.append(item)
        return out

    def wait(self, fds: Sequence[int], timeout: float | None) -> list[int]:
        """Until an item is queued, one of `fds` is readable (those are returned) or `timeout`."""
        with self._lock:
            if self._items:
                return []
            self._sleeping = True
        try:
            readable, _, _ = select.select([self._wake_fd, *fds], [], [], timeout)
        finally:
            with self._lock:
                self._sleeping = False
        if self._wake_fd in readable:
            with contextlib.suppress(OSError):  # drained
                while self._wake_r.recv(4096):
                    pass
        return [fd for fd in readable if fd != self._wake_fd]

    def qsize(self) -> int:
        with self._lock:
            return len(self._items)

    def empty(self) -> bool:
        return self.qsize() == 0

    def close(self) -> None:
        self._wake_r.close()
        self._wake_w.close()
