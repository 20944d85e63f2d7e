"""InterPodAffinity: pod affinity and anti-affinity, required (Filter) and preferred (Score).

Semantics follow kube-scheduler's InterPodAffinity plugin: the incoming pod's
required terms, existing pods' required anti-affinity against the incoming pod
(symmetry), the first-pod-of-a-group exception, hardPodAffinityWeight for
existing pods' required affinity when scoring, and
ignorePreferredTermsOfExistingPods.  See filtering.py and scoring.py.

Pods without affinity cost next to nothing: PreFilter skips unless the pod has
required terms or some node holds a pod with required anti-affinity;
PreScore skips unless the pod has preferred terms or some node holds a pod
with affinity (or always, with ignorePreferredTermsOfExistingPods).
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
from .args import InterPodAffinityArgs
from .terms import NamespaceLabels


class InterPodAffinity(
    PreFilterPlugin[InterPodAffinityArgs],
    FilterPlugin[InterPodAffinityArgs],
    PreScorePlugin[InterPodAffinityArgs],
    ScorePlugin[InterPodAffinityArgs],
):
    name = names.INTER_POD_AFFINITY

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """An assigned pod matching one of the pod's (anti-)affinity terms added, changed or deleted;
        a node added or relabelled (topology domains)."""
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ALL), _matches_a_term),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ]

    def __init__(self, args: InterPodAffinityArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self._index: PodIndex | None = None

    def _pod_index(self, state: CycleState, snapshot: Snapshot) -> PodIndex:
        self._index = synced_pod_index(state, snapshot, self._index)
        return self._index

    # ------------------------------------------------------------ PreFilter / Filter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        existing = bool(snapshot.nodes_with_required_anti_affinity())
        if not existing and not pod.required_affinity and not pod.required_anti_affinity:
            return None, Status.skip()
        s = filtering.compute(
            pod,
            snapshot,
            self._pod_index(state, snapshot),
            NamespaceLabels.of(self.handle),
            existing=existing,
        )
        if (
            s.existing_anti.is_empty()
            and not s.terms.required_affinity
            and not s.terms.required_anti_affinity
        ):
            return None, Status.skip()
        state.write(filtering.PRE_FILTER_KEY, s)
        return None, Status.success()

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status:
        s = state.get(filtering.PRE_FILTER_KEY)
        if isinstance(s, filtering.FilterState):
            filtering.update_with_pod(s, to_add, node, 1)
        return Status.success()

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status:
        s = state.get(filtering.PRE_FILTER_KEY)
        if isinstance(s, filtering.FilterState):
            filtering.update_with_pod(s, to_remove, node, -1)
        return Status.success()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        s: filtering.FilterState = state.read(filtering.PRE_FILTER_KEY)
        return filtering.filter_node(s, node)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        s: filtering.FilterState = state.read(filtering.PRE_FILTER_KEY)
        return filtering.filter_rows(s, snapshot, idx)

    # ------------------------------------------------------------ PreScore / Score

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        own = bool(pod.preferred_affinity or pod.preferred_anti_affinity)
        if not own and (
            self.args.ignore_preferred_terms_of_existing_pods or not snapshot.nodes_with_pod_affinity()
        ):
            return Status.skip()
        if len(idx) == 0:
            return Status.skip()
        s = scoring.compute(
            pod,
            snapshot,
            self._pod_index(state, snapshot),
            NamespaceLabels.of(self.handle),
            hard_weight=self.args.hard_pod_affinity_weight,
            with_own_terms=own,
        )
        if not s.touched:
            return Status.skip()
        state.write(scoring.PRE_SCORE_KEY, s)
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s: scoring.ScoreState = state.read(scoring.PRE_SCORE_KEY)
        return scoring.score_node(s, node)

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        s: scoring.ScoreState = state.read(scoring.PRE_SCORE_KEY)
        return scoring.score_rows(s, snapshot, idx)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        scoring.normalize(scores)


def _matches_a_term(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Queue if the changed assigned pod (before or after) matches one of the pod's required terms'
    label selectors; namespaces are not checked (cheap and conservative)."""
    terms = pod.required_affinity + pod.required_anti_affinity
    if not terms:
        return QueueingHint.QUEUE  # rejected for another reason (existing pods' anti-affinity)
    for other in (old, new):
        if other is None:
            continue
        for term in terms:
            if term.label_selector is not None and term.label_selector.matches(other.labels):
                return QueueingHint.QUEUE
    # Existing pods' anti-affinity against this pod: a deletion may lift it.
    if new is None and old is not None and old.required_anti_affinity:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP
