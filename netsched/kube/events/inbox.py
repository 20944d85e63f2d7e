"""A writer thread's queue, which it can wait on together with the connections of its requests.

The writer keeps a few batches of event creates in flight and reads their
replies as they come, so it must wake for whichever comes first: a new event,
or the replies to one of its batches.  A queue.Queue cannot be waited on with
sockets, so this queue pairs a deque with a socket pair: `wait` selects on the
batches' connections and the pair's read end, and `put` writes a byte to the
other end only while the writer is asleep in `wait` (no system call otherwise).

Occurrences are bounded (`maxsize`: `put_nowait` raises queue.Full); markers
(flush, stop) are not, so shutdown can always ask.
"""

from __future__ import annotations

import contextlib
import queue
import select
import socket
import threading
from collections import deque
from collections.abc import Sequence


class Inbox:
    """Items for one writer thread (one reader, any number of writers)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: deque[tuple[bool, object]] = deque()  # (bounded, item)
        self._bounded = 0  # occurrences among the items
        self._lock = threading.Lock()
        self._sleeping = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wake_fd = self._wake_r.fileno()

    def put_nowait(self, item: object, *, bounded: bool = True) -> None:
        """Queue `item`; queue.Full when it is bounded and `maxsize` bounded items wait already."""
        with self._lock:
            if bounded:
                if self._bounded >= self.maxsize:
                    raise queue.Full
                self._bounded += 1
            self._items.append((bounded, item))
            wake, self._sleeping = self._sleeping, False
        if wake:
            # Full (a wake-up is pending anyway) or closed (the writer ended): nothing to wake.
            with contextlib.suppress(OSError):
                self._wake_w.send(b"\0")

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
