"""The simulated cluster's true load over time, and the Prometheus that reports it.

True state (history.py keeps it exactly): each node's background (scenario
`metrics:`, then each timeline `load` change) plus the pods on it, each from
`podStartSeconds` after it is bound until it is deleted: network from its
bandwidth annotations (ingress adds to received, egress to transmitted
bytes), CPU as `usage.cpuOfRequests` x its request, memory its request, each
changed from a timeline `podLoad` on; plus the flows between workloads (the
scenario's `traffic:`, traffic.py) that cross each NIC, one direction each,
while both ends have running pods.

The scheduler never reads that directly: a `SimulatedPrometheus` answers the
metrics pipeline's PromQL as node_exporter, cAdvisor, a mesh and Prometheus
would, at the moment of each poll:

- a query at t reads the last scrape s <= t (scrapes at multiples of
  `timing.scrapeIntervalSeconds`); a rate() (network, CPU, the mesh's pair
  bytes) is the exact average of the true value over [s - W, s], W being
  `timing.rateWindowSeconds` or else the querying plugin's own
  `prometheus.rateWindow` (it is in the PromQL); a gauge (memory, link speed)
  is the true value at s.  So a departed pod fades out over W, a new one
  ramps in, and readings move once per scrape;
- series carry the label the plugins' nodeMapping expects (`node=<name>` by
  default; `instance=<InternalIP>:9100` in instance mode);
- the traffic graph's query is answered with one series per pair and
  direction (pair_key(a, b, REQUEST / RESPONSE)) while its window average is
  above 0, and the per-pod usage query (cAdvisor's series, `perPodUsage`)
  with `pod_readings`: per pod that ran within the window its CPU, received
  and transmitted bytes (rate()s) and its memory at the scrape;
- during an outage every query raises QueryError("unreachable"), as a
  connection refused would.

Network utilisation is the busier direction over the link speed, the
definition NetworkTraffic and LoadThreshold use (links are full duplex).
`pod_readings` answers per pod what cAdvisor's series would give, windowed
the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsched.clock import Clock
from netsched.framework.parse import parse_node, parse_pod
from netsched.framework.quantity import CPU, MEMORY
from netsched.framework.snapshot import FloatArray, IntArray
from netsched.framework.types import PodInfo
from netsched.framework.workload import workload_key
from netsched.metrics import (
    BUILTIN_METRICS,
    LINK_SPEED,
    NETWORK_RX,
    NETWORK_TX,
    MetricsHub,
    QueryError,
    pod_bandwidth,
)
from netsched.metrics import CPU as CPU_METRIC
from netsched.metrics import MEMORY as MEMORY_METRIC
from netsched.metrics.args import BY_INSTANCE, ConnectionKey, duration_seconds
from netsched.metrics.queries import POD_CPU, POD_LABEL, POD_MEMORY, POD_NETWORK_RX, POD_NETWORK_TX, POD_USAGE
from netsched.metrics.traffic import PAIR_LABEL, REQUEST, RESPONSE, TRAFFIC_PAIRS, pair_key
from netsched.simulate.history import PodHistory, PodLoad, Track, Window
from netsched.simulate.scenario import Scenario
from netsched.simulate.timeline import LoadChange, PodLoadChange, TrafficChange
from netsched.simulate.traffic import Counts, Pair, Traffic, flows
from netsched.simulate.units import Curve


@dataclass(frozen=True, slots=True)
class Loads:
    """Per-node figures at one moment, aligned with the scenario's node order."""

    network: FloatArray  # busier direction / link speed
    cpu: FloatArray  # fraction of allocatable
    memory: FloatArray
    rx: FloatArray  # bytes/s
    tx: FloatArray

    def by_resource(self) -> dict[str, FloatArray]:
        return {"network": self.network, "cpu": self.cpu, "memory": self.memory}


@dataclass(frozen=True, slots=True)
class PodReading:
    """One pod's series as cAdvisor + Prometheus give them: cpu cores and rx / tx bytes/s
    averaged over the window (all its traffic, same-node included), memory bytes at the
    scrape (NaN: not running then, no series)."""

    cpu: float
    memory: float
    rx: float
    tx: float


@dataclass
class _Reading:
    """Everything one window reads, per node (bytes/s, cores, bytes) and per pair."""

    rx: FloatArray
    tx: FloatArray
    cpu: FloatArray
    memory: FloatArray
    pairs: list[tuple[str, float]] = field(default_factory=list)  # (pair series key, bytes/s)


class _Pairs:
    """Every pair the scenario ever has (its `traffic:` and the timeline's changes) as arrays
    over an index of their workloads, with their rates as steps in time."""

    def __init__(self, traffic: Traffic, changes: Iterable[tuple[float, TrafficChange]]) -> None:
        self.ends: list[tuple[str, str]] = [p.ends for p in traffic.pairs]
        rates = {p.ends: (p.request, p.response) for p in traffic.pairs}
        steps: list[tuple[float, dict[tuple[str, str], tuple[float, float]]]] = [(-math.inf, dict(rates))]
        for at, change in changes:
            for p in change.pairs:
                if p.ends not in self.ends:
                    self.ends.append(p.ends)
                rates[p.ends] = (p.request, p.response)
            steps.append((at, dict(rates)))
        self.workloads = list(dict.fromkeys(w for pair in self.ends for w in pair))
        index = {w: i for i, w in enumerate(self.workloads)}
        self.index = index
        self.a = np.array([index[a] for a, _ in self.ends], dtype=np.int64)
        self.b = np.array([index[b] for _, b in self.ends], dtype=np.int64)
        self.times = np.array([t for t, _ in steps])
        self.rates = np.array([[r.get(e, (0.0, 0.0)) for e in self.ends] for _, r in steps]).reshape(
            len(steps), len(self.ends), 2
        )

    def __bool__(self) -> bool:
        return bool(self.ends)

    def at(self, t: float) -> FloatArray:
        """(pairs, 2): request and response bytes/s at t."""
        out: FloatArray = self.rates[int(np.searchsorted(self.times, t, side="right")) - 1]
        return out

    def traffic(self, t: float, label: str) -> Traffic:
        rates = self.at(t)
        pairs = (Pair(a, b, float(r[0]), float(r[1])) for (a, b), r in zip(self.ends, rates, strict=True))
        return Traffic(tuple(p for p in pairs if p.rate > 0), label)


class LoadModel:
    def __init__(self, scenario: Scenario, *, window: float | None = None) -> None:
        """`window`: the rate window (seconds) of the configuration's metrics, used where a
        reading names none (timing.rateWindowSeconds overrides it)."""
        self.scenario = scenario
        self.names = scenario.node_names
        self.index = {n: i for i, n in enumerate(self.names)}
        infos = [parse_node(o) for o in scenario.nodes]
        self.alloc_cpu = np.array([float(n.allocatable.get(CPU, 0)) for n in infos])  # millicores
        self.alloc_mem = np.array([float(n.allocatable.get(MEMORY, 0)) for n in infos])
        self.link = np.array([scenario.link_speed.get(n, np.nan) for n in self.names])
        self.instance = [_instance(dict(n.addresses), n.name) for n in infos]
        self.window = scenario.timing.window(window)
        self.scrape = scenario.timing.scrape_interval
        self.history = PodHistory()
        self._background = self._tracks(scenario)
        timeline = scenario.timeline
        self._pairs = _Pairs(
            scenario.traffic, ((e.at, e.action) for e in timeline if isinstance(e.action, TrafficChange))
        )
        self._rules = [(e.at, e.action) for e in timeline if isinstance(e.action, PodLoadChange)]
        self._own: set[str] = set()  # pods whose load a change named them for (pods:, nodes:)
        self._handed: dict[str, list[PodLoad]] = {}  # workload -> loads of its pods evicted
        self._cache: dict[tuple[float, float], _Reading] = {}
        self.queries = 0
        for raw in scenario.existing_pods:
            pod = parse_pod(raw)
            self.place(pod, pod.node_name, -math.inf)

    def _tracks(self, s: Scenario) -> dict[str, list[Track]]:
        zero = Curve.constant(0.0)
        bg = [s.background.get(n) for n in self.names]
        out = {
            "network": [Track(b.network if b else zero) for b in bg],
            "cpu": [Track(b.cpu if b else zero) for b in bg],
            "memory": [Track(b.memory if b else zero) for b in bg],
        }
        for entry in s.timeline:
            if isinstance(entry.action, LoadChange):
                for node, metrics in entry.action.nodes.items():
                    for metric, curve in metrics.items():
                        out[metric][self.index[node]].change(entry.at, curve)
        return out

    # ------------------------------------------------------------ placements

    def place(self, pod: PodInfo, node: str, at: float) -> None:
        """The pod was bound to `node` at `at` (simulated seconds; -inf: running from the start)."""
        row = self.index.get(node)
        if row is None:
            return
        start = at + self.scenario.timing.pod_start_seconds
        workload = workload_key(pod, self.scenario.traffic.workload_label)
        rx, tx = pod_bandwidth(pod, 0.0)  # no annotation: the pod moves no measurable traffic
        cpu = float(pod.requests.get(CPU, 0)) / 1000 * self.scenario.usage.cpu_of_requests
        load = PodLoad(rx, tx, cpu, float(pod.requests.get(MEMORY, 0)))
        handed = self._handed.get(workload)
        if handed:  # it replaces an evicted pod: the work moves with it (hand_over)
            load = handed.pop(0)
            self._own.add(pod.key)
        rows = [(-math.inf, load)]
        for when, rule in self._rules:
            if rule.matches(pod.key, workload):
                if rule.pods:
                    self._own.add(pod.key)
                load = PodLoad(
                    load.rx if rule.rx is None else rule.rx,
                    load.tx if rule.tx is None else rule.tx,
                    load.cpu if rule.cpu is None else rule.cpu,
                    load.memory if rule.memory is None else rule.memory,
                )
                if when <= start:
                    rows[-1] = (-math.inf, load)
                else:
                    rows.append((when, load))
        self.history.add(pod.key, row, at, start, self._pairs.index.get(workload, -1), rows)
        self._forget_from(start)

    def on_nodes(self, change: PodLoadChange, at: float) -> list[str]:
        """A `nodes:` load change as it starts at `at`: the first `per_node` pods (by name)
        bound to each of its nodes and not gone then carry its load from `at` on; their keys."""
        h = self.history
        live = h.live(at) if len(h) else np.zeros(0, dtype=bool)
        chosen: list[str] = []
        for node in change.nodes:
            row = self.index[node]
            here = sorted(k for i, k in enumerate(h.keys) if live[i] and int(h.a().node[i]) == row)
            chosen += here[: change.per_node]
        for key in chosen:
            old = h.load_of(key, at)
            h.change(
                key,
                at,
                PodLoad(
                    old.rx if change.rx is None else change.rx,
                    old.tx if change.tx is None else change.tx,
                    old.cpu if change.cpu is None else change.cpu,
                    old.memory if change.memory is None else change.memory,
                ),
            )
            self._own.add(key)
        self._forget_from(at)
        return chosen

    def hand_over(self, pod: PodInfo, at: float) -> None:
        """`pod` was evicted or preempted (not deleted by a rollout): when a change named it
        (pods:, nodes:), the next pod of its workload placed carries its load at `at` (a
        shard, a tenant's traffic: the work moves with the pod, it does not vanish)."""
        if pod.key in self._own and pod.key in self.history.index:
            workload = workload_key(pod, self.scenario.traffic.workload_label)
            self._handed.setdefault(workload, []).append(self.history.load_of(pod.key, at))

    def remove(self, key: str, at: float) -> None:
        """The pod is gone from `at` on (deleted, evicted, preempted)."""
        if self.history.end(key, at):
            self._forget_from(at)

    def _forget_from(self, t: float) -> None:
        # Readings of windows ending before t cannot see the change.
        self._cache = {k: v for k, v in self._cache.items() if k[0] < t}

    def last_change(self) -> float:
        """The last time the true state changes (pods, timeline changes; -inf: never)."""
        times = [self.history.changes(), *(e.at for e in self.scenario.timeline)]
        for e in self.scenario.timeline:  # a load change's series goes on after its `at`
            if isinstance(e.action, LoadChange):
                times += [c.points[-1][0] for m in e.action.nodes.values() for c in m.values()]
        return max(times)

    # ------------------------------------------------------------ load at time t

    def background(self, t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        """(network bytes/s each way, cpu, memory fractions) per node at t."""
        bg = self._background
        return (
            np.array([tr.at(t) for tr in bg["network"]]),
            np.array([tr.at(t) for tr in bg["cpu"]]),
            np.array([tr.at(t) for tr in bg["memory"]]),
        )

    def loads(self, t: float, *, measured: bool = False) -> Loads:
        """Settled true load at t: background at t plus every pod bound by then and not gone,
        in full (as if started); or, `measured`, what a Prometheus query at t reads."""
        if measured:
            r = self.reading(self.window_at(t))
            return self._loads(r.rx, r.tx, r.cpu, r.memory)
        n = len(self.names)
        net, cpu, mem = self.background(t)
        rx, tx, cpu_m, mem_b = net.copy(), net.copy(), cpu * self.alloc_cpu, mem * self.alloc_mem
        live = self.history.live(t)
        if live.any():
            a = self.history.a()
            node, load = a.node[live], self.history.load_at(t)[live]
            rx += _by(node, load[:, 0], n)
            tx += _by(node, load[:, 1], n)
            cpu_m += _by(node, load[:, 2], n) * 1000
            mem_b += _by(node, load[:, 3], n)
            if self._pairs:
                f_rx, f_tx, _ = self._flows(live, self._pairs.at(t))
                rx += f_rx
                tx += f_tx
        return self._loads(rx, tx, cpu_m, mem_b)

    def _loads(self, rx: FloatArray, tx: FloatArray, cpu_m: FloatArray, mem_b: FloatArray) -> Loads:
        return Loads(
            network=_ratio(np.fmax(rx, tx), self.link),
            cpu=_ratio(cpu_m, self.alloc_cpu),
            memory=_ratio(mem_b, self.alloc_mem),
            rx=rx,
            tx=tx,
        )

    def window_at(self, t: float, length: float | None = None) -> Window:
        return Window.at(t, self.scrape, self.window if length is None else length)

    def reading(self, w: Window) -> _Reading:
        """What every rate() over `w` and every gauge at its end read (cached per window)."""
        got = self._cache.get((w.end, w.length))
        if got is None:
            got = self._cache[(w.end, w.length)] = self._read(w)
        return got

    def _read(self, w: Window) -> _Reading:
        n = len(self.names)
        bg = self._background
        net = np.array([tr.mean(w) for tr in bg["network"]])
        rx, tx = net.copy(), net.copy()
        cpu = np.array([tr.mean(w) for tr in bg["cpu"]]) * self.alloc_cpu
        mem = np.array([tr.at(w.end) for tr in bg["memory"]]) * self.alloc_mem
        out = _Reading(rx, tx, cpu, mem)
        if not len(self.history):
            return out
        a = self.history.a()
        pod, lo, hi, load = self.history.rows_in_effect()
        node = a.node[pod]
        share = w.share(lo, hi)
        rx += _by(node, load[:, 0] * share, n)
        tx += _by(node, load[:, 1] * share, n)
        cpu += _by(node, load[:, 2] * share, n) * 1000
        mem += _by(node, load[:, 3] * w.holds(lo, hi), n)
        if self._pairs:
            sent = np.zeros((len(self._pairs.ends), 2))
            for u, weight in w.pieces(self._cuts()):
                rates = self._pairs.at(u)
                f_rx, f_tx, active = self._flows(self.history.running(u), rates)
                rx += weight * f_rx
                tx += weight * f_tx
                sent += weight * active[:, None] * rates
            for (a_, b_), (req, resp) in zip(self._pairs.ends, sent.tolist(), strict=True):
                if req > 0:
                    out.pairs.append((pair_key(a_, b_, REQUEST), req))
                if resp > 0:
                    out.pairs.append((pair_key(a_, b_, RESPONSE), resp))
        return out

    def _cuts(self) -> FloatArray:
        return np.concatenate((self.history.cuts(), self._pairs.times[1:]))

    def _matrix(self, pods: np.ndarray) -> FloatArray:
        """Pods per pair workload per node, of the pods selected by the mask `pods`."""
        a = self.history.a()
        sel = pods & (a.group >= 0)
        m = np.zeros((len(self._pairs.workloads), len(self.names)))
        np.add.at(m, (a.group[sel], a.node[sel]), 1.0)
        return m

    def _flows(self, pods: np.ndarray, rates: FloatArray) -> tuple[FloatArray, FloatArray, np.ndarray]:
        m = self._matrix(pods)
        return flows(m[self._pairs.a], m[self._pairs.b], rates[:, 0], rates[:, 1])

    def counts(self, t: float = math.inf) -> Counts:
        """Pods bound by t and not gone, per pair workload per node (default: at the end)."""
        m = self._matrix(self.history.live(t))
        return Counts({w: m[i] for i, w in enumerate(self._pairs.workloads)})

    def traffic(self, t: float) -> Traffic:
        """The pairs with their rates at t (timeline changes applied)."""
        return self._pairs.traffic(t, self.scenario.traffic.workload_label)

    def pairs(self, t: float, length: float | None = None) -> list[tuple[str, float]]:
        """The mesh's series a query at t reads: (pair key with direction, bytes/s)."""
        return self.reading(self.window_at(t, length)).pairs

    def series(self, metric: str, t: float, length: float | None = None) -> FloatArray:
        """A built-in metric's value per node at t, as Prometheus would return it (NaN: no series)."""
        if metric == LINK_SPEED:
            return self.link
        r = self.reading(self.window_at(t, length))
        values: dict[str, Callable[[], FloatArray]] = {
            NETWORK_RX: lambda: r.rx,
            NETWORK_TX: lambda: r.tx,
            CPU_METRIC: lambda: _ratio(r.cpu, self.alloc_cpu),
            MEMORY_METRIC: lambda: _ratio(r.memory, self.alloc_mem),
        }
        return values[metric]()

    # ------------------------------------------------------------ per pod (cAdvisor)

    def pod_readings(self, t: float, length: float | None = None) -> dict[str, PodReading]:
        """Per pod "namespace/name" that ran within the window a query at t reads: its windowed
        cpu (cores), rx and tx (bytes/s: its annotations' or podLoad's traffic plus its share
        of the pairs' flows, same-node peers included, as pod-level counters count them) and
        memory at the scrape (NaN when it no longer runs)."""
        w = self.window_at(t, length)
        h = self.history
        if not len(h):
            return {}
        a = h.a()
        pod, lo, hi, load = h.rows_in_effect()
        share = w.share(lo, hi)
        k = len(h)
        cpu = _by(pod, load[:, 2] * share, k)
        rx = _by(pod, load[:, 0] * share, k)
        tx = _by(pod, load[:, 1] * share, k)
        mem = _by(pod, load[:, 3] * w.holds(lo, hi), k)
        seen = _by(pod, share, k) > 0
        running = w.holds(a.start, a.end)
        if self._pairs:
            group = a.group
            for u, weight in w.pieces(self._cuts()):
                on = h.running(u) & (group >= 0)
                per_rx, per_tx = self._per_pod_flows(self._matrix(on), self._pairs.at(u))
                rx[on] += weight * per_rx[group[on]]
                tx[on] += weight * per_tx[group[on]]
        mem = np.where(running, mem, np.nan)
        return {
            h.keys[i]: PodReading(float(cpu[i]), float(mem[i]), float(rx[i]), float(tx[i]))
            for i in np.flatnonzero(seen | running)
        }

    def _per_pod_flows(self, m: FloatArray, rates: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per pair workload, what each of its running pods receives and sends (bytes/s)."""
        p = self._pairs
        na, nb = m[p.a].sum(axis=1), m[p.b].sum(axis=1)
        active = (na > 0) & (nb > 0)
        req, resp = np.where(active, rates[:, 0], 0.0), np.where(active, rates[:, 1], 0.0)
        na, nb = np.where(active, na, 1.0), np.where(active, nb, 1.0)
        k = len(p.workloads)
        send: FloatArray = _by(p.a, req / na, k) + _by(p.b, resp / nb, k)
        receive: FloatArray = _by(p.a, resp / na, k) + _by(p.b, req / nb, k)
        return receive, send


def _by(index: IntArray, weights: FloatArray, n: int) -> FloatArray:
    """The weights summed per index value 0..n-1 (bincount, typed)."""
    out: FloatArray = np.bincount(index, weights, n).astype(np.float64, copy=False)
    return out


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    out = np.full(len(num), np.nan)
    np.divide(num, den, out=out, where=np.isfinite(den) & (den > 0))
    return out


def _instance(addresses: dict[str, str], name: str) -> str:
    return f"{addresses.get('InternalIP') or name}:9100"


# PromQL -> (built-in metric name, the querying source's rate window in seconds)
QueryIndex = Callable[[str], "tuple[str, float] | None"]


class SimulatedPrometheus:
    """A QueryClient answering the hub's PromQL from the load model at the current simulated time."""

    def __init__(
        self,
        model: LoadModel,
        conn: ConnectionKey,
        clock: Clock,
        now: Callable[[], float],
        metric_of: QueryIndex,
    ) -> None:
        self.model = model
        self.conn = conn
        self.clock = clock
        self.now = now  # simulated seconds
        self.metric_of = metric_of

    def query(self, promql: str, timeout: float) -> Any:
        self.model.queries += 1
        t = self.now()
        if self.model.scenario.prometheus_down(t):
            raise QueryError("unreachable", "simulated Prometheus outage", transient=True)
        found = self.metric_of(promql)
        if found is None:
            return []  # a custom plugin's query: the simulation has no data for it
        metric, window = found
        length = self.model.scenario.timing.window(window)
        wall = self.clock.wall()
        if metric == TRAFFIC_PAIRS:
            return [
                {"metric": {PAIR_LABEL: key}, "value": [wall, repr(float(rate))]}
                for key, rate in self.model.pairs(t, length)
            ]
        if metric == POD_USAGE:
            return [
                {"metric": {POD_LABEL: f"{key}/{kind}"}, "value": [wall, repr(value)]}
                for key, r in self.model.pod_readings(t, length).items()
                for kind, value in (
                    (POD_CPU, r.cpu),
                    (POD_MEMORY, r.memory),
                    (POD_NETWORK_RX, r.rx),
                    (POD_NETWORK_TX, r.tx),
                )
                if value == value  # NaN: the pod's gauge has no series
            ]
        values = self.model.series(metric, t, length)
        mapping = self.conn.node_mapping
        by_instance = mapping.by == BY_INSTANCE
        out = []
        for i, v in enumerate(values.tolist()):
            if v != v:  # NaN: the node has no such series
                continue
            labels = (
                {"instance": self.model.instance[i]} if by_instance else {mapping.label: self.model.names[i]}
            )
            out.append({"metric": labels, "value": [wall, repr(float(v))]})
        return out

    def close(self) -> None:
        return None


def promql_index(hub: MetricsHub) -> QueryIndex:
    """PromQL -> (built-in metric name, rate window of the source that asked), from what the
    hub's sources asked for (rebuilt on a miss)."""
    known: dict[str, tuple[str, float]] = {}

    def lookup(promql: str) -> tuple[str, float] | None:
        if promql not in known:
            for src in hub.sources:
                window = duration_seconds(src.args.rate_window)
                for metric in (*BUILTIN_METRICS, TRAFFIC_PAIRS, POD_USAGE):
                    try:
                        known[src.query(metric)] = (metric, window)
                    except KeyError:
                        continue
        return known.get(promql)

    return lookup


def configured_window(hub: MetricsHub) -> float | None:
    """The rate window (seconds) of the configuration's first metrics source (None: no metrics
    plugins): what readings the model makes outside a query use."""
    return next((duration_seconds(src.args.rate_window) for src in hub.sources), None)
