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
plugin only tells them how much of a new pod's traffic leaves its node: PreFilter
leaves a bandwidth hint in the pod's cycle state (BANDWIDTH_HINT; it looks the
edges up only if called, and PreScore, not run when one node is feasible, replaces
it with the edges it read), which the load-aware plugins' Reserve hands to the
estimator: the workload's measured per-pod traffic minus the part exchanged with
peers on the same node.  PreFilter never filters (Skip).  The hint is per cycle, so profiles sharing a `prometheus:` block (one estimator) and the
explainer's replica never take over each other's.  A pod whose workload has no
placed pod (all old pods gone, before a new sample) gets the estimator's default
rather than the whole workload's traffic.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    RowScores,
    TrafficGraph,
    source_for,
    traffic_graph,
)

from .appgroup import APPGROUP_LABEL, APPGROUPS_KEY, appgroup_edges
from .args import TrafficAffinityArgs
from .cost import invert, traffic_costs
from .declared import Declared, declared_edges
from .explain import TrafficNote
from .placed import Peers, WorkloadIndex, local_weight, peers_of
from .shares import NODE_LEVEL, CrossShares, cross_shares

log = logging.getLogger(__name__)

MEASURED, DECLARED = "measured", "declared"
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
        self._scratch: FloatArray = np.zeros(0)  # traffic_costs' per-row gathering space
        self._lock = threading.Lock()  # explain and the estimator's hint read from other threads
        self._reported: set[str] = set()
        # Most pods of each workload seen placed while the current graph sample is read (reset
        # when a new sample comes): a workload's measured traffic divides by it once its old
        # pods are gone (a Recreate rollout), rather than charging one new pod all of it.
        self._peak: dict[str, int] = {}
        self._peak_sample = -1.0
        self._sample = 0.0  # sampled_at of the graph read last (0: none)
        self._unmatched = False  # the graph named no placed pod's workload at the last check
        # The node rows the share task reads labels from: (index, nodes) of the snapshot a cycle
        # of this plugin last saw, set in one write.  The handle's snapshot is not for another
        # thread: between cycles the cache rebuilds it in place (nodes first, then index).
        self._rows: tuple[Mapping[str, int], Sequence[NodeInfo]] = ({}, [])
        self._publish_shares()

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
        runtime returns before PreScore (kube does too)."""
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
        workload, origin, edges = self.edges(pod, snapshot)
        if origin == MEASURED:  # Reserve's estimate of the pod's link load, on this cycle's snapshot
            state.write(BANDWIDTH_HINT, _LeavingTraffic(self, snapshot, (workload, edges)))
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
        label = self.args.workload_label
        self.handle.add_pod_index(_WORKLOAD_INDEX + label, lambda p: workload_key(p, label))
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
            self.check_match(got)
            matched.labels(profile).set(got.matched)
            workloads.labels(profile).set(got.workloads)
            total.labels(profile).set(got.total)
            node.labels(profile).set(got.crossing.get(NODE_LEVEL, 0.0))
            for lv in self.args.levels:
                level.labels(profile, lv).set(got.crossing.get(lv, 0.0))

        self.handle.every(
            f"{self.name}/shares/{profile}", self.args.prometheus.poll_interval_seconds, publish
        )

    def check_match(self, got: CrossShares) -> None:
        """Warn once (when it starts) that the measured graph names no workload of a placed pod."""
        unmatched = got.workloads > 0 and got.matched == 0
        if unmatched and not self._unmatched:
            log.warning(
                "No placed pod's workload is in the measured traffic graph; TrafficAffinity is inert "
                "profile=%s workloadLabel=%s graphWorkloads=%d hint=%s",
                self.handle.profile_name,
                self.args.workload_label or "<controller name>",
                got.workloads,
                "make workloadLabel name workloads as the mesh does, or set traffic.labels to the "
                "mesh's label that matches (e.g. source_canonical_service)",
            )
        self._unmatched = unmatched

    def _nodes_of(self, workload: str) -> list[str]:
        pods = self.handle.pods_by_index(_WORKLOAD_INDEX + self.args.workload_label, workload)
        return [p.node_name for p in pods if p.node_name and not p.deleting]

    def _domain_of(self, node: str, level: str) -> str | None:
        """On the periodic thread: the index and rows a cycle published together (a later
        rebuild replaces both lists; an in-place row update keeps the row's node name)."""
        index, nodes = self._rows
        row = index.get(node)
        return nodes[row].labels.get(level) if row is not None else None

    # ------------------------------------------------------------ link-load estimate

    def pod_bandwidth(
        self, pod: PodInfo, node_name: str, snapshot: Snapshot | None = None
    ) -> tuple[float, float] | None:
        """(rx, tx) bytes/s of a just-placed pod on `node_name` (what Reserve gets through the
        cycle's BANDWIDTH_HINT); None: its traffic is not measured.  `snapshot`: the cycle's,
        else the handle's."""
        snap = snapshot if snapshot is not None else self.handle.snapshot()
        workload = workload_key(pod, self.args.workload_label)
        return self.leaving(workload, self.graph(snap).of(workload), snap, node_name)

    def leaving(
        self, workload: str, edges: Mapping[str, float], snapshot: Snapshot, node_name: str
    ) -> tuple[float, float] | None:
        """(rx, tx) bytes/s of a new pod of `workload` on `node_name`: the workload's measured
        traffic per placed pod, less the part exchanged with peers on that node (pod-to-pod
        traffic on one node never reaches the NIC).  None (the estimator's default) when not
        measured, or when no pod of the workload is placed nor was during this sample (the
        sample read last by graph(): this cycle's PreScore, or pod_bandwidth)."""
        if not edges:
            return None
        row = snapshot.index.get(node_name)
        with self._lock:
            self._placed.sync(snapshot)
            own = self._pods_behind(workload)
            local = local_weight(self._placed, edges, row) if row is not None else 0.0
        if own <= 0:
            return None
        leaving = max((sum(edges.values()) - local) / own, 0.0)
        return leaving / 2, leaving / 2  # an edge's rate counts both directions together

    def _pods_behind(self, workload: str) -> int:
        """How many pods the workload's measured traffic is shared by: the most placed while
        this graph sample is current (call under the lock)."""
        sample = self._sample
        if sample != self._peak_sample:
            self._peak.clear()
            self._peak_sample = sample
        now = self._placed.placed(workload)
        peak = max(self._peak.get(workload, 0), now)
        if peak:
            self._peak[workload] = peak
        return peak


@dataclass(frozen=True, slots=True)
class _LeavingTraffic:
    """The estimator's bandwidth hint for one cycle's pod, priced on that cycle's snapshot by
    the profile's own plugin.  PreFilter leaves it without `measured`: the pod's edges are
    looked up only if Reserve calls it (pods without edges cost one write per cycle);
    PreScore replaces it with the (workload, measured edges) it read."""

    plugin: TrafficAffinity
    snapshot: Snapshot
    measured: tuple[str, Mapping[str, float]] | None = None

    def __call__(self, pod: PodInfo, node_name: str) -> tuple[float, float] | None:
        if self.measured is None:
            return self.plugin.pod_bandwidth(pod, node_name, self.snapshot)
        workload, edges = self.measured
        return self.plugin.leaving(workload, edges, self.snapshot, node_name)
