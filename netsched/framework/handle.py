"""The Handle: what a profile's plugins can reach of the scheduler, and where it comes from.

`Services` is what the composition root hands every profile (the API, events,
clock, metrics hub, waiting pods, nominated pods, PDBs, namespace labels);
`FrameworkHandle` serves it to plugins together with the snapshot of the
cycle in progress.  The runtime's Framework is a FrameworkHandle, so a plugin
holds its own profile's handle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from netsched.framework.interfaces import (
    Clock,
    ClusterAPI,
    EventRecorder,
    MetricsProvider,
    PluginArgs,
    RuntimeMetrics,
    WaitingPod,
)
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import PodInfo
from netsched.framework.waiting import WaitingPods


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
    pdbs: Callable[[], list[Mapping[str, Any]]] = lambda: []
    # Labels of a namespace (None when unknown): InterPodAffinity's namespaceSelector.
    namespace_labels: Callable[[str], Mapping[str, str] | None] = lambda _ns: None
    observe: RuntimeMetrics | None = None


class FrameworkHandle:
    """The Handle protocol (netsched.framework.interfaces.Handle) served from Services."""

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

    @property
    def observe(self) -> RuntimeMetrics | None:
        return self._services.observe

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def set_snapshot(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

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

    def list_pdbs(self) -> list[Mapping[str, Any]]:
        return self._services.pdbs()

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self._services.namespace_labels(namespace)
