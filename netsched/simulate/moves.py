"""The rebalancer in a simulation: the moves it made and what they did to the cluster.

When the simulated profile enables the Rebalancer, its rounds are periodic
tasks like in production (netsched.framework.periodic): the engine wakes at
each round's due time, the round runs inside the in-memory cluster's
scheduling pass, its evictions go through MemoryAPI.evict (kube's eviction
and PodDisruptionBudget rules), and the simulated ReplicaSet controller
recreates each evicted pod, which the scheduler then places.  Watching is all
this module does:

- the moves, as each round reports them (the plugin's round reports, what its
  debug page shows: pod, trigger, from, to, the figures, the result), with the
  simulated second of the round and, for an eviction, the pod that replaced it
  and where it went;
- the cluster after each step of the loop: the highest NIC (true, settled load,
  and what a query then reads), the traffic share crossing nodes, and per
  Deployment the most pods unavailable at once once it had been whole.

`figures(run, limit)` sums them up per issue target (netsched/simulate/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from netsched.config import SchedulerConfig
from netsched.framework import names
from netsched.framework.periodic import PeriodicTasks
from netsched.framework.runtime import Framework
from netsched.simulate.controllers import Controllers
from netsched.simulate.model import LoadModel
from netsched.simulate.phases import measure

EVICTED, DRY_RUN = "evicted", "dryRun"  # the Rebalancer's results (EvictionResult, dry run)


@dataclass(slots=True)
class Move:
    at: float  # simulated seconds of the round
    round: int
    pod: str
    deployment: str  # "namespace/name" of its Deployment ("" when none)
    trigger: str  # network, cpu, memory, traffic
    source: str
    target: str
    result: str  # evicted, dryRun, refused (a budget's 429), gone, conflict, error
    before: float  # the trigger's figure at the source before (utilisation, or crossing bytes/s)
    after: float  # ... after, the pod gone
    target_after: float  # the target's utilisation with the pod (NaN for traffic)
    why: str  # the Event's text
    replacement: str = ""  # the pod its ReplicaSet created for it (evicted moves)
    landed: str = ""  # where that pod went ("" not placed)
    landed_nic: float = math.nan  # that node's busiest true NIC from then to the end of the run

    def to_dict(self) -> dict[str, Any]:
        return {
            "atSeconds": self.at,
            "round": self.round,
            "pod": self.pod,
            "trigger": self.trigger,
            "from": self.source,
            "to": self.target,
            "result": self.result,
            "before": _num(self.before),
            "after": _num(self.after),
            "targetAfter": _num(self.target_after),
            "replacement": self.replacement,
            "landed": self.landed,
            "landedMaxNetwork": _num(self.landed_nic),
            "why": self.why,
        }


@dataclass(frozen=True, slots=True)
class Sample:
    """The cluster at one step of the loop."""

    at: float
    max_network: float  # busiest NIC, true settled load (every bound pod in full)
    max_read: float  # busiest NIC as a query at `at` reads it (rate windows)
    cross_node: float  # share of the pairs' traffic crossing nodes (NaN: no traffic)


@dataclass
class Rebalancing:
    """What the rebalancer did in one run (Run.rebalancing)."""

    high: float  # the network trigger's highPercent, as a fraction (NaN: off)
    dry_run: bool
    moves: list[Move] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    unavailable: dict[str, int] = field(default_factory=dict)  # Deployment -> most unavailable at once
    rounds: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # cause -> rounds that moved nothing by rule

    def to_dict(self, limit: float | None = None) -> dict[str, Any]:
        return {
            "dryRun": self.dry_run,
            "rounds": self.rounds,
            "skipped": dict(self.skipped),
            "moves": [m.to_dict() for m in self.moves],
            "mostUnavailable": dict(self.unavailable),
            "figures": figures(self, limit).to_dict(),
        }


class _Rounds(Protocol):
    """What the simulator reads of a Rebalancer: its last rounds (the debug page's)."""

    reports: Sequence[Any]


class _Scheduler(Protocol):
    """What the watcher reads of the scheduler it watches: an InMemoryCluster, or a SchedulerApp
    (netsched.testing.replay: the same scenario over HTTP and a real Prometheus)."""

    @property
    def frameworks(self) -> Mapping[str, Framework]: ...

    periodic: PeriodicTasks


class RebalanceWatcher:
    """Collects a run's Rebalancing as the engine's loop goes (see the module docstring)."""

    def __init__(
        self,
        cluster: _Scheduler,
        cfg: SchedulerConfig,
        profile: str,
        model: LoadModel,
        controllers: Controllers,
        levels: Mapping[str, Sequence[str | None]],
        origin: float,
    ) -> None:
        """`origin`: the clock's now() at simulated second 0."""
        self._cluster = cluster
        self._model = model
        self._controllers = controllers
        self._levels = levels
        self._origin = origin
        plugins: list[Any] = [
            fwk.plugins[names.REBALANCER]
            for fwk in cluster.frameworks.values()
            if names.REBALANCER in fwk.plugins
        ]
        self._plugins: list[_Rounds] = plugins
        self._tasks = [n for n in cluster.periodic.names() if n.startswith(f"{names.REBALANCER}/")]
        self._seen = [0] * len(self._plugins)
        self._whole: set[str] = set()  # Deployments that have had every replica available
        self._nics: list[tuple[float, Any]] = []  # (t, true NIC per node), for the replacements
        args = rebalancer_args(cfg, profile) or {}
        high = float((args.get("network") or {}).get("highPercent", 0) or 0)
        self.result = Rebalancing(high / 100 if high else math.nan, bool(args.get("dryRun", True)))

    @property
    def enabled(self) -> bool:
        return bool(self._plugins)

    def next_round(self) -> float:
        """Simulated second of the next round (inf: none)."""
        due = [self._cluster.periodic.due(n) for n in self._tasks]
        return min((d - self._origin for d in due if d is not None), default=math.inf)

    def observe(self, t: float) -> None:
        """After a step of the loop at t: new rounds' moves, unavailable pods, the load."""
        out = self.result
        for i, plugin in enumerate(self._plugins):
            for report in list(plugin.reports):
                if report.round <= self._seen[i]:
                    continue
                self._seen[i] = report.round
                out.rounds += 1
                if report.skipped:
                    out.skipped[report.skipped] = out.skipped.get(report.skipped, 0) + 1
                out.moves += [self._move(t, report.round, m) for m in report.moves]
        for key, d in self._controllers.deployments.items():
            if d.rollout is not None:
                continue  # a rollout's unavailability is its own (maxUnavailable)
            missing = d.spec.replicas - self._controllers.available(key, t)
            if missing <= 0:
                self._whole.add(key)
            elif key in self._whole:
                out.unavailable[key] = max(out.unavailable.get(key, 0), missing)
        self._nics.append((t, self._model.loads(t).network))
        f = measure(self._model, t, None, self._levels)
        read = self._model.loads(t, measured=True).network
        read = read[np.isfinite(read)]
        cross = f.traffic.cross_node if f.traffic is not None else math.nan
        out.samples.append(Sample(t, f.max_network, float(read.max()) if len(read) else math.nan, cross))

    def _move(self, t: float, number: int, m: Mapping[str, Any]) -> Move:
        owner = self._controllers.owner.get(str(m["pod"]))
        return Move(
            at=t,
            round=number,
            pod=str(m["pod"]),
            deployment=owner[0].spec.key if owner is not None else "",
            trigger=str(m["trigger"]),
            source=str(m["from"]),
            target=str(m["to"]),
            result=str(m.get("result", "")),
            before=float(m.get("before", math.nan)),
            after=float(m.get("after", math.nan)),
            target_after=float(m.get("targetAfter", math.nan)),
            why=str(m.get("why", "")),
        )

    def finish(
        self,
        created: Mapping[str, float],
        placements: Mapping[str, str],
        bound: Mapping[str, float],
        slack: float = 0.0,
    ) -> Rebalancing:
        """Each eviction's replacement: the first pod its Deployment created at or after it
        (`slack` seconds before it: a watcher reading the round's report after the controllers
        saw the deletion, in real time), where it went and how busy that node's NIC was then."""
        taken: set[str] = set()
        for m in self.result.moves:
            if m.result != EVICTED or not m.deployment:
                continue
            later = sorted(
                (at, key)
                for key, at in created.items()
                if at >= m.at - slack and key not in taken and self._deployment(key) == m.deployment
            )
            if later:
                m.replacement = later[0][1]
                taken.add(m.replacement)
                m.landed = placements.get(m.replacement, "")
                row = self._model.index.get(m.landed)
                since = bound.get(m.replacement, math.inf)
                seen = [float(nic[row]) for at, nic in self._nics if row is not None and at >= since]
                m.landed_nic = max(seen, default=math.nan)
        return self.result

    def _deployment(self, key: str) -> str:
        owner = self._controllers.owner.get(key)
        return owner[0].spec.key if owner is not None else ""


def rebalancer_args(cfg: SchedulerConfig, profile: str) -> dict[str, Any] | None:
    """The Rebalancer's args in `profile` of `cfg`, encoded (None: not enabled there); read by
    their encoded names, as configs.configured_thresholds reads LoadThreshold's: the simulator
    imports no plugin."""
    prof = next((p for p in cfg.profiles if p.scheduler_name == profile), None)
    if prof is None or not any(names.REBALANCER in prof.names(point) for point in prof.plugins):
        return None
    args = prof.args(names.REBALANCER)
    return args.encode() if args is not None else {}


@dataclass(frozen=True, slots=True)
class RebalanceFigures:
    """A run's rebalancing against the issue's targets (netsched/simulate/README.md)."""

    planned: int  # moves planned (dry run: reported)
    evictions: int  # evicted
    refused: int  # refused by a disruption budget
    back_on_source: int  # replacements placed on the node their predecessor left
    on_target: int  # replacements placed where the plan said
    replacements: int  # replacements placed
    over_target_after: int  # replacements on a node whose true NIC went above the limit after
    most_unavailable: int  # most pods of one Deployment unavailable at once
    read_over: int  # steps of the loop at which the busiest NIC read above the limit
    first_over: float  # first simulated second the busiest NIC (true) was above the limit
    settled: float  # from then, when the busiest NIC was at or below it for good (NaN: never)
    settled_read: float  # ... as the queries read it (the rate window behind the true load)
    max_network_end: float  # busiest NIC (true) at the end

    def to_dict(self) -> dict[str, Any]:
        return {_camel(k): _num(getattr(self, k)) for k in self.__slots__}


def figures(r: Rebalancing, limit: float | None = None) -> RebalanceFigures:
    """`limit`: the NIC figure the settling time is counted to (default: the network trigger's
    highPercent)."""
    lim = r.high if limit is None else limit
    evicted = [m for m in r.moves if m.result == EVICTED]
    placed = [m for m in evicted if m.landed]
    over = [s.at for s in r.samples if s.max_network > lim]
    return RebalanceFigures(
        planned=len(r.moves),
        evictions=len(evicted),
        refused=sum(1 for m in r.moves if m.result == "refused"),
        back_on_source=sum(1 for m in placed if m.landed == m.source),
        on_target=sum(1 for m in placed if m.landed == m.target),
        replacements=len(placed),
        over_target_after=sum(1 for m in placed if m.landed_nic > lim),
        most_unavailable=max(r.unavailable.values(), default=0),
        read_over=sum(1 for s in r.samples if s.max_read > lim),
        first_over=over[0] if over else math.nan,
        settled=_for_good(r.samples, lim, lambda s: s.max_network),
        settled_read=_for_good(r.samples, lim, lambda s: s.max_read),
        max_network_end=r.samples[-1].max_network if r.samples else math.nan,
    )


def _for_good(samples: Sequence[Sample], lim: float, of: Callable[[Sample], float]) -> float:
    """The first sample time from which `of` stays at or below `lim` after having been above it."""
    over = [s.at for s in samples if of(s) > lim]
    if not over:
        return math.nan
    after = [s.at for s in samples if s.at > over[-1]]
    return after[0] if after else math.nan


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(p.title() for p in rest)


def _num(v: object) -> object:
    if isinstance(v, float):
        return None if v != v or math.isinf(v) else round(v, 6)
    return v
