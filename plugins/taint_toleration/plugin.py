"""TaintToleration: keep pods off nodes whose taints they do not tolerate.

Filter: the first NoSchedule/NoExecute taint (in node order) that no pod
toleration matches rejects the node, UnschedulableAndUnresolvable, with
kube's reason "node(s) had untolerated taint {key: value}".
Score: the number of PreferNoSchedule taints the pod does not tolerate
(counting only tolerations with effect PreferNoSchedule or empty), then
normalised in reverse, so the node with the most such taints scores 0 and
nodes with none score 100.

Batch form: nodes are grouped by their taint tuple once per snapshot layout
(clusters have few distinct taint sets), and each pod's verdict is computed
per group, memoised by the pod's tolerations.  Per pod that is a couple of
array lookups, whatever the node count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from netsched.framework import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    IntArray,
    NodeInfo,
    PodInfo,
    PreScorePlugin,
    QueueingHint,
    Rejection,
    ScorePlugin,
    Snapshot,
    Status,
    Taint,
    Toleration,
    default_normalize_score,
    names,
)

PRE_SCORE_KEY = "PreScore" + names.TAINT_TOLERATION
HARD_EFFECTS = ("NoSchedule", "NoExecute")
SOFT_EFFECT = "PreferNoSchedule"
_MEMO_LIMIT = 256  # distinct toleration sets kept per layout (two row arrays each)


def untolerated_reason(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> str | None:
    for taint in taints:
        if taint.effect in HARD_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return f"node(s) had untolerated taint {taint}"
    return None


def prefer_tolerations(tolerations: tuple[Toleration, ...]) -> tuple[Toleration, ...]:
    """Tolerations that can tolerate a PreferNoSchedule taint (an empty effect matches all)."""
    return tuple(t for t in tolerations if t.effect in ("", SOFT_EFFECT))


def intolerable_prefer_count(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> int:
    return sum(1 for x in taints if x.effect == SOFT_EFFECT and not any(t.tolerates(x) for t in tolerations))


@dataclass(slots=True)
class _Verdict:
    """One set of pod tolerations' outcome for every snapshot row."""

    reasons: list[str]
    reason_of_row: npt.NDArray[np.int32] | None  # index into reasons, -1 = tolerated; None if no reasons
    prefer_of_row: IntArray | None  # intolerable PreferNoSchedule count; None if all zero


@dataclass(slots=True)
class _TaintGroups:
    """Nodes grouped by identical taint tuples (per snapshot layout)."""

    taints: list[tuple[Taint, ...]]
    group: npt.NDArray[np.int32]  # snapshot row -> group
    any_hard: bool
    any_soft: bool
    memo: dict[tuple[Toleration, ...], _Verdict] = field(default_factory=dict)

    def verdict(self, tolerations: tuple[Toleration, ...]) -> _Verdict:
        got = self.memo.get(tolerations)
        if got is not None:
            return got
        reasons: list[str] = []
        reason_of = np.full(len(self.taints), -1, dtype=np.int32)
        prefer = prefer_tolerations(tolerations)
        counts = np.zeros(len(self.taints), dtype=np.int64)
        for g, taints in enumerate(self.taints):
            why = untolerated_reason(taints, tolerations)
            if why is not None:
                if why not in reasons:
                    reasons.append(why)
                reason_of[g] = reasons.index(why)
            counts[g] = intolerable_prefer_count(taints, prefer)
        # Expanded to rows once, so each pod costs a single gather.
        got = _Verdict(
            reasons,
            reason_of[self.group] if reasons else None,
            counts[self.group] if counts.any() else None,
        )
        if len(self.memo) >= _MEMO_LIMIT:
            self.memo.clear()
        self.memo[tolerations] = got
        return got


def taint_groups(snapshot: Snapshot) -> _TaintGroups:
    key = f"{names.TAINT_TOLERATION}/groups@{snapshot.layout_version}"
    got = snapshot.cache.get(key)
    if isinstance(got, _TaintGroups):
        return got
    index: dict[tuple[Taint, ...], int] = {}
    group = np.fromiter(
        (index.setdefault(n.taints, len(index)) for n in snapshot.nodes),
        dtype=np.int32,
        count=len(snapshot.nodes),
    )
    sets = list(index)
    effects = {t.effect for ts in sets for t in ts}
    got = _TaintGroups(sets, group, bool(effects & set(HARD_EFFECTS)), SOFT_EFFECT in effects)
    snapshot.cache[key] = got
    return got


@dataclass(frozen=True, slots=True)
class _PreScore:
    tolerations: tuple[Toleration, ...]


class TaintToleration(FilterPlugin[None], PreScorePlugin[None], ScorePlugin[None]):
    name = names.TAINT_TOLERATION

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A node added, or its taints changed so that the pod now tolerates them all."""
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), _now_tolerated
            )
        ]

    # ------------------------------------------------------------ filter

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        why = untolerated_reason(node.taints, pod.tolerations)
        return Status.success() if why is None else Status.unresolvable(why)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        groups = taint_groups(snapshot)
        if not groups.any_hard:
            return []
        v = groups.verdict(pod.tolerations)
        if v.reason_of_row is None:
            return []
        codes = v.reason_of_row[idx]
        out = []
        for i, why in enumerate(v.reasons):
            mask = codes == i
            if mask.any():
                out.append(Rejection(mask, (why,), Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        return out

    # ------------------------------------------------------------ score

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        state.write(PRE_SCORE_KEY, _PreScore(prefer_tolerations(pod.tolerations)))
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        got = state.get(PRE_SCORE_KEY)
        prefer = got.tolerations if isinstance(got, _PreScore) else prefer_tolerations(pod.tolerations)
        return intolerable_prefer_count(node.taints, prefer)

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        groups = taint_groups(snapshot)
        if not groups.any_soft:
            return np.zeros(len(idx), dtype=np.int64)
        prefer = groups.verdict(pod.tolerations).prefer_of_row
        return np.zeros(len(idx), dtype=np.int64) if prefer is None else prefer[idx]

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        default_normalize_score(scores, reverse=True)


def _now_tolerated(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if untolerated_reason(new.taints, pod.tolerations) is not None:
        return QueueingHint.SKIP
    if old is not None and untolerated_reason(old.taints, pod.tolerations) is None:
        return QueueingHint.SKIP  # tolerated before as well: not what rejected the pod
    return QueueingHint.QUEUE
