"""Time, injected: the one Clock protocol, the real clock, and one moved by hand.

Everything that waits or compares times (queue backoff, staleness of metric
samples, assumed-pod expiry, leases, event series, reflector backoff) takes a
Clock, so tests and the simulation step time instead of sleeping.
`ManualClock` lives here rather than in netsched.testing because production
code uses it too: `netsched simulate` and the in-memory cluster run on it.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds: intervals, backoff, expiry."""
        ...

    def wall(self) -> float:
        """Unix seconds: timestamps written to the API and compared with Prometheus samples."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let `seconds` pass (a manual clock advances instead of blocking)."""
        ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Wait for event at most `seconds`; True if it was set."""
        ...

    def sleep_unless(self, event: threading.Event, seconds: float) -> bool:
        """sleep(seconds), cut short when `event` is set; True if it is. The thread that sleeps
        is the one that moves a manual clock (a poll loop in a single-threaded simulation),
        where wait() is for a thread that another one steps."""
        ...


def rfc3339(wall: float) -> str:
    """A wall time as the API writes a metav1.Time: seconds precision, UTC."""
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def microtime(wall: float) -> str:
    """A wall time as the API writes a metav1.MicroTime: microsecond precision, UTC."""
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class SystemClock:
    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Wait for event at most `seconds`; True if it was set."""
        return event.wait(max(0.0, seconds))

    # A system clock's sleep that an event can end is the same wait.
    sleep_unless = wait


class ManualClock:
    """Time that moves only when told to (step), for tests and simulations."""

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

    def sleep_unless(self, event: threading.Event, seconds: float) -> bool:
        """Advances time by `seconds` unless the event is already set."""
        if not event.is_set():
            self.sleep(seconds)
        return event.is_set()

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Blocks until the event is set or the manual time passes the deadline."""
        deadline = self._t + seconds
        with self._cond:
            while not event.is_set() and self._t < deadline:
                self._cond.wait(0.01)
        return event.is_set()
