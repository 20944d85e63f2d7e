"""Why a pod landed where it did: every filter verdict and every score, per node.

Operators' most common question about a load-aware scheduler is "why that
node?" (the load score is one of several, each weighted).  `explain` runs
the profile's real plugins for one pod against a snapshot, without
reserving anything, and returns a table: for each node, each filter's
verdict, then for feasible nodes each score plugin's raw, normalised and
weighted score, the total and the winner.  Used by `netsched simulate
--explain`, the /debug/explain endpoint and the opt-in pod annotation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsched.framework.runtime import Framework
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import PodInfo


@dataclass
class NodeExplanation:
    node: str
    filters: dict[str, str] = field(default_factory=dict)  # plugin -> "passed" | reason(s)
    feasible: bool = True
    # plugin -> (raw, normalised, weighted)
    scores: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    total: int = 0


@dataclass
class Explanation:
    pod: str
    profile: str
    pre_filter: dict[str, str] = field(default_factory=dict)
    nodes: list[NodeExplanation] = field(default_factory=list)
    winner: str = ""
    weights: dict[str, int] = field(default_factory=dict)
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "profile": self.profile,
            "winner": self.winner,
            "message": self.message,
            "weights": self.weights,
            "preFilter": self.pre_filter,
            "nodes": [
                {
                    "node": n.node,
                    "feasible": n.feasible,
                    "filters": n.filters,
                    "scores": {
                        p: {"raw": r, "normalized": s, "weighted": w} for p, (r, s, w) in n.scores.items()
                    },
                    "total": n.total,
                }
                for n in self.nodes
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def table(self, top: int | None = None) -> str:
        """A fixed-width table, best node first; infeasible nodes after with their first rejection."""
        plugins = list(self.weights)
        feasible = sorted((n for n in self.nodes if n.feasible), key=lambda n: (-n.total, n.node))
        rejected = [n for n in self.nodes if not n.feasible]
        shown = feasible if top is None else feasible[:top]
        head = ["NODE", "TOTAL"] + [f"{p}(x{self.weights[p]})" for p in plugins]
        rows = [
            [n.node + (" *" if n.node == self.winner else ""), str(n.total)] + [_cell(n, p) for p in plugins]
            for n in shown
        ]
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines = [f"pod {self.pod} (profile {self.profile}): winner {self.winner or '-'}"]
        if self.message:
            lines.append(self.message)
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
        lines.append("cells: raw/normalised -> weighted")
        if rejected:
            lines.append(f"{len(rejected)} node(s) filtered out:")
            for n in rejected if top is None else rejected[:top]:
                first = next(
                    (f"{p}: {why}" for p, why in n.filters.items() if why not in ("passed", "skip")), ""
                )
                lines.append(f"  {n.node}: {first}")
        return "\n".join(lines)

    def annotation(self, top: int = 3) -> str:
        """Compact JSON for the opt-in pod annotation: winner and the top nodes' breakdowns."""
        best = sorted((n for n in self.nodes if n.feasible), key=lambda n: (-n.total, n.node))[:top]
        return json.dumps(
            {
                "winner": self.winner,
                "top": [
                    {"node": n.node, "total": n.total, "scores": {p: w for p, (_, _, w) in n.scores.items()}}
                    for n in best
                ],
            },
            separators=(",", ":"),
        )


def _cell(n: NodeExplanation, plugin: str) -> str:
    got = n.scores.get(plugin)
    if got is None:
        return "skip"
    raw, norm, weighted = got
    return f"{raw}/{norm}->{weighted}"


def explain(fwk: Framework, pod: PodInfo, snapshot: Snapshot) -> Explanation:
    """Run the profile's plugins for pod over every node of snapshot; nothing is reserved."""
    out = Explanation(pod=pod.key, profile=fwk.profile_name, weights=dict(fwk.weights))
    fwk.set_snapshot(snapshot)
    state = fwk.new_cycle_state()
    pre, st = fwk.run_pre_filter(state, pod, snapshot)
    for pf in fwk.pre_filter_plugins:
        out.pre_filter[pf.name] = "skip" if pf.name in state.skip_filter_plugins else "passed"
    if not st.ok:
        out.pre_filter[st.plugin or "?"] = st.message()
        out.message = f"PreFilter rejected the pod: {st.message()}"
        out.nodes = [NodeExplanation(n.name, {}, False) for n in snapshot.nodes]
        return out
    allowed = pre.node_names if pre is not None else None
    rows: list[int] = []
    for i, node in enumerate(snapshot.nodes):
        ne = NodeExplanation(node.name)
        if allowed is not None and node.name not in allowed:
            ne.filters["PreFilter"] = "not in the PreFilter node set"
            ne.feasible = False
        for fp in fwk.filter_plugins:
            if fp.name in state.skip_filter_plugins:
                ne.filters[fp.name] = "skip"
                continue
            fst = fp.filter(state, pod, node)
            ne.filters[fp.name] = "passed" if fst.ok else fst.message() or fst.code.name
            if not fst.ok:
                ne.feasible = False
        if ne.feasible:
            rows.append(i)
        out.nodes.append(ne)
    if not rows:
        out.message = "no node passed the filters"
        return out
    idx = np.asarray(rows, dtype=np.int64)
    fwk.run_pre_score(state, pod, snapshot, idx)
    totals = np.zeros(len(idx), dtype=np.int64)
    for sp in fwk.score_plugins:
        if sp.name in state.skip_score_plugins:
            continue
        raw = np.asarray(sp.score_nodes(state, pod, snapshot, idx), dtype=np.int64)
        norm = raw.copy()
        sp.normalize_scores(state, pod, norm)
        weighted = norm * fwk.weights[sp.name]
        totals += weighted
        for j, row in enumerate(rows):
            out.nodes[row].scores[sp.name] = (int(raw[j]), int(norm[j]), int(weighted[j]))
    for j, row in enumerate(rows):
        out.nodes[row].total = int(totals[j])
    best = max(rows, key=lambda r: (out.nodes[r].total, -r))
    out.winner = out.nodes[best].node
    return out
