"""PodGroup status, kept current off the scheduling thread.

The gang manager only marks a gang dirty; a writer thread recomputes the
status from the pods themselves (members placed, running, waiting at Permit)
and patches `status` through the status subresource when it differs from
what is stored.  Nothing is lost to a crash: the status is a function of the
pods, so the next scheduler recomputes it the first time it sees the group.

The watch cache lags the writer's own patches, so "what is stored" is what
this writer last wrote for the group when it has written since (else the
cached object), and the patch carries no resourceVersion: the status is
derived from the pods, the last computation is the right one, and a stale
cached version must not turn a correct write into a Conflict that nobody
retries.  A failed write is retried after RETRY_SECONDS.

The composition root builds the writer (one per scheduler) and says whether
writes may happen inline, on the caller's thread: an in-memory cluster's
writes are local and cheap, and simulations stay deterministic that way.
The thread ends when idle for IDLE_EXIT_SECONDS; the next mark starts one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from netsched.framework.seams import ClusterAPI
from netsched.kube.errors import NotFound
from netsched.kube.resources import PODGROUPS

log = logging.getLogger(__name__)


class StatusUpdate(NamedTuple):
    """A group's status as stored (the watch cache's copy) and as the pods show it now."""

    namespace: str
    name: str
    stored: Mapping[str, Any]
    status: dict[str, Any]


# What the status of a group is computed from: (group) -> the update, or None when the group is gone.
Compute = Callable[[str], StatusUpdate | None]


IDLE_EXIT_SECONDS = 30.0
RETRY_SECONDS = 1.0


class PodGroupStatusWriter:
    def __init__(self, api: ClusterAPI, *, inline: bool = False) -> None:
        self._api = api
        self._compute: Compute = lambda _group: None
        self._dirty: set[str] = set()
        self._cond = threading.Condition()
        self._busy = False
        self._inline = inline
        self._thread: threading.Thread | None = None
        # group -> the status this writer last patched (the watch cache may not show it yet)
        self._written: dict[str, dict[str, Any]] = {}
        self.writes = 0

    def computes_with(self, compute: Compute) -> None:
        """Where a group's status comes from (the gang manager, once it exists)."""
        self._compute = compute

    def mark(self, group: str) -> None:
        if self._inline:
            self._write(group)
            return
        with self._cond:
            self._dirty.add(group)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="podgroup-status", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every marked group has been written (tests, shutdown)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._dirty and not self._busy, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                # Idle for a while: the thread ends; the next mark() starts a new one.
                if not self._cond.wait_for(lambda: bool(self._dirty), IDLE_EXIT_SECONDS):
                    self._thread = None
                    return
                groups, self._dirty = sorted(self._dirty), set()
                self._busy = True
            try:
                failed = [g for g in groups if not self._write(g)]
                if failed:
                    self._retry_later(failed)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _retry_later(self, groups: list[str]) -> None:
        def again() -> None:
            for g in groups:
                self.mark(g)

        timer = threading.Timer(RETRY_SECONDS, again)
        timer.daemon = True
        timer.start()

    def _write(self, group: str) -> bool:
        """Bring the group's status up to date; False when the write failed (retry later)."""
        try:
            got = self._compute(group)
            if got is None:
                self._written.pop(group, None)
                return True
            status = got.status
            stored = self._written.get(group, got.stored)
            if all(_same(stored.get(k), v) for k, v in status.items()):
                return True
            self._api.patch_object(
                PODGROUPS, got.namespace, got.name, {"status": status}, subresource="status"
            )
            self._written[group] = status
            self.writes += 1
            return True
        except NotFound:
            self._written.pop(group, None)
            return True
        except Exception as e:  # retried; the status is recomputed from the pods then
            log.warning("Could not update PodGroup status; will retry podgroup=%s err=%s", group, e)
            return self._inline  # inline (in-memory) writes are not retried from a thread


def _same(a: object, b: object) -> bool:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return dict(a) == dict(b)
    return a == b
