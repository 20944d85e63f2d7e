"""How much measured pair traffic crosses nodes and topology levels under the current placement.

Exported on the scheduler's /metrics (refreshed every poll interval, off the
scheduling thread) so the placement dashboard can plot what co-location
buys:

    netsched_traffic_pair_bytes_per_second{profile}        measured pair traffic between placed pods
    netsched_traffic_cross_node_ratio{profile}             the part of it whose two ends are on different nodes
    netsched_traffic_cross_level_ratio{profile, level}     ... in different domains of that level
    netsched_traffic_matched_workloads{profile}            workloads of the graph that have placed pods
    netsched_traffic_graph_workloads{profile}              workloads of the graph

A graph with workloads none of which has a placed pod means the pods'
workloads (workloadLabel) are not named as the mesh names them: the plugin is
then inert, which the matched gauge at 0 and one warning log say.

Each pair's rate is taken as spread evenly over its pod pairs (as a mesh's
load balancing spreads requests), so a pair crosses nodes by
1 - sum over nodes of (a's pods there x b's pods there) / (a's pods x b's pods).
Placed pods come from the cache's pod index by workload (bound and assumed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from netsched.metrics.plugin_api import TrafficGraph

NODE_LEVEL = "node"


@dataclass(frozen=True, slots=True)
class CrossShares:
    total: float  # bytes/s between placed pods
    crossing: Mapping[str, float]  # NODE_LEVEL or a level label -> fraction of total crossing it
    workloads: int = 0  # workloads of the graph
    matched: int = 0  # ... that have placed pods


def cross_shares(
    graph: TrafficGraph,
    nodes_of: Callable[[str], Sequence[str]],
    domain_of: Callable[[str, str], str | None],
    levels: Sequence[str],
) -> CrossShares:
    """`nodes_of(workload)`: its placed pods' nodes; `domain_of(node, level)`: the node's label."""
    placed: dict[str, Counter[str]] = {}

    def at(workload: str) -> Counter[str]:
        got = placed.get(workload)
        if got is None:
            got = placed[workload] = Counter(nodes_of(workload))
        return got

    total = 0.0
    crossing = dict.fromkeys((NODE_LEVEL, *levels), 0.0)
    for a, peers in graph.edges.items():
        for b, rate in peers.items():
            if b < a:
                continue  # each undirected edge once (a self-loop too)
            ca, cb = at(a), at(b)
            na, nb = sum(ca.values()), sum(cb.values())
            if not na or not nb:
                continue
            total += rate
            crossing[NODE_LEVEL] += rate * (1 - sum(k * cb[n] for n, k in ca.items()) / (na * nb))
            for level in levels:
                da, db = _domains(ca, level, domain_of), _domains(cb, level, domain_of)
                same = sum(k * db[d] for d, k in da.items() if d is not None)
                crossing[level] += rate * (1 - same / (na * nb))
    workloads = len(graph.edges)
    matched = sum(1 for w in graph.edges if at(w))
    if total <= 0:
        return CrossShares(0.0, {}, workloads, matched)
    return CrossShares(total, {k: v / total for k, v in crossing.items()}, workloads, matched)


def _domains(
    counts: Counter[str], level: str, domain_of: Callable[[str, str], str | None]
) -> Counter[str | None]:
    out: Counter[str | None] = Counter()
    for node, k in counts.items():
        out[domain_of(node, level)] += k
    return out
