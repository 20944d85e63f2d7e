"""The current profiles: one owner of "which Framework serves each schedulerName now".

Three things read the profiles while the scheduler runs: PreEnqueue (on the
informer threads, when a pod arrives), the queueing hints (when a cluster
event decides which parked pods to move) and the scheduling cycle. After a
hot reload they must not disagree, so they all read one `Profiles`: a
reload `stage()`s the new frameworks, and `swap()` makes them current for
every reader at once. The scheduling thread swaps between two cycles, never
during one (netsched.scheduler.Scheduler.schedule_one); with no scheduling
loop running (a standby replica), the reload swaps at once
(netsched.app.SchedulerApp.apply_config). Until the swap every reader sees
the old frameworks, from it on every reader sees the new.

The mapping handed out is never changed in place: a swap replaces it whole,
so a reader holding it keeps one consistent set.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from netsched.framework.runtime import Framework


class Profiles:
    """The frameworks in use by schedulerName, and those staged to replace them."""

    def __init__(self, frameworks: Mapping[str, Framework]) -> None:
        self._current: Mapping[str, Framework] = MappingProxyType(dict(frameworks))
        self._staged: Mapping[str, Framework] | None = None
        self._lock = threading.Lock()

    @property
    def current(self) -> Mapping[str, Framework]:
        """The frameworks in use (read-only; replaced whole by a swap)."""
        return self._current

    def get(self, scheduler_name: str) -> Framework | None:
        return self._current.get(scheduler_name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._current)

    def first(self) -> Framework:
        """The first profile's framework (QueueSort comes from it: all profiles share one)."""
        return next(iter(self._current.values()))

    def stage(self, frameworks: Mapping[str, Framework]) -> None:
        """Use these frameworks from the next swap on (a later stage replaces an earlier one)."""
        with self._lock:
            self._staged = MappingProxyType(dict(frameworks))

    @property
    def staged(self) -> bool:
        return self._staged is not None

    def swap(self) -> Mapping[str, Framework] | None:
        """Make the staged frameworks current; returns them, or None when nothing was staged."""
        with self._lock:
            new, self._staged = self._staged, None
            if new is not None:
                self._current = new
        return new
