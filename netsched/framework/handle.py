"""The Handle: what a profile's plugins can reach of the scheduler, and where it comes from.

`Services` is what the composition root hands every profile (the API, events,
clock, metrics hub, waiting pods, nominated pods, watched objects, and the
generic slots plugin families plug into: shared services, pod indexes,
periodic tasks);
`FrameworkHandle` serves it to plugins together with the snapshot of the
cycle in progress.  The runtime's Framework is a FrameworkHandle, so a plugin
holds its own profile's handle.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from netsched.clock import Clock
from netsched.framework.debug_pages import DebugPageError, DebugPages
from netsched.framework.errors import PluginError
from netsched.framework.extension_points import PluginArgs
from netsched.framework.periodic import PeriodicTasks
from netsched.framework.seams import (
    ClusterAPI,
    EventRecorder,
    MetricsProvider,
    ObjectReader,
    PluginMetrics,
    PodIndexer,
    RuntimeMetrics,
    WaitingPod,
    WhatIf,
)
from netsched.framework.shared import ServiceKey, SharedServices
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import PodInfo
from netsched.framework.waiting import WaitingPods

# Resource keys (netsched.kube.resources.Resource.key) of the kinds the Handle reads itself.
PDBS_KEY = "policy/poddisruptionbudgets"
NAMESPACES_KEY = "namespaces"

T = TypeVar("T")


class ProfileLike(Protocol):
    """What the runtime needs of a resolved config profile (netsched.config.Profile)."""

    scheduler_name: str
    percentage_of_nodes_to_score: int | None

    @property
    def plugins(self) -> Mapping[str, Sequence[Any]]: ...

    @property
    def plugin_config(self) -> Mapping[str, PluginArgs]: ...


@dataclass
class Services:
    """What the runtime hands plugins through the Handle; shared by all profiles."""

    api: ClusterAPI
    events: EventRecorder
    clock: Clock
    parallelism: int = 16
    metrics: MetricsProvider | None = None
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    nominated_pods: Callable[[str], list[PodInfo]] = lambda _node: []
    nominated_node_names: Callable[[], Iterable[str]] = lambda: ()
    # PDBs, namespaces and every other watched kind besides pods and nodes.
    objects: ObjectReader = field(default_factory=lambda: _NoObjects())
    observe: RuntimeMetrics | None = None
    # Non-terminal pods of a namespace: pending ones of these profiles and assigned ones.
    pods: Callable[[str], Iterable[PodInfo]] = lambda _ns: ()
    # Move pods from backoff / unschedulable to the active queue now (kube's PodsToActivate).
    activate: Callable[[Iterable[PodInfo]], int] = lambda _pods: 0
    # Set once when the scheduler shuts down: the binding cycle's waits end early (kube cancels
    # the binding cycle's context). Framework.cancel_binding_waits sets it; assemble gives every
    # profile, before and after a reload, the same one.
    stopping: threading.Event = field(default_factory=threading.Event)
    # What plugin families share per process (Handle.shared), their periodic work
    # (Handle.every) and their pod indexes (Handle.add_pod_index): one of each per process,
    # the same for every profile and every reload.
    shared: SharedServices = field(default_factory=SharedServices)
    periodic: PeriodicTasks | None = None
    # Pages under /debug/ (Handle.debug_page), served by the process's endpoints.
    debug_pages: DebugPages = field(default_factory=DebugPages)
    plugin_metrics: PluginMetrics | None = None
    pod_indexes: PodIndexer = field(default_factory=lambda: _NoPodIndexes())
    # What-if questions off the cycle (a rebalancer's plan); the process sets it once its
    # scheduler exists.
    what_if: WhatIf = field(default_factory=lambda: _NoWhatIf())


class FrameworkHandle:
    """The Handle protocol (netsched.framework.seams.Handle) served from Services."""

    def __init__(self, profile_name: str, services: Services) -> None:
        self.profile_name = profile_name
        self._services = services
        self._snapshot = Snapshot()

    @property
    def clock(self) -> Clock:
        return self._services.clock

    @property
    def parallelism(self) -> int:
        return self._services.parallelism

    @property
    def api(self) -> ClusterAPI:
        return self._services.api

    @property
    def events(self) -> EventRecorder:
        return self._services.events

    @property
    def metrics(self) -> MetricsProvider | None:
        return self._services.metrics

    def shared(self, key: ServiceKey[T], build: Callable[[], T]) -> T:
        return self._services.shared.get(key, build)

    @property
    def plugin_metrics(self) -> PluginMetrics | None:
        return self._services.plugin_metrics

    def every(self, name: str, seconds: float, run: Callable[[], object]) -> None:
        periodic = self._services.periodic
        if periodic is None:
            raise PluginError(f"periodic task {name}: this scheduler runs no periodic tasks")
        periodic.every(name, seconds, run)

    def run_soon(self, name: str) -> None:
        if self._services.periodic is not None:
            self._services.periodic.soon(name)

    def debug_page(
        self, path: str, render: Callable[[], Any], text: Callable[[Any], str] | None = None
    ) -> None:
        try:
            self._services.debug_pages.publish(path, self.profile_name, render, text)
        except DebugPageError as e:
            raise PluginError(str(e)) from e

    def add_pod_index(self, name: str, key: Callable[[PodInfo], str]) -> None:
        self._services.pod_indexes.add_pod_index(name, key)

    def pods_by_index(self, name: str, value: str) -> list[PodInfo]:
        return self._services.pod_indexes.pods_by_index(name, value)

    @property
    def observe(self) -> RuntimeMetrics | None:
        return self._services.observe

    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def what_if(self) -> WhatIf:
        return self._services.what_if

    def set_snapshot(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def shutting_down(self, wait: float = 0.0) -> bool:
        stopping = self._services.stopping
        return self._services.clock.sleep_unless(stopping, wait) if wait > 0 else stopping.is_set()

    def iterate_waiting_pods(self) -> Iterator[WaitingPod]:
        return iter(self._services.waiting_pods)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self._services.waiting_pods.get(uid)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self._services.nominated_pods(node_name)

    def nominated_pods_ahead_of(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        """Other pods nominated to the node whose priority is not below pod's: kube counts them
        as already there when filtering pod (RunFilterPluginsWithNominatedPods)."""
        return [
            p
            for p in self._services.nominated_pods(node_name)
            if p.uid != pod.uid and p.priority >= pod.priority
        ]

    def nominated_node_names(self) -> Iterable[str]:
        return self._services.nominated_node_names()

    @property
    def objects(self) -> ObjectReader:
        return self._services.objects

    def activate(self, pods: Iterable[PodInfo]) -> int:
        """Move these pending pods to the active queue now (kube's PodsToActivate); how many moved."""
        return self._services.activate(pods)

    def list_pods(self, namespace: str, where: Callable[[PodInfo], bool] | None = None) -> list[PodInfo]:
        """Pods of `namespace` (kube's pod lister): pending ones of this scheduler and assigned
        ones (bound or assumed, node_name set), those for which `where` is true."""
        pods = self._services.pods(namespace)
        return [p for p in pods if where(p)] if where is not None else list(pods)

    def list_pdbs(self) -> list[Mapping[str, Any]]:
        return self._services.objects.list(PDBS_KEY)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels, None when it is not known (InterPodAffinity's namespaceSelector)."""
        ns = self._services.objects.get(NAMESPACES_KEY, "", namespace)
        return None if ns is None else (ns.get("metadata") or {}).get("labels") or {}


class _NoWhatIf:
    """No scheduler to ask: an empty cluster, where nothing fits; always leading."""

    def snapshot_copy(self) -> Snapshot:
        return Snapshot()

    def place(self, pod: PodInfo, snapshot: Snapshot, prefer: str = "") -> str | None:
        return None

    def leading(self) -> bool:
        return True


class _NoPodIndexes:
    """No pods: every index reads as empty."""

    def add_pod_index(self, name: str, key: Callable[[PodInfo], str]) -> None:
        return None

    def pods_by_index(self, name: str, value: str) -> list[PodInfo]:
        return []


class _NoObjects:
    """No watched objects: every kind reads as empty."""

    def list(self, key: str, namespace: str | None = None) -> list[Mapping[str, Any]]:
        return []

    def get(self, key: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return None

    def add_index(self, key: str, name: str, fn: Callable[[Mapping[str, Any]], Iterable[str]]) -> None:
        return None

    def by_index(self, key: str, name: str, value: str) -> Sequence[Mapping[str, Any]]:
        return []
