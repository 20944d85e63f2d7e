"""PodGroup status, kept current off the scheduling thread.

Plugin code only marks a gang dirty; a writer thread recomputes the status
from the pods themselves (members placed, running, waiting at Permit) and
patches `status` through the status subresource when it differs from what is
stored.  Nothing is lost to a crash: the status is a function of the pods, so
the next scheduler recomputes it the first time it sees the group.  An API
whose writes are local and cheap (`synchronous = True`: the in-memory
cluster) is written inline, so simulations stay deterministic.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from netsched.framework import Handle
from netsched.kube.errors import Conflict, NotFound
from netsched.kube.resources import PODGROUPS
from plugins.coscheduling.groups import PodGroup

log = logging.getLogger(__name__)

# What the status of a group is computed from: (group) -> fields, or None when the group is gone.
Compute = Callable[[str], tuple[PodGroup, dict[str, Any]] | None]


IDLE_EXIT_SECONDS = 30.0


class StatusWriter:
    def __init__(self, handle: Handle, compute: Compute) -> None:
        self._handle = handle
        self._compute = compute
        self._dirty: set[str] = set()
        self._cond = threading.Condition()
        self._busy = False
        self._inline = bool(getattr(handle.api, "synchronous", False))
        self._thread: threading.Thread | None = None
        self.writes = 0

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
                # Idle for a while: the thread ends (a reload's replaced plugin leaves none behind);
                # the next mark() starts a new one.
                if not self._cond.wait_for(lambda: bool(self._dirty), IDLE_EXIT_SECONDS):
                    self._thread = None
                    return
                groups, self._dirty = sorted(self._dirty), set()
                self._busy = True
            try:
                for g in groups:
                    self._write(g)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _write(self, group: str) -> None:
        try:
            got = self._compute(group)
            if got is None:
                return
            pg, status = got
            if all(_same(pg.status.get(k), v) for k, v in status.items()):
                return
            patch: dict[str, Any] = {"status": status}
            if pg.resource_version:
                patch["metadata"] = {"resourceVersion": pg.resource_version}
            self._handle.api.patch_object(PODGROUPS, pg.namespace, pg.name, patch, subresource="status")
            self.writes += 1
        except Conflict:
            # Someone wrote in between: recompute from the newer object on the next mark.
            log.info("PodGroup status changed meanwhile; will recompute podgroup=%s", group)
        except NotFound:
            return
        except Exception as e:  # a status write is best effort: the next change rewrites it
            log.warning("Could not update PodGroup status podgroup=%s err=%s", group, e)


def _same(a: object, b: object) -> bool:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return dict(a) == dict(b)
    return a == b
