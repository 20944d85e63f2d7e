"""A round's plan: which pods to move, each checked with the profile itself on a what-if cluster.

The plan works on a copy of the cluster (handle.what_if.snapshot_copy) whose
metrics views read a fork of the source's ledger (MetricSource.what_if), so
the scheduler's own plugins see, on the copy, what the plan has decided so far
and nothing reaches the live cycle.  For one candidate pod (a trial, on a
child copy and a fork of the fork):

1. the pod leaves its node: taken off the node's pods, its load taken out of
   the node's readings as the ledger takes out a pod that left (its measured
   share, else its estimate; its traffic from TrafficAffinity's departure hint);
2. the profile places a pod like it (same spec and owner, no node) on the copy:
   PreFilter, Filter, PreScore and Score over every node (WhatIf.place), ties
   going to the node it is on;
3. the move is kept only when the profile chose another node, the target
   carries fresh samples and stays at or below every target watermark with the
   pod counted, and the move relieves what triggered it: the source's
   utilisation of the hot resource falls by at least minReliefPercent, or the
   pod's traffic crossing its node's link falls by at least traffic.minReduction.

So a pod moves only where the scheduler itself would put it: it cannot be
planned back onto the node it left nor onto a node the profile's filters
refuse, which is what makes a descheduler ping-pong.  The plan is greedy by
relief per move (the largest relief of any hot node's first qualifying pod,
pods tried in the order of their usage of the hot resource, largest first, as
Koordinator's LowNodeLoad prefers pods that cover the overshoot), adopting one
move at a time on the copy, until every hot node is at or below its target
or no pod qualifies; then the traffic trigger's pods, heaviest leaving traffic
first.  Each adopted move changes the copy (the pod on its target, its load in
the fork), so the next trial sees it: a plan never sends two pods to a target
that can take one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from netsched.framework import BoolArray, FloatArray, Handle, PodInfo, Snapshot, workload_key
from netsched.metrics.plugin_api import (
    CPU_COL,
    MEMORY_COL,
    RX_COL,
    TRAFFIC_PAIRS,
    TX_COL,
    MetricSource,
    leaving,
    pod_flows,
    traffic_graph,
)

from .args import CPU, NETWORK, RebalancerArgs

TRAFFIC = "traffic"  # the traffic trigger's name (the others are the resource kinds)
_TRIALS_PER_NODE = 8  # candidate pods tried per hot node in one step of the plan
_TRAFFIC_TRIALS = 20  # pods tried for the traffic trigger in a round


@dataclass(frozen=True, slots=True)
class Readings:
    """Utilisation (fraction) and freshness per row of a snapshot, by resource kind."""

    util: Mapping[str, FloatArray]
    fresh: Mapping[str, BoolArray]

    @classmethod
    def of(cls, src: MetricSource, snapshot: Snapshot, kinds: Iterable[str]) -> Readings:
        view = src.view(snapshot)
        rows = snapshot.all_rows
        util: dict[str, FloatArray] = {}
        fresh: dict[str, BoolArray] = {}
        for kind in kinds:
            if kind == NETWORK:
                net = view.network(rows)
                util[kind] = net.utilisation()
                fresh[kind] = net.fresh & net.speed_known()
            else:
                use = view.usage(kind, rows)
                util[kind], fresh[kind] = use.utilisation, use.fresh
        return cls(util, fresh)


@dataclass(slots=True)
class PlannedMove:
    pod: PodInfo
    source: str
    target: str
    trigger: str  # NETWORK, CPU, MEMORY or TRAFFIC
    # The figures the Event names: the trigger's reading at the source before, the source's and
    # the target's after (with the pod counted), for a traffic move the pod's crossing traffic.
    before: float
    after: float
    target_after: float
    relief: float  # how much the move relieves its trigger (points, or a fraction for traffic)

    def describe(self, high: float, rounds: int) -> str:
        """The figures of the move, for its Event and the debug page."""
        if self.trigger == TRAFFIC:
            return (
                f"{self.pod.key} sends and receives {_rate(self.before)} across {self.source}'s link; "
                f"planned {self.target}: {_rate(self.after)} ({self.relief:.0%} less)"
            )
        what = "link (busier direction)" if self.trigger == NETWORK else self.trigger
        return (
            f"{self.source} {what} {self.before:.0%} > {high:g}% for {rounds} rounds; planned "
            f"{self.target}, {self.target_after:.0%} with the pod ({self.source} {self.after:.0%} without it)"
        )


def _rate(bps: float) -> str:
    return f"{bps / 1e6:.1f} MB/s"


@dataclass
class Plan:
    """The moves of one round, in the order they were adopted, and why the rest could not."""

    moves: list[PlannedMove] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)  # hot node -> why nothing moved off it


class Planner:
    """One round's planning over a what-if copy of the cluster (see the module docstring)."""

    def __init__(
        self,
        handle: Handle,
        src: MetricSource,
        args: RebalancerArgs,
        may_move: Callable[[PodInfo], str],
    ) -> None:
        """`may_move(pod)`: "" when the round may move `pod` (eligible, within every limit and
        cooldown), else why not."""
        self._handle = handle
        self._src = src
        self._args = args
        self._may_move = may_move
        self._kinds = tuple(args.watermarks)
        self.snapshot = handle.what_if.snapshot_copy()
        self._ledger = src.what_if(self.snapshot)
        self.readings = Readings.of(src, self.snapshot, self._kinds)
        self._trial: Snapshot | None = None  # the last trial's copy, recycled by the next
        self._trials = 0  # trials made: whether the last copy is still a given move's
        self._moved: set[str] = set()  # uids planned
        self._workloads: set[str] = set()  # one pod of a workload a round
        self._per_node: dict[str, int] = {}  # moves planned off each node
        self._per_namespace: dict[str, int] = {}
        self._counted: tuple[Snapshot, _Counts] | None = None

    # ------------------------------------------------------------ the plan

    def plan(self, hot: Mapping[str, Sequence[str]], limit: int, traffic: Collection[str] = ()) -> Plan:
        """At most `limit` moves relieving the `hot` nodes (node -> the kinds it is hot in), then
        the traffic trigger's for the workloads `traffic` names (crossing traffic above the
        minimum for consecutiveRounds rounds: crossing_by_workload and the plugin's count)."""
        out = Plan()
        blocked: dict[str, str] = {}
        while len(out.moves) < limit:
            best: tuple[PlannedMove, int] | None = None
            for node, kinds in hot.items():
                kind = self._still_hot(node, kinds)
                if kind is None or node in blocked:
                    continue
                got, why = self._first_move_off(node, kind)
                if got is None:
                    blocked[node] = why
                elif best is None or got.relief > best[0].relief:
                    best = (got, self._trials)
            if best is None:
                break
            move, made = best
            trial = self._trial
            if made != self._trials or trial is None:
                # Later trials reused the copy `move` was found on (Snapshot.what_if recycles
                # it): its trial again, on a copy of its own.
                trial, _, _ = self._place_without(move.pod)
            self._adopt(move, trial)
            out.moves.append(move)
        out.blocked = {n: why for n, why in blocked.items() if self._still_hot(n, hot[n]) is not None}
        if self._args.traffic_min_reduction > 0 and traffic:
            for move in self._traffic_moves(limit - len(out.moves), traffic):
                out.moves.append(move)
        return out

    def _still_hot(self, node: str, kinds: Sequence[str]) -> str | None:
        """The first of `kinds` the node is still above its target in on the plan's copy."""
        row = self.snapshot.index.get(node)
        if row is None:
            return None
        for kind in kinds:
            if self.readings.util[kind][row] > self._args.watermarks[kind].target / 100:
                return kind
        return None

    def _first_move_off(self, node: str, kind: str) -> tuple[PlannedMove | None, str]:
        row = self.snapshot.index[node]
        pods = [p for p in self.snapshot.nodes[row].pods.values() if p.uid not in self._moved]
        reasons: dict[str, int] = {}
        tried = 0
        for pod in sorted(pods, key=lambda p: -self._usage(p, kind)):
            why = self._why_not(pod)
            if why:
                reasons[why] = reasons.get(why, 0) + 1
                continue
            if tried >= _TRIALS_PER_NODE:
                break
            tried += 1
            move, why = self._trial_move(pod, kind)
            if move is not None:
                return move, ""
            reasons[why] = reasons.get(why, 0) + 1
        summary = "; ".join(f"{n} pod(s): {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
        return None, summary or "no pod on it"

    def _why_not(self, pod: PodInfo) -> str:
        limits = self._args.limits
        if workload_key(pod, self._args.workload_label) in self._workloads:
            return "another pod of its workload moves this round"
        if self._per_node.get(pod.node_name, 0) >= limits.per_node:
            return "evictionsPerNode reached for its node this round"
        if self._per_namespace.get(pod.namespace, 0) >= limits.per_namespace:
            return "evictionsPerNamespace reached for its namespace this round"
        return self._may_move(pod)

    def _usage(self, pod: PodInfo, kind: str) -> float:
        load = self._src.pod_usage(pod)
        if kind == NETWORK:
            return float(max(load[RX_COL], load[TX_COL]))
        return float(load[CPU_COL if kind == CPU else MEMORY_COL])

    # ------------------------------------------------------------ one trial

    def _trial_move(self, pod: PodInfo, kind: str) -> tuple[PlannedMove | None, str]:
        """Would the profile move `pod` off its node, and would that relieve `kind` there?"""
        trial, target, why = self._place_without(pod)
        if target is None:
            return None, why
        after = Readings.of(self._src, trial, self._kinds)
        ok, target_after = self._fits(trial, after, target, pod, kind)
        if not ok:
            return None, f"{target}, the profile's choice, would end above a target watermark"
        row = trial.index[pod.node_name]
        before = float(self.readings.util[kind][row])
        left = float(after.util[kind][row])
        relief = (before - left) * 100
        if relief < self._args.min_relief_percent:
            return None, f"moving it relieves {pod.node_name} by {relief:.1f} points (< minReliefPercent)"
        return PlannedMove(pod, pod.node_name, target, kind, before, left, target_after, relief), ""

    def _place_without(self, pod: PodInfo) -> tuple[Snapshot, str | None, str]:
        """A trial copy with `pod` gone from its node (readings too), and where the profile
        would put a pod like it there; (trial, None, why) when nowhere else."""
        trial = self.snapshot.what_if(self._trial)
        self._trial = trial
        self._trials += 1
        fork = self._ledger.fork()
        self._src.what_if(trial, fork)
        row = trial.index[pod.node_name]
        node = trial.nodes[row].clone()
        node.remove_pod(pod)
        trial.set_node(row, node)
        self._src.depart(pod, fork)
        twin = replacement(pod)
        target = self._handle.what_if.place(twin, trial, prefer=pod.node_name)
        if target is None:
            return trial, None, "no node fits a pod like it"
        if target == pod.node_name:
            return trial, None, "the profile keeps it where it is"
        return trial, target, ""

    def _fits(
        self, trial: Snapshot, after: Readings, target: str, pod: PodInfo, kind: str
    ) -> tuple[bool, float]:
        """Whether `target` stays at or below every target watermark with `pod` counted, on fresh
        samples of the `trial` copy; and its reading of `kind` with the pod."""
        row = self.snapshot.index[target]
        load = self._src.pod_usage(pod)
        view = self._src.view(trial)
        got = 0.0
        for k, marks in self._args.watermarks.items():
            if not after.fresh[k][row]:
                return False, float("nan")
            if k == NETWORK:
                net = view.network(np.array([row], dtype=np.int64))
                u = float(net.with_pod(float(load[RX_COL]), float(load[TX_COL]))[0])
            else:
                alloc = float(view.allocatable(k)[row])
                u = float(after.util[k][row]) + float(load[CPU_COL if k == CPU else MEMORY_COL]) / alloc
            if u != u or u > marks.target / 100:
                return False, u
            if k == kind:
                got = u
        return True, got

    def _adopt(self, move: PlannedMove, trial: Snapshot) -> None:
        """Make `trial`, the copy `move` was found on, the plan's copy, with the replacement on
        its target."""
        twin = replacement(move.pod)
        row = trial.index[move.target]
        node = trial.nodes[row].clone()
        node.add_pod(replace(twin, node_name=move.target))
        trial.set_node(row, node)
        fork = self._src.what_if(trial)
        fork.add(twin, move.target, hint=None)
        self.snapshot, self._ledger, self._trial = trial, fork, None
        self.readings = Readings.of(self._src, self.snapshot, self._kinds)
        self._moved.add(move.pod.uid)
        self._workloads.add(workload_key(move.pod, self._args.workload_label))
        self._per_node[move.source] = self._per_node.get(move.source, 0) + 1
        self._per_namespace[move.pod.namespace] = self._per_namespace.get(move.pod.namespace, 0) + 1

    # ------------------------------------------------------------ the traffic trigger

    def _traffic_moves(self, limit: int, workloads: Collection[str]) -> list[PlannedMove]:
        out: list[PlannedMove] = []
        if limit <= 0:
            return out
        label = self._args.workload_label
        candidates = [pc for pc in self._traffic_candidates() if workload_key(pc[0], label) in workloads]
        graph = traffic_graph(self._src, self.snapshot)
        pinned: set[str] = set()  # peers of a workload moved next to them: they stay this round
        for pod, crossing in candidates[:_TRAFFIC_TRIALS]:
            if len(out) >= limit:
                break
            workload = workload_key(pod, label)
            if pod.uid in self._moved or workload in pinned or self._why_not(pod):
                continue
            trial, target, _ = self._place_without(pod)
            if target is None:
                continue
            after = self._crossing(pod, target, self._counts())
            reduction = 1.0 - after / crossing
            if reduction < self._args.traffic_min_reduction:
                continue
            ok, _ = self._fits(trial, Readings.of(self._src, trial, self._kinds), target, pod, NETWORK)
            if not ok:
                continue
            move = PlannedMove(pod, pod.node_name, target, TRAFFIC, crossing, after, float("nan"), reduction)
            self._adopt(move, trial)
            out.append(move)
            # Moving a peer as well would take the pod's target away from under it (the plan
            # counted the peer where it is): the other end waits for a later round's figures.
            pinned.update(graph.of(workload))
        return out

    def crossing_by_workload(self) -> dict[str, float]:
        """Per measured workload, the traffic (bytes/s, both directions) its pods send and
        receive across their nodes' links, on the plan's copy: what the traffic trigger's
        minimum and its rounds in a row are counted on."""
        label = self._args.workload_label
        out: dict[str, float] = {}
        for pod, crossing in self._traffic_candidates():
            w = workload_key(pod, label)
            out[w] = out.get(w, 0.0) + crossing
        return out

    def _traffic_candidates(self) -> list[tuple[PodInfo, float]]:
        """Pods of measured workloads and the traffic they send and receive across their node's
        link, heaviest first."""
        if not self._src.requires(TRAFFIC_PAIRS):  # no TrafficAffinity on this source: no graph
            return []
        graph = traffic_graph(self._src, self.snapshot)
        if not graph.edges:
            return []
        counts = self._counts()
        out = []
        for node in self.snapshot.nodes:
            for pod in node.pods.values():
                if pod.uid in self._moved or not graph.of(workload_key(pod, self._args.workload_label)):
                    continue
                crossing = self._crossing(pod, node.name, counts)
                if crossing > 0:
                    out.append((pod, crossing))
        out.sort(key=lambda pc: -pc[1])
        return out

    def _counts(self) -> _Counts:
        """Pods per workload, in all and per node, on the plan's copy (kept until it changes)."""
        got = self._counted
        if got is None or got[0] is not self.snapshot:
            counts = _Counts.of(self.snapshot, self._args.workload_label)
            got = self._counted = (self.snapshot, counts)
        return got[1]

    def _crossing(self, pod: PodInfo, node: str, counts: _Counts) -> float:
        """The pod's measured traffic that crosses `node`'s link (both directions), with its peers
        where `counts` has them (TrafficAffinity's share of a workload's traffic; the pod
        itself is left out of the counts)."""
        label = self._args.workload_label
        workload = workload_key(pod, label)
        graph = traffic_graph(self._src, self.snapshot)
        own_row = counts.here(pod.node_name)
        flows = pod_flows(graph, workload, max(counts.total.get(workload, 1), 1))
        if flows is None:
            return 0.0
        here = counts.here(node)

        def local(peer: str) -> float:
            n = counts.total.get(peer, 0) - (1 if peer == workload and own_row is not None else 0)
            k = here.get(peer, 0) - (1 if peer == workload and node == pod.node_name else 0)
            return k / n if n > 0 else 0.0

        rx, tx = leaving(flows, local)
        return rx + tx


@dataclass(frozen=True, slots=True)
class _Counts:
    total: Mapping[str, int]  # workload -> pods
    by_node: Mapping[str, Mapping[str, int]]  # node -> workload -> pods

    @classmethod
    def of(cls, snapshot: Snapshot, label: str) -> _Counts:
        total: dict[str, int] = {}
        by_node: dict[str, dict[str, int]] = {}
        for n in snapshot.nodes:
            here = by_node.setdefault(n.name, {})
            for p in n.pods.values():
                if p.deleting:
                    continue
                w = workload_key(p, label)
                total[w] = total.get(w, 0) + 1
                here[w] = here.get(w, 0) + 1
        return cls(total, by_node)

    def here(self, node: str) -> Mapping[str, int]:
        return self.by_node.get(node, {})


def replacement(pod: PodInfo) -> PodInfo:
    """A pod like `pod` as its controller would recreate it: same spec and owner, no node, its
    own uid (so it is never taken for the pod it replaces)."""
    return replace(pod, uid=f"rebalance-{pod.uid}", node_name="", nominated_node_name="", deleting=False)
