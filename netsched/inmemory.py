"""The real scheduler over an in-memory cluster: no API server, no threads.

Benchmarks and `netsched simulate` use this to run the same queue, cache,
frameworks and plugins as production, with binding applied synchronously
(the pod is confirmed on its node at once) and time on a ManualClock.  The
parts are wired by netsched.assemble, as for the real scheduler; nothing here
is a shortcut it takes: the scheduling cycle is `Scheduler.schedule_one`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from netsched.assemble import Edges, assemble
from netsched.binder import BindRequest
from netsched.cache import ObjectStore
from netsched.clock import Clock, ManualClock, rfc3339
from netsched.config import SchedulerConfig
from netsched.fakeapi.patch import merge_patch
from netsched.framework.disruption import (
    Budget,
    BudgetPod,
    EvictionOutcome,
    budget_status,
    controller_of,
    plan_eviction,
    precondition_refusal,
    replica_set_scale,
)
from netsched.framework.extension_points import PluginFactory
from netsched.framework.handle import PDBS_KEY
from netsched.framework.runtime import Framework
from netsched.framework.types import NodeInfo, ObjectRef, PodInfo
from netsched.kube.errors import ApiError, NotFound, from_status
from netsched.kube.eviction import accepted, outcome_of
from netsched.kube.resources import Resource
from netsched.observability.metrics import SchedulerMetrics

if TYPE_CHECKING:
    from netsched.metrics import MetricsHub


@dataclass
class MemoryAPI:
    """ClusterAPI in memory: every call is recorded, and with a `cluster` deletes and object
    patches apply to it at once (the in-memory scheduler: benchmarks, `netsched simulate`).

    Tests read the records (netsched.testing.framework builds plugins over one) and may set
    `fail_bind` to an exception for bind to raise; `record=False` (the in-memory cluster of
    simulations and benchmarks, which reads none of them) keeps no records, so they do not
    grow with every attempt. `failed` keeps, per pod, the message of the last condition set
    on it (what `netsched simulate` reports for unplaced pods).
    """

    cluster: InMemoryCluster | None = None
    # Writes are local and cheap: plugins may make them inline (deterministic simulations).
    synchronous: bool = False
    fail_bind: BaseException | None = None
    record: bool = True
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (bind|delete|evict|nominate, pod, node)
    conditions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (pod, condition)
    annotations: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    patches: list[tuple[str, str, str, dict[str, Any]]] = field(
        default_factory=list
    )  # (key, ns/name, sub, patch)
    failed: dict[str, str] = field(default_factory=dict)

    def bind(self, pod: PodInfo, node_name: str) -> None:
        if self.fail_bind is not None:
            raise self.fail_bind
        if self.record:
            self.calls.append(("bind", pod.key, node_name))

    def delete_pod(self, pod: PodInfo, grace_period_seconds: int | None = None) -> None:
        if self.record:
            self.calls.append(("delete", pod.key, ""))
        if self.cluster is not None:
            self.cluster.delete_pod(pod)

    def evict(self, pod: PodInfo, *, dry_run: bool = False) -> EvictionOutcome:
        """Recorded as ("evict", pod, "dryRun" or ""); with a cluster, evicted there as the API
        server would (InMemoryCluster.evict), else accepted."""
        if self.record:
            self.calls.append(("evict", pod.key, "dryRun" if dry_run else ""))
        if self.cluster is None:
            return accepted(dry_run)
        try:
            self.cluster.evict(pod, dry_run=dry_run)
        except ApiError as e:
            outcome = outcome_of(e)
            if outcome is None:
                raise
            return outcome
        return accepted(dry_run)

    def set_nominated_node_name(self, pod: PodInfo, node_name: str) -> None:
        if self.record:
            self.calls.append(("nominate", pod.key, node_name))

    def update_pod_condition(
        self, pod: PodInfo, condition: Mapping[str, Any], *, nominated_node_name: str | None = None
    ) -> None:
        if self.record:
            self.conditions.append((pod.key, dict(condition)))
        self.failed[pod.key] = str(condition.get("message", ""))

    def patch_pod_annotations(self, pod: PodInfo, annotations: Mapping[str, str | None]) -> None:
        if self.record:
            self.annotations.append((pod.key, dict(annotations)))

    def get_object(self, resource: Resource, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The cluster's stored object (None without a cluster or such an object)."""
        if self.cluster is None:
            return None
        return self.cluster.objects.get(resource.key, namespace, name)

    def patch_object(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        subresource: str = "",
    ) -> Mapping[str, Any]:
        """Recorded in `patches` (with `record`); with a cluster, merged into its stored object (NotFound when
        there is none), else the patch is returned as the stored object."""
        if self.record:
            self.patches.append((resource.key, f"{namespace}/{name}", subresource, dict(patch)))
        if self.cluster is None:
            return dict(patch)
        return self.cluster.patch_object(resource.key, namespace, name, patch)


@dataclass
class MemoryEvents:
    keep: bool = False
    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    def event(self, obj: PodInfo | ObjectRef, type_: str, reason: str, action: str, message: str) -> None:
        if self.keep:
            self.events.append((obj.key, type_, reason, message))


class InMemoryCluster:
    def __init__(
        self,
        cfg: SchedulerConfig,
        registry: Mapping[str, PluginFactory],
        *,
        metrics_hub: MetricsHub | None = None,
        clock: Clock | None = None,
        keep_events: bool = False,
        observe: bool = False,
    ) -> None:
        self.clock: Clock = clock or ManualClock()
        self.api = MemoryAPI(self, synchronous=True, record=False)
        self.events = MemoryEvents(keep_events)
        self.hub = metrics_hub
        self.metrics = SchedulerMetrics(CollectorRegistry()) if observe else None
        self.objects = ObjectStore()  # PDBs, namespaces, ... by Resource.key: add_object()
        parts = assemble(
            cfg,
            registry,
            Edges(
                api=self.api,
                recorder=lambda _name: self.events,
                clock=self.clock,
                hub=metrics_hub,
                metrics=self.metrics,
                bound_inline=self._bound,
                objects=self.objects,
            ),
        )
        self.cache = parts.cache
        self.profiles = parts.profiles
        self.queue = parts.queue
        self.handlers = parts.handlers
        self.scheduler = parts.scheduler
        self.shared = parts.shared
        self.periodic = parts.periodic
        self.debug_pages = parts.debug_pages
        self.build_frameworks = parts.build_frameworks  # a hot reload: stage what it builds
        self.placements: dict[str, str] = {}
        self.on_bound: list[Callable[[PodInfo, str], None]] = []
        # After every pod deletion (a controller's, an eviction, preemption's victims).
        self.on_deleted: list[Callable[[PodInfo], None]] = []
        self._lock = threading.Lock()

    @property
    def frameworks(self) -> Mapping[str, Framework]:
        """The profiles in use (netsched.profiles.Profiles.current)."""
        return self.profiles.current

    # ------------------------------------------------------------ cluster edits

    def add_nodes(self, raws: Iterable[dict[str, Any]]) -> None:
        self.handlers.on_nodes_synced(list(raws))
        self.cache.notify_node_listeners(force=True)

    def add_object(self, key: str, raw: dict[str, Any], kind: str = "ADDED") -> None:
        """Add (or update / delete, by `kind`) a watched object of resource key `key`."""
        self.objects.apply(key, kind, raw)

    def patch_object(
        self, key: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """A merge patch of a watched object, delivered as a MODIFIED change."""
        current = self.objects.get(key, namespace, name)
        if current is None:
            raise NotFound(404, "NotFound", f"{key} {namespace}/{name} not found")
        patched: dict[str, Any] = merge_patch(current, dict(patch))
        self.objects.apply(key, "MODIFIED", patched)
        return patched

    def add_node(self, raw: dict[str, Any]) -> None:
        self.handlers.on_node_event("ADDED", raw)

    def add_pod(self, raw: dict[str, Any]) -> None:
        self.handlers.on_pod_event("ADDED", self._created(raw))

    def add_pods(self, raws: Iterable[dict[str, Any]]) -> None:
        for raw in raws:
            self.handlers.on_pod_event("ADDED", self._created(raw))

    def _created(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The pod as the API server stores it on create: stamped with its creationTimestamp
        (the clock's) unless it has one (which template is newest is read from it)."""
        meta = raw.setdefault("metadata", {})
        if not meta.get("creationTimestamp"):
            meta["creationTimestamp"] = rfc3339(self.clock.wall())
        return raw

    def delete_pod(self, pod: PodInfo) -> None:
        raw = (
            dict(pod.raw)
            if pod.raw
            else {"metadata": {"uid": pod.uid, "namespace": pod.namespace, "name": pod.name}}
        )
        raw.setdefault("metadata", {})
        raw["metadata"] = dict(raw["metadata"], uid=pod.uid)
        self.handlers.on_pod_event("DELETED", raw)
        for fn in self.on_deleted:
            fn(pod)

    def evict(self, pod: PodInfo, *, dry_run: bool = False) -> None:
        """Evict `pod` (this very one: its uid) as the API server's pods/eviction would, raising
        the same errors (a budget's 429, 404, 409, ...), with netsched.framework.disruption's
        rules.  In memory there is no kubelet and no controller lag: a bound pod is Running and
        Ready, and budgets' status is computed afresh from the pods (expectedPods from the
        "apps/replicasets" and "apps/deployments" objects added with add_object) before the eviction is decided; the
        budget charged keeps that status, decremented, until the next eviction recomputes it."""
        current = self.handlers.pods_in_namespace(pod.namespace)
        found = next((p for p in current if p.name == pod.name), None)
        if found is None:
            raise NotFound(
                404, "NotFound", f'pods "{pod.name}" not found', details={"name": pod.name, "kind": "pods"}
            )
        pods = [_budget_pod(p) for p in current]
        target = _budget_pod(found)
        now = self.clock.wall()
        refusal = precondition_refusal(target, {"uid": pod.uid} if pod.uid else {})
        plan = None
        if refusal is None:
            scale = replica_set_scale(self.objects.get)
            budgets = []
            for raw in self.objects.list(PDBS_KEY, pod.namespace):
                budget = Budget.from_raw(raw)
                status = budget_status(budget, pods, scale, now)
                budgets.append(Budget.from_raw({**raw, "status": status}))
            plan = plan_eviction(target, budgets, now)
            refusal = plan.refusal
        if refusal is not None:
            raise from_status(refusal.status())
        if dry_run or plan is None:
            return
        if plan.budget is not None and plan.status is not None:
            self.objects.apply(PDBS_KEY, "MODIFIED", {**plan.budget.raw, "status": plan.status})
        self.delete_pod(found)

    def nodes(self) -> list[NodeInfo]:
        return self.cache.nodes()

    # ------------------------------------------------------------ scheduling

    def _bound(self, req: BindRequest) -> None:
        pod, node = req.pod, req.node
        # Confirm at once, as the watch would, the pod running and ready as a kubelet would
        # report it (what a disruption budget and the Rebalancer read).
        raw = dict(pod.raw)
        raw["spec"] = dict(raw.get("spec") or {}, nodeName=node)
        raw["metadata"] = dict(raw.get("metadata") or {}, uid=pod.uid)
        raw["status"] = dict(
            raw.get("status") or {}, phase="Running", conditions=[{"type": "Ready", "status": "True"}]
        )
        self.handlers.on_pod_event("MODIFIED", raw)
        self.placements[pod.key] = node
        self.scheduler.binding_succeeded(req)
        for fn in self.on_bound:
            fn(pod, node)

    def schedule_pending(self, limit: int | None = None) -> int:
        """Schedule until the active queue is empty (or limit attempts); returns attempts made."""
        n = 0
        self.periodic.run_due()  # the plugins' periodic work that is due (production: its loop)
        self.scheduler.binder.drain()  # pods held at Permit whose wait ended (time moved)
        while limit is None or n < limit:
            if not self.scheduler.schedule_one(timeout=0):
                break
            n += 1
            self.scheduler.binder.drain()  # ... or that a plugin allowed or rejected meanwhile
        return n

    def pending(self) -> dict[str, int]:
        return self.queue.counts()


def _budget_pod(pod: PodInfo) -> BudgetPod:
    """What the budget rules read of a pod in memory, where binding is running: a bound pod is
    Running and Ready (unless it is terminal or being deleted), an unbound one Pending."""
    terminal = pod.phase in ("Succeeded", "Failed")
    return BudgetPod(
        namespace=pod.namespace,
        name=pod.name,
        uid=pod.uid,
        resource_version=pod.resource_version,
        labels=pod.labels,
        phase=pod.phase if terminal or not pod.node_name else "Running",
        ready=bool(pod.node_name) and not terminal and not pod.deleting,
        deleting=pod.deleting,
        controller=controller_of(pod.raw),
    )
