"""The synthetic node_exporter plus a service mesh: pair traffic that follows where the pods are.

    exporter = PairTrafficExporter(fake_nodes(4))
    exporter.set_pairs({("default/web", "default/db"): 40e6}, placement)

`placement()` says which nodes each workload's pods are on (a test reads it
from its fake API server).  At every scrape, a pair's Istio counters grow
at its rate while both workloads have pods: the rate is split over TCP sent and
received bytes and HTTP request and response bytes (ISTIO_SHARES), each
reported by the source and duplicated by the destination's proxy as Istio does
(`reporter="destination"`, same counts), so a query that counts both reporters
reads twice the rate and one that drops HTTP reads less.  The part of its flows that
crosses nodes (pods of the two workloads on different nodes; the rate spread
evenly over the pod pairs) adds to both nodes' eth0 counters, half each way.
So a placement changes the link load and the pair series the next scrape shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from netsched.fakemetrics.exporter import FakeNode, SyntheticExporter, _Counter

Placement = Callable[[], Mapping[str, list[str]]]
# How a pair's bytes/s spread over Istio's byte counters (they add up to the pair's rate).
ISTIO_SHARES = {
    "istio_tcp_sent_bytes_total": 0.4,
    "istio_tcp_received_bytes_total": 0.2,
    "istio_request_bytes_sum": 0.25,
    "istio_response_bytes_sum": 0.15,
}


class PairTrafficExporter(SyntheticExporter):
    def __init__(self, nodes: Iterable[FakeNode], **kw: Any) -> None:
        self._pairs: dict[tuple[str, str], float] = {}  # ("ns/src", "ns/dst") -> bytes/s
        self._pair_counters: dict[tuple[str, str], _Counter] = {}
        self._placement: Placement = dict
        self._base: dict[str, tuple[float, float]] = {}  # node -> eth0 (rx, tx) set by the test
        super().__init__(nodes, **kw)

    def set_pairs(self, pairs: Mapping[tuple[str, str], float], placement: Placement) -> None:
        with self._lock:
            self._pairs = dict(pairs)
            self._placement = placement

    def set_load(self, name: str, *, rx: float | None = None, tx: float | None = None, **kw: Any) -> None:
        with self._lock:
            old_rx, old_tx = self._eth0(name)
            self._base[name] = (old_rx if rx is None else rx, old_tx if tx is None else tx)
        super().set_load(name, rx=rx, tx=tx, **kw)

    def _eth0(self, name: str) -> tuple[float, float]:
        """The node's eth0 rates without the pairs' flows (lock held)."""
        got = self._base.get(name)
        if got is None:
            c = self.nodes[name].counters
            got = self._base[name] = (c[("rx", "eth0")].rate, c[("tx", "eth0")].rate)
        return got

    def render(self) -> str:
        now = self._clock()
        with self._lock:
            self._follow_pods(now)
            pairs = self._render_pairs(now)
        return super().render() + pairs

    def _follow_pods(self, now: float) -> None:
        where = self._placement()
        extra: dict[str, float] = {}
        for (a, b), rate in self._pairs.items():
            na, nb = where.get(a, []), where.get(b, [])
            counter = self._pair_counters.setdefault((a, b), _Counter(0.0, now))
            counter.set_rate(rate if na and nb else 0.0, now)
            if not na or not nb:
                continue
            for x in set(na) | set(nb):
                ca, cb = na.count(x), nb.count(x)
                crossing = (ca * (len(nb) - cb) + cb * (len(na) - ca)) * rate / (len(na) * len(nb))
                extra[x] = extra.get(x, 0.0) + crossing / 2
        for name, n in self.nodes.items():
            rx, tx = self._eth0(name)
            n.counters[("rx", "eth0")].set_rate(rx + extra.get(name, 0.0), now)
            n.counters[("tx", "eth0")].set_rate(tx + extra.get(name, 0.0), now)

    def _render_pairs(self, now: float) -> str:
        if not self._pair_counters:
            return ""
        out = []
        for metric, share in ISTIO_SHARES.items():
            out.append(f"# TYPE {metric} counter")
            for (a, b), counter in self._pair_counters.items():
                (sns, _, sw), (dns, _, dw) = a.partition("/"), b.partition("/")
                pair = (
                    f'source_workload="{sw}",source_workload_namespace="{sns}",'
                    f'destination_workload="{dw}",destination_workload_namespace="{dns}"'
                )
                for reporter in ("source", "destination"):
                    out.append(f'{metric}{{reporter="{reporter}",{pair}}} {share * counter.value(now):.3f}')
        return "\n".join(out) + "\n"
