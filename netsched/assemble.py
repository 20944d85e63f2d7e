"""The scheduler's parts, wired once: cache, queue, frameworks, handlers, scheduler, binder.

A running scheduler (netsched.app.SchedulerApp, over the Kubernetes API) and
an in-memory one (netsched.inmemory.InMemoryCluster: benchmarks, `netsched
simulate`) are the same machine with different edges: where writes go (`api`),
where events go (`recorder`), what time it is (`clock`), which metrics hub
plugins read, and whether binding runs on a pool or on the caller's thread.
`assemble()` takes those edges and returns the parts, so the wiring between
the parts exists in one place.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netsched.binder import Binder, BindRequest
from netsched.cache import ClusterCache, ObjectStore
from netsched.clock import Clock
from netsched.config import SchedulerConfig
from netsched.eventhandlers import EventHandlers
from netsched.framework.cluster_events import UNSCHEDULED_POD, ActionType, ClusterEvent
from netsched.framework.debug_pages import DebugPages
from netsched.framework.extension_points import PluginFactory
from netsched.framework.handle import Services
from netsched.framework.periodic import PeriodicTasks
from netsched.framework.runtime import Framework
from netsched.framework.seams import ClusterAPI, EventRecorder
from netsched.framework.shared import SharedServices
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Status
from netsched.framework.types import PodInfo
from netsched.framework.waiting import WaitingPodImpl, WaitingPods
from netsched.kube.resources import OBJECT_KINDS
from netsched.observability.metrics import SchedulerMetrics
from netsched.observability.placement import PlacementCollector
from netsched.profiles import Profiles
from netsched.queue import HintMap, Nominator, SchedulingQueue
from netsched.scheduler import Scheduler

if TYPE_CHECKING:
    from netsched.metrics import MetricsHub


@dataclass
class Edges:
    """What differs between a scheduler over the API server and one over an in-memory cluster."""

    api: ClusterAPI  # KubeAPI, DryRunAPI or MemoryAPI
    recorder: Callable[[str], EventRecorder]  # the recorder of one profile (schedulerName)
    clock: Clock
    hub: MetricsHub | None = None  # the measured-load cache the plugins read; None: no metrics
    metrics: SchedulerMetrics | None = None  # the scheduler's own metrics; None: not observed
    # Watched objects besides pods and nodes (PDBs, namespaces, ...); None: an empty store.
    objects: ObjectStore | None = None
    # Dry run: the first profile schedules (in shadow) the pods of this other scheduler.
    shadow_of: str | None = None
    on_assigned: Callable[[PodInfo], None] | None = None  # a pod was seen bound (by anyone)
    explain_annotations: bool = False
    queueing_hints: bool = True  # False: every cluster event moves every parked pod (hints ignored)
    # Run first in each binding thread (the real scheduler: its Scheduled events go out from it).
    bind_thread_init: Callable[[], None] | None = None
    # Whether this replica schedules (holds the lease); None: always (no election, in memory).
    leading: Callable[[], bool] | None = None
    # Set: bind on the calling thread (no pool) and call this instead of
    # Scheduler.binding_succeeded, which the callee calls itself when it is done.
    bound_inline: Callable[[BindRequest], None] | None = None


@dataclass
class Parts:
    cache: ClusterCache
    queue: SchedulingQueue
    profiles: Profiles  # the frameworks in use, by the schedulerName each one answers for
    recorders: dict[str, EventRecorder]  # by profile schedulerName
    handlers: EventHandlers
    scheduler: Scheduler
    nominator: Nominator
    # What plugin families plug in, one of each per process (every profile, every reload):
    # their shared services (Handle.shared) and their periodic work (Handle.every), which the
    # process runs on its loop (SchedulerApp) or between steps (InMemoryCluster).
    shared: SharedServices
    periodic: PeriodicTasks
    # The pages the plugins publish under /debug/ (Handle.debug_page), which the process's
    # endpoints serve (netsched.serve.debug_handlers).
    debug_pages: DebugPages
    # New frameworks for a reloaded config, sharing this assembly's edges, recorders,
    # nominator, objects and waiting pods (hot reload stages them in `profiles`).
    build_frameworks: Callable[[SchedulerConfig], dict[str, Framework]] | None = None

    @property
    def frameworks(self) -> Mapping[str, Framework]:
        return self.profiles.current


class InlineBinder:
    """Runs the real binding cycle on the calling thread (deterministic, no pool).

    A pod held at Permit is parked until its wait is decided (allowed, rejected or
    timed out on the clock); every submit and drain binds the decided ones."""

    def __init__(self, binder: Binder) -> None:
        self._binder = binder
        self._parked: list[BindRequest] = []

    @property
    def inflight(self) -> int:
        return len(self._parked)

    def submit(self, req: BindRequest) -> None:
        self._parked.append(req)
        self._settle()

    def _settle(self) -> None:
        progress = True
        while progress:
            progress = False
            for req in list(self._parked):
                wp = req.framework.get_waiting_pod(req.pod.uid)
                if isinstance(wp, WaitingPodImpl) and wp.poll() is None:
                    continue
                self._parked.remove(req)
                self._binder.bind(req)
                progress = True

    def drain(self, timeout: float | None = None) -> bool:
        self._settle()
        return not self._parked

    def shutdown(self, timeout: float | None = None) -> bool:
        return True


def assemble(cfg: SchedulerConfig, registry: Mapping[str, PluginFactory], edges: Edges) -> Parts:
    """Build every part for `cfg`; raises FrameworkBuildError on a profile that cannot run."""
    cache = ClusterCache(edges.clock)
    if edges.hub is not None:
        cache.on_nodes_changed(edges.hub.update_nodes)
        cache.on_pod_departed(edges.hub.pod_departed)
    nominator = Nominator()
    recorders = {p.scheduler_name: edges.recorder(p.scheduler_name) for p in cfg.profiles}
    objects = edges.objects if edges.objects is not None else ObjectStore()
    waiting = WaitingPods()
    # Set once at shutdown (Framework.cancel_binding_waits): one event for the process, so a
    # binding still running on a framework a reload replaced sees it too.
    stopping = threading.Event()

    def activate(pending: Iterable[PodInfo]) -> int:
        return queue.activate(pending)

    family = _Family(
        SharedServices(), PeriodicTasks(edges.clock), _PodIndexes(), _WhatIf(edges.leading), DebugPages()
    )
    pods = family.indexes.pods_in_namespace

    def build_frameworks(new: SchedulerConfig) -> dict[str, Framework]:
        # The periodic tasks and debug pages become the ones these frameworks' plugins
        # register (a reload drops those of plugins it drops); a failed build leaves them.
        with family.periodic.registering(), family.debug_pages.registering():
            built = _frameworks(
                new, registry, edges, nominator, recorders, objects, waiting, stopping, pods, activate, family
            )
        if edges.shadow_of is not None:
            built = {edges.shadow_of: next(iter(built.values()))}
        return built

    # PreEnqueue, the queueing hints and the scheduling cycle all read the one owner of the
    # current profiles: a hot reload changes them for all three at once, between two cycles.
    profiles = Profiles(build_frameworks(cfg))

    def pre_enqueue(pod: PodInfo) -> Status:
        fwk = profiles.get(pod.scheduler_name)
        return fwk.run_pre_enqueue(pod) if fwk is not None else Status.success()

    metrics = edges.metrics
    # Each framework's hints, built once and gone with it.
    hint_maps: weakref.WeakKeyDictionary[Framework, HintMap] = weakref.WeakKeyDictionary()

    def hints_for(scheduler_name: str) -> HintMap | None:
        fwk = profiles.get(scheduler_name)
        if fwk is None:
            return None
        hints = hint_maps.get(fwk)
        if hints is None:
            hints = hint_maps[fwk] = HintMap.of_plugins(fwk.plugins)
        return hints

    queue = SchedulingQueue(
        profiles.first().queue_sort,
        pre_enqueue=pre_enqueue,
        clock=edges.clock,
        initial_backoff=float(cfg.pod_initial_backoff_seconds),
        max_backoff=float(cfg.pod_max_backoff_seconds),
        metrics=metrics.set_pending if metrics is not None else None,
        nominator=nominator,
        hints=hints_for,
        queueing_hints=edges.queueing_hints,
    )

    def unscheduled_pod_events() -> bool:
        return any((h := hints_for(name)) is not None and h.registers(UNSCHEDULED_POD) for name in profiles)

    first_recorder = next(iter(recorders.values()))
    handlers = EventHandlers(
        cache=cache,
        queue=queue,
        events_for=lambda name: recorders.get(name) or first_recorder,
        scheduler_names=list(profiles),
        on_malformed=(lambda _pod, _err: metrics.malformed_pods.inc()) if metrics is not None else None,
        on_assigned=edges.on_assigned,
        unscheduled_pod_events=unscheduled_pod_events,
    )
    family.indexes.serve_from(handlers)
    scheduler = family.what_if.scheduler = Scheduler(
        profiles=profiles,
        queue=queue,
        cache=cache,
        api=edges.api,
        clock=edges.clock,
        metrics=metrics,
        parallelism=cfg.parallelism,
        pending_lookup=handlers.pending_pod,
        nominate=nominator.add_nominated,
        explain_annotations=edges.explain_annotations,
        bind_thread_init=edges.bind_thread_init,
    )
    _requeue_on_object_changes(objects, queue)
    if metrics is not None:
        metrics.registry.register(PlacementCollector(lambda: profiles.current, queue.rejections, cache.nodes))
    if edges.bound_inline is not None:
        binder = Binder(cache, edges.bound_inline, scheduler.binding_failed, parallelism=1)
        scheduler.binder = InlineBinder(binder)  # type: ignore[assignment]
    return Parts(
        cache,
        queue,
        profiles,
        recorders,
        handlers,
        scheduler,
        nominator,
        family.shared,
        family.periodic,
        family.debug_pages,
        build_frameworks,
    )


@dataclass
class _Family:
    """The generic slots plugin families plug into, one of each per process."""

    shared: SharedServices
    periodic: PeriodicTasks
    indexes: _PodIndexes
    what_if: _WhatIf
    debug_pages: DebugPages


class _WhatIf:
    """Handle.what_if: snapshot copies from the cache and a profile's choice on one, from the
    scheduler's Planner; answers nothing (an empty cluster) until the scheduler exists."""

    def __init__(self, leading: Callable[[], bool] | None) -> None:
        self.scheduler: Scheduler | None = None
        self._leading = leading

    def snapshot_copy(self) -> Snapshot:
        return self.scheduler.cache.snapshot_copy() if self.scheduler is not None else Snapshot()

    def place(self, pod: PodInfo, snapshot: Snapshot, prefer: str = "") -> str | None:
        return self.scheduler.planner.place(pod, snapshot, prefer) if self.scheduler is not None else None

    def leading(self) -> bool:
        return self._leading() if self._leading is not None else True


class _PodIndexes:
    """The handlers' pod lookups for plugins built before the event handlers exist (the queue
    needs the frameworks, the handlers the queue): Handle.list_pods and pods_by_index answer
    nothing until then, and Handle.add_pod_index is kept and handed over once they do."""

    def __init__(self) -> None:
        self._handlers: EventHandlers | None = None
        self._early: list[tuple[str, Callable[[PodInfo], str]]] = []

    def serve_from(self, handlers: EventHandlers) -> None:
        self._handlers = handlers
        for name, key in self._early:
            handlers.add_pod_index(name, key)
        self._early.clear()

    def add_pod_index(self, name: str, key: Callable[[PodInfo], str]) -> None:
        if self._handlers is None:
            self._early.append((name, key))
        else:
            self._handlers.add_pod_index(name, key)

    def pods_by_index(self, name: str, value: str) -> list[PodInfo]:
        return self._handlers.pods_by_index(name, value) if self._handlers is not None else []

    def pods_in_namespace(self, namespace: str) -> list[PodInfo]:
        return self._handlers.pods_in_namespace(namespace) if self._handlers is not None else []


def _frameworks(
    cfg: SchedulerConfig,
    registry: Mapping[str, PluginFactory],
    edges: Edges,
    nominator: Nominator,
    recorders: Mapping[str, EventRecorder],
    objects: ObjectStore,
    waiting: WaitingPods,
    stopping: threading.Event,
    pods: Callable[[str], list[PodInfo]],
    activate: Callable[[Iterable[PodInfo]], int],
    family: _Family,
) -> dict[str, Framework]:
    """One framework per profile; all share one waiting-pods map (Permit is process-wide) and
    one shutdown event, with the frameworks of earlier and later reloads."""
    out: dict[str, Framework] = {}
    for profile in cfg.profiles:
        if profile.percentage_of_nodes_to_score is None:
            profile.percentage_of_nodes_to_score = cfg.percentage_of_nodes_to_score
        services = Services(
            api=edges.api,
            events=recorders[profile.scheduler_name],
            clock=edges.clock,
            parallelism=cfg.parallelism,
            metrics=edges.hub,
            nominated_pods=nominator.nominated_pods_for_node,
            nominated_node_names=nominator.node_names,
            objects=objects,
            observe=edges.metrics,
            plugin_metrics=edges.metrics,
            waiting_pods=waiting,
            stopping=stopping,
            pods=pods,
            activate=activate,
            shared=family.shared,
            periodic=family.periodic,
            debug_pages=family.debug_pages,
            pod_indexes=family.indexes,
            what_if=family.what_if,
        )
        out[profile.scheduler_name] = Framework(profile, registry, services)
    return out


_VERBS = {"ADDED": "Add", "MODIFIED": "Update", "DELETED": "Delete"}
_ACTIONS = {"ADDED": ActionType.ADD, "MODIFIED": ActionType.UPDATE_OTHER, "DELETED": ActionType.DELETE}


def _requeue_on_object_changes(objects: ObjectStore, queue: SchedulingQueue) -> None:
    """A change to an object of a `requeue` kind (OBJECT_KINDS) is a ClusterEvent of its Kind
    (resource "PersistentVolumeClaim", ...; old/new the raw objects) for the queueing hints."""
    kinds = {r.key: r.kind or r.plural for r in OBJECT_KINDS if r.requeue}

    def changed(key: str, verb: str, old: object, new: object) -> None:
        kind = kinds.get(key)
        if kind is not None:
            event = ClusterEvent(kind, _ACTIONS.get(verb, ActionType.ALL), f"{kind}{_VERBS.get(verb, verb)}")
            queue.move_all_to_active_or_backoff(event, old=old, new=new)

    objects.subscribe(changed)
