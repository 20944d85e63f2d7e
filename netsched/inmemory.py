"""The real scheduler over an in-memory cluster: no API server, no threads.

Benchmarks and `netsched simulate` use this to run the same queue, cache,
frameworks and plugins as production, with binding applied synchronously
(the pod is confirmed on its node at once).  Nothing here is a shortcut the
scheduler itself takes: the scheduling cycle is `Scheduler.schedule_one`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from netsched.binder import Binder
from netsched.cache import ClusterCache
from netsched.config import SchedulerConfig
from netsched.eventhandlers import EventHandlers
from netsched.framework.handle import Services
from netsched.framework.interfaces import Plugin
from netsched.framework.runtime import Framework
from netsched.framework.types import NodeInfo, PodInfo
from netsched.observability.metrics import SchedulerMetrics
from netsched.queue import SchedulingQueue
from netsched.scheduler import Scheduler
from netsched.testing.clock import FakeClock


@dataclass
class MemoryAPI:
    """ClusterAPI + StatusWriter that applies binds to the in-memory cluster at once."""

    cluster: InMemoryCluster | None = None
    bound: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def bind(self, pod: PodInfo, node_name: str) -> None:
        self.bound.append((pod.key, node_name))

    def delete_pod(self, pod: PodInfo, grace_period_seconds: int | None = None) -> None:
        self.deleted.append(pod.key)
        if self.cluster is not None:
            self.cluster.delete_pod(pod)

    def set_nominated_node_name(self, pod: PodInfo, node_name: str) -> None:
        return None

    def update_pod_condition(
        self, pod: PodInfo, condition: Mapping[str, Any], *, nominated_node_name: str | None = None
    ) -> None:
        self.failed[pod.key] = str(condition.get("message", ""))


@dataclass
class MemoryEvents:
    keep: bool = False
    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    def event(self, pod: PodInfo, type_: str, reason: str, action: str, message: str) -> None:
        if self.keep:
            self.events.append((pod.key, type_, reason, message))


class InlineBinder:
    """Runs the real binding cycle on the calling thread (deterministic, no pool)."""

    def __init__(self, binder: Binder) -> None:
        self._binder = binder
        self.inflight = 0

    def submit(self, req: Any) -> None:
        self._binder.bind(req)

    def drain(self, timeout: float | None = None) -> bool:
        return True

    def shutdown(self, timeout: float | None = None) -> bool:
        return True


class InMemoryCluster:
    def __init__(
        self,
        cfg: SchedulerConfig,
        registry: Mapping[str, type[Plugin]],
        *,
        metrics_hub: Any = None,
        clock: FakeClock | None = None,
        keep_events: bool = False,
        observe: bool = False,
    ) -> None:
        self.clock = clock or FakeClock()
        self.api = MemoryAPI(self)
        self.events = MemoryEvents(keep_events)
        self.cache = ClusterCache(self.clock)
        self.hub = metrics_hub
        if metrics_hub is not None and hasattr(metrics_hub, "update_nodes"):
            self.cache.on_nodes_changed(metrics_hub.update_nodes)
        self.metrics = SchedulerMetrics(CollectorRegistry()) if observe else None
        self.frameworks: dict[str, Framework] = {}
        waiting = None
        self._queue_holder: list[SchedulingQueue] = []
        for profile in cfg.profiles:
            if profile.percentage_of_nodes_to_score is None:
                profile.percentage_of_nodes_to_score = cfg.percentage_of_nodes_to_score
            services = Services(
                api=self.api,
                events=self.events,
                clock=self.clock,
                parallelism=cfg.parallelism,
                metrics=metrics_hub,
                nominated_pods=lambda n: self._queue_holder[0].nominator.nominated_pods_for_node(n),
                nominated_node_names=lambda: self._queue_holder[0].nominator.node_names(),
                observe=self.metrics,
            )
            if waiting is not None:
                services.waiting_pods = waiting
            waiting = services.waiting_pods
            self.frameworks[profile.scheduler_name] = Framework(profile, registry, services)
        first = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            first.queue_sort,
            pre_enqueue=lambda p: self.frameworks[p.scheduler_name].run_pre_enqueue(p),
            clock=self.clock,
            initial_backoff=float(cfg.pod_initial_backoff_seconds),
            max_backoff=float(cfg.pod_max_backoff_seconds),
        )
        self._queue_holder.append(self.queue)
        self.handlers = EventHandlers(
            cache=self.cache,
            queue=self.queue,
            events_for=lambda _name: self.events,
            scheduler_names=list(self.frameworks),
        )
        self.scheduler = Scheduler(
            frameworks=self.frameworks,
            queue=self.queue,
            cache=self.cache,
            api=self.api,
            clock=self.clock,
            metrics=self.metrics,
            parallelism=cfg.parallelism,
            pending_lookup=self.handlers.pending_pod,
            nominate=self.queue.nominator.add_nominated,
        )
        binder = Binder(self.cache, self._bound, self.scheduler.binding_failed, parallelism=1)
        self.scheduler.binder = InlineBinder(binder)  # type: ignore[assignment]
        self.placements: dict[str, str] = {}
        self.on_bound: list[Callable[[PodInfo, str], None]] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------ cluster edits

    def add_nodes(self, raws: Iterable[dict[str, Any]]) -> None:
        self.handlers.on_nodes_synced(list(raws))
        self.cache.notify_node_listeners(force=True)

    def add_node(self, raw: dict[str, Any]) -> None:
        self.handlers.on_node_event("ADDED", raw)

    def add_pod(self, raw: dict[str, Any]) -> None:
        self.handlers.on_pod_event("ADDED", raw)

    def add_pods(self, raws: Iterable[dict[str, Any]]) -> None:
        for raw in raws:
            self.handlers.on_pod_event("ADDED", raw)

    def delete_pod(self, pod: PodInfo) -> None:
        raw = (
            dict(pod.raw)
            if pod.raw
            else {"metadata": {"uid": pod.uid, "namespace": pod.namespace, "name": pod.name}}
        )
        raw.setdefault("metadata", {})
        raw["metadata"] = dict(raw["metadata"], uid=pod.uid)
        self.handlers.on_pod_event("DELETED", raw)

    def nodes(self) -> list[NodeInfo]:
        return self.cache.nodes()

    # ------------------------------------------------------------ scheduling

    def _bound(self, req: Any) -> None:
        pod, node = req.pod, req.node
        # Confirm at once, as the watch would.
        raw = dict(pod.raw)
        raw["spec"] = dict(raw.get("spec") or {}, nodeName=node)
        raw["metadata"] = dict(raw.get("metadata") or {}, uid=pod.uid)
        self.handlers.on_pod_event("MODIFIED", raw)
        self.placements[pod.key] = node
        self.scheduler.binding_succeeded(req)
        for fn in self.on_bound:
            fn(pod, node)

    def schedule_pending(self, limit: int | None = None) -> int:
        """Schedule until the active queue is empty (or limit attempts); returns attempts made."""
        n = 0
        while limit is None or n < limit:
            if not self.scheduler.schedule_one(timeout=0):
                break
            n += 1
        return n

    def pending(self) -> dict[str, int]:
        return self.queue.counts()
