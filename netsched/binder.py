"""The binding cycle, off the scheduling thread.

After the scheduling cycle assumed a pod on a node, a pool thread waits for
Permit, runs PreBind, Bind and PostBind.  On any failure it undoes the
reservation (Unreserve in reverse order), forgets the assumed pod so its
resources free up, and sends the pod back to the queue with backoff.  The
pool is sized by `parallelism`, like kube-scheduler's binding goroutines.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from netsched.cache import ClusterCache
from netsched.framework.cycle_state import CycleState
from netsched.framework.runtime import Framework
from netsched.framework.status import Status
from netsched.framework.types import PodInfo, QueuedPodInfo

log = logging.getLogger(__name__)


@dataclass(slots=True)
class BindRequest:
    framework: Framework
    state: CycleState
    queued: QueuedPodInfo
    pod: PodInfo  # the assumed copy (spec.nodeName set)
    node: str
    started: float  # perf_counter at the start of the scheduling attempt
    cycle: int


class Binder:
    def __init__(
        self,
        cache: ClusterCache,
        on_success: Callable[[BindRequest], None],
        on_failure: Callable[[BindRequest, str, Status], None],
        parallelism: int = 16,
        thread_init: Callable[[], None] | None = None,
    ) -> None:
        """`thread_init` runs first in each pool thread (app.py: let it write its own events)."""
        self._cache = cache
        self._on_success = on_success
        self._on_failure = on_failure
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, parallelism), thread_name_prefix="bind", initializer=thread_init
        )
        self._inflight = 0
        self._cond = threading.Condition()

    def submit(self, req: BindRequest) -> Future[None] | None:
        with self._cond:
            self._inflight += 1
        if req.framework.get_waiting_pod(req.pod.uid) is not None:
            # Held at Permit (a group member): a thread of its own, as kube's goroutine, so
            # waiting members never hold the pool's threads that other bindings need.
            threading.Thread(
                target=self._run, args=(req,), name=f"permit-{req.pod.name}", daemon=True
            ).start()
            return None
        return self._pool.submit(self._run, req)

    @property
    def inflight(self) -> int:
        with self._cond:
            return self._inflight

    def _run(self, req: BindRequest) -> None:
        try:
            self.bind(req)
        except Exception:  # never lose a pod to a bug in the binding path
            log.exception("Binding cycle crashed pod=%s node=%s", req.pod.key, req.node)
            self._fail(req, "bind", Status.as_error(RuntimeError("binding cycle crashed")))
        finally:
            with self._cond:
                self._inflight -= 1
                self._cond.notify_all()

    def bind(self, req: BindRequest) -> None:
        fwk, state, pod, node = req.framework, req.state, req.pod, req.node
        st = fwk.wait_on_permit(pod)
        if not st.ok:
            self._fail(req, "permit", st)
            return
        st = fwk.run_pre_bind(state, pod, node)
        if not st.ok:
            self._fail(req, "preBind", st)
            return
        st = fwk.run_bind(state, pod, node)
        if not st.ok:
            self._fail(req, "bind", st)
            return
        self._cache.finish_binding(pod.uid)
        # The Scheduled event first (kube's finishBinding records it before the line is logged):
        # a log write lets go of the GIL, and on a busy scheduler each such point delays what
        # follows it by a hand-over.
        self._on_success(req)
        log.info("Successfully bound pod to node pod=%s node=%s profile=%s", pod.key, node, fwk.profile_name)
        fwk.run_post_bind(state, pod, node)

    def _fail(self, req: BindRequest, stage: str, st: Status) -> None:
        req.framework.run_unreserve(req.state, req.pod, req.node)
        self._cache.forget(req.pod.uid)
        # Bound elsewhere meanwhile (another binder won the race): the failure handler says so.
        level = logging.DEBUG if self._cache.bound_node(req.pod.uid) else logging.WARNING
        log.log(
            level, "Binding cycle failed pod=%s node=%s stage=%s status=%s", req.pod.key, req.node, stage, st
        )
        self._on_failure(req, stage, st)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait for in-flight bindings; True when none are left."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._inflight:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def shutdown(self, timeout: float | None = 30.0) -> bool:
        done = self.drain(timeout)
        self._pool.shutdown(wait=done)
        return done
