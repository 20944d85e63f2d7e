"""A scenario's `timeline:`: what happens to the cluster after the pods arrive, at set times.

    timeline:
      - at: 90                                   # simulated seconds from the start
        rollout: {workloads: all, strategy: Recreate}
      - at: 400
        rollout: {workloads: [api, shop/db], strategy: RollingUpdate, maxSurge: 25%, maxUnavailable: 0}
      - at: 600
        load: {node-03: {networkUtilization: 0.95}}            # as under metrics:, from `at` on
      - at: 700
        podLoad: {workload: api, egressBandwidth: 400Mbit}      # the pods' true load from `at` on
      - at: 750
        podLoad: {nodes: [node-00, node-01], perNode: 3, egressBandwidth: 250Mbit}  # pods there then
      - at: 800
        traffic: {pairs: [{source: api, destination: db, response: 40MB/s}]}

Each entry is `at` and one action.  The actions are records a harness can
replay elsewhere (a real API server and Prometheus); ACTIONS maps each key to
its decoder, so a new action (the rebalancer's triggers, say) is one decoder
and one record more.  Rollouts are carried out by the simulated Deployment
controller (controllers.py); load, podLoad and traffic changes are part of
the true state from the start (model.py), since they do not depend on where
pods go.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsched.framework.fields import ErrorList, Fields, join
from netsched.framework.quantity import CPU, MEMORY, QuantityError, to_canonical
from netsched.simulate.background import decode_changes
from netsched.simulate.traffic import Pair, decode_pairs
from netsched.simulate.units import Curve, bits_per_second, shown

RECREATE, ROLLING_UPDATE = "Recreate", "RollingUpdate"
STRATEGIES = (RECREATE, ROLLING_UPDATE)
DEFAULT_MAX_SURGE = DEFAULT_MAX_UNAVAILABLE = "25%"  # kube's defaults
ALL = "all"
_PERCENT = re.compile(r"^([0-9]+)%$")


def scaled(value: int | str, total: int, round_up: bool) -> int:
    """An int-or-percent of `total` as kube's GetScaledValueFromIntOrPercent: a percentage
    rounds up (maxSurge) or down (maxUnavailable)."""
    if isinstance(value, int):
        return value
    pct = int(value[:-1])
    return -(-pct * total // 100) if round_up else pct * total // 100


@dataclass(frozen=True, slots=True)
class Rollout:
    """`kubectl rollout restart` of Deployments: a new template, rolled out by `strategy`."""

    workloads: tuple[str, ...]  # Deployment keys "namespace/name"
    strategy: str = ROLLING_UPDATE
    max_surge: int | str = DEFAULT_MAX_SURGE  # int, or "N%"
    max_unavailable: int | str = DEFAULT_MAX_UNAVAILABLE
    min_ready_seconds: float = 0.0  # a Ready pod is available after this long

    def fenceposts(self, replicas: int) -> tuple[int, int]:
        """(maxSurge, maxUnavailable) in pods, as kube's ResolveFenceposts: surge rounds up,
        unavailable down, and both 0 make unavailable 1; unavailable never above replicas."""
        surge = scaled(self.max_surge, replicas, True)
        unavailable = scaled(self.max_unavailable, replicas, False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return surge, min(unavailable, replicas)

    def describe(self) -> str:
        n = len(self.workloads)
        what = f"{n} Deployments" if n > 3 else ", ".join(w.split("/", 1)[1] for w in self.workloads)
        if self.strategy == RECREATE:
            return f"rollout Recreate of {what}"
        return f"rollout RollingUpdate (maxSurge {self.max_surge}, maxUnavailable {self.max_unavailable}) of {what}"


@dataclass(frozen=True, slots=True)
class LoadChange:
    """Nodes' background from `at` on: node -> metric ("network" bytes/s each way, "cpu",
    "memory" fractions) -> curve in simulated seconds (a series counts from `at`)."""

    nodes: Mapping[str, Mapping[str, Curve]]

    def describe(self) -> str:
        return f"load change on {len(self.nodes)} node(s)"


@dataclass(frozen=True, slots=True)
class PodLoadChange:
    """The true load of matching pods from `at` on (fields left None keep their value)."""

    workload: str = ""  # "namespace/name": every pod of it, also those created later
    pods: tuple[str, ...] = ()  # or these pods ("namespace/name")
    rx: float | None = None  # bytes/s
    tx: float | None = None
    cpu: float | None = None  # cores
    memory: float | None = None  # bytes
    # Or the first `per_node` pods (by name) running on each of these nodes at `at`: chosen
    # when the entry starts, since it depends on where the pods went (model.LoadModel.on_nodes).
    nodes: tuple[str, ...] = ()
    per_node: int = 0

    def matches(self, pod_key: str, workload: str) -> bool:
        """Whether the change applies to a pod as it is placed (never for `nodes`: chosen at `at`)."""
        if self.nodes:
            return False
        return workload == self.workload if self.workload else pod_key in self.pods

    def describe(self) -> str:
        if self.nodes:
            return f"pod load of {self.per_node} pod(s) on each of {', '.join(self.nodes)}"
        return (
            f"pod load of {self.workload.split('/', 1)[1] if self.workload else f'{len(self.pods)} pod(s)'}"
        )


@dataclass(frozen=True, slots=True)
class TrafficChange:
    """Pairs' rates from `at` on (a pair not in `traffic:` starts; rate 0 stops one)."""

    pairs: tuple[Pair, ...]

    def describe(self) -> str:
        return f"traffic change of {len(self.pairs)} pair(s)"


Action = Rollout | LoadChange | PodLoadChange | TrafficChange


@dataclass(frozen=True, slots=True)
class Entry:
    at: float  # simulated seconds
    action: Action

    def describe(self) -> str:
        return f"{self.at:g} s: {self.action.describe()}"


@dataclass(frozen=True, slots=True)
class Known:
    """What the timeline may name, from the rest of the scenario."""

    nodes: list[str]
    link_speed: Mapping[str, float]
    deployments: Sequence[str]  # keys
    workloads: set[str]  # workload keys of the scenario's pods (traffic naming)
    pods: set[str]
    rng: np.random.Generator


def decode_timeline(raw: Any, errs: ErrorList, known: Known) -> tuple[Entry, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        errs.invalid("timeline", type(raw).__name__, "must be a list of {at, <action>}")
        return ()
    out: list[Entry] = []
    last = -math.inf
    for i, item in enumerate(raw):
        f = Fields(item, join("timeline", i), errs)
        at = f.float("at", math.nan, min=0)
        if not f.has("at"):
            errs.required(join(f.path, "at"), "simulated seconds from the start")
        elif at < last:
            errs.invalid(join(f.path, "at"), at, f"must not be before the entry above ({last:g})")
        given = [k for k in ACTIONS if f.has(k)]
        if len(given) != 1:
            what = f"one of {', '.join(ACTIONS)}"
            if given:
                errs.forbidden(join(f.path, given[1]), f"{what} per entry, not {given[0]} too")
            else:
                errs.required(f.path, what)
        for key in given[:1]:
            action = ACTIONS[key](f.any(key), join(f.path, key), errs, at if at == at else 0.0, known)
            if action is not None and at == at:
                out.append(Entry(at, action))
                last = at
        f.finish()
    return tuple(out)


def _rollout(raw_action: Any, path_: str, errs: ErrorList, _at: float, known: Known) -> Rollout | None:
    f = Fields(raw_action, path_, errs)
    raw = f.any("workloads")
    path = join(f.path, "workloads")
    names: list[str] = []
    if raw == ALL:
        names = list(known.deployments)
        if not names:
            f.errs.invalid(path, ALL, "the scenario has no Deployments (pods with `deployment:`)")
    elif isinstance(raw, list) and raw:
        for i, name in enumerate(raw):
            key = name if isinstance(name, str) and "/" in name else f"default/{name}"
            if key not in known.deployments:
                f.errs.invalid(join(path, i), shown(name), "no such Deployment among the scenario's pods")
            elif key not in names:
                names.append(key)
    else:
        f.errs.required(path, f"a list of Deployment names, or {ALL}")
    strategy = f.str("strategy", ROLLING_UPDATE, choices=STRATEGIES)
    surge = _int_or_percent(f, "maxSurge", DEFAULT_MAX_SURGE)
    unavailable = _int_or_percent(f, "maxUnavailable", DEFAULT_MAX_UNAVAILABLE)
    min_ready = f.float("minReadySeconds", 0.0, min=0)
    if strategy == RECREATE:
        for key in ("maxSurge", "maxUnavailable"):
            if f.has(key):
                f.errs.forbidden(join(f.path, key), f"only with strategy {ROLLING_UPDATE}")
    elif _zero(surge) and _zero(unavailable):
        f.errs.invalid(join(f.path, "maxUnavailable"), unavailable, "may not be 0 when maxSurge is 0")
    if isinstance(unavailable, str) and int(unavailable[:-1]) > 100:
        f.errs.invalid(join(f.path, "maxUnavailable"), unavailable, "must not be greater than 100%")
    f.finish()
    if not names:
        return None
    return Rollout(tuple(names), strategy, surge, unavailable, min_ready)


def _zero(v: int | str) -> bool:
    return v == 0 or v == "0%"


def _int_or_percent(f: Fields, key: str, default: str) -> int | str:
    raw = f.any(key)
    if raw is None:
        return default
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return raw
    if isinstance(raw, str) and _PERCENT.match(raw.strip()):
        return raw.strip()
    f.errs.invalid(
        join(f.path, key), shown(raw), 'must be a number of pods (>= 0) or a percentage such as "25%"'
    )
    return default


def _load(raw: Any, path: str, errs: ErrorList, at: float, known: Known) -> LoadChange | None:
    before = len(errs)
    changes = decode_changes(raw, path, errs, known.rng, known.nodes, known.link_speed)
    if not changes:
        if len(errs) == before:
            errs.required(path, "nodes and the metrics that change, as under metrics:")
        return None
    shifted = {n: {k: c.shifted(at) for k, c in m.items()} for n, m in changes.items()}
    return LoadChange(shifted)


def _pod_load(raw: Any, path: str, errs: ErrorList, _at: float, known: Known) -> PodLoadChange | None:
    f = Fields(raw, path, errs)
    workload = f.str("workload", "")
    pods = f.list("pods")
    nodes = f.list("nodes")
    per_node = f.int("perNode", 1, min=1)
    if f.has("perNode") and not nodes:
        f.errs.forbidden(join(f.path, "perNode"), "only with nodes: [names]")
    if sum(map(bool, (workload, pods, nodes))) != 1:
        f.errs.required(join(f.path, "workload"), "one of a workload, pods: [names] or nodes: [names]")
        return None
    for i, name in enumerate(nodes):
        if name not in known.nodes:
            f.errs.invalid(join(join(f.path, "nodes"), i), shown(name), "no such node in nodes")
    key = workload if "/" in workload else f"default/{workload}"
    if workload and key not in known.workloads:
        f.errs.invalid(join(f.path, "workload"), workload, "no pod of the scenario is of this workload")
        return None
    keys: list[str] = []
    for i, name in enumerate(pods):
        pod = name if isinstance(name, str) and "/" in name else f"default/{name}"
        if pod not in known.pods:
            f.errs.invalid(join(join(f.path, "pods"), i), shown(name), "no such pod in pods or existingPods")
        keys.append(pod)
    both = _rate(f, "bandwidth")
    rx = _rate(f, "ingressBandwidth")
    tx = _rate(f, "egressBandwidth")
    cpu = _quantity(f, "cpu", CPU, 'a CPU quantity such as "1500m" (cores used)')
    memory = _quantity(f, "memory", MEMORY, 'a memory quantity such as "2Gi"')
    f.finish()
    change = PodLoadChange(
        key if workload else "",
        tuple(keys),
        rx if rx is not None else both,
        tx if tx is not None else both,
        cpu / 1000 if cpu is not None else None,
        memory,
        tuple(str(n) for n in nodes),
        per_node if nodes else 0,
    )
    if all(v is None for v in (change.rx, change.tx, change.cpu, change.memory)):
        f.errs.required(f.path, "bandwidth, ingressBandwidth, egressBandwidth, cpu or memory")
        return None
    return change


def _rate(f: Fields, key: str) -> float | None:
    raw = f.any(key)
    if raw is None:
        return None
    try:
        return bits_per_second(raw) / 8
    except ValueError as e:
        f.errs.invalid(join(f.path, key), shown(raw), str(e))
        return None


def _quantity(f: Fields, key: str, resource: str, what: str) -> float | None:
    raw = f.any(key)
    if raw is None:
        return None
    try:
        return float(to_canonical(resource, raw))
    except QuantityError:
        f.errs.invalid(join(f.path, key), shown(raw), f"must be {what}")
        return None


def _traffic(raw: Any, path: str, errs: ErrorList, _at: float, _known: Known) -> TrafficChange | None:
    f = Fields(raw, path, errs)
    pairs = decode_pairs(f, allow_zero=True)
    if not f.list("pairs"):
        errs.required(join(path, "pairs"), "the pairs whose rates change")
    f.finish()
    return TrafficChange(tuple(pairs)) if pairs else None


# Each action's decoder: (value, its path, errors, the entry's `at`, what the scenario holds).
Decoder = Callable[[Any, str, ErrorList, float, Known], Action | None]
ACTIONS: dict[str, Decoder] = {
    "rollout": _rollout,
    "load": _load,
    "podLoad": _pod_load,
    "traffic": _traffic,
}
