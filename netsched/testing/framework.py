"""Run plugins through the real runtime in a test, in one call.

    result = schedule_pod(make_pod("p").req(cpu="1"), nodes, plugins=[MyScore], weights={"MyScore": 2})

Builds a Framework (with a queue sort and binder added when missing) over an
in-memory snapshot, runs the scheduling cycle and returns the chosen node
plus the per-plugin score breakdown, or raises FitError like the scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from netsched.cache import ObjectStore
from netsched.clock import Clock
from netsched.framework.cycle_state import CycleState
from netsched.framework.extension_points import (
    EXTENSION_POINTS,
    AnyPlugin,
    BindPlugin,
    PluginArgs,
    PluginFactory,
    PluginScores,
    QueueSortPlugin,
    extension_points_of,
)
from netsched.framework.handle import NAMESPACES_KEY, PDBS_KEY, Services
from netsched.framework.periodic import PeriodicTasks
from netsched.framework.runtime import Framework
from netsched.framework.seams import ClusterAPI, EventRecorder, MetricsProvider
from netsched.framework.search import NodeSearch, ScheduleResult
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Status
from netsched.framework.types import NodeInfo, PodInfo, QueuedPodInfo
from netsched.testing.builders import NodeBuilder, PodBuilder, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.handle import MemoryAPI, RecordingEvents

P = TypeVar("P", bound=AnyPlugin)


@dataclass
class Ref:
    name: str
    weight: int = 0


@dataclass
class TestProfile:
    __test__ = False  # not a pytest test class

    scheduler_name: str = "test-scheduler"
    percentage_of_nodes_to_score: int | None = None
    plugins: dict[str, list[Ref]] = field(default_factory=dict)
    plugin_config: dict[str, PluginArgs] = field(default_factory=dict)


class FifoSort(QueueSortPlugin[None]):
    """Minimal queue sort so a test profile builds without PrioritySort."""

    name = "TestFifoSort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.timestamp < b.timestamp


class NoopBinder(BindPlugin[None]):
    """Binds through handle.api (a MemoryAPI in tests)."""

    name = "TestBinder"

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self.handle.api.bind(pod, node_name)
        return Status.success()


def build_framework(
    plugins: Sequence[PluginFactory],
    *,
    weights: Mapping[str, int] | None = None,
    args: Mapping[str, PluginArgs] | None = None,
    services: Services | None = None,
    percentage_of_nodes_to_score: int | None = None,
    snapshot: Snapshot | None = None,
    api: ClusterAPI | None = None,
    events: EventRecorder | None = None,
    clock: Clock | None = None,
    metrics: MetricsProvider | None = None,
    nominated: Mapping[str, Sequence[PodInfo]] | None = None,
    pdbs: Sequence[Mapping[str, Any]] = (),
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
    objects: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    pending: Sequence[PodInfo] = (),
) -> Framework:
    """A Framework enabling each plugin at every point it implements (multiPoint-like).

    Without `services`, the Handle the plugins see is built from the keywords:
    a MemoryAPI/RecordingEvents and a FakeClock unless given, `metrics` (a hub,
    e.g. from netsched.testing.prometheus.fake_hub), nominated pods per node,
    PodDisruptionBudgets, namespace labels and other watched `objects` by
    resource key ("persistentvolumeclaims", "policy/poddisruptionbudgets"), and the `pending`
    pods Handle.pods_by_index answers besides the snapshot's.  `snapshot` becomes the Handle's
    snapshot (plugins that read handle.snapshot() outside a cycle).
    """
    classes = list(plugins)
    if not any(issubclass(p, QueueSortPlugin) for p in classes):
        classes.append(FifoSort)
    if not any(issubclass(p, BindPlugin) for p in classes):
        classes.append(NoopBinder)
    weights = dict(weights or {})
    points: dict[str, list[Ref]] = {ep: [] for ep in EXTENSION_POINTS}
    for cls in classes:
        for ep in extension_points_of(cls):
            points[ep].append(Ref(cls.name, weights.get(cls.name, 1) if ep == "score" else 0))
    profile = TestProfile(
        percentage_of_nodes_to_score=percentage_of_nodes_to_score,
        plugins=points,
        plugin_config=dict(args or {}),
    )
    registry = {c.name: c for c in classes}
    if services is None:
        services = fake_services(
            api=api,
            events=events,
            clock=clock,
            metrics=metrics,
            nominated=nominated,
            pdbs=pdbs,
            namespaces=namespaces,
            objects=objects,
            assigned=snapshot,
            pending=pending,
        )
    elif api or events or clock or metrics or nominated or pdbs or namespaces or objects or pending:
        raise TypeError("build_framework: pass either services or its parts, not both")
    fwk = Framework(profile, registry, services)
    if snapshot is not None:
        fwk.set_snapshot(snapshot)
    return fwk


def fake_services(
    *,
    api: ClusterAPI | None = None,
    events: EventRecorder | None = None,
    clock: Clock | None = None,
    metrics: MetricsProvider | None = None,
    nominated: Mapping[str, Sequence[PodInfo]] | None = None,
    pdbs: Sequence[Mapping[str, Any]] = (),
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
    objects: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    assigned: Snapshot | None = None,
    pending: Sequence[PodInfo] = (),
) -> Services:
    """Services over fixed cluster facts, recording what plugins send to the API; the pod
    lister (Handle.list_pods) answers with `assigned`'s pods (the snapshot is the cluster)."""
    nominated = {k: list(v) for k, v in (nominated or {}).items()}

    def pods(namespace: str) -> list[PodInfo]:
        if assigned is None:
            return []
        return [p for n in assigned.nodes for p in n.pods.values() if p.namespace == namespace]

    namespaces = dict(namespaces or {})
    services = Services(
        api=api if api is not None else MemoryAPI(),
        events=events if events is not None else RecordingEvents(),
        clock=clock if clock is not None else FakeClock(),
        metrics=metrics,
        nominated_pods=lambda node: list(nominated.get(node, [])),
        nominated_node_names=lambda: list(nominated),
        pods=pods,
        objects=ObjectStore(
            {
                PDBS_KEY: pdbs,
                NAMESPACES_KEY: [
                    {"metadata": {"name": n, "labels": dict(ls)}} for n, ls in namespaces.items()
                ],
                **{k: list(v) for k, v in (objects or {}).items()},
            }
        ),
    )
    services.periodic = PeriodicTasks(services.clock)
    services.pod_indexes = _ScannedIndexes(assigned, pending)
    return services


class _ScannedIndexes:
    """Handle.pods_by_index over the fixed cluster facts: `pending` pods and `assigned`'s, scanned."""

    def __init__(self, assigned: Snapshot | None, pending: Sequence[PodInfo] = ()) -> None:
        self._assigned = assigned
        self._pending = list(pending)
        self._keys: dict[str, Callable[[PodInfo], str]] = {}

    def add_pod_index(self, name: str, key: Callable[[PodInfo], str]) -> None:
        self._keys.setdefault(name, key)

    def pods_by_index(self, name: str, value: str) -> list[PodInfo]:
        key = self._keys.get(name)
        if key is None:
            return []
        assigned = [p for n in self._assigned.nodes for p in n.pods.values()] if self._assigned else []
        return [p for p in (*self._pending, *assigned) if key(p) == value]


def plugin_of(fwk: Framework, cls: type[P]) -> P:
    """The instance of `cls` a Framework built (typed)."""
    plugin = fwk.plugins[cls.name]
    assert isinstance(plugin, cls), f"{cls.name} is a {type(plugin).__name__}"
    return plugin


def build_plugin(
    cls: type[P],
    args: PluginArgs | None = None,
    *,
    with_plugins: Sequence[PluginFactory] = (),
    **kw: Any,
) -> P:
    """One plugin built by a real Framework (its Handle), optionally next to others.

    Keywords are build_framework's; `plugin.handle` is the Framework.
    """
    fwk = build_framework([cls, *with_plugins], args={cls.name: args} if args is not None else None, **kw)
    return plugin_of(fwk, cls)


@dataclass
class Outcome:
    node: str
    result: ScheduleResult
    # plugin -> {node: (normalised, weighted)}
    scores: dict[str, dict[str, tuple[int, int]]]
    totals: dict[str, int]


def schedule_pod(
    pod: PodInfo | PodBuilder,
    nodes: Sequence[NodeInfo | NodeBuilder],
    *,
    plugins: Sequence[PluginFactory] = (),
    framework: Framework | None = None,
    existing: Sequence[PodInfo | PodBuilder] = (),
    weights: Mapping[str, int] | None = None,
    args: Mapping[str, PluginArgs] | None = None,
) -> Outcome:
    """Run PreFilter..Score for one pod once, with the score breakdown; raises FitError or
    PluginFault as the scheduler would."""
    fwk = framework or build_framework(plugins, weights=weights, args=args)
    pi = pod.info() if isinstance(pod, PodBuilder) else pod
    snap = Snapshot.of(node_infos(list(nodes), list(existing)))
    breakdown: dict[str, PluginScores] = {}
    result = NodeSearch(fwk).schedule(fwk.new_cycle_state(), pi, snap, breakdown)
    if result.feasible is None or result.totals is None:  # one feasible node: nothing was scored
        return Outcome(result.node_name, result, {}, {result.node_name: 0})
    names = [snap.nodes[int(i)].name for i in result.feasible]
    totals = {n: int(t) for n, t in zip(names, result.totals.tolist(), strict=True)}
    scores = {
        plugin: {
            n: (int(a), int(b))
            for n, a, b in zip(names, ps.normalized.tolist(), ps.weighted.tolist(), strict=True)
        }
        for plugin, ps in breakdown.items()
    }
    return Outcome(result.node_name, result, scores, totals)
