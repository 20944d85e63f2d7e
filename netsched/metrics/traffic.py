"""The traffic graph: bytes/s between workload pairs, from one query per poll.

Service meshes and CNI observability export traffic per (source workload,
destination workload) pair.  The graph source asks Prometheus once per poll
for all pairs together (the number of queries never depends on nodes or
pods), through the same poller and cache as the per-node metrics, so it
ages, fails and falls back like them.  The query joins the four pair labels
into one (`label_join` into `netsched_pair`), so the cache keys its series
by pair as it keys the others by node.

Presets (`traffic.preset`):
- `istio` (default): TCP sent/received bytes plus HTTP request/response bytes,
  `reporter="source"`, as rate over `rateWindow`, summed by source_workload,
  source_workload_namespace, destination_workload, destination_workload_namespace;
- `hubble`: flows per pair (`hubble_flows_processed_total` with the workload
  label context) times `bytesPerFlow`;
- `custom`: `query` (any PromQL returning the four labels; `labels` names them).

Direction.  A NIC saturates one direction at a time and much real traffic is
one-way (media, caches, queues), so the graph keeps which way the bytes go
where the mesh says: Istio's request bytes (`istio_request_bytes_sum`, and
`istio_tcp_received_bytes_total`, the bytes the server received) flow from
source to destination, its response bytes (`istio_response_bytes_sum`,
`istio_tcp_sent_bytes_total`) from destination to source.  The query tags
each part with a `netsched_dir` label (`request` / `response`) that the pair
key carries as its fifth part.  Where the direction is unknown (Hubble counts
flows, a custom query names none) the whole rate is counted in both
directions: an over-estimate of a link's busier direction rather than half
of it.  Both directions of a pair add up to one undirected edge weight (the
co-location cost); `sent` keeps them apart (the link load).  The graph is
used only while its sample is fresh (maxSampleAgeSeconds): stale edges say
nothing about today's traffic, so under either stalePolicy a stale graph is
empty and the plugins reading it fall back to declared edges or stay inert.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from netsched.framework.fields import Fields, join
from netsched.framework.snapshot import FloatArray, IntArray
from netsched.metrics.args import LABEL_NAME
from netsched.metrics.cache import Series

TRAFFIC_PAIRS = "traffic_pairs"  # the metric name the graph's query is polled under
PAIR_LABEL = "netsched_pair"
_SEP = "|"  # never part of a namespace or workload name
ISTIO, HUBBLE, CUSTOM = "istio", "hubble", "custom"
PRESETS = (ISTIO, HUBBLE, CUSTOM)
DEFAULT_BYTES_PER_FLOW = 16384.0
# Names a mesh gives a peer it could not identify: no workload to place next to.
UNKNOWN_WORKLOADS = frozenset({"unknown", ""})

_ISTIO_METRICS = (
    "istio_tcp_sent_bytes_total",
    "istio_tcp_received_bytes_total",
    "istio_request_bytes_sum",
    "istio_response_bytes_sum",
)
# Which way each Istio counter's bytes flow: request bytes from source to destination,
# response bytes back (Istio's TCP "received" / "sent" are the server's, during request / response).
REQUEST, RESPONSE, UNKNOWN_DIRECTION = "request", "response", ""
DIRECTIONS = (REQUEST, RESPONSE, UNKNOWN_DIRECTION)
_ISTIO_DIRECTION = {
    "istio_tcp_sent_bytes_total": RESPONSE,
    "istio_tcp_received_bytes_total": REQUEST,
    "istio_request_bytes_sum": REQUEST,
    "istio_response_bytes_sum": RESPONSE,
}
_PART_LABEL = "netsched_part"  # keeps the istio preset's per-metric sums apart until they add up
DIRECTION_LABEL = "netsched_dir"  # the direction of a pair's part (absent: unknown)


@dataclass(frozen=True, slots=True)
class PairLabels:
    """The label names of one pair's four parts."""

    source_workload: str
    source_namespace: str
    destination_workload: str
    destination_namespace: str

    def ordered(self) -> tuple[str, str, str, str]:
        return (
            self.source_namespace,
            self.source_workload,
            self.destination_namespace,
            self.destination_workload,
        )


ISTIO_LABELS = PairLabels(
    "source_workload", "source_workload_namespace", "destination_workload", "destination_workload_namespace"
)
HUBBLE_LABELS = PairLabels(
    "source_workload", "source_namespace", "destination_workload", "destination_namespace"
)
_LABEL_FIELDS = ("sourceWorkload", "sourceNamespace", "destinationWorkload", "destinationNamespace")


@dataclass(frozen=True, slots=True)
class TrafficArgs:
    """The `traffic:` block: where the pair traffic comes from."""

    preset: str = ISTIO
    query: str = ""  # custom only
    labels: PairLabels = field(default_factory=lambda: ISTIO_LABELS)
    bytes_per_flow: float = DEFAULT_BYTES_PER_FLOW  # hubble only

    @classmethod
    def decode(cls, f: Fields) -> Self:
        preset = f.str("preset", ISTIO, choices=PRESETS)
        query = f.str("query", "").strip()
        if preset == CUSTOM and not query:
            f.errs.required(join(f.path, "query"), "PromQL returning bytes/s per workload pair")
        elif preset != CUSTOM and query:
            f.errs.forbidden(join(f.path, "query"), f"only with preset {CUSTOM}")
        bytes_per_flow = f.float("bytesPerFlow", DEFAULT_BYTES_PER_FLOW, min=1.0)
        if f.has("bytesPerFlow") and preset != HUBBLE:
            f.errs.forbidden(join(f.path, "bytesPerFlow"), f"only with preset {HUBBLE}")
        labels = _labels(f.sub("labels"), HUBBLE_LABELS if preset == HUBBLE else ISTIO_LABELS)
        f.finish()
        return cls(preset, query, labels, bytes_per_flow)

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {"preset": self.preset}
        if self.query:
            out["query"] = self.query
        if self.preset == HUBBLE:
            out["bytesPerFlow"] = self.bytes_per_flow
        out["labels"] = dict(zip(_LABEL_FIELDS, _values(self.labels), strict=True))
        return out

    def promql(self) -> str:
        """The one query per poll: bytes/s per pair and direction, keyed by PAIR_LABEL (the four
        pair labels and DIRECTION_LABEL joined; $window is substituted later)."""
        by = ", ".join(self.labels.ordered())
        if self.preset == ISTIO:
            inner = _istio_sum(by)
        elif self.preset == HUBBLE:
            inner = f"sum by ({by}) (rate(hubble_flows_processed_total[$window])) * {self.bytes_per_flow:g}"
        else:
            inner = self.query
        parts = ", ".join(f'"{label}"' for label in (*self.labels.ordered(), DIRECTION_LABEL))
        return f'label_join({inner}, "{PAIR_LABEL}", "{_SEP}", {parts})'


def _istio_sum(by: str) -> str:
    """Sum of the Istio byte counters per pair and direction.  Not one rate() over a __name__
    regex: rate() drops the metric name, so a pair's TCP sent and received series (same labels
    otherwise) collide and Prometheus rejects the whole query ("vector cannot contain metrics
    with the same labelset").  Each counter is summed on its own, tagged with its part and
    direction, and the parts of one direction added."""
    parts = " or ".join(
        f'label_replace(label_replace(sum by ({by}) (rate({m}{{reporter="source"}}[$window])), '
        f'"{_PART_LABEL}", "{i}", "", ""), "{DIRECTION_LABEL}", "{_ISTIO_DIRECTION[m]}", "", "")'
        for i, m in enumerate(_ISTIO_METRICS)
    )
    return f"sum by ({by}, {DIRECTION_LABEL}) ({parts})"


def _values(labels: PairLabels) -> tuple[str, str, str, str]:
    return (
        labels.source_workload,
        labels.source_namespace,
        labels.destination_workload,
        labels.destination_namespace,
    )


def _labels(f: Fields, default: PairLabels) -> PairLabels:
    got = []
    for key, d in zip(_LABEL_FIELDS, _values(default), strict=True):
        value = f.str(key, d)
        if not LABEL_NAME.match(value):
            f.errs.invalid(
                join(f.path, key), value, "must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"
            )
            value = d
        got.append(value)
    f.finish()
    return PairLabels(*got)


@dataclass(frozen=True, slots=True)
class TrafficGraph:
    """Edges between workload keys ("namespace/name"): `edges` undirected (bytes/s both ways
    together: what co-location saves), `sent` directed (bytes/s from a workload to a peer:
    what loads each end's link, one direction each)."""

    edges: Mapping[str, Mapping[str, float]]
    sampled_at: float = 0.0  # wall time of the sample (0: none)
    pairs: int = 0  # usable pair series
    dropped: int = 0  # pair series naming no workload
    sent: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> TrafficGraph:
        return cls({})

    def of(self, workload: str) -> Mapping[str, float]:
        return self.edges.get(workload, {})

    def sent_by(self, workload: str) -> Mapping[str, float]:
        """peer -> bytes/s the workload sends it (a direction the mesh did not tell: all of it)."""
        return self.sent.get(workload, {})

    def received_by(self, workload: str) -> Mapping[str, float]:
        """peer -> bytes/s the workload receives from it."""
        return {peer: got for peer, to in self.sent.items() if (got := to.get(workload, 0.0)) > 0}

    def total(self) -> float:
        """Sum of all edge weights, each edge once."""
        twice = sum(r for peers in self.edges.values() for r in peers.values())
        loops = sum(peers.get(w, 0.0) for w, peers in self.edges.items())
        return (twice + loops) / 2


def pair_key(a: str, b: str, direction: str = UNKNOWN_DIRECTION) -> str:
    """The series key of the traffic between workloads `a` (source) and `b` (destination)
    ("namespace/name" each) in `direction` (REQUEST: from a to b, RESPONSE: from b to a,
    UNKNOWN_DIRECTION), as the presets' queries label it and build_graph reads it."""
    (a_ns, _, a_name), (b_ns, _, b_name) = a.partition("/"), b.partition("/")
    return _SEP.join((a_ns, a_name, b_ns, b_name, direction))


def build_graph(series: Series) -> TrafficGraph:
    """Edges from one polled answer (keys "src_ns|src|dst_ns|dst|direction"; a key of four
    parts, as a custom query's label_join without the direction may give, is unknown)."""
    edges: dict[str, dict[str, float]] = {}
    sent: dict[str, dict[str, float]] = {}
    dropped = 0

    def add(into: dict[str, dict[str, float]], x: str, y: str, rate: float) -> None:
        peers = into.setdefault(x, {})
        peers[y] = peers.get(y, 0.0) + rate

    for key, rate in zip(series.keys, series.values.tolist(), strict=True):
        parts = key.split(_SEP)
        direction = parts.pop() if len(parts) == 5 else UNKNOWN_DIRECTION
        if (
            len(parts) != 4
            or parts[1] in UNKNOWN_WORKLOADS
            or parts[3] in UNKNOWN_WORKLOADS
            or direction not in DIRECTIONS
        ):
            dropped += 1
            continue
        a, b = f"{parts[0]}/{parts[1]}", f"{parts[2]}/{parts[3]}"
        if not 0 < rate < math.inf:  # NaN and inf say nothing a cost can use
            continue
        add(edges, a, b, rate)
        if a != b:
            add(edges, b, a, rate)
        if direction != RESPONSE:
            add(sent, a, b, rate)
        if direction != REQUEST:
            add(sent, b, a, rate)
    sampled = float(series.timestamps.min()) if len(series.timestamps) else 0.0
    return TrafficGraph(edges, sampled, len(series.keys) - dropped, dropped, sent)


# ---------------------------------------------------------------- one pod's share, each way
#
# A pod of workload W sends `sent_by(W)[P] / n_W` bytes/s to each peer workload P and receives
# `received_by(W)[P] / n_W` from it, where n_W is the number of pods W's measured traffic is
# shared by.  A pod talks to the peer's pods evenly (as a mesh's load balancing spreads
# requests), so the part exchanged with the k_P(node) of P's n_P pods on its own node never
# reaches the NIC:
#
#     transmit(node) = sum over P of sent_by(W)[P]     / n_W x (1 - k_P(node) / n_P)
#     receive(node)  = sum over P of received_by(W)[P] / n_W x (1 - k_P(node) / n_P)
#
# TrafficAffinity prices a pod's link load with it; the Rebalancer what a move saves.


@dataclass(frozen=True, slots=True)
class PodFlows:
    """One pod's measured traffic with each peer workload, bytes/s each way."""

    sent: Mapping[str, float]  # peer -> bytes/s the pod sends it
    received: Mapping[str, float]  # peer -> bytes/s the pod receives from it

    @property
    def peers(self) -> set[str]:
        return set(self.sent) | set(self.received)


def pod_flows(graph: TrafficGraph, workload: str, pods: int) -> PodFlows | None:
    """A pod's share of `workload`'s measured traffic when `pods` pods share it; None when the
    workload has no measured traffic (or no pod to share it)."""
    sent, received = graph.sent_by(workload), graph.received_by(workload)
    if (not sent and not received) or pods <= 0:
        return None
    return PodFlows({p: r / pods for p, r in sent.items()}, {p: r / pods for p, r in received.items()})


def leaving(flows: PodFlows, local: Callable[[str], float]) -> tuple[float, float]:
    """(receive, transmit) bytes/s of the pod's traffic that crosses its node's link, where
    `local(peer)` is the part of the peer's pods on the node (k_P / n_P, 0..1)."""
    shares = {p: 1.0 - min(max(local(p), 0.0), 1.0) for p in flows.peers}
    rx = sum(r * shares[p] for p, r in flows.received.items())
    tx = sum(r * shares[p] for p, r in flows.sent.items())
    return rx, tx


def leaving_rows(
    flows: PodFlows,
    placed: Callable[[str], tuple[IntArray, FloatArray]],
    pods_of: Callable[[str], int],
    idx: IntArray,
    n: int,
) -> tuple[FloatArray, FloatArray]:
    """leaving() on each row of `idx` at once: `placed(peer)` gives the rows holding the peer's
    pods and how many on each, `pods_of(peer)` its n_P; `n` rows in all.  The work follows the
    peers' rows (a bincount over the rows only when some peer is placed)."""
    rx_base = float(sum(flows.received.values()))
    tx_base = float(sum(flows.sent.values()))
    rows: list[IntArray] = []
    rx_w: list[FloatArray] = []
    tx_w: list[FloatArray] = []
    for peer in flows.peers:
        at, count = placed(peer)
        total = pods_of(peer)
        if not len(at) or total <= 0:
            continue
        share = np.minimum(count / total, 1.0)
        rows.append(at)
        rx_w.append(share * flows.received.get(peer, 0.0))
        tx_w.append(share * flows.sent.get(peer, 0.0))
    rx = np.full(len(idx), rx_base)
    tx = np.full(len(idx), tx_base)
    if rows:
        held = np.concatenate(rows)
        rx -= np.bincount(held, weights=np.concatenate(rx_w), minlength=n)[idx]
        tx -= np.bincount(held, weights=np.concatenate(tx_w), minlength=n)[idx]
        np.maximum(rx, 0.0, out=rx)
        np.maximum(tx, 0.0, out=tx)
    return rx, tx
