"""Pods held at Permit, and the map other plugins use to allow or reject them.

A Permit plugin that answers Wait parks the pod here with a timeout.  The
binding thread blocks in `wait()`; any plugin (a co-scheduling gate, say)
can iterate the map and call allow()/reject().  The pod proceeds when every
waiting plugin has allowed it, and is rejected on the first reject or when
the earliest per-plugin timeout passes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from netsched.clock import Clock
from netsched.framework.status import Code, Status
from netsched.framework.types import PodInfo

MAX_PERMIT_TIMEOUT = 15 * 60.0
# Why a pod waiting at Permit is rejected when the scheduler shuts down.
SHUTTING_DOWN = "rejected: the scheduler is shutting down"


class WaitingPodImpl:
    def __init__(self, pod: PodInfo, node_name: str, timeouts: dict[str, float], clock: Clock) -> None:
        self._pod = pod
        self._node = node_name
        self._clock = clock
        now = clock.now()
        self._timeouts = {p: min(t, MAX_PERMIT_TIMEOUT) for p, t in timeouts.items()}
        self._deadlines = {p: now + t for p, t in self._timeouts.items()}
        self._pending = set(timeouts)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._result: Status | None = None

    @property
    def pod(self) -> PodInfo:
        return self._pod

    @property
    def node_name(self) -> str:
        return self._node

    def pending_plugins(self) -> list[str]:
        with self._lock:
            return sorted(self._pending)

    def allow(self, plugin: str) -> None:
        with self._lock:
            self._pending.discard(plugin)
            if self._pending or self._result is not None:
                return
            self._result = Status.success()
        self._done.set()

    def reject(self, plugin: str, message: str) -> None:
        with self._lock:
            if self._result is not None:
                return
            self._result = Status(Code.UNSCHEDULABLE, [message], plugin)
        self._done.set()

    def poll(self) -> Status | None:
        """The outcome if decided (timing out a pod whose earliest deadline passed), else None."""
        with self._lock:
            if self._result is not None:
                return self._result
            deadline, plugin = min((self._deadlines[p], p) for p in self._pending)
        if deadline - self._clock.now() > 0:
            return None
        self.reject(
            plugin, f"rejected due to timeout after waiting {self._timeouts[plugin]:g}s at plugin {plugin}"
        )
        return self._result

    def wait(self) -> Status:
        """Block until allowed, rejected or timed out (the earliest pending plugin's deadline)."""
        while (st := self.poll()) is None:
            with self._lock:
                deadline = min(self._deadlines[p] for p in self._pending)
            self._done.wait(min(max(deadline - self._clock.now(), 0.0), 0.5))
        return st


class WaitingPods:
    """uid -> WaitingPodImpl, shared by all profiles (kube keeps one map per scheduler)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPodImpl] = {}
        self._lock = threading.Lock()

    def add(self, wp: WaitingPodImpl) -> None:
        with self._lock:
            self._pods[wp.pod.uid] = wp

    def remove(self, uid: str) -> None:
        with self._lock:
            self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPodImpl | None:
        with self._lock:
            return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPodImpl]:
        with self._lock:
            return iter(list(self._pods.values()))

    def __len__(self) -> int:
        with self._lock:
            return len(self._pods)
