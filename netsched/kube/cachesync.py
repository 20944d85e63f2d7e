"""Waiting for the caches' first lists before scheduling: kube-scheduler's WaitForCacheSync.

kube-scheduler starts its informers, then waits with no time limit until every
cache has synced or its context ends (SIGTERM), and only then schedules (or
campaigns for the lease): a scheduler that placed pods from an empty or half
listed cache would overcommit nodes it has not seen. `wait_for_cache_sync` is
that wait, for netsched's reflectors, ended by the process's stop event.

What it logs differs on purpose. client-go's reflectors each log every failed
list, naming the server only inside the URL: with ten resources and an
unreachable server that is some seventy lines a minute and no single line
saying what is wrong. netsched's reflectors keep their failures at -v 4 until
their first sync (netsched.kube.reflector), and this wait says at warning level
which server it cannot list from, what it waits for and the last error, at
once and then every REPORT_EVERY seconds while it lasts; a slow list with no
error is reported at the same pace at info level.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Protocol

from netsched.clock import Clock

log = logging.getLogger(__name__)

REPORT_EVERY = 30.0  # seconds between two reports of the same wait (client-go's backoff cap)
POLL = 0.1  # seconds between two looks at the caches (client-go's syncedPollPeriod)


class Syncing(Protocol):
    """What the wait reads of a reflector (netsched.kube.reflector.Reflector)."""

    @property
    def name(self) -> str: ...
    @property
    def has_synced(self) -> threading.Event: ...
    @property
    def last_error(self) -> str: ...


def wait_for_cache_sync(
    reflectors: Sequence[Syncing],
    stop: threading.Event,
    *,
    server: str,
    clock: Clock,
    timeout: float | None = None,
) -> bool:
    """True once every reflector has synced; False as soon as `stop` is set (or, when given,
    `timeout` seconds have passed) before that. Never gives up on its own, as kube's."""
    started = clock.now()
    reported: float | None = None
    while True:
        waiting = [r for r in reflectors if not r.has_synced.is_set()]
        if not waiting:
            return True
        if stop.is_set():
            return False
        now = clock.now()
        if timeout is not None and now - started >= timeout:
            return False
        if (reported is None or now - reported >= REPORT_EVERY) and _report(waiting, server, now - started):
            reported = now
        clock.sleep_unless(stop, POLL)


def _report(waiting: Sequence[Syncing], server: str, waited: float) -> bool:
    """Log what the wait is for; False when there is nothing worth a line yet."""
    names = ",".join(r.name for r in waiting)
    failing = [r for r in waiting if r.last_error]
    if failing:
        log.warning(
            "Cannot list from the API server; not scheduling until the caches sync "
            "server=%s waitingFor=%s failing=%d waited=%.0fs err=%s",
            server,
            names,
            len(failing),
            waited,
            failing[0].last_error,
        )
        return True
    if waited < REPORT_EVERY:
        return False
    log.info(
        "Waiting for the caches to sync before scheduling server=%s waitingFor=%s waited=%.0fs",
        server,
        names,
        waited,
    )
    return True


__all__ = ["POLL", "REPORT_EVERY", "wait_for_cache_sync"]
