"""The Handle and the seams behind it: what plugins and the runtime may ask of the rest.

A plugin reaches the scheduler only through its Handle, and the cluster only
through what the Handle serves: ClusterAPI (every call to the cluster),
EventRecorder, ObjectReader (watched objects), MetricsProvider (the
measured-load cache), and the slots a plugin family plugs its own state into
(shared services, pod indexes, periodic tasks); the runtime records its own metrics through
RuntimeMetrics.  They are Protocols, so the framework says what it needs
without importing kube/, metrics/ or observability/, which implement them (the
composition root wires the implementations in through handle.Services).  A
seam says everything its users may ask of it: nobody probes one with getattr
(tests/unit/test_import_graph.py checks).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from netsched.clock import Clock
from netsched.framework.cycle_state import CycleState
from netsched.framework.diagnosis import Diagnosis
from netsched.framework.disruption import EvictionOutcome
from netsched.framework.shared import ServiceKey
from netsched.framework.snapshot import IntArray, Snapshot
from netsched.framework.status import Status
from netsched.framework.types import NodeInfo, ObjectRef, PodInfo

if TYPE_CHECKING:
    from netsched.kube.resources import Resource

T = TypeVar("T")


class MetricsProvider(Protocol):
    """The process-wide measured-load cache (netsched.metrics.MetricsHub), shared by all profiles.

    A plugin asks it once, at construction, for the source serving its Prometheus
    connection args (netsched.metrics.source_for narrows the type); it never
    queries Prometheus itself.
    """

    def source(self, args: Any, *, filters: bool = False) -> object: ...


class _Observer(Protocol):
    def observe(self, amount: float) -> None: ...


class _Histogram(Protocol):
    def labels(self, *values: str) -> _Observer: ...


class _Counter(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class RuntimeMetrics(Protocol):
    """The scheduler's own metrics the runtime records (netsched.observability.SchedulerMetrics)."""

    @property
    def framework_extension_point_duration(self) -> _Histogram: ...

    @property
    def plugin_execution_duration(self) -> _Histogram: ...

    @property
    def preemption_attempts(self) -> _Counter: ...

    @property
    def preemption_victims(self) -> _Observer: ...


class _Incremented(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class _Set(Protocol):
    def set(self, value: float) -> None: ...


class LabelledCounter(Protocol):
    def labels(self, *values: str) -> _Incremented: ...


class LabelledGauge(Protocol):
    def labels(self, *values: str) -> _Set: ...


class PluginMetrics(Protocol):
    """Metrics a plugin family declares in the scheduler's registry (what it counts is its own
    business: the core names none of them).  Asking again for a name returns the same metric."""

    def counter(self, name: str, doc: str, labels: Sequence[str]) -> LabelledCounter: ...

    def gauge(self, name: str, doc: str, labels: Sequence[str]) -> LabelledGauge: ...


class WaitingPod(Protocol):
    @property
    def pod(self) -> PodInfo: ...

    @property
    def node_name(self) -> str: ...

    def pending_plugins(self) -> list[str]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class EventRecorder(Protocol):
    def event(self, obj: PodInfo | ObjectRef, type_: str, reason: str, action: str, message: str) -> None:
        """Record a Kubernetes Event about a pod, or another object by its reference (type_
        Normal|Warning). Never raises."""
        ...


class ClusterAPI(Protocol):
    """Everything the scheduler and its plugins may ask of the cluster: the one API seam.

    Implemented over the API server by netsched.kube.KubeAPI, in memory by
    netsched.inmemory.MemoryAPI (benchmarks, `netsched simulate`, tests), and
    by netsched.shadow.DryRunAPI, which records instead of writing (--dry-run).
    Writes raise netsched.kube.errors.ApiError subclasses.
    """

    @property
    def synchronous(self) -> bool:
        """True when a write is applied before the call returns and costs next to nothing (the
        in-memory cluster): callers may then write inline, keeping simulations deterministic,
        where they would otherwise write from a thread of their own."""
        ...

    def bind(self, pod: PodInfo, node_name: str) -> None:
        """Bind via pods/binding; Conflict when the pod is already bound."""
        ...

    def delete_pod(self, pod: PodInfo, grace_period_seconds: int | None = None) -> None:
        """Delete the pod (preemption); already gone, or replaced by a namesake, counts as done."""
        ...

    def evict(self, pod: PodInfo, *, dry_run: bool = False) -> EvictionOutcome:
        """Evict the pod through the Eviction API (policy/v1, pods/eviction), never a delete: its
        PodDisruptionBudget decides. Only this very pod (its uid) is evicted. The outcome says
        EVICTED, REFUSED by a budget (retry in a later round; never forced), GONE or CONFLICT
        (another pod has the name now); `dry_run` evicts nothing (WOULD_EVICT when it would
        go ahead). Other failures raise netsched.kube.errors.ApiError subclasses."""
        ...

    def set_nominated_node_name(self, pod: PodInfo, node_name: str) -> None:
        """Patch status.nominatedNodeName ("" clears it)."""
        ...

    def update_pod_condition(
        self, pod: PodInfo, condition: Mapping[str, Any], *, nominated_node_name: str | None = None
    ) -> None:
        """Set a pod condition (type PodScheduled unless `condition` says otherwise), in one
        write with status.nominatedNodeName when given; nothing is sent when the pod already
        carries the same condition and nomination."""
        ...

    def patch_pod_annotations(self, pod: PodInfo, annotations: Mapping[str, str | None]) -> None:
        """Merge-patch metadata.annotations; a None value removes that annotation."""
        ...

    def get_object(self, resource: Resource, namespace: str, name: str) -> Mapping[str, Any] | None:
        """One object of any kind as stored (a GET); None when there is none (404)."""
        ...

    def patch_object(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        subresource: str = "",
    ) -> Mapping[str, Any]:
        """JSON merge patch (RFC 7386) of one object of any kind, or of its `subresource`
        ("status"); returns the object as stored. A `metadata.resourceVersion` in the patch
        makes a stale write fail with netsched.kube.errors.Conflict, as kube's update does."""
        ...


class Handle(Protocol):
    """What a plugin can reach of the scheduler. The runtime implements it per profile."""

    @property
    def profile_name(self) -> str: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def parallelism(self) -> int: ...

    @property
    def api(self) -> ClusterAPI: ...

    @property
    def events(self) -> EventRecorder: ...

    @property
    def metrics(self) -> MetricsProvider | None:
        """The process-wide metrics hub (netsched.metrics), shared by all profiles."""
        ...

    def shared(self, key: ServiceKey[T], build: Callable[[], T]) -> T:
        """The service a plugin family shares in this process under `key` (across profiles and
        reloads), built by `build` the first time any plugin asks (netsched.framework.shared)."""
        ...

    @property
    def plugin_metrics(self) -> PluginMetrics | None:
        """The scheduler's registry for the plugins' own metrics; None when not observed."""
        ...

    def every(self, name: str, seconds: float, run: Callable[[], object]) -> None:
        """Run `run` every `seconds` on the process's periodic loop (injected clock; ends with
        the process, after one last run).  The task is the registering plugin's: a name
        registered again (a reloaded plugin) runs the new callback at the new interval, and a
        reload whose plugins no longer register it stops it.  PluginError when this scheduler
        runs no periodic tasks."""
        ...

    def run_soon(self, name: str) -> None:
        """Run periodic task `name` at the loop's next turn (work was just marked for it)."""
        ...

    def debug_page(
        self, path: str, render: Callable[[], Any], text: Callable[[Any], str] | None = None
    ) -> None:
        """Publish `GET path` (under /debug/) on the process's endpoints, behind their
        authentication and authorization as /debug/explain: `render()` is this profile's
        JSON-ready data (the page answers {"profiles": {name: data}}), `text(data)` the same
        for `format=text` (None: indented JSON).  The page is the publishing plugin's, as a
        periodic task is: a reload whose plugins no longer publish it removes it.  PluginError
        for a path outside /debug/ or one the process serves itself (explain, pprof)."""
        ...

    def add_pod_index(self, name: str, key: Callable[[PodInfo], str]) -> None:
        """Keep pending and assigned pods indexed by `key` ("" leaves a pod out) under `name`,
        from now on and for the pods already known; a name registered again keeps its first key."""
        ...

    def pods_by_index(self, name: str, value: str) -> list[PodInfo]:
        """Pods whose key under index `name` is `value`: pending ones of this scheduler and
        assigned ones (bound or assumed; an assigned copy replaces the pending record)."""
        ...

    def filter_rows(
        self, pod: PodInfo, snapshot: Snapshot, rows: IntArray, *, skip: Collection[str] = ()
    ) -> tuple[IntArray, Diagnosis]:
        """The rows of `snapshot` where `pod` passes this profile's PreFilter and Filter plugins
        (those named in `skip` left out), and why the others do not: "what if" questions (a
        group's placement decision) on a snapshot the caller may have changed. Nothing is reserved."""
        ...

    def snapshot(self) -> Snapshot:
        """The snapshot of the cycle in progress (stable for the whole cycle)."""
        ...

    @property
    def what_if(self) -> WhatIf:
        """What-if questions off the scheduling cycle (snapshot copies, a profile's choice on
        one, leadership): netsched.framework.seams.WhatIf."""
        ...

    def shutting_down(self, wait: float = 0.0) -> bool:
        """True once the scheduler is shutting down, waiting up to `wait` seconds (on the clock)
        for it: a plugin that waits in the binding cycle (PreBind) polls with this and gives
        up when it answers True (kube cancels the binding cycle's context)."""
        ...

    def iterate_waiting_pods(self) -> Iterator[WaitingPod]: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status: ...

    @property
    def objects(self) -> ObjectReader:
        """Watched objects of the kinds besides pods and nodes (PVCs, PDBs, ...)."""
        ...

    def activate(self, pods: Iterable[PodInfo]) -> int:
        """Move these pending pods from backoff or unschedulable to the active queue now (kube's
        PodsToActivate: a pod waiting at Permit wakes the pods it waits for); how many moved."""
        ...

    def list_pods(self, namespace: str, where: Callable[[PodInfo], bool] | None = None) -> list[PodInfo]:
        """Pods of `namespace`: pending ones of this scheduler and assigned ones (bound or
        assumed: node_name set), filtered by `where` (kube's pod lister)."""
        ...

    def list_pdbs(self) -> list[Mapping[str, Any]]:
        """PodDisruptionBudgets as raw JSON (empty when none are watched)."""
        ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels, or None when it is unknown (namespaceSelector)."""
        ...


class WhatIf(Protocol):
    """Questions about the cluster asked off the scheduling cycle, on copies of its own: what a
    rebalancing plan asks before it moves a pod (netsched.explain.Planner serves them)."""

    def snapshot_copy(self) -> Snapshot:
        """A snapshot of the cluster as the cache holds it now, the caller's own to change."""
        ...

    def place(self, pod: PodInfo, snapshot: Snapshot, prefer: str = "") -> str | None:
        """The node the pod's profile would choose for `pod` (pending: no node) on `snapshot`,
        running its PreFilter, Filter, PreScore and Score plugins on a replica of its own over
        every node; ties go to `prefer` when it is among the best; None when no node fits.
        Never runs PostFilter (no preemption) and reserves nothing."""
        ...

    def leading(self) -> bool:
        """Whether this replica schedules (holds the lease, or runs without election)."""
        ...


class PodIndexer(Protocol):
    """Pod indexes plugins register (netsched.eventhandlers.EventHandlers implements it)."""

    def add_pod_index(self, name: str, key: Callable[[PodInfo], str]) -> None: ...

    def pods_by_index(self, name: str, value: str) -> list[PodInfo]: ...


class ObjectReader(Protocol):
    """Raw objects of the watched kinds other than pods and nodes, by resource key
    ("namespaces", "policy/poddisruptionbudgets", "storage.k8s.io/csinodes":
    netsched.kube.resources.Resource.key). Served by netsched.cache.ObjectStore;
    a kind that is not watched (or not served by the cluster) reads as empty."""

    def list(self, key: str, namespace: str | None = None) -> list[Mapping[str, Any]]: ...

    def get(self, key: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def add_index(self, key: str, name: str, fn: Callable[[Mapping[str, Any]], Iterable[str]]) -> None:
        """Keep objects of `key` indexed by `fn` (idempotent per name; client-go's Indexer)."""

    def by_index(self, key: str, name: str, value: str) -> Sequence[Mapping[str, Any]]: ...
