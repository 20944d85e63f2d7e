"""Why a pod landed where it did: every filter verdict and every score, per node.

Operators' most common question about a load-aware scheduler is "why that
node?" (the load score is one of several, each weighted).  `explain` runs
the profile's real plugins for one pod against a snapshot, without
reserving anything, and returns a table: the sections plugins noted for the
whole pod (CycleState.note: a group's placement decision, say); for each node, each filter's verdict,
then for feasible nodes each score plugin's raw, normalised and weighted
score (the runtime's one score loop, with its breakdown), the total and the
winner.  `Explainer` does it on framework replicas and
snapshot copies of its own, for `netsched simulate --explain`, the
/debug/explain endpoint and the opt-in pod annotation.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from netsched.framework.cycle_state import Explainable
from netsched.framework.errors import PluginFault
from netsched.framework.extension_points import PluginScores
from netsched.framework.runtime import Framework
from netsched.framework.search import choose_node, prioritize
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Status
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
    # Sections plugins added (CycleState.note): a decision taken for the whole pod, such as
    # the domain a group's placement chose.
    notes: dict[str, Explainable] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "pod": self.pod,
            "profile": self.profile,
            "winner": self.winner,
            "message": self.message,
            "weights": self.weights,
            "preFilter": self.pre_filter,
            **{section: note.to_dict() for section, note in self.notes.items()},
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
        for note in self.notes.values():
            lines += note.lines()
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
    """Run fwk's plugins for pod over every node of snapshot; nothing is reserved.

    fwk must be a framework no other thread is using (Explainer keeps replicas for that).
    """
    out = Explanation(pod=pod.key, profile=fwk.profile_name, weights=dict(fwk.weights))
    fwk.set_snapshot(snapshot)
    state = fwk.new_cycle_state()
    pre, st = fwk.run_pre_filter(state, pod, snapshot)
    out.notes = state.notes()
    for pf in fwk.pre_filter_plugins:
        out.pre_filter[pf.name] = "skip" if pf.name in state.skip_filter_plugins else "passed"
    if not st.ok:
        out.pre_filter[st.plugin or "?"] = st.message()
        out.message = f"PreFilter rejected the pod: {st.message()}"
        out.nodes = [NodeExplanation(n.name, {}, False) for n in snapshot.nodes]
        return out
    allowed = pre.node_names if pre is not None else None
    skipped = {fp.name: "skip" for fp in fwk.filter_plugins if fp.name in state.skip_filter_plugins}
    rows: list[int] = []
    for i, node in enumerate(snapshot.nodes):
        ne = NodeExplanation(node.name)
        if allowed is not None and node.name not in allowed:
            ne.filters["PreFilter"] = "not in the PreFilter node set"
            ne.feasible = False
        verdicts = {fp.name: fst for fp, fst in fwk.filter_statuses(state, pod, node)}
        for fp in fwk.filter_plugins:
            fst = verdicts.get(fp.name)
            ne.filters[fp.name] = skipped[fp.name] if fst is None else _verdict(fst)
            ne.feasible = ne.feasible and (fst is None or fst.ok)
        if ne.feasible:
            rows.append(i)
        out.nodes.append(ne)
    if not rows:
        out.message = "no node passed the filters"
        return out
    breakdown: dict[str, PluginScores] = {}
    try:
        totals = prioritize(fwk, state, pod, snapshot, np.asarray(rows, dtype=np.int64), breakdown)
    except PluginFault as e:
        out.message = f"scoring failed: {e.status}"
        return out
    finally:
        out.notes = state.notes()  # PreScore plugins note what they scored by, too
    for name, ps in breakdown.items():
        for j, row in enumerate(rows):
            out.nodes[row].scores[name] = (int(ps.raw[j]), int(ps.normalized[j]), int(ps.weighted[j]))
    for j, row in enumerate(rows):
        out.nodes[row].total = int(totals[j])
    best = max(rows, key=lambda r: (out.nodes[r].total, -r))
    out.winner = out.nodes[best].node
    return out


def _verdict(st: Status) -> str:
    return "passed" if st.ok else st.message() or st.code.name


class _Replicas:
    """A framework replica per profile (plugins of its own), made when first asked for, for
    work that must never touch the scheduling thread's frameworks; one caller at a time."""

    def __init__(self, frameworks: Mapping[str, Framework]) -> None:
        self._profiles = dict(frameworks)
        self._replicas: dict[str, Framework] = {}
        self.lock = threading.Lock()

    def of(self, profile: str) -> Framework:
        """The replica of `profile` (the first profile for a name none answers; hold `lock`)."""
        got = self._replicas.get(profile)
        if got is None:
            source = self._profiles.get(profile) or next(iter(self._profiles.values()))
            got = self._replicas[profile] = source.replica()
        return got


class Planner:
    """What a profile would do with a pod on a snapshot of the caller's: the what-if questions
    a rebalancing plan asks (netsched.framework.seams.WhatIf.place), on framework replicas of
    its own, so they may be asked from any thread while the scheduling thread goes on."""

    def __init__(self, frameworks: Mapping[str, Framework]) -> None:
        self._replicas = _Replicas(frameworks)

    def place(self, pod: PodInfo, snapshot: Snapshot, prefer: str = "") -> str | None:
        with self._replicas.lock:
            return choose_node(self._replicas.of(pod.scheduler_name), pod, snapshot, prefer)


class Explainer:
    """Explanations that never touch the scheduling thread's state.

    Each profile is explained on a replica of its Framework (plugins of its own)
    and a snapshot of its own (an independent copy of the cache), so the
    /debug/explain endpoint and the opt-in annotation can run on any thread
    while the scheduling thread goes on.  Calls are serialised: one replica
    per profile, one explanation at a time.
    """

    def __init__(self, frameworks: Mapping[str, Framework], snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot
        self._replicas = _Replicas(frameworks)

    def explain(self, pod: PodInfo, snapshot: Snapshot | None = None) -> Explanation:
        """Explain pod as if it were pending: a pod already on a node is taken off it first.

        `snapshot` must be the caller's own (it may be changed); by default a fresh copy.
        """
        snap = snapshot if snapshot is not None else self._snapshot()
        if pod.node_name:
            row = snap.index.get(pod.node_name)
            if row is not None:
                node = snap.nodes[row].clone()
                node.remove_pod(pod)
                snap.set_node(row, node)
            pod = dataclasses.replace(pod, node_name="")
        with self._replicas.lock:
            return explain(self._replicas.of(pod.scheduler_name), pod, snap)
