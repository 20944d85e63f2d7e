"""TrafficAffinity's section of a pod's explanation (/debug/explain, `simulate --explain`).

The pod's top edges with their rate and origin, where each peer workload's
placed pods are, and the candidates' traffic costs (cheapest first): what an
operator needs to see why a node won on traffic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from netsched.framework import IntArray, NodeInfo

TOP_EDGES = 5  # edges listed (the heaviest)
TOP_NODES = 5  # peer nodes listed per edge, candidates listed


@dataclass(frozen=True, slots=True)
class Edge:
    peer: str
    rate: float  # bytes/s
    nodes: Mapping[str, int]  # node -> the peer's pods there (the most first, at most TOP_NODES)


class TrafficNote:
    """Kept with the cycle state; the lists are built only when an explanation reads them."""

    def __init__(
        self,
        workload: str,
        origin: str,
        edges: Mapping[str, float],
        placed: Mapping[str, Mapping[int, int]],
        nodes: Sequence[NodeInfo],
        idx: IntArray,
        costs: IntArray,
    ) -> None:
        self.workload, self.origin = workload, origin
        self._edges, self._placed, self._nodes, self._idx, self._costs = (
            edges,
            placed,
            nodes,
            idx,
            costs,
        )

    def edges(self) -> list[Edge]:
        out = []
        for peer, rate in sorted(self._edges.items(), key=lambda kv: -kv[1])[:TOP_EDGES]:
            rows = sorted(self._placed.get(peer, {}).items(), key=lambda rk: -rk[1])[:TOP_NODES]
            out.append(Edge(peer, rate, {self._nodes[r].name: k for r, k in rows if r < len(self._nodes)}))
        return out

    def cheapest(self) -> list[tuple[str, float]]:
        order = np.argsort(self._costs, kind="stable")[:TOP_NODES]  # costs align with idx
        return [(self._nodes[int(self._idx[i])].name, float(self._costs[i])) for i in order]

    def to_dict(self) -> dict[str, object]:
        return {
            "workload": self.workload,
            "origin": self.origin,
            "edges": [
                {"peer": e.peer, "bytesPerSecond": e.rate, "peerNodes": dict(e.nodes)} for e in self.edges()
            ],
            "cheapestNodes": [{"node": n, "cost": c} for n, c in self.cheapest()],
        }

    def lines(self) -> list[str]:
        out = [f"traffic of workload {self.workload} ({self.origin} edges):"]
        for e in self.edges():
            where = ", ".join(f"{n} x{k}" for n, k in e.nodes.items()) or "no placed pod"
            out.append(f"  {e.peer}: {_rate(e.rate)} with pods on {where}")
        cheapest = ", ".join(f"{n} {c:.3g}" for n, c in self.cheapest())
        out.append("  cheapest nodes (bytes/s x distance): " + cheapest)
        return out


def _rate(bytes_per_s: float) -> str:
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= scale:
            return f"{bytes_per_s / scale:.3g} {unit}"
    return f"{bytes_per_s:.3g} B/s"
