"""schedule_one: pop a pod, run the scheduling cycle, assume, hand to binding.

One thread runs the scheduling cycle serially, as kube-scheduler does, so
every decision sees the previous one (the assumed pod is already counted).
Everything slow (binding, API status writes, events) happens elsewhere.
Failures never escape the loop: an unschedulable pod is reported and parked
until the cluster changes, a plugin error puts the pod in backoff.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from netsched.binder import Binder, BindRequest
from netsched.cache import ClusterCache, PodInCache
from netsched.clock import Clock
from netsched.explain import Explainer, Planner
from netsched.framework.cluster_events import ASSIGNED_POD_DELETE, ClusterEvent
from netsched.framework.cycle_state import CycleState
from netsched.framework.errors import PluginFault
from netsched.framework.runtime import Framework
from netsched.framework.seams import ClusterAPI
from netsched.framework.search import FitError, NodeSearch
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import PodInfo, QueuedPodInfo
from netsched.observability.metrics import SchedulerMetrics
from netsched.observability.placement import PlacementEffects
from netsched.profiles import Profiles

log = logging.getLogger(__name__)

EXPLAIN_ANNOTATION = "netsched.io/explain"


class QueueLike(Protocol):
    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None: ...

    def done(self, uid: str) -> None: ...

    def add_unschedulable_if_not_present(
        self, qp: QueuedPodInfo, pod_scheduling_cycle: int | None = None, *, error: bool = False
    ) -> bool: ...

    @property
    def scheduling_cycle(self) -> int: ...

    def move_all_to_active_or_backoff(
        self, event: str | ClusterEvent, pre_check: Any = None, *, old: Any = None, new: Any = None
    ) -> int: ...

    def close(self) -> None: ...


class Scheduler:
    def __init__(
        self,
        *,
        profiles: Profiles,
        queue: QueueLike,
        cache: ClusterCache,
        api: ClusterAPI,
        clock: Clock,
        metrics: SchedulerMetrics | None = None,
        parallelism: int = 16,
        pending_lookup: Callable[[str], PodInfo | None] = lambda _uid: None,
        nominate: Callable[[PodInfo, str], None] = lambda _p, _n: None,
        explain_annotations: bool = False,
        bind_thread_init: Callable[[], None] | None = None,
    ) -> None:
        self.profiles = profiles
        # One node search per profile: where the next search starts is the scheduler's state.
        self.searches = {name: NodeSearch(fwk) for name, fwk in profiles.current.items()}
        self.queue = queue
        self.cache = cache
        self.api = api
        self.clock = clock
        self.metrics = metrics
        self.effects = PlacementEffects(metrics) if metrics is not None else None
        self.snapshot = Snapshot()
        # Latest version of a pending pod by uid (None once deleted or bound elsewhere).
        self._pending_lookup = pending_lookup
        self._nominate = nominate
        self.explain_annotations = explain_annotations
        # /debug/explain and the opt-in annotation: replicas and snapshot copies of its own.
        self.explainer = Explainer(profiles.current, cache.snapshot_copy)
        # What-if questions (a rebalancer's plan): replicas of their own too.
        self.planner = Planner(profiles.current)
        self.binder = Binder(
            cache, self.binding_succeeded, self.binding_failed, parallelism, thread_init=bind_thread_init
        )
        # Status writes (conditions, nominatedNodeName) leave the scheduling thread.
        self._writer = ThreadPoolExecutor(max_workers=2, thread_name_prefix="status")
        self._stop = threading.Event()
        self.scheduled = 0
        # When the loop last came round or took a pod (the injected clock): /livez's schedulingLoop.
        self.heartbeat = clock.now()

    @property
    def frameworks(self) -> Mapping[str, Framework]:
        """The profiles in use (netsched.profiles.Profiles.current)."""
        return self.profiles.current

    def seed(self, seed: int) -> None:
        """Make each profile's tie-breaks (equal totals are broken at random, as kube's) and
        plugin-metric sampling repeatable: `netsched demo --seed`, simulations."""
        for i, search in enumerate(self.searches.values()):
            search.seed(seed * 1000 + i)

    def swap_frameworks(self) -> None:
        """Make the staged profiles (a reloaded config) current: called between two cycles, never
        during one; the queue, cache, binder and in-flight bindings are untouched."""
        new = self.profiles.swap()
        if new is None:
            return
        searches = {name: NodeSearch(fwk) for name, fwk in new.items()}
        for name, search in searches.items():
            old = self.searches.get(name)
            if old is not None:  # keep the round-robin start, as one scheduler would
                search.next_start_node_index = old.next_start_node_index
        self.searches = searches
        self.explainer = Explainer(new, self.cache.snapshot_copy)
        self.planner = Planner(new)
        # What the replaced plugins kept in the snapshot's cache (e.g. a LoadView's per-row
        # results keyed by plugin, recomputed on every reservation) goes with them.
        self.snapshot.cache.clear()
        log.info("Using reloaded profiles profiles=%s", ",".join(new))

    # ------------------------------------------------------------ loop

    def run(self, stop: threading.Event | None = None) -> None:
        """Schedule until stop is set (or stop() is called)."""
        stop = stop or self._stop
        log.info("Starting scheduling loop profiles=%s", ",".join(self.frameworks))
        while not stop.is_set() and not self._stop.is_set():
            self.heartbeat = self.clock.now()
            try:
                self.schedule_one(timeout=0.2)
            except Exception:  # the loop must survive anything a single pod can cause
                log.exception("Unexpected error in scheduling loop")
        log.info("Scheduling loop stopped")

    def stop(self) -> None:
        self._stop.set()

    def shutdown(self, timeout: float = 30.0) -> bool:
        """Stop taking pods, finish in-flight bindings and status writes."""
        self._stop.set()
        drained = self.binder.shutdown(timeout)
        self._writer.shutdown(wait=True)
        return drained

    def schedule_one(self, timeout: float | None = None) -> bool:
        """One pod through the scheduling cycle. Returns False when the queue had nothing."""
        if self.profiles.staged:
            self.swap_frameworks()
        qp = self.queue.pop(timeout=timeout)
        if qp is None:
            return False
        self.heartbeat = self.clock.now()  # a pop that waited counts from when it returned
        cycle = self.queue.scheduling_cycle
        pod = qp.pod
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None or pod.deleting or self.cache.is_assumed(pod.uid):
            self.queue.done(pod.uid)
            return True
        started = time.perf_counter()
        self.cache.update_snapshot(self.snapshot)
        state = fwk.new_cycle_state()
        try:
            result = self.searches[pod.scheduler_name].schedule(state, pod, self.snapshot)
        except FitError as e:
            self._failed(fwk, qp, cycle, started, e.diagnosis.message(), Code.UNSCHEDULABLE, e)
            return True
        except PluginFault as e:
            self._failed(fwk, qp, cycle, started, e.status.message(), Code.ERROR, None, e.status.plugin)
            return True

        node = result.node_name
        if self.effects is not None:
            self._note_effect(fwk, state, node)
        try:
            assumed = self.cache.assume(pod, node)
        except PodInCache as e:
            # Another binder won the race while the cycle ran (kube: AssumePod's error): an
            # ordinary failure, which sees the pod assigned and drops it from the queue.
            self._failed(fwk, qp, cycle, started, str(e), Code.ERROR, None)
            return True
        st = fwk.run_reserve(state, assumed, node)
        if st.ok:
            st = fwk.run_permit(state, assumed, node)
        if not st.ok and st.code != Code.WAIT:
            fwk.run_unreserve(state, assumed, node)
            self.cache.forget(pod.uid)
            code = Code.ERROR if st.code == Code.ERROR else Code.UNSCHEDULABLE
            self._failed(fwk, qp, cycle, started, st.message() or str(st), code, None, st.plugin)
            return True
        self.queue.done(pod.uid)
        self.binder.submit(BindRequest(fwk, state, qp, assumed, node, started, cycle))
        return True

    def _note_effect(self, fwk: Framework, state: CycleState, node: str) -> None:
        """The chosen node's load against the median, from this cycle's snapshot (before the pod)."""
        assert self.effects is not None
        try:
            self.effects.decided(fwk, state, self.snapshot, node)
        except Exception:  # a metric must never cost the pod its placement
            log.exception("Placement metrics failed profile=%s node=%s", fwk.profile_name, node)

    def _annotate_explanation(self, pod: PodInfo, node: str) -> None:
        """Opt-in, on the status writer after binding: the top nodes' per-plugin scores as an
        annotation, computed by the Explainer on its own snapshot copy and framework replica."""
        try:
            ex = self.explainer.explain(pod)
        except Exception:  # an explanation must never cost the pod anything
            log.exception("Explain failed pod=%s", pod.key)
            return
        ex.winner = node  # equal totals are broken at random by the scheduler
        self._annotate(pod, {EXPLAIN_ANNOTATION: ex.annotation()})

    # ------------------------------------------------------------ outcomes

    def binding_succeeded(self, req: BindRequest) -> None:
        pod, node, fwk = req.pod, req.node, req.framework
        self.scheduled += 1
        if self.metrics is not None:
            self.metrics.schedule_attempts.labels("scheduled", fwk.profile_name).inc()
            self.metrics.scheduling_attempt_duration.labels("scheduled", fwk.profile_name).observe(
                time.perf_counter() - req.started
            )
            self.metrics.pod_scheduling_attempts.observe(req.queued.attempts)
            self.metrics.placements.labels(node, fwk.profile_name).inc()
        if self.effects is not None:
            self.effects.bound(fwk, req.state)
        fwk.events.event(pod, "Normal", "Scheduled", "Binding", f"Successfully assigned {pod.key} to {node}")
        if self.explain_annotations:
            self._writer.submit(self._annotate_explanation, pod, node)

    def _annotate(self, pod: PodInfo, annotations: dict[str, str | None]) -> None:
        try:
            self.api.patch_pod_annotations(pod, annotations)
        except Exception as e:  # best effort
            log.warning("Could not annotate pod pod=%s err=%s", pod.key, e)

    def binding_failed(self, req: BindRequest, stage: str, st: Status) -> None:
        """The binder unreserved and forgot the pod: requeue it, and count the room it held as
        freed (kube's handleBindingCycleError), or pods turned away for lack of that room (a
        competing group's members, say) would wait for an unrelated event or the periodic flush.
        After a rejection the pod itself stays out of that move; after an error it takes it."""
        if self.metrics is not None:
            self.metrics.bind_errors.labels(stage, req.framework.profile_name).inc()
        code = Code.UNSCHEDULABLE if st.is_rejection else Code.ERROR
        msg = f"Binding rejected: {st.message()}" if stage == "bind" else st.message() or str(st)
        uid = req.pod.uid
        if code == Code.ERROR:
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, old=req.pod)
        self._failed(req.framework, req.queued, req.cycle, req.started, msg, code, None, st.plugin)
        if code != Code.ERROR:
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, lambda p: p.uid != uid, old=req.pod)

    def _failed(
        self,
        fwk: Framework,
        qp: QueuedPodInfo,
        cycle: int,
        started: float,
        message: str,
        code: Code,
        fit: FitError | None,
        plugin: str = "",
    ) -> None:
        """kube's handleSchedulingFailure: count, report, requeue (if the pod still exists)."""
        pod = qp.pod
        result = "unschedulable" if code != Code.ERROR else "error"
        if self.metrics is not None:
            self.metrics.schedule_attempts.labels(result, fwk.profile_name).inc()
            self.metrics.scheduling_attempt_duration.labels(result, fwk.profile_name).observe(
                time.perf_counter() - started
            )
        if fit is not None:
            qp.unschedulable_plugins = frozenset(p for p in fit.diagnosis.unschedulable_plugins if p)
            qp.pending_plugins = frozenset(fit.diagnosis.pending_plugins)
        elif plugin and code != Code.ERROR:
            # A rejection names its plugin (kube's Reserve/Permit FitError); an Error names none:
            # the pod goes to backoff and no plugin rejected it.
            qp.unschedulable_plugins = frozenset({plugin})
        assigned = self.cache.bound_node(pod.uid)
        if assigned:
            # Bound by someone else while we were deciding (kube's handleSchedulingFailure):
            # nothing to requeue or report, and nothing wrong with us.
            log.info(
                "Pod has been assigned to node. Abort adding it back to queue. pod=%s node=%s profile=%s",
                pod.key,
                assigned,
                fwk.profile_name,
            )
            self.queue.done(pod.uid)
            return
        log.info(
            "Unable to schedule pod; waiting pod=%s profile=%s err=%r", pod.key, fwk.profile_name, message
        ) if code != Code.ERROR else log.warning(
            "Error scheduling pod; retrying pod=%s profile=%s err=%r", pod.key, fwk.profile_name, message
        )
        current = self._pending_lookup(pod.uid)
        if current is None:
            # Deleted while we were deciding: nothing to requeue or report.
            self.queue.done(pod.uid)
            return
        if current is not pod:
            qp.pod = current
        self.queue.add_unschedulable_if_not_present(qp, cycle, error=code == Code.ERROR)
        self.queue.done(pod.uid)
        nominated = fit.nominated_node_name if fit is not None else ""
        if nominated:
            self._nominate(current, nominated)
        fwk.events.event(current, "Warning", "FailedScheduling", "Scheduling", message)
        reason = "Unschedulable" if code != Code.ERROR else "SchedulerError"
        condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
        self._writer.submit(self._write_status, current, condition, nominated)

    def _write_status(self, pod: PodInfo, condition: dict[str, str], nominated: str) -> None:
        try:
            # One status patch for both (kube writes them together too).
            self.api.update_pod_condition(pod, condition, nominated_node_name=nominated or None)
        except Exception as e:  # a status write is best effort; the pod is already requeued
            log.warning("Could not update pod status pod=%s err=%s", pod.key, e)
