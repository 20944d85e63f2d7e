"""The simulated cluster's true load, and the Prometheus that reports it.

Each node's true utilisation is its background (scenario `metrics:`) plus
the load of the pods on it: network from the pods' bandwidth annotations
(ingress adds to received, egress to transmitted bytes), CPU and memory as
requests over allocatable, plus the flows between workloads (the scenario's
`traffic:`, traffic.py) that cross the node's NIC under the current
placement.  The scheduler never reads this directly: a
`SimulatedPrometheus` answers the metrics pipeline's PromQL with it, at the
moment of each poll, as node_exporter + Prometheus would:

- a pod's load appears `podStartSeconds` after it is bound, and network and
  CPU (rate() over counters) ramp up linearly over `rateWindowSeconds`;
  memory (a gauge) appears at once;
- series carry the label the plugins' nodeMapping expects (`node=<name>` by
  default; `instance=<InternalIP>:9100` in instance mode);
- the traffic graph's query is answered with one series per workload pair
  whose two workloads both have running pods;
- during an outage every query raises QueryError("unreachable"), as a
  connection refused would.

Network utilisation is the busier direction over the link speed, the
definition NetworkTraffic and LoadThreshold use (links are full duplex).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsched.clock import Clock
from netsched.framework.parse import parse_node, parse_pod
from netsched.framework.quantity import CPU, MEMORY
from netsched.framework.snapshot import FloatArray
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
from netsched.metrics.args import BY_INSTANCE, ConnectionKey
from netsched.metrics.traffic import PAIR_LABEL, TRAFFIC_PAIRS, pair_key
from netsched.simulate.scenario import Scenario
from netsched.simulate.traffic import Counts, Pair, counts, measured_pairs, nic_load


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


class LoadModel:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.names = scenario.node_names
        self.index = {n: i for i, n in enumerate(self.names)}
        infos = [parse_node(o) for o in scenario.nodes]
        self.alloc_cpu = np.array([float(n.allocatable.get(CPU, 0)) for n in infos])
        self.alloc_mem = np.array([float(n.allocatable.get(MEMORY, 0)) for n in infos])
        self.link = np.array([scenario.link_speed.get(n, np.nan) for n in self.names])
        self.instance = [_instance(dict(n.addresses), n.name) for n in infos]
        # Pods on nodes: row, bound at (simulated s), rx, tx (bytes/s), cpu (m), memory (bytes).
        self._rows: list[int] = []
        self._at: list[float] = []
        self._load: list[tuple[float, float, float, float]] = []
        self._workloads: list[str] = []  # workload key of each placed pod ("" without traffic)
        for raw in scenario.existing_pods:
            pod = parse_pod(raw)
            self.place(pod, pod.node_name, float("-inf"))
        self.queries = 0

    # ------------------------------------------------------------ placements

    def place(self, pod: PodInfo, node: str, at: float) -> None:
        row = self.index.get(node)
        if row is None:
            return
        rx, tx = pod_bandwidth(pod, 0.0)  # no annotation: the pod moves no measurable traffic
        self._rows.append(row)
        self._at.append(at)
        traffic = self.scenario.traffic
        self._workloads.append(workload_key(pod, traffic.workload_label) if traffic else "")
        self._load.append((rx, tx, float(pod.requests.get(CPU, 0)), float(pod.requests.get(MEMORY, 0))))

    def pod_load(self) -> tuple[int, FloatArray]:
        """(how many placed, their [rx, tx, cpu, memory] rows)."""
        return len(self._rows), np.array(self._load).reshape(-1, 4)

    # ------------------------------------------------------------ load at time t

    def background(self, t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        bg = [self.scenario.background.get(n) for n in self.names]
        net = np.array([b.network.at(t) if b else 0.0 for b in bg])
        cpu = np.array([b.cpu.at(t) if b else 0.0 for b in bg])
        mem = np.array([b.memory.at(t) if b else 0.0 for b in bg])
        return net, cpu, mem

    def loads(self, t: float, *, measured: bool = False) -> Loads:
        """True load at t (every bound pod in full), or what metrics show at t (`measured`)."""
        n = len(self.names)
        net, cpu, mem = self.background(t)
        rx, tx = net.copy(), net.copy()
        cpu_m = cpu * self.alloc_cpu
        mem_b = mem * self.alloc_mem
        if self._rows:
            rows = np.array(self._rows)
            load = np.array(self._load)
            ramp = mem_on = np.ones(len(rows))
            if measured:
                since = t - np.array(self._at) - self.scenario.timing.pod_start_seconds
                window = self.scenario.timing.rate_window_seconds
                mem_on = (since >= 0).astype(np.float64)
                ramp = np.clip(since / window, 0.0, 1.0) if window > 0 else mem_on
            rx += np.bincount(rows, load[:, 0] * ramp, n)
            tx += np.bincount(rows, load[:, 1] * ramp, n)
            if self.scenario.traffic:
                flows = nic_load(self.scenario.traffic, self.counts(ramp), n)
                rx += flows
                tx += flows
            cpu_m += np.bincount(rows, load[:, 2] * ramp, n)
            mem_b += np.bincount(rows, load[:, 3] * mem_on, n)
        return Loads(
            network=_ratio(np.fmax(rx, tx), self.link),
            cpu=_ratio(cpu_m, self.alloc_cpu),
            memory=_ratio(mem_b, self.alloc_mem),
            rx=rx,
            tx=tx,
        )

    def counts(self, weights: FloatArray | None = None) -> Counts:
        """Placed pods per workload per node; `weights` per placed pod (default 1: all running)."""
        w = np.ones(len(self._rows)) if weights is None else np.broadcast_to(weights, (len(self._rows),))
        return counts(self._workloads, self._rows, np.asarray(w, dtype=np.float64), len(self.names))

    def pairs(self, t: float) -> list[tuple[Pair, float]]:
        """The workload pairs the mesh reports at t: both workloads have a running pod."""
        if not self.scenario.traffic or not self._rows:
            return []
        since = t - np.array(self._at) - self.scenario.timing.pod_start_seconds
        return measured_pairs(
            self.scenario.traffic, self.counts((since >= 0).astype(np.float64)), len(self.names)
        )

    def series(self, metric: str, t: float) -> FloatArray:
        """A built-in metric's value per node at t, as Prometheus would return it (NaN: no series)."""
        if metric == LINK_SPEED:
            return self.link
        m = self.loads(t, measured=True)
        values: dict[str, FloatArray] = {
            NETWORK_RX: m.rx,
            NETWORK_TX: m.tx,
            CPU_METRIC: m.cpu,
            MEMORY_METRIC: m.memory,
        }
        return values[metric]


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    out = np.full(len(num), np.nan)
    np.divide(num, den, out=out, where=np.isfinite(den) & (den > 0))
    return out


def _instance(addresses: dict[str, str], name: str) -> str:
    return f"{addresses.get('InternalIP') or name}:9100"


class SimulatedPrometheus:
    """A QueryClient answering the hub's PromQL from the load model at the current simulated time."""

    def __init__(
        self,
        model: LoadModel,
        conn: ConnectionKey,
        clock: Clock,
        now: Callable[[], float],
        metric_of: Callable[[str], str | None],
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
        metric = self.metric_of(promql)
        if metric is None:
            return []  # a custom plugin's query: the simulation has no data for it
        if metric == TRAFFIC_PAIRS:
            return self._pairs(t)
        values = self.model.series(metric, t)
        mapping = self.conn.node_mapping
        by_instance = mapping.by == BY_INSTANCE
        wall = self.clock.wall()
        out = []
        for i, v in enumerate(values.tolist()):
            if v != v:  # NaN: the node has no such series
                continue
            labels = (
                {"instance": self.model.instance[i]} if by_instance else {mapping.label: self.model.names[i]}
            )
            out.append({"metric": labels, "value": [wall, repr(float(v))]})
        return out

    def _pairs(self, t: float) -> list[dict[str, Any]]:
        wall = self.clock.wall()
        out = []
        for pair, rate in self.model.pairs(t):
            out.append({"metric": {PAIR_LABEL: pair_key(pair.a, pair.b)}, "value": [wall, repr(float(rate))]})
        return out

    def close(self) -> None:
        return None


def promql_index(hub: MetricsHub) -> Callable[[str], str | None]:
    """PromQL -> built-in metric name, from what the hub's sources asked for (rebuilt on a miss)."""
    known: dict[str, str] = {}

    def lookup(promql: str) -> str | None:
        if promql not in known:
            for src in hub.sources:
                for metric in (*BUILTIN_METRICS, TRAFFIC_PAIRS):
                    try:
                        known[src.query(metric)] = metric
                    except KeyError:
                        continue
        return known.get(promql)

    return lookup
