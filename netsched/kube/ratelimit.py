"""Client-side rate limiting: the token bucket client-go puts in front of every request.

kube-scheduler talks to the API server with qps 50 / burst 100 by default
(clientConnection in its config). Without a limit a burst of bindings, status
patches and events after a large deployment can trip the server's priority
and fairness throttling, which then slows every client, not just us.

The bucket hands out reservations: a caller that finds it empty takes a token
"on credit" and sleeps outside the lock until its turn, so waiting callers are
served in order and never spin.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    """`qps` tokens per second, at most `burst` saved up. qps <= 0 disables limiting."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock()
        self.waited_seconds = 0.0  # total time callers spent throttled

    @property
    def enabled(self) -> bool:
        return self.qps > 0

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)

    def reserve(self) -> float:
        """Take one token, possibly on credit; returns how long the caller must wait first."""
        if not self.enabled:
            return 0.0
        with self._lock:
            self._refill(self._clock())
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def try_acquire(self) -> bool:
        """Take one token if one is there now (never on credit); False: the caller would wait."""
        if not self.enabled:
            return True
        with self._lock:
            self._refill(self._clock())
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True

    def acquire(self) -> float:
        """Block until a token is ours; returns the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
            with self._lock:
                self.waited_seconds += delay
        return delay


__all__ = ["TokenBucket"]
