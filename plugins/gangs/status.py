"""PodGroup status, kept current off the scheduling thread.

The gang manager only marks a gang dirty; a periodic task (Handle.every, run
on the process's loop) recomputes the
status from the pods themselves (members placed, running, waiting at Permit)
and patches `status` through the status subresource when it differs from
what is stored.  Nothing is lost to a crash: the status is a function of the
pods, so the next scheduler recomputes it the first time it sees the group.

The watch cache lags the writer's own patches, so "what is stored" is what
this writer last wrote for the group when it has written since (else the
cached object), and the patch carries no resourceVersion: the status is
derived from the pods, the last computation is the right one, and a stale
cached version must not turn a correct write into a Conflict that nobody
retries.  A failed write is retried by the one retry policy (netsched.retry);
a group still failing ends the run, and it and the rest stay marked for the
task's next run (an outage must not hold the periodic loop all tasks share).

The gang manager's builder makes the writer (one per scheduler) and says whether
writes may happen inline, on the caller's thread: an in-memory cluster's
writes are local and cheap, and simulations stay deterministic that way.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping
from typing import NamedTuple

from tenacity import stop_after_attempt

from netsched.framework import (
    PODGROUPS,
    ClusterAPI,
    NotFound,
    retry_policy,
    stop_when,
)

from .expiring import Expiring

log = logging.getLogger(__name__)


class StatusUpdate(NamedTuple):
    """A group's status as stored (the watch cache's copy) and as the pods show it now."""

    namespace: str
    name: str
    stored: Mapping[str, object]
    status: dict[str, object]


# What the status of a group is computed from: (group) -> the update, or None when the group is gone.
Compute = Callable[[str], StatusUpdate | None]


# The retry policy's first wait and its cap, and how many attempts one run makes for the
# first group that fails; it and the rest are tried again at the periodic task's next run.
RETRY_SECONDS = 0.5
MAX_RETRY_SECONDS = 5.0
ATTEMPTS = 3
# Groups whose last written status is remembered.
WRITTEN_BOUND = 10_000


class PodGroupStatusWriter:
    def __init__(
        self,
        api: ClusterAPI,
        *,
        inline: bool = False,
        soon: Callable[[], None] = lambda: None,
        sleep: Callable[[float], object] = lambda _s: None,
        stopped: Callable[[], bool] = lambda: False,
    ) -> None:
        """`soon` asks the periodic loop to run `write_marked` at its next turn; `sleep` and
        `stopped` are the retry policy's wait (on the injected clock) and its end (shutdown)."""
        self._api = api
        self._compute: Compute = lambda _group: None
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        self._inline = inline
        self._soon = soon
        self._retrying = retry_policy(
            lambda e: isinstance(e, Exception) and not isinstance(e, NotFound),
            backoff=RETRY_SECONDS,
            max_backoff=MAX_RETRY_SECONDS,
            stop=stop_after_attempt(ATTEMPTS) | stop_when(stopped),
            sleep=sleep,
        )
        # group -> the status this writer last patched (the watch cache may not show it yet);
        # bounded, not timed (the oldest go first: a forgotten one is compared to the cache's).
        self._written: Expiring[dict[str, object]] = Expiring(WRITTEN_BOUND)
        self.writes = 0

    def computes_with(self, compute: Compute) -> None:
        """Where a group's status comes from (the gang manager, once it exists)."""
        self._compute = compute

    def mark(self, group: str) -> None:
        """The group's status may have changed: write it inline (in-memory cluster), or at the
        periodic task's next run."""
        if self._inline:
            try:
                self._write_once(group)
            except Exception as e:  # in-memory writes do not fail; the next mark recomputes
                log.warning("Could not update PodGroup status podgroup=%s err=%s", group, e)
            return
        with self._lock:
            self._dirty.add(group)
        self._soon()

    def pending(self) -> int:
        with self._lock:
            return len(self._dirty)

    def write_marked(self) -> None:
        """The periodic task: write every marked group, a failure retried by the retry policy.
        A group that still fails ends the run (one warning): it and the groups not tried yet
        stay marked for the next run.  The API is likely down for all of them, and retrying
        each would hold the one periodic loop every family's tasks share."""
        with self._lock:
            groups, self._dirty = sorted(self._dirty), set()
        for i, group in enumerate(groups):
            try:
                self._retrying(self._write_once, group)
            except Exception as e:  # the status is recomputed from the pods at the next run
                log.warning(
                    "Could not update PodGroup status; will retry podgroup=%s left=%d err=%s",
                    group,
                    len(groups) - i,
                    e,
                )
                with self._lock:
                    self._dirty.update(groups[i:])
                return

    def _write_once(self, group: str) -> None:
        """Bring the group's status up to date; raises when the write failed (NotFound: gone)."""
        try:
            self._write(group)
        except NotFound:
            self._written.pop(group)

    def _write(self, group: str) -> None:
        got = self._compute(group)
        if got is None:
            self._written.pop(group)
            return
        status = got.status
        stored = self._written.get(group, 0.0) or got.stored
        if all(_same(stored.get(k), v) for k, v in status.items()):
            return
        self._api.patch_object(PODGROUPS, got.namespace, got.name, {"status": status}, subresource="status")
        self._written.put(group, status, math.inf, 0.0)
        self.writes += 1


def _same(a: object, b: object) -> bool:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return dict(a) == dict(b)
    return a == b
