"""TrafficAffinity's section of a pod's explanation (/debug/explain, `simulate --explain`).

The pod's top edges with their rate and origin, where each peer workload's
placed pods are, and the candidates' traffic costs (cheapest first): what an
operator needs to see why a node won on traffic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TOP_EDGES = 5  # edges listed (the heaviest)
TOP_NODES = 5  # peer nodes listed per edge, candidates listed


@dataclass(frozen=True, slots=True)
class Edge:
    peer: str
    rate: float  # bytes/s
    nodes: Mapping[str, int]  # node -> the peer's pods there (the most first, at most TOP_NODES)


@dataclass(frozen=True, slots=True)
class TrafficNote:
    workload: str
    origin: str
    edges: Sequence[Edge]
    costs: Sequence[tuple[str, float]]  # (node, bytes/s x distance), cheapest first, at most TOP_NODES

    def to_dict(self) -> dict[str, object]:
        return {
            "workload": self.workload,
            "origin": self.origin,
            "edges": [
                {"peer": e.peer, "bytesPerSecond": e.rate, "peerNodes": dict(e.nodes)} for e in self.edges
            ],
            "cheapestNodes": [{"node": n, "cost": c} for n, c in self.costs],
        }

    def lines(self) -> list[str]:
        out = [f"traffic of workload {self.workload} ({self.origin} edges):"]
        for e in self.edges:
            where = ", ".join(f"{n} x{k}" for n, k in e.nodes.items()) or "no placed pod"
            out.append(f"  {e.peer}: {_rate(e.rate)} with pods on {where}")
        out.append(
            "  cheapest nodes (bytes/s x distance): " + ", ".join(f"{n} {c:.3g}" for n, c in self.costs)
        )
        return out


def _rate(bytes_per_s: float) -> str:
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= scale:
            return f"{bytes_per_s / scale:.3g} {unit}"
    return f"{bytes_per_s:.3g} B/s"
