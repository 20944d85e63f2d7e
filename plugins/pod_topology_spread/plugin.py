"""PodTopologySpread: spread matching pods evenly over topology domains.

Hard constraints (whenUnsatisfiable: DoNotSchedule) are enforced by
PreFilter/Filter (filtering.py), soft ones (ScheduleAnyway) scored by
PreScore/Score (scoring.py), both as kube-scheduler does, including
minDomains, nodeAffinityPolicy, nodeTaintsPolicy, matchLabelKeys and default
constraints (args.py, constraints.py).

A pod with no constraints of a kind, and no default constraints that apply to
it, returns Skip from PreFilter (or PreScore) at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from netsched.framework import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    IntArray,
    NodeInfo,
    PodIndex,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    Rejection,
    ScorePlugin,
    Snapshot,
    Status,
    names,
    synced_pod_index,
)

from . import filtering, scoring
from .args import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
)
from .constraints import (
    DEFAULTED_OWNER_KINDS,
    Constraint,
    default_constraints,
    own_constraints,
)


class PodTopologySpread(
    PreFilterPlugin[PodTopologySpreadArgs],
    FilterPlugin[PodTopologySpreadArgs],
    PreScorePlugin[PodTopologySpreadArgs],
    ScorePlugin[PodTopologySpreadArgs],
):
    name = names.POD_TOPOLOGY_SPREAD

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """An assigned pod counted by one of the pod's constraints added, changed or deleted; a node
        added, deleted, relabelled or retainted (domains and eligible nodes)."""
        node_actions = (
            ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        )
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ALL), _counted_by_a_constraint),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
        ]

    def __init__(self, args: PodTopologySpreadArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.defaults = self.args.effective_defaults
        self.system_defaulted = self.args.defaulting_type == SYSTEM_DEFAULTING
        self._default_actions = frozenset(c.when_unsatisfiable for c in self.defaults)
        self._index: PodIndex | None = None

    def constraints(self, pod: PodInfo, action: str) -> tuple[Constraint, ...]:
        """The pod's constraints of one kind (DoNotSchedule or ScheduleAnyway), own or default."""
        if pod.topology_spread_constraints:
            return own_constraints(pod, action)
        if action not in self._default_actions or pod.owner_kind not in DEFAULTED_OWNER_KINDS:
            return ()
        return default_constraints(pod, action, self.defaults)

    def _pod_index(self, state: CycleState, snapshot: Snapshot) -> PodIndex:
        self._index = synced_pod_index(state, snapshot, self._index)
        return self._index

    # ------------------------------------------------------------ PreFilter / Filter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None, Status.skip()
        s = filtering.compute(pod, snapshot, self._pod_index(state, snapshot), constraints)
        state.write(filtering.PRE_FILTER_KEY, s)
        return None, Status.success()

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status:
        s = state.get(filtering.PRE_FILTER_KEY)
        if isinstance(s, filtering.FilterState):
            filtering.update_with_pod(s, pod, to_add, node, 1)
        return Status.success()

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status:
        s = state.get(filtering.PRE_FILTER_KEY)
        if isinstance(s, filtering.FilterState):
            filtering.update_with_pod(s, pod, to_remove, node, -1)
        return Status.success()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        s: filtering.FilterState = state.read(filtering.PRE_FILTER_KEY)
        return filtering.filter_node(s, node)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        s: filtering.FilterState = state.read(filtering.PRE_FILTER_KEY)
        return filtering.filter_rows(s, idx)

    # ------------------------------------------------------------ PreScore / Score

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        if len(snapshot) == 0:
            return Status.skip()
        constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return Status.skip()
        # Nodes lacking a key are still scored under the system defaults (a
        # cluster without zones still spreads by hostname).
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        s = scoring.compute(
            pod, snapshot, self._pod_index(state, snapshot), constraints, idx, require_all=require_all
        )
        state.write(scoring.PRE_SCORE_KEY, s)
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s: scoring.ScoreState = state.read(scoring.PRE_SCORE_KEY)
        return scoring.score_node(s, node)

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        s: scoring.ScoreState = state.read(scoring.PRE_SCORE_KEY)
        return scoring.score_rows(s, idx)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        scoring.normalize(scores)


def _counted_by_a_constraint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Queue if the changed assigned pod (before or after) is in the pod's namespace and matches a
    constraint's selector: only such pods change the skew."""
    for other in (old, new):
        if other is None or other.namespace != pod.namespace:
            continue
        for c in pod.topology_spread_constraints:
            if c.label_selector is not None and c.label_selector.matches(other.labels):
                return QueueingHint.QUEUE
    return QueueingHint.SKIP
