"""TrafficAffinity: place a pod next to the pods its workload talks to.

PreScore: the pod's workload edges (measured, else declared: the pod's
annotation and its scheduler-plugins AppGroup), each edge's
rate shared among the peer workload's placed pods, and every candidate's
cost = sum of rate x distance to each peer's node (cost.py).  A pod with no
known edge, or whose peers are not placed yet, makes the plugin Skip: its
score is then left out and the profile places exactly as without it.

Score: the cost in bytes/s x distance (what /debug/explain shows as the raw
score).  NormalizeScore: min-max inverted, the cheapest candidate 100.
The pod's explanation gets a section (explain.py): its top edges, the peers'
nodes and the cheapest candidates.

Reserve/Unreserve are not needed: the peers are read from the snapshot, which
holds assumed pods.  Link headroom stays with LoadThreshold and NetworkTraffic; this
plugin tells them how much of a pod's traffic crosses its node's link, each way
(netsched.metrics.traffic: a pod's share of its workload's traffic): PreFilter leaves a bandwidth hint in the pod's cycle state
(BANDWIDTH_HINT), which LoadThreshold reads for every candidate (a node whose link
would pass its limit with the pod is rejected, however much the pod's peers pull)
and the load-aware plugins' Reserve hands to the ledger; and the source's ledger
asks the plugin what a leaving pod carried (a departure hint).  The workload's
measured traffic is shared by its pods: the most of them placed while the graph
sample is read, or known (pending ones included), so the first pod of a Recreate
rollout carries its share, never the default nor the whole workload's.  PreFilter
never filters (Skip).  The hint is per cycle, so profiles sharing a `prometheus:`
block (one ledger) and the explainer's replica never take over each other's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from netsched.framework import (
    MAX_NODE_SCORE,
    CycleState,
    FloatArray,
    Handle,
    IntArray,
    NodeInfo,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    Snapshot,
    Status,
    label_codes,
    names,
    workload_key,
)
from netsched.metrics.plugin_api import (
    BANDWIDTH_HINT,
    PAIR_LABEL,
    TRAFFIC_PAIRS,
    PodFlows,
    RowScores,
    TrafficGraph,
    leaving,
    leaving_rows,
    pod_flows,
    source_for,
    traffic_graph,
)

from .appgroup import APPGROUP_LABEL, APPGROUPS_KEY, appgroup_edges
from .args import TrafficAffinityArgs
from .cost import invert, traffic_costs
from .declared import ANNOTATION, Declared, declared_edges
from .explain import TrafficNote
from .placed import Peers, WorkloadIndex, peers_of, template_of
from .shares import NODE_LEVEL, CrossShares, cross_shares

log = logging.getLogger(__name__)

MEASURED, DECLARED = "measured", "declared"
# Share checks (one per poll interval) in a row with pods placed and none of their workloads in
# the measured graph before the plugin warns that it is inert.
UNMATCHED_CHECKS = 3
_WORKLOAD_INDEX = "traffic-affinity/workload/"  # + the workload label: pods by workload key
_REPORTED_MAX = 4096  # pods whose malformed annotation was reported (an Event once per pod)
# Costs are clipped here before the int64 cast: far above any real bytes/s x distance, far
# below int64's range, so the sum over plugins x weights cannot overflow either.
MAX_COST = 1e15


@dataclass(frozen=True, slots=True)
class TrafficCosts:
    """One pod's costs over the snapshot rows of its cycle, and what they came from."""

    costs: RowScores  # cost per candidate row PreScore got
    workload: str
    origin: str  # MEASURED or DECLARED
    edges: Mapping[str, float]
    peers: Peers


class TrafficAffinity(
    PreFilterPlugin[TrafficAffinityArgs],
    PreScorePlugin[TrafficAffinityArgs],
    ScorePlugin[TrafficAffinityArgs],
):
    name = names.TRAFFIC_AFFINITY

    def __init__(self, args: TrafficAffinityArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.source = source_for(handle, self.args.prometheus, self.name)
        self.source.require_keyed_query(TRAFFIC_PAIRS, self.args.traffic.promql(), PAIR_LABEL)
        self._distances = self.args.level_distances
        self._placed = WorkloadIndex(self.args.workload_label)
        label = self.args.workload_label
        self._index = _WORKLOAD_INDEX + label  # pending and assigned pods by workload key
        handle.add_pod_index(self._index, lambda p: workload_key(p, label))
        self._scratch: FloatArray = np.zeros(0)  # traffic_costs' per-row gathering space
        self._lock = threading.Lock()  # explain and the estimator's hint read from other threads
        self._reported: set[str] = set()
        # Most pods of each workload seen placed while the current graph sample is read (reset
        # when a new sample comes): a workload's measured traffic divides by it once its old
        # pods are gone (a Recreate rollout), rather than charging one new pod all of it.
        self._peak: dict[str, int] = {}
        self._peak_sample = -1.0
        # Pods of each workload just before one of them left (the watch's departures): its
        # traffic in a sample whose window began before then was theirs (a Recreate rollout
        # whose pods all left between two polls).  workload -> (when, pods before).
        self._before: dict[str, tuple[float, int]] = {}
        # Pods of each workload that left within the rate window, where they ran: a leaving pod's
        # sample was made while they were there (a peer on its node that left first kept their
        # flow off the link).  workload -> [(when, uid, node)], oldest first.
        self._left: dict[str, list[tuple[float, str, str]]] = {}
        self._sample = 0.0  # sampled_at of the graph read last (0: none)
        # Pods each workload has once its rollout (if any) is done: the largest of its template
        # revisions' pods known now (a surge pod is not an extra replica).  Set by _roll.
        self._steady: dict[str, int] = {}
        self._unmatched_checks = 0  # checks in a row the graph named no placed pod's workload
        # The node rows the share task reads labels from: (index, nodes) of the snapshot a cycle
        # of this plugin last saw, set in one write.  The handle's snapshot is not for another
        # thread: between cycles the cache rebuilds it in place (nodes first, then index).
        self._rows: tuple[Mapping[str, int], Sequence[NodeInfo]] = ({}, [])
        self._publish_shares()
        # What a leaving pod of this profile carried, asked by the source's ledger (from the watch).
        self.source.set_departure_hint(handle.profile_name, self.departing)

    @property
    def _key(self) -> str:
        return f"{self.name}/costs"

    # ------------------------------------------------------------ edges

    def graph(self, snapshot: Snapshot | None = None) -> TrafficGraph:
        """The measured graph (metrics' one read API: built once per poll for every plugin
        and profile), empty while stale or never polled; `snapshot`: the cycle's, else the
        handle's."""
        got = traffic_graph(self.source, snapshot if snapshot is not None else self.handle.snapshot())
        self._sample = got.sampled_at
        return got

    def edges(self, pod: PodInfo, snapshot: Snapshot | None = None) -> tuple[str, str, Mapping[str, float]]:
        """(workload, origin, peer -> bytes/s): measured edges win over declared ones."""
        workload = workload_key(pod, self.args.workload_label)
        measured = self.graph(snapshot).of(workload)
        if measured:
            return workload, MEASURED, measured
        declared = declared_edges(pod)
        group = pod.labels.get(APPGROUP_LABEL)
        if group:  # scheduler-plugins' AppGroup, when the CRD is installed; the annotation wins
            appgroup = appgroup_edges(pod, self.handle.objects.get(APPGROUPS_KEY, pod.namespace, group))
            declared = Declared({**appgroup.edges, **declared.edges}, appgroup.errors + declared.errors)
        if declared.errors:
            self._report(pod, "; ".join(declared.errors))
        return workload, DECLARED, declared.edges

    def _report(self, pod: PodInfo, message: str) -> None:
        if pod.uid in self._reported:
            return
        if len(self._reported) >= _REPORTED_MAX:
            self._reported.clear()
        self._reported.add(pod.uid)
        self.handle.events.event(pod, "Warning", "InvalidTrafficPeers", "Scheduling", message)

    # ------------------------------------------------------------ scoring

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        """Filters nothing (Skip: no Filter or PreFilterExtensions to run); leaves Reserve a
        hint that reads the pod's edges only when called, since with one feasible node the
        runtime returns before PreScore (kube does too).  No measured graph: no hint (the
        estimate's default stands, and LoadThreshold keeps its verdicts per pod load)."""
        if self.graph(snapshot).edges:
            state.write(BANDWIDTH_HINT, _LeavingTraffic(self, snapshot))
        self._keep_rows(snapshot)
        return None, Status.skip()

    def _keep_rows(self, snapshot: Snapshot) -> None:
        """Publish the cycle's node rows to the share task (see _domain_of)."""
        rows = self._rows
        if rows[0] is not snapshot.index or rows[1] is not snapshot.nodes:
            self._rows = (snapshot.index, snapshot.nodes)

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        self._keep_rows(snapshot)
        if not (self.graph(snapshot).edges or ANNOTATION in pod.annotations or APPGROUP_LABEL in pod.labels):
            return Status.skip()  # nothing measured, nothing declared: inert at the cost of three lookups
        workload, origin, edges = self.edges(pod, snapshot)
        got = self.costs(snapshot, idx, workload, origin, edges)
        if got is None:
            return Status.skip()
        state.write(self._key, got)
        state.note(self.name, self._note(got, snapshot, idx))
        return Status.success()

    def _note(self, got: TrafficCosts, snapshot: Snapshot, idx: IntArray) -> TrafficNote:
        """The explain section, computed only if an explanation reads it (right after this
        cycle's scoring: it reads the placed pods and nodes as they are then)."""
        return TrafficNote(
            got.workload,
            got.origin,
            got.edges,
            self._placed.rows,
            snapshot.nodes,
            got.costs.idx,
            got.costs.scores,
        )

    def costs(
        self, snapshot: Snapshot, idx: IntArray, workload: str, origin: str, edges: Mapping[str, float]
    ) -> TrafficCosts | None:
        """The costs over rows `idx` of a pod of `workload` with these edges (edges()), or None
        when nothing is known (the plugin is inert)."""
        if not edges:
            return None
        levels = [label_codes(snapshot, key) for key in reversed(self.args.levels)]
        with self._lock:
            self._roll(*edges)
            self._placed.sync(snapshot)
            peers = peers_of(self._placed, edges)
            if peers.total <= 0:
                return None
            if len(self._scratch) != len(snapshot):
                self._scratch = np.zeros(len(snapshot))
            cost = traffic_costs(peers, idx, levels, self._distances, self._scratch)
        costs = np.rint(np.minimum(cost, MAX_COST)).astype(np.int64)
        rows = RowScores(snapshot.index, idx, costs, len(snapshot))
        return TrafficCosts(rows, workload, origin, edges, peers)

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        got: TrafficCosts = state.read(self._key)
        return got.costs.of(idx)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """The per-node form the contract requires (docs/DESIGN.md, Plugin rules): the runtime
        calls score_nodes, and netsched.testing.agreement checks the two agree."""
        costs: RowScores = state.read(self._key).costs
        got = costs.of_node(node.name)
        return got if got is not None else int(costs.scores.max(initial=0))

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        scores[:] = invert(scores.astype(np.float64), MAX_NODE_SCORE)

    # ------------------------------------------------------------ /metrics: what crosses nodes and levels

    def _publish_shares(self) -> None:
        """Keep the cross-node / cross-level shares current on /metrics (when observed)."""
        m = self.handle.plugin_metrics
        if m is None:
            return
        total = m.gauge(
            "netsched_traffic_pair_bytes_per_second",
            "Measured traffic between workload pairs whose pods are placed (both directions), bytes/s.",
            ["profile"],
        )
        node = m.gauge(
            "netsched_traffic_cross_node_ratio",
            "Share of the measured pair traffic whose two ends are on different nodes (current placement).",
            ["profile"],
        )
        level = m.gauge(
            "netsched_traffic_cross_level_ratio",
            "Share of the measured pair traffic whose two ends are in different domains of a topology level.",
            ["profile", "level"],
        )
        matched = m.gauge(
            "netsched_traffic_matched_workloads",
            "Workloads of the measured traffic graph with placed pods (by workloadLabel); 0 while "
            "netsched_traffic_graph_workloads is not: no pod matches the mesh's names, the plugin is inert.",
            ["profile"],
        )
        workloads = m.gauge(
            "netsched_traffic_graph_workloads", "Workloads in the measured traffic graph.", ["profile"]
        )
        profile = self.handle.profile_name

        def publish() -> None:
            # On the periodic thread: the graph as last polled, not through the cycle snapshot.
            graph = traffic_graph(self.source, None)
            got = cross_shares(graph, self._nodes_of, self._domain_of, self.args.levels)
            self.check_match(got, any(node.pods for node in self._rows[1]))
            matched.labels(profile).set(got.matched)
            workloads.labels(profile).set(got.workloads)
            total.labels(profile).set(got.total)
            node.labels(profile).set(got.crossing.get(NODE_LEVEL, 0.0))
            for lv in self.args.levels:
                level.labels(profile, lv).set(got.crossing.get(lv, 0.0))

        self.handle.every(
            f"{self.name}/shares/{profile}", self.args.prometheus.poll_interval_seconds, publish
        )

    def check_match(self, got: CrossShares, placed: bool) -> None:
        """Warn once that the measured graph names no workload of a placed pod, when that has
        held for UNMATCHED_CHECKS checks in a row while pods are placed (`placed`): right after
        start, or while no pod is placed yet, nothing can match and nothing is wrong."""
        unmatched = placed and got.workloads > 0 and got.matched == 0
        self._unmatched_checks = self._unmatched_checks + 1 if unmatched else 0
        if self._unmatched_checks == UNMATCHED_CHECKS:
            log.warning(
                "No placed pod's workload is in the measured traffic graph; TrafficAffinity is inert "
                "profile=%s workloadLabel=%s graphWorkloads=%d hint=%s",
                self.handle.profile_name,
                self.args.workload_label or "<controller name>",
                got.workloads,
                "make workloadLabel name workloads as the mesh does, or set traffic.labels to the "
                "mesh's label that matches (e.g. source_canonical_service)",
            )

    def _nodes_of(self, workload: str) -> list[str]:
        return [p.node_name for p in self._known(workload) if p.node_name]

    def _known(self, workload: str) -> list[PodInfo]:
        """The workload's pods the scheduler knows of, pending (of this scheduler) and assigned,
        terminating ones left out; thread-safe (the cache's and the handlers' indexes)."""
        return [p for p in self.handle.pods_by_index(self._index, workload) if not p.deleting]

    def _domain_of(self, node: str, level: str) -> str | None:
        """On the periodic thread: the index and rows a cycle published together (a later
        rebuild replaces both lists; an in-place row update keeps the row's node name)."""
        index, nodes = self._rows
        row = index.get(node)
        return nodes[row].labels.get(level) if row is not None else None

    # ------------------------------------------------------------ link load: a pod's share of its workload's

    def pod_bandwidth(
        self, pod: PodInfo, node_name: str, snapshot: Snapshot | None = None
    ) -> tuple[float, float] | None:
        """(rx, tx) bytes/s of the pod's measured traffic that would cross `node_name`'s link;
        None: its traffic is not measured.  `snapshot`: the cycle's, else the handle's."""
        snap = snapshot if snapshot is not None else self.handle.snapshot()
        flows = self.flows(pod, snap)
        if flows is None:
            return None
        row = snap.index.get(node_name)
        with self._lock:
            self._placed.sync(snap)
            return leaving(flows, lambda peer: self._local(peer, row))

    def flows(self, pod: PodInfo, snapshot: Snapshot) -> PodFlows | None:
        """The pod's share of its workload's measured traffic with each peer, each way (None:
        not measured): the workload's traffic over the pods that share it (_pods_behind)."""
        workload = workload_key(pod, self.args.workload_label)
        graph = self.graph(snapshot)
        edges = graph.of(workload)
        if not edges:
            return None
        with self._lock:
            self._roll(workload, *edges)
            self._placed.sync(snapshot)
            return pod_flows(graph, workload, self._pods_behind(workload))

    def _local(self, peer: str, row: int | None) -> float:
        """The part of `peer`'s pods on snapshot row `row` (call under the lock, synced)."""
        if row is None:
            return 0.0
        here = self._placed.rows.get(peer, {}).get(row, 0)
        return here / self._peer_pods(peer) if here else 0.0

    def _peer_pods(self, peer: str) -> int:
        """How many pods a peer's share of traffic is spread over: placed, or known (pending ones
        will most likely land elsewhere, so their share leaves the node), a surge pod not counted."""
        steady = self._steady.get(peer)
        return max(self._placed.placed(peer), len(self._known(peer)) if steady is None else steady, 1)

    def _roll(self, *workloads: str) -> None:
        """Which of each workload's pods a rollout is replacing (call under the lock): the pods
        of every template revision but the newest pod's, when it has two.  The index then
        leaves them out (their node keeps none of their peers' traffic for long, and new pods
        are not pulled next to them) and the workload's steady pod count is its largest
        revision's, so a surge pod is priced at the share it keeps once the rollout is done."""
        for workload in workloads:
            pods = self._known(workload)
            counts: dict[str, int] = {}
            for p in pods:
                t = template_of(p)
                counts[t] = counts.get(t, 0) + 1
            if len(counts) <= 1:
                self._placed.set_superseded(workload, frozenset())
                self._steady[workload] = len(pods)
                continue
            newest = template_of(max(pods, key=lambda p: (p.creation_timestamp, template_of(p))))
            self._placed.set_superseded(workload, frozenset(counts.keys() - {newest}))
            self._steady[workload] = max(counts.values())

    def _pods_behind(self, workload: str) -> int:
        """How many pods the workload's measured traffic is shared by (call under the lock): the
        most placed while this graph sample is current (the sample read last by graph()), or
        the pods known now, pending ones included (the new pods of a Recreate rollout, whose
        old pods are gone)."""
        sample = self._sample
        if sample != self._peak_sample:
            self._peak.clear()
            self._peak_sample = sample
        steady = self._steady.get(workload)
        now = max(self._placed.placed(workload), len(self._known(workload)) if steady is None else steady)
        rolling = workload in self._placed.superseded
        # While it rolls out, its old pods still run: the most seen placed counts them and the
        # surge, not the replicas that will share the traffic.
        peak = now if rolling else max(self._peak.get(workload, 0), now)
        if peak:
            self._peak[workload] = peak
        before = self._before.get(workload)
        if before is not None:
            if before[0] >= sample - self.args.prometheus.rate_window_seconds:
                return max(peak, before[1])
            del self._before[workload]  # the sample's window began after they left: not theirs
        return peak

    def departing(self, pod: PodInfo) -> tuple[float, float] | None:
        """(rx, tx) bytes/s the leaving `pod` carried over its node's link, from the graph as last
        polled and the pods the cache knows (the source's ledger asks, on the watch's thread:
        no snapshot here).  None: its workload's traffic is not measured."""
        workload = workload_key(pod, self.args.workload_label)
        graph = traffic_graph(self.source, None)
        if not graph.of(workload):
            return None
        with self._lock:
            others = sum(1 for p in self._known(workload) if p.uid != pod.uid)
            if workload in self._placed.superseded:  # a rollout's old pod: a surge is no replica
                pods = max(self._steady.get(workload, others + 1), 1)
            else:
                pods = max(others + 1, self._peak.get(workload, 0))
            now = self.source.wall()
            window = self.args.prometheus.rate_window_seconds
            when, before = self._before.get(workload, (0.0, 0))
            recent = when >= now - window  # the same rollout
            self._before[workload] = (now, max(pods, before) if recent else pods)
            self._left[workload] = [*self._recent(workload, now - window), (now, pod.uid, pod.node_name)]
            sampled = {peer: self._sampled(peer, now - window) for peer in graph.of(workload)}
        flows = pod_flows(graph, workload, pods)
        if flows is None:
            return None

        def local(peer: str) -> float:
            nodes = sampled.get(peer, [])
            return nodes.count(pod.node_name) / max(len(nodes), 1)

        return leaving(flows, local)

    def _sampled(self, workload: str, since: float) -> list[str]:
        """The nodes of the workload's pods while a sample whose window began at `since` was
        made (call under the lock): its placed pods, terminating ones included, and those that
        left since then.  Pending pods carried nothing in it."""
        where = {p.uid: p.node_name for p in self.handle.pods_by_index(self._index, workload) if p.node_name}
        for _, uid, node in self._recent(workload, since):
            where.setdefault(uid, node)
        return list(where.values())

    def _recent(self, workload: str, since: float) -> list[tuple[float, str, str]]:
        """The workload's departures since `since`, older ones forgotten (call under the lock)."""
        left = [e for e in self._left.pop(workload, ()) if e[0] >= since]
        if left:
            self._left[workload] = left
        return left


@dataclass(frozen=True, slots=True)
class _LeavingTraffic:
    """The pod's link load for its cycle (BANDWIDTH_HINT), priced on that cycle's snapshot by
    the profile's own plugin: on one node for Reserve, on every candidate for LoadThreshold.
    The pod's flows are looked up once, when first asked (pods without edges cost one write
    per cycle)."""

    plugin: TrafficAffinity
    snapshot: Snapshot
    _flows: list[PodFlows | None] = field(default_factory=list)

    def _of(self, pod: PodInfo) -> PodFlows | None:
        if not self._flows:
            self._flows.append(self.plugin.flows(pod, self.snapshot))
        return self._flows[0]

    def __call__(self, pod: PodInfo, node_name: str) -> tuple[float, float] | None:
        flows = self._of(pod)
        if flows is None:
            return None
        plugin = self.plugin
        row = self.snapshot.index.get(node_name)
        with plugin._lock:
            plugin._placed.sync(self.snapshot)
            return leaving(flows, lambda peer: plugin._local(peer, row))

    def rows(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> tuple[FloatArray, FloatArray] | None:
        flows = self._of(pod)
        if flows is None:
            return None
        plugin = self.plugin
        with plugin._lock:
            plugin._placed.sync(snapshot)
            placed = plugin._placed

            def rows_of(peer: str) -> tuple[IntArray, FloatArray]:
                at, count, _ = placed.arrays(peer)
                return at, count

            return leaving_rows(flows, rows_of, plugin._peer_pods, idx, len(snapshot))
