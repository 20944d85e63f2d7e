"""Run one scheduler configuration over a scenario, in simulated time.

The cluster is netsched.inmemory.InMemoryCluster: the real queue, cache,
frameworks and plugins, with binding applied at once.  Metrics come through
the real pipeline: a MetricsHub whose client is a SimulatedPrometheus.
Time is a ManualClock moved by the simulation:

    for each pod, at its arrival time t = i / arrivalRatePerSecond:
        every poll due at or before t runs first, at its own time (poll k at k x pollInterval)
        the clock moves to t, the pod is created and the scheduler runs until its queue is empty

so the staleness between polls, the sample ages and the estimator's
bookkeeping for just-bound pods behave as in production.  After the last
arrival the clock keeps moving (second by second, polls included) until
every retry the queue's backoff allows has happened.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from netsched.clock import ManualClock
from netsched.config import SchedulerConfig
from netsched.explain import Explanation
from netsched.framework.extension_points import PluginFactory
from netsched.framework.types import QueuedPodInfo
from netsched.inmemory import InMemoryCluster
from netsched.metrics import MetricsHub
from netsched.metrics.args import ConnectionKey
from netsched.queue import ACTIVE, BACKOFF
from netsched.simulate.gangs import PODGROUPS_KEY
from netsched.simulate.model import LoadModel, Loads, SimulatedPrometheus, promql_index
from netsched.simulate.scenario import Scenario
from netsched.simulate.traffic import Shares, levels_of, shares
from netsched.simulate.volumes import SimulatedPVController

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


@dataclass
class Run:
    """What one configuration did with the scenario."""

    label: str  # "netsched", "default", or the compared file's name
    profile: str  # the schedulerName the scenario's pods were given
    placements: dict[str, str] = field(default_factory=dict)  # pod key -> node, in binding order
    unscheduled: dict[str, str] = field(default_factory=dict)  # pod key -> last failure message
    before: Loads | None = None
    after: Loads | None = None
    polls: int = 0
    queries: int = 0  # issued by polls (retries included)
    queries_while_scheduling: int = 0  # issued outside polls: must be 0
    metrics_sources: int = 0
    explanation: Explanation | None = None
    explained_at: float = 0.0  # simulated second of the explained cycle
    wall_seconds: float = 0.0
    arrived_at: dict[str, float] = field(default_factory=dict)  # pod key -> simulated second created
    bound_at: dict[str, float] = field(default_factory=dict)  # pod key -> simulated second bound
    traffic: Shares | None = None  # pair traffic crossing nodes and levels after placement


class _Explainer:
    """Wraps the scheduler's queue: when the pod to explain is popped, explain it against the
    cluster its scheduling cycle is about to see."""

    def __init__(self, cluster: InMemoryCluster, key: str, now: Callable[[], float], run: Run) -> None:
        self._cluster = cluster
        self._queue = cluster.scheduler.queue
        self._key = key
        self._now = now
        self._run = run

    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None:
        qp = self._queue.pop(timeout=timeout)
        if qp is not None and qp.pod.key == self._key:
            c = self._cluster
            if qp.pod.scheduler_name in c.frameworks:
                # The cluster as the pod's scheduling cycle is about to see it (a copy: the
                # Explainer works on replicas of its own).
                self._run.explanation = c.scheduler.explainer.explain(qp.pod)
                self._run.explained_at = self._now()
        return qp

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)


def retarget(pods: list[dict[str, Any]], profiles: list[str], fallback: str) -> list[dict[str, Any]]:
    """Copies of the pods; those without a schedulerName this config serves get `fallback`.

    A scenario written for the `netsched` profile can so be replayed through a
    compared configuration whose profile has another name.
    """
    out = []
    for raw in pods:
        pod = copy.deepcopy(raw)
        spec = pod.setdefault("spec", {})
        if spec.get("schedulerName") not in profiles:
            spec["schedulerName"] = fallback
        out.append(pod)
    return out


class _Polls:
    """Each poller on its own interval, all starting at simulated second 0."""

    def __init__(self, hub: MetricsHub, interval: float | None) -> None:
        self.pollers = [(p, interval or p.conn.poll_interval_seconds) for p in hub.pollers]
        self.count = [0] * len(self.pollers)

    def next_due(self) -> float:
        return min(
            (n * iv for (_, iv), n in zip(self.pollers, self.count, strict=True)), default=float("inf")
        )

    def run_due(self, t: float, move_to: Callable[[float], None]) -> int:
        """Run every poll due at or before t, each at its own time; returns how many ran."""
        ran = 0
        while (due := self.next_due()) <= t:
            move_to(due)
            for i, (poller, iv) in enumerate(self.pollers):
                if self.count[i] * iv == due:
                    poller.poll_once()
                    self.count[i] += 1
                    ran += 1
        return ran


def simulate(
    scenario: Scenario,
    cfg: SchedulerConfig,
    registry: Mapping[str, PluginFactory],
    *,
    label: str = "netsched",
    explain_pod: str = "",
    seed: int | None = None,
    progress: Progress | None = None,
) -> Run:
    """Schedule the scenario's pods with `cfg`; `explain_pod` ("ns/name") is explained when scheduled."""
    started = time.perf_counter()
    clock = ManualClock()
    t0 = clock.now()
    model = LoadModel(scenario)

    def now() -> float:
        return clock.now() - t0

    def move_to(t: float) -> None:
        if t > now():
            clock.step(t - now())

    lookup: list[Callable[[str], str | None]] = []

    def client(conn: ConnectionKey) -> SimulatedPrometheus:
        return SimulatedPrometheus(model, conn, clock, now, lambda q: lookup[0](q))

    # Retries must not move simulated time: the sleep between them is a no-op.
    hub = MetricsHub(registry=CollectorRegistry(), clock=clock, client_factory=client, sleep=lambda _s: None)
    lookup.append(promql_index(hub))
    cluster = InMemoryCluster(cfg, registry, metrics_hub=hub, clock=clock)
    _seed_tie_breaks(cluster, scenario.seed if seed is None else seed)
    profiles = list(cluster.frameworks)
    run = Run(label=label, profile=profiles[0], metrics_sources=len(hub.sources))
    if explain_pod:
        cluster.scheduler.queue = _Explainer(cluster, explain_pod, now, run)
    cluster.on_bound.append(lambda pod, node: model.place(pod, node, now()))
    cluster.on_bound.append(lambda pod, node: run.bound_at.__setitem__(pod.key, now()))
    for group in scenario.pod_groups:
        cluster.add_object(PODGROUPS_KEY, copy.deepcopy(group))
    cluster.add_nodes(copy.deepcopy(scenario.nodes))
    if scenario.volumes:
        labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in scenario.nodes}
        SimulatedPVController(cluster.objects, labels)
        for key, objs in scenario.volumes.objects.items():
            for obj in copy.deepcopy(objs):
                cluster.add_object(key, obj)
    cluster.add_pods(copy.deepcopy(scenario.existing_pods))
    run.before = model.loads(0.0)

    polls = _Polls(hub, scenario.timing.poll_interval)
    pods = retarget(scenario.pods, profiles, profiles[0])
    for i, raw in enumerate(pods):
        t = scenario.timing.arrival(i)
        run.polls += polls.run_due(t, move_to)
        move_to(t)
        run.arrived_at[_key(raw)] = t
        cluster.add_pod(raw)
        _schedule(cluster, run, model)
        if progress is not None:
            progress(i + 1, len(pods))
    _drain(cluster, run, model, polls, move_to, now, cfg)

    run.after = model.loads(scenario.end)
    if scenario.traffic:
        levels = levels_of(scenario.nodes, scenario.levels)
        run.traffic = shares(scenario.traffic, model.counts(), len(scenario.nodes), levels)
    # The scheduler writes pod conditions off its thread: the last ones must land before the
    # unscheduled pods' reasons are read from them.
    cluster.scheduler.shutdown()
    keys = [_key(p) for p in pods]
    wanted = set(keys)
    run.placements = {k: v for k, v in cluster.placements.items() if k in wanted}
    for key in keys:
        if key not in run.placements:
            run.unscheduled[key] = cluster.api.failed.get(key, "still waiting in the scheduling queue")
    _name_the_tie_winner(run, explain_pod)
    run.queries = model.queries - run.queries_while_scheduling
    run.wall_seconds = time.perf_counter() - started
    return run


def _name_the_tie_winner(run: Run, key: str) -> None:
    """explain() names the first of equal best totals; the scheduler picked one of them at random."""
    ex, placed = run.explanation, run.placements.get(key)
    if ex is None or placed is None:
        return
    best = max((n.total for n in ex.nodes if n.feasible), default=None)
    if any(n.node == placed and n.feasible and n.total == best for n in ex.nodes):
        ex.winner = placed


def _schedule(cluster: InMemoryCluster, run: Run, model: LoadModel) -> None:
    before = model.queries
    cluster.queue.flush_backoff_completed()  # production's flush loop does this every second
    cluster.schedule_pending()
    run.queries_while_scheduling += model.queries - before


def _drain(
    cluster: InMemoryCluster,
    run: Run,
    model: LoadModel,
    polls: _Polls,
    move_to: Callable[[float], None],
    now: Callable[[], float],
    cfg: SchedulerConfig,
) -> None:
    """Keep time moving until pods in backoff have had every retry they would get meanwhile."""
    deadline = now() + 2 * float(cfg.pod_max_backoff_seconds)
    while now() < deadline and _waiting(cluster):
        t = now() + 1.0
        run.polls += polls.run_due(t, move_to)
        move_to(t)
        _schedule(cluster, run, model)


def _waiting(cluster: InMemoryCluster) -> bool:
    counts = cluster.pending()
    return bool(counts.get(ACTIVE) or counts.get(BACKOFF) or cluster.scheduler.binder.inflight)


def _key(raw: Mapping[str, Any]) -> str:
    meta = raw["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _seed_tie_breaks(cluster: InMemoryCluster, seed: int) -> None:
    """Equal totals are broken at random by the node search; seed it so a run can be repeated."""
    for i, search in enumerate(cluster.scheduler.searches.values()):
        search.seed(seed * 1000 + i)
