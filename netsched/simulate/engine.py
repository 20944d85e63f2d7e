"""Run one scheduler configuration over a scenario, in simulated time.

The cluster is netsched.inmemory.InMemoryCluster: the real queue, cache,
frameworks and plugins, with binding applied at once.  Metrics come through
the real pipeline: a MetricsHub whose client is a SimulatedPrometheus.
Time is a ManualClock moved by the simulation from event to event:

    the next event is the earliest of: a pod's arrival (pod i at i / arrivalRatePerSecond),
    a timeline entry, a pod of a rolling Deployment becoming Ready or available, a poll
    (k x pollInterval), a rebalancing round (moves.py), and while pods wait in backoff the
    next second (production's flush tick)
    at each event: the polls due run first, each at its own time (new samples requeue the pods a
    load filter rejected, as production's housekeeping does); then the timeline entries due,
    the arrivals due, the simulated Deployment / ReplicaSet controllers, and the scheduler
    (with the periodic tasks due: a rebalancing round), until its queue is empty (binding is
    synchronous), over again while the controllers act or pods were evicted

so the staleness between polls, the sample ages and the estimator's
bookkeeping for just-bound pods behave as in production.  The run ends once
no event is left and nothing waits: without a timeline right after the last
arrival; with one, or while pods wait, when the readings have settled (the
last change to the true state + a rate window + a scrape + a poll + two
maximum backoffs).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from netsched.clock import ManualClock
from netsched.config import SchedulerConfig
from netsched.explain import Explanation
from netsched.framework.cluster_events import METRICS_POLLED_EVENT
from netsched.framework.extension_points import PluginFactory
from netsched.framework.handle import PDBS_KEY
from netsched.framework.types import PodInfo, QueuedPodInfo
from netsched.inmemory import InMemoryCluster
from netsched.metrics import MetricsHub
from netsched.metrics.args import ConnectionKey
from netsched.queue import ACTIVE, BACKOFF
from netsched.simulate.configs import configured_thresholds
from netsched.simulate.controllers import Controllers
from netsched.simulate.gangs import PODGROUPS_KEY
from netsched.simulate.model import LoadModel, Loads, SimulatedPrometheus, configured_window, promql_index
from netsched.simulate.moves import RebalanceWatcher, Rebalancing
from netsched.simulate.phases import Phase, measure
from netsched.simulate.scenario import Scenario
from netsched.simulate.timeline import PodLoadChange, Rollout
from netsched.simulate.traffic import Shares, levels_of, shares
from netsched.simulate.volumes import SimulatedPVController

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
# A run goes on at most this long after the timeline's last entry (pods evicted and recreated
# for ever, say): the report says the run was cut.
MAX_SECONDS_AFTER_TIMELINE = 3600.0
INITIAL_PHASE = "initial placement"


@dataclass
class Run:
    """What one configuration did with the scenario."""

    label: str  # "netsched", "default", or the compared file's name
    profile: str  # the schedulerName the scenario's pods were given
    placements: dict[str, str] = field(default_factory=dict)  # pod key -> node, every binding in order
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
    deleted_at: dict[str, float] = field(default_factory=dict)  # pod key -> simulated second deleted
    deleted_by_controller: set[str] = field(default_factory=set)  # of them, by a rollout / ReplicaSet
    created_at: dict[str, float] = field(default_factory=dict)  # pods controllers created -> when
    phases: list[Phase] = field(default_factory=list)  # with a timeline: the figures per phase
    end: float = 0.0  # simulated second the run ended
    cut: bool = False  # ended by MAX_SECONDS_AFTER_TIMELINE with work left
    rebalancing: Rebalancing | None = None  # when the profile runs the Rebalancer (moves.py)

    def live(self) -> dict[str, str]:
        """Pod key -> node of the pods bound and not gone at the end."""
        return {k: v for k, v in self.placements.items() if k not in self.deleted_at}


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

    lookup: list[Callable[[str], tuple[str, float] | None]] = []

    def client(conn: ConnectionKey) -> SimulatedPrometheus:
        return SimulatedPrometheus(model, conn, clock, now, lambda q: lookup[0](q))

    # Retries must not move simulated time: the sleep between them is a no-op.
    hub = MetricsHub(registry=CollectorRegistry(), clock=clock, client_factory=client, sleep=lambda _s: None)
    lookup.append(promql_index(hub))
    cluster = InMemoryCluster(cfg, registry, metrics_hub=hub, clock=clock)
    model.window = scenario.timing.window(configured_window(hub))
    _seed_tie_breaks(cluster, scenario.seed if seed is None else seed)
    profiles = list(cluster.frameworks)
    run = Run(label=label, profile=profiles[0], metrics_sources=len(hub.sources))
    if explain_pod:
        cluster.scheduler.queue = _Explainer(cluster, explain_pod, now, run)
    controllers = Controllers(
        cluster,
        scenario.deployments,
        lambda raw: retarget([raw], profiles, profiles[0])[0],
        scenario.timing.pod_start_seconds,
    )

    def bound(pod: PodInfo, node: str) -> None:
        model.place(pod, node, now())
        run.placements[pod.key] = node
        run.bound_at[pod.key] = now()
        controllers.bound(pod.key, node, now())

    def gone(pod: PodInfo) -> None:
        if pod.key in run.deleted_at:
            return
        run.deleted_at[pod.key] = now()
        if pod.key in controllers.deleting:
            run.deleted_by_controller.add(pod.key)
        else:
            model.hand_over(pod, now())  # evicted or preempted: its work goes to its replacement
        model.remove(pod.key, now())
        controllers.deleted(pod.key, now())

    run.created_at = controllers.created
    cluster.on_bound.append(bound)
    cluster.on_deleted.append(gone)
    _populate(cluster, scenario, controllers)
    run.before = model.loads(0.0)

    watcher = RebalanceWatcher(
        cluster, cfg, run.profile, model, controllers, levels_of(scenario.nodes, scenario.levels), t0
    )
    polls = _Polls(hub, scenario.timing.poll_interval)
    loop = _Loop(scenario, cfg, cluster, run, model, controllers, polls, watcher if watcher.enabled else None)
    loop.run(move_to, now, retarget(scenario.pods, profiles, profiles[0]), progress)
    if watcher.enabled:
        run.rebalancing = watcher.finish(run.created_at, run.placements, run.bound_at)

    end = run.end = now()
    run.after = model.loads(end)
    if scenario.traffic:
        levels = levels_of(scenario.nodes, scenario.levels)
        run.traffic = shares(model.traffic(end), model.counts(end), len(scenario.nodes), levels)
    # The scheduler writes pod conditions off its thread: the last ones must land before the
    # unscheduled pods' reasons are read from them.
    cluster.scheduler.shutdown()
    for key in [*run.arrived_at, *run.created_at]:
        if key not in run.placements and key not in run.deleted_at:
            run.unscheduled[key] = cluster.api.failed.get(key, "still waiting in the scheduling queue")
    _name_the_tie_winner(run, explain_pod)
    run.queries = model.queries - run.queries_while_scheduling
    run.wall_seconds = time.perf_counter() - started
    return run


def _populate(cluster: InMemoryCluster, scenario: Scenario, controllers: Controllers) -> None:
    """The scenario's cluster before the first arrival: PodGroups, nodes, storage, existing pods."""
    for group in scenario.pod_groups:
        cluster.add_object(PODGROUPS_KEY, copy.deepcopy(group))
    cluster.add_nodes(copy.deepcopy(scenario.nodes))
    if scenario.volumes:
        labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in scenario.nodes}
        SimulatedPVController(cluster.objects, labels)
        for key, objs in scenario.volumes.objects.items():
            for obj in copy.deepcopy(objs):
                cluster.add_object(key, obj)
    for budget in scenario.budgets:
        cluster.add_object(PDBS_KEY, copy.deepcopy(budget))
    cluster.add_pods(copy.deepcopy(scenario.existing_pods))
    for raw in scenario.existing_pods:
        controllers.existing(raw)


class _Loop:
    """The event loop of one run (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        cfg: SchedulerConfig,
        cluster: InMemoryCluster,
        run: Run,
        model: LoadModel,
        controllers: Controllers,
        polls: _Polls,
        watcher: RebalanceWatcher | None = None,
    ) -> None:
        self.scenario = scenario
        self.watcher = watcher
        self.cluster = cluster
        self.result = run
        self.model = model
        self.controllers = controllers
        self.polls = polls
        poll = min((iv for _, iv in polls.pollers), default=0.0)
        # How long after the last change readings can still move and pods wait for them.
        self.settle = (
            model.window + scenario.timing.scrape_interval + poll + 2 * float(cfg.pod_max_backoff_seconds)
        )
        self.limit = configured_thresholds(cfg, run.profile).get("network")
        self.levels = levels_of(scenario.nodes, scenario.levels)
        self.phases: list[tuple[str, float, int]] = []  # open phases: (label, started, entry or -1)
        self.next_entry = 0

    def run(
        self,
        move_to: Callable[[float], None],
        now: Callable[[], float],
        pods: list[dict[str, Any]],
        progress: Progress | None,
    ) -> None:
        s, run = self.scenario, self.result
        arrivals = [(s.timing.arrival(i), raw) for i, raw in enumerate(pods)]
        timeline = s.timeline
        cut_at = timeline[-1].at + MAX_SECONDS_AFTER_TIMELINE if timeline else math.inf
        if timeline:
            self.phases.append((INITIAL_PHASE, 0.0, -1))
        i = 0
        t = 0.0
        while True:
            run.polls += self.polls.run_due(t, move_to, self._polled)
            move_to(t)
            while self.next_entry < len(timeline) and timeline[self.next_entry].at <= t:
                self._start(self.next_entry, t)
                self.next_entry += 1
            while i < len(arrivals) and arrivals[i][0] <= t:
                raw = arrivals[i][1]
                if self.controllers.arrived(raw, t):
                    run.arrived_at[_key(raw)] = t
                    self.cluster.add_pod(raw)
                i += 1
                if progress is not None:
                    progress(i, len(arrivals))
            self._act(t)
            self._close_rollouts()
            if self.watcher is not None:
                self.watcher.observe(t)
            nxt = min(
                arrivals[i][0] if i < len(arrivals) else math.inf,
                timeline[self.next_entry].at if self.next_entry < len(timeline) else math.inf,
                self.controllers.next_wakeup(t),
            )
            waiting = _waiting(self.cluster)
            if nxt == math.inf:
                # Nothing scheduled: go on while readings may still move what waits (or, with a
                # timeline, until they have settled), polls included.
                horizon = self.model.last_change() + self.settle
                if not (timeline or waiting or _pending(self.cluster)) or t >= horizon:
                    break
                nxt = horizon
            if t >= cut_at:
                run.cut = True
                break
            # Production's flush loop retries expired backoffs every second; a rebalancing
            # round runs when due, as production's periodic loop runs it.
            rounds = self.watcher.next_round() if self.watcher is not None else math.inf
            t = min(nxt, t + 1.0 if waiting else math.inf, self.polls.next_due(), max(rounds, t + 1e-6))
        self._close_all(now())

    def _polled(self) -> None:
        # New samples are a cluster event for pods a load filter rejected (app.py's housekeeping).
        self.cluster.queue.move_all_to_active_or_backoff(METRICS_POLLED_EVENT)

    def _act(self, t: float) -> None:
        """Controllers and scheduler, again while either changes anything at t."""
        for _ in range(1000):
            deleted = len(self.result.deleted_at)
            changed = self.controllers.sync(t)
            attempts = _schedule(self.cluster, self.result, self.model)
            # (A periodic task run by the scheduling pass may have evicted pods: their
            # ReplicaSets recreate them at t, not at the next event.)
            if not changed and not attempts and len(self.result.deleted_at) == deleted:
                return
        log.warning("Simulated controllers did not settle t=%s", t)

    # ------------------------------------------------------------ phases

    def _start(self, index: int, t: float) -> None:
        entry = self.scenario.timeline[index]
        # Entries that finish when the next one starts: the initial placement, load changes.
        for label, started, opened in [p for p in self.phases if p[2] < 0 or not self._is_rollout(p[2])]:
            self._close((label, started, opened), t, complete=True)
        if isinstance(entry.action, Rollout):
            self.controllers.rollout(index, entry.action, t)
        elif isinstance(entry.action, PodLoadChange) and entry.action.nodes:
            self.model.on_nodes(entry.action, t)
        self.phases.append((entry.describe(), t, index))

    def _is_rollout(self, index: int) -> bool:
        return isinstance(self.scenario.timeline[index].action, Rollout)

    def _close_rollouts(self) -> None:
        for phase in list(self.phases):
            done = self.controllers.completed.get(phase[2]) if phase[2] >= 0 else None
            if done is not None and self._is_rollout(phase[2]):
                self._close(phase, done, complete=True)

    def _close_all(self, t: float) -> None:
        for phase in list(self.phases):
            self._close(phase, t, complete=phase[2] < 0 or not self._is_rollout(phase[2]))

    def _close(self, phase: tuple[str, float, int], t: float, *, complete: bool) -> None:
        self.phases.remove(phase)
        label, started, _ = phase
        run = self.result
        during = [k for k, at in run.deleted_at.items() if started <= at <= t]
        run.phases.append(
            Phase(
                label=label,
                started=started,
                at=t,
                complete=complete,
                pending=sum(
                    1
                    for k in [*run.arrived_at, *run.created_at]
                    if k not in run.bound_at and k not in run.deleted_at
                ),
                created=sum(1 for at in run.created_at.values() if started <= at <= t),
                deleted=len(during),
                deleted_other=sum(1 for k in during if k not in run.deleted_by_controller),
                figures=measure(self.model, t, self.limit, self.levels),
            )
        )


class _Polls:
    """Each poller on its own interval, all starting at simulated second 0."""

    def __init__(self, hub: MetricsHub, interval: float | None) -> None:
        self.pollers = [(p, interval or p.conn.poll_interval_seconds) for p in hub.pollers]
        self.count = [0] * len(self.pollers)

    def next_due(self) -> float:
        return min(
            (n * iv for (_, iv), n in zip(self.pollers, self.count, strict=True)), default=float("inf")
        )

    def run_due(self, t: float, move_to: Callable[[float], None], after: Callable[[], None]) -> int:
        """Run every poll due at or before t, each at its own time; returns how many ran."""
        ran = 0
        while (due := self.next_due()) <= t:
            move_to(due)
            for i, (poller, iv) in enumerate(self.pollers):
                if self.count[i] * iv == due:
                    poller.poll_once()
                    self.count[i] += 1
                    ran += 1
            after()
        return ran


def _name_the_tie_winner(run: Run, key: str) -> None:
    """explain() names the first of equal best totals; the scheduler picked one of them at random."""
    ex, placed = run.explanation, run.placements.get(key)
    if ex is None or placed is None:
        return
    best = max((n.total for n in ex.nodes if n.feasible), default=None)
    if any(n.node == placed and n.feasible and n.total == best for n in ex.nodes):
        ex.winner = placed


def _schedule(cluster: InMemoryCluster, run: Run, model: LoadModel) -> int:
    before = model.queries
    cluster.queue.flush()  # production's flush loop: expired backoffs, unschedulable leftovers
    attempts = cluster.schedule_pending()
    run.queries_while_scheduling += model.queries - before
    return attempts


def _waiting(cluster: InMemoryCluster) -> bool:
    counts = cluster.pending()
    return bool(counts.get(ACTIVE) or counts.get(BACKOFF) or cluster.scheduler.binder.inflight)


def _pending(cluster: InMemoryCluster) -> bool:
    return any(cluster.pending().values())


def _key(raw: Mapping[str, Any]) -> str:
    meta = raw["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _seed_tie_breaks(cluster: InMemoryCluster, seed: int) -> None:
    """Equal totals are broken at random by the node search; seed it so a run can be repeated."""
    for i, search in enumerate(cluster.scheduler.searches.values()):
        search.seed(seed * 1000 + i)
