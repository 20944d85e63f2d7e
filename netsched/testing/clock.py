"""A clock tests move by hand."""

from __future__ import annotations

import threading


class FakeClock:
    def __init__(self, start: float = 1000.0, wall_start: float = 1_700_000_000.0) -> None:
        self._t = start
        self._offset = wall_start - start
        self._cond = threading.Condition()

    def now(self) -> float:
        return self._t

    def wall(self) -> float:
        return self._t + self._offset

    def step(self, seconds: float) -> None:
        with self._cond:
            self._t += seconds
            self._cond.notify_all()

    def sleep(self, seconds: float) -> None:
        """Advances time instead of blocking (single-threaded tests)."""
        self.step(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Blocks until the event is set or the fake time passes the deadline."""
        deadline = self._t + seconds
        with self._cond:
            while not event.is_set() and self._t < deadline:
                self._cond.wait(0.01)
        return event.is_set()
