"""Time, injected: real clocks here, a fake one in netsched.testing.

Everything that waits or compares times (queue backoff, staleness of metric
samples, assumed-pod expiry, leases) takes a Clock so tests step time
instead of sleeping.
"""

from __future__ import annotations

import threading
import time


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
