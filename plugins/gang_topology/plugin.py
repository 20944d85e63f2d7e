"""GangTopology: a gang placed whole inside one topology domain, chosen by live link headroom.

PreFilter: when the first member of a gang is scheduled, the gang's placement
is decided once (plugins/gangs/placement.py): every domain of the gang's level
that can hold the whole gang (its members through the profile's real PreFilter
and Filter plugins, each counted on its node before the next), the one whose
links keep the most headroom with the gang's bandwidth added (the fuller one
on ties), and every member of the gang is steered there (the PreFilter node
set).  The decision is kept by the gang manager from the first member's
Reserve on; members that come later (a replaced pod) go to the gang's domain,
or wait when it is full.  With members placed and no decision kept (after a
restart), it is rebuilt from where they are (not counted as a new placement)
and kept from the next Reserve on.  A required level no domain satisfies
rejects the member (UnschedulableAndUnresolvable, naming each domain tried and
why it cannot hold the gang), so Coscheduling releases whatever the gang holds.

Score (inside the domain, for a pod of a gang): the members already reserved
or bound pull it into their domains, measured link load pushes it off busy
links:

    share_L(n)  = members placed in n's domain of level L / members placed
    locality(n) = mean of share_L(n) over the listed levels; 1 while nothing is placed
    link(n)     = 1 - min(u, 1), u as NetworkTraffic computes it (load over link speed,
                  or relative to the busiest fresh candidate without one); stale
                  nodes get the fresh candidates' mean (failOpen) or 0 (failClosed)
    score       = round(100 x ((1 - linkLoadWeight) x locality + linkLoadWeight x link))

Pods without a gang skip the plugin.  Members are found with the pod lister
(bound and assumed, i.e. reserved, pods), so a member waiting at Permit
already counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from netsched.framework import (
    ASSIGNED_POD,
    MAX_NODE_SCORE,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Diagnosis,
    Handle,
    IntArray,
    PodInfo,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    Snapshot,
    Status,
)
from netsched.framework.names import COSCHEDULING, GANG_TOPOLOGY
from netsched.metrics.plugin_api import (
    LINK_SPEED,
    METRICS_EVENTS,
    NETWORK_RX,
    NETWORK_TX,
    RX_COL,
    TX_COL,
    FloatArray,
    MetricScorePlugin,
    cold_link_scores,
    network_load,
    pod_load,
    source_for,
    to_int_scores,
)

from ..gangs import (
    PLACED,
    PLACEMENT_KEY,
    PODGROUP_KIND,
    SPREAD,
    UNSCHEDULABLE,
    Decision,
    Gang,
    GroupError,
    LinkView,
    Placement,
    PodGroup,
    Scene,
    TopologyRequest,
    decide,
    derive,
    gangs_of,
    group_name,
    is_own_group,
    placement_in,
    spec_changed,
)
from .args import GangTopologyArgs

# The simulation of a gang's members leaves these out: their PreFilters are about the gang.
GANG_PLUGINS = (COSCHEDULING, GANG_TOPOLOGY)


class GangTopology(
    MetricScorePlugin[GangTopologyArgs],
    PreFilterPlugin[GangTopologyArgs],
    PostFilterPlugin[GangTopologyArgs],
    PreScorePlugin[GangTopologyArgs],
):
    name = GANG_TOPOLOGY

    def __init__(self, args: GangTopologyArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.source = source_for(handle, self.args.prometheus, self.name)
        self.source.require(NETWORK_RX, NETWORK_TX, LINK_SPEED)
        self.gangs = gangs_of(handle)
        self.policy = self.args.policy()
        self._trial: Snapshot | None = None

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A member rejected because no domain holds its gang: room freed or added, a node
        relabelled (domains change), new link measurements, or its PodGroup added or its spec
        or topology annotations changed (not a status write)."""
        return [
            *METRICS_EVENTS,
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE)),
            ClusterEventWithHint(
                ClusterEvent(
                    NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE
                    | ActionType.UPDATE_NODE_TAINT,
                )
            ),
            ClusterEventWithHint(ClusterEvent(PODGROUP_KIND, ActionType.ADD), self._group_added),
            ClusterEventWithHint(ClusterEvent(PODGROUP_KIND, ActionType.UPDATE), self._group_spec_changed),
        ]

    def _group_added(self, pod: PodInfo, _old: object, new: object) -> QueueingHint:
        return QueueingHint.QUEUE if is_own_group(pod, new) else QueueingHint.SKIP

    def _group_spec_changed(self, pod: PodInfo, old: object, new: object) -> QueueingHint:
        """The spec or a topology annotation of the pod's own group; status writes (ours
        included) change nothing PreFilter reads."""
        return QueueingHint.QUEUE if is_own_group(pod, new) and spec_changed(old, new) else QueueingHint.SKIP

    # ------------------------------------------------------------ PreFilter: the one decision

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not group_name(pod):
            return None, Status.skip()
        try:
            pg = self.gangs.group_of(pod)
        except GroupError as e:
            return None, Status.unresolvable(str(e))
        request = None if pg is None else pg.topology or self.policy.default
        if pg is None or request is None:
            return None, Status.skip()
        decision = self._decision(pod, pg, request, snapshot)
        if decision is None:
            return None, Status.skip()
        state.write(PLACEMENT_KEY, decision)
        state.note("gang", decision.placement)
        placement = decision.placement
        if placement.outcome == UNSCHEDULABLE:
            return None, Status.unresolvable(placement.message())
        if placement.node_names is None:
            return None, Status.success()
        return PreFilterResult(set(placement.node_names)), Status.success()

    def _decision(
        self, pod: PodInfo, pg: PodGroup, request: TopologyRequest, snapshot: Snapshot
    ) -> Decision | None:
        members = self.gangs.members(pg)
        placed = [p for p in self.gangs.placed(pg, members) if p.uid != pod.uid]
        if placed:
            kept = self.gangs.placement(pg.full_name)
            if kept is not None and kept.request == request:
                return Decision(kept, False)
            return Decision(derive(pg.full_name, request, placed, snapshot, self.policy), False)
        need = pg.min_member - len(placed)
        # The pending members (a released one still on its node is not: it comes back
        # pending once its binding cycle unreserves it).
        others = sorted((p for p in members if not p.node_name and p.uid != pod.uid), key=lambda p: p.name)
        if need < 1 or len(others) + 1 < need:
            return None  # too few members to decide for the gang (Coscheduling turns it away)
        self.gangs.drop_placement(pg.full_name)  # no member placed: an old decision is void

        # The members are tried on cloned nodes in a what-if of the cycle's snapshot, kept
        # between decisions so only the rows that changed since are copied again.
        trial = self._trial = snapshot.what_if(self._trial)

        def feasible(member: PodInfo, rows: IntArray) -> tuple[IntArray, Diagnosis]:
            return self.handle.filter_rows(member, trial, rows, skip=GANG_PLUGINS)

        gang = Gang(pg.full_name, request, (pod, *others[: need - 1]))
        placement = decide(gang, Scene(snapshot, trial, feasible), self.policy, self._links(snapshot))
        return Decision(placement, True)

    def _links(self, snapshot: Snapshot) -> LinkView:
        net = network_load(self.source, snapshot)
        estimation = self.args.prometheus.estimation

        def bandwidth(member: PodInfo) -> float:
            load = pod_load(member, estimation)
            return float(max(load[RX_COL], load[TX_COL]))

        return LinkView(net.busy, net.speed, net.fresh, self.source.fail_closed, bandwidth, net.measured)

    # ------------------------------------------------------------ PostFilter: a gang no domain holds

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        decision = placement_in(state)
        if decision is not None and decision.fresh and decision.placement.outcome == UNSCHEDULABLE:
            placement = decision.placement
            self._observe(placement)
            ns, _, name = placement.group.partition("/")
            self.gangs.warn_once(self.handle.events, ns, name, "FailedScheduling", placement.message())
        return None, Status.unschedulable(plugin=self.name)

    # ------------------------------------------------------------ Reserve: the decision is kept

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """A decision this cycle made is kept and counted; one rebuilt from the members already
        placed (none kept: after a restart) is kept uncounted, so later members need not rebuild it."""
        decision = placement_in(state)
        if decision is not None and decision.placement.outcome in (PLACED, SPREAD):
            if decision.fresh:
                if self.gangs.keep_placement(decision.placement):
                    self._observe(decision.placement)
            elif decision.placement.derived:
                self.gangs.keep_placement(decision.placement)
        return super().reserve(state, pod, node_name)

    def _observe(self, placement: Placement) -> None:
        if self.gangs.metrics is not None:
            labels = (placement.outcome, placement.level, self.handle.profile_name)
            self.gangs.metrics.gang_placements.labels(*labels).inc()

    # ------------------------------------------------------------ Score

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        """Skip for a pod of no gang (its Score is then skipped); a gang member is scored in
        Score, over every candidate at once."""
        if not group_name(pod):
            return Status.skip()
        return Status.success()

    def candidate_scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        w = self.args.link_load_weight
        raw = MAX_NODE_SCORE * ((1.0 - w) * self.locality(pod, snapshot, idx) + w * self.link(snapshot, idx))
        return to_int_scores(raw)

    def placed_members(self, pod: PodInfo, snapshot: Snapshot) -> list[int]:
        """Snapshot rows of the gang's other placed members (GangManager.placed: bound or
        reserved, not released since), one entry per member."""
        rows = []
        for p in self.gangs.placed_of(pod.namespace, group_name(pod)):
            row = snapshot.index.get(p.node_name)
            if p.uid != pod.uid and row is not None:
                rows.append(row)
        return rows

    def locality(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> FloatArray:
        rows = self.placed_members(pod, snapshot)
        if not rows or not self.args.levels:
            return np.ones(len(idx))
        total = np.zeros(len(idx))
        for key in self.args.levels:
            total += self._share(snapshot, key, rows, idx)
        return total / len(self.args.levels)

    @staticmethod
    def _share(snapshot: Snapshot, key: str, rows: list[int], idx: IntArray) -> FloatArray:
        """Per candidate: the share of placed members in its domain of label `key` (0 unlabelled)."""
        column = snapshot.label_column(key)
        per_domain = Counter(column[r] for r in rows if column[r] is not None)
        if len(per_domain) == 1:  # the gang holds one domain (the usual case): a vector compare
            ((value, placed),) = per_domain.items()
            return np.asarray(column[idx] == value, dtype=float) * (placed / len(rows))
        return np.array(
            [per_domain.get(d, 0) if d is not None else 0 for d in column[idx]], dtype=float
        ) / len(rows)

    def link(self, snapshot: Snapshot, idx: IntArray) -> FloatArray:
        """1 - link utilisation per candidate, in [0, 1] (NetworkTraffic's u)."""
        return cold_link_scores(self.source, snapshot, idx) / MAX_NODE_SCORE
