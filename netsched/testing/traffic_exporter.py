"""The synthetic node_exporter plus a service mesh and cAdvisor: load that follows the pods.

    exporter = PairTrafficExporter(fake_nodes(4))
    exporter.set_pairs({("default/web", "default/db"): 40e6}, placement)
    # or, with CPU that follows the requests and per-pod series:
    exporter.follow(running_pods, cpu_of_requests=0.8, per_pod=True)
    exporter.set_pairs({("default/web", "default/db"): (0.0, 40e6)})   # (request, response) bytes/s

`placement()` says which nodes each workload's pods are on; `running_pods()` lists the
pods running now (RunningPod: key, workload, node, cpu cores requested, memory, and traffic
of its own to and from outside the cluster), both read at
every scrape (a test reads them from its fake API server), so the load a scrape shows is
the one the scheduler's own placements make.

Pairs.  A pair (source, destination) has a request rate (bytes/s from the source's pods to
the destination's) and a response rate (back); a single number is split as Istio's
counters split it (ISTIO_SHARES: request bytes and the TCP bytes the server received flow
to the destination, 45 %; response and the TCP bytes the server sent flow back, 55 %).
While both workloads have pods, a pair's Istio counters grow at its rates, reported by the
source and duplicated by the destination's proxy as Istio does (`reporter="destination"`,
same counts), so a query that counts both reporters reads twice the rate.  Each direction's
rate is spread evenly over the pod pairs (as a mesh's load balancing spreads requests);
a flow between pods on two nodes adds to the sender's node's eth0 transmit and the
receiver's receive, a flow on one node to neither.

CPU (with `follow`): a node's utilisation is its background (set_load) plus
`cpu_of_requests` x the CPU its running pods request, over its cpus.  Per-pod series
(`per_pod`): cAdvisor's container_cpu_usage_seconds_total and container_network_
{receive,transmit}_bytes_total per pod (all of its flows, same-node ones included, as a
pod's network namespace counts them) and container_memory_working_set_bytes, so a
scheduler can take a leaving pod's measured share out of its node's readings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from netsched.fakemetrics.exporter import FakeNode, SyntheticExporter, _Counter

# How a pair's bytes/s spread over Istio's byte counters (they add up to the pair's rate), and
# which way each flows (request: source to destination; response: back).
ISTIO_SHARES = {
    "istio_tcp_sent_bytes_total": 0.4,
    "istio_tcp_received_bytes_total": 0.2,
    "istio_request_bytes_sum": 0.25,
    "istio_response_bytes_sum": 0.15,
}
_REQUEST_METRICS = ("istio_tcp_received_bytes_total", "istio_request_bytes_sum")
REQUEST_SHARE = sum(ISTIO_SHARES[m] for m in _REQUEST_METRICS)

Placement = Callable[[], Mapping[str, list[str]]]
# A pair's rate: bytes/s both ways together (split by ISTIO_SHARES), or (request, response).
Rate = float | tuple[float, float]


@dataclass(frozen=True, slots=True)
class RunningPod:
    key: str  # "namespace/name"
    workload: str  # "namespace/workload", as the mesh names it
    node: str
    cpu: float = 0.0  # cores requested
    memory: float = 0.0  # bytes requested (its working set, for the per-pod series)
    # bytes/s it moves besides its pairs' flows, to and from outside the cluster: they cross its
    # node's link whatever the placement
    rx: float = 0.0
    tx: float = 0.0


def _split(rate: Rate) -> tuple[float, float]:
    if isinstance(rate, tuple):
        return rate
    return rate * REQUEST_SHARE, rate * (1.0 - REQUEST_SHARE)


class PairTrafficExporter(SyntheticExporter):
    def __init__(self, nodes: Iterable[FakeNode], **kw: Any) -> None:
        self._pairs: dict[tuple[str, str], tuple[float, float]] = {}  # -> (request, response)
        self._pair_counters: dict[tuple[str, str, str], _Counter] = {}  # (a, b, metric)
        self._pods: Callable[[], list[RunningPod]] = list
        self._changed_at: Callable[[], float] | None = None  # when the running pods last changed
        self._cpu_of_requests: float | None = None  # None: CPU does not follow the pods
        self._per_pod = False
        self._pod_counters: dict[tuple[str, str], _Counter] = {}  # (pod key, series)
        self._pod_memory: dict[str, float] = {}
        self._base: dict[str, tuple[float, float, float]] = {}  # node -> (rx, tx, cpu) set by the test
        super().__init__(nodes, **kw)

    def set_pairs(self, pairs: Mapping[tuple[str, str], Rate], placement: Placement | None = None) -> None:
        """The pairs' rates; `placement` (workload -> nodes of its pods) when `follow` is not used."""
        with self._lock:
            self._pairs = {k: _split(v) for k, v in pairs.items()}
            if placement is not None:
                self._pods = _from_placement(placement)

    def follow(
        self,
        pods: Callable[[], list[RunningPod]],
        *,
        cpu_of_requests: float | None = None,
        per_pod: bool = False,
        changed_at: Callable[[], float] | None = None,
    ) -> None:
        """Read the running pods at every scrape; `cpu_of_requests`: the share of its CPU request
        a pod uses (None: CPU does not follow the pods); `per_pod`: export cAdvisor's series;
        `changed_at`: when the running pods last changed (a pod started or left), so that the
        counters change their rate then, not at the scrape that first sees it (None: at the
        scrape), as a real node's counters do between two scrapes."""
        with self._lock:
            self._pods = pods
            self._cpu_of_requests = cpu_of_requests
            self._per_pod = per_pod
            self._changed_at = changed_at

    def set_load(
        self,
        name: str,
        *,
        rx: float | None = None,
        tx: float | None = None,
        cpu: float | None = None,
        **kw: Any,
    ) -> None:
        with self._lock:
            old_rx, old_tx, old_cpu = self._background(name)
            self._base[name] = (
                old_rx if rx is None else rx,
                old_tx if tx is None else tx,
                old_cpu if cpu is None else cpu,
            )
        super().set_load(name, rx=rx, tx=tx, cpu=cpu, **kw)

    def _background(self, name: str) -> tuple[float, float, float]:
        """The node's eth0 rates and CPU without the pods (lock held)."""
        got = self._base.get(name)
        if got is None:
            c = self.nodes[name].counters
            got = self._base[name] = (c[("rx", "eth0")].rate, c[("tx", "eth0")].rate, c[("user", "0")].rate)
        return got

    def render(self) -> str:
        now = self._clock()
        pods = self._pods()  # outside the lock: it may call the API server
        since = self._changed_at() if self._changed_at is not None else None
        with self._lock:
            self._follow(pods, now, since)
            extra = self._render_pairs(now) + self._render_pods(now)
        return super().render() + extra

    # ------------------------------------------------------------ the load the pods make

    def _follow(self, pods: list[RunningPod], now: float, since: float | None = None) -> None:
        by_workload: dict[str, list[RunningPod]] = {}
        for p in pods:
            by_workload.setdefault(p.workload, []).append(p)
        rx: dict[str, float] = {}
        tx: dict[str, float] = {}
        pod_rx: dict[str, float] = {}
        pod_tx: dict[str, float] = {}
        for (a, b), (request, response) in self._pairs.items():
            pa, pb = by_workload.get(a, []), by_workload.get(b, [])
            live = bool(pa and pb)
            for metric in ISTIO_SHARES:
                counter = self._pair_counters.setdefault((a, b, metric), _Counter(0.0, now))
                rate = (request if metric in _REQUEST_METRICS else response) / REQUEST_SHARE_OF[metric]
                counter.set_rate(rate * ISTIO_SHARES[metric] if live else 0.0, now, since)
            if not live:
                continue
            each = 1.0 / (len(pa) * len(pb))
            for x in pa:
                for y in pb:
                    for src, dst, r in ((x, y, request * each), (y, x, response * each)):
                        pod_tx[src.key] = pod_tx.get(src.key, 0.0) + r
                        pod_rx[dst.key] = pod_rx.get(dst.key, 0.0) + r
                        if src.node != dst.node:
                            tx[src.node] = tx.get(src.node, 0.0) + r
                            rx[dst.node] = rx.get(dst.node, 0.0) + r
        requested: dict[str, float] = {}
        for p in pods:
            requested[p.node] = requested.get(p.node, 0.0) + p.cpu
            if p.rx or p.tx:
                rx[p.node] = rx.get(p.node, 0.0) + p.rx
                tx[p.node] = tx.get(p.node, 0.0) + p.tx
                pod_rx[p.key] = pod_rx.get(p.key, 0.0) + p.rx
                pod_tx[p.key] = pod_tx.get(p.key, 0.0) + p.tx
        for name, n in self.nodes.items():
            base_rx, base_tx, base_cpu = self._background(name)
            n.counters[("rx", "eth0")].set_rate(base_rx + rx.get(name, 0.0), now, since)
            n.counters[("tx", "eth0")].set_rate(base_tx + tx.get(name, 0.0), now, since)
            if self._cpu_of_requests is not None:
                cpu = min(base_cpu + self._cpu_of_requests * requested.get(name, 0.0) / n.cpus, 1.0)
                for c in range(n.cpus):
                    n.counters[("idle", str(c))].set_rate(1.0 - cpu, now, since)
                    n.counters[("user", str(c))].set_rate(cpu, now, since)
        if self._per_pod:
            share = self._cpu_of_requests if self._cpu_of_requests is not None else 1.0
            running = {p.key for p in pods}
            for key in [k for k in self._pod_counters if k[0] not in running]:
                del self._pod_counters[key]  # a pod gone: its series stop (Prometheus marks them stale)
            self._pod_memory = {p.key: p.memory for p in pods}
            for p in pods:
                for series, rate in (
                    ("cpu", share * p.cpu),
                    ("rx", pod_rx.get(p.key, 0.0)),
                    ("tx", pod_tx.get(p.key, 0.0)),
                ):
                    start = now if since is None else min(since, now)  # a new pod's series: from then
                    self._pod_counters.setdefault((p.key, series), _Counter(0.0, start)).set_rate(
                        rate, now, since
                    )

    def _render_pairs(self, now: float) -> str:
        if not self._pair_counters:
            return ""
        ts = self.stamp(now)
        out = []
        for metric in ISTIO_SHARES:
            out.append(f"# TYPE {metric} counter")
            for (a, b, m), counter in self._pair_counters.items():
                if m != metric:
                    continue
                (sns, _, sw), (dns, _, dw) = a.partition("/"), b.partition("/")
                pair = (
                    f'source_workload="{sw}",source_workload_namespace="{sns}",'
                    f'destination_workload="{dw}",destination_workload_namespace="{dns}"'
                )
                for reporter in ("source", "destination"):
                    out.append(f'{metric}{{reporter="{reporter}",{pair}}} {counter.value(now):.3f}{ts}')
        return "\n".join(out) + "\n"

    def _render_pods(self, now: float) -> str:
        if not self._per_pod or not self._pod_counters:
            return ""
        ts = self.stamp(now)
        names = {
            "cpu": ("container_cpu_usage_seconds_total", 'container="app"'),
            "rx": ("container_network_receive_bytes_total", 'interface="eth0"'),
            "tx": ("container_network_transmit_bytes_total", 'interface="eth0"'),
        }
        out = []
        for series, (metric, extra) in names.items():
            out.append(f"# TYPE {metric} counter")
            for (key, s), counter in self._pod_counters.items():
                if s == series:
                    ns, _, pod = key.partition("/")
                    out.append(
                        f'{metric}{{namespace="{ns}",pod="{pod}",{extra}}} {counter.value(now):.6f}{ts}'
                    )
        out.append("# TYPE container_memory_working_set_bytes gauge")
        for key, memory in self._pod_memory.items():
            ns, _, pod = key.partition("/")
            out.append(
                f'container_memory_working_set_bytes{{namespace="{ns}",pod="{pod}",container="app"}} {memory:.0f}'
            )
        return "\n".join(out) + "\n"


# Each counter's share of its own direction's bytes (request metrics of the request rate...).
REQUEST_SHARE_OF = {
    m: (REQUEST_SHARE if m in _REQUEST_METRICS else 1.0 - REQUEST_SHARE) for m in ISTIO_SHARES
}


def _from_placement(placement: Placement) -> Callable[[], list[RunningPod]]:
    """Running pods from a workload -> nodes placement (no requests: CPU does not follow)."""

    def pods() -> list[RunningPod]:
        out = []
        for workload, nodes in placement().items():
            for i, node in enumerate(nodes):
                out.append(RunningPod(f"{workload}-{i}", workload, node))
        return out

    return pods
