"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take no new pods.

`kubectl cordon` sets the flag; the node lifecycle controller mirrors it as
the taint node.kubernetes.io/unschedulable:NoSchedule, and a pod tolerating
that taint (DaemonSet pods do) may still land on the node, as in kube.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    QueueingHint,
    Rejection,
    Snapshot,
    Status,
    Taint,
    names,
)

ERR_REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def tolerates_unschedulable(pod: PodInfo) -> bool:
    return any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations)


class NodeUnschedulable(FilterPlugin[None]):
    name = names.NODE_UNSCHEDULABLE

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A node added or uncordoned (spec.unschedulable counts as a taint change, as upstream)."""
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), _now_schedulable
            )
        ]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if not node.unschedulable or tolerates_unschedulable(pod):
            return Status.success()
        return Status.unresolvable(ERR_REASON)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        mask = snapshot.unschedulable[idx]
        if not mask.any() or tolerates_unschedulable(pod):
            return []
        return [Rejection(mask, (ERR_REASON,), Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]


def _now_schedulable(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if new.unschedulable and not tolerates_unschedulable(pod):
        return QueueingHint.SKIP
    if old is not None and not old.unschedulable:
        return QueueingHint.SKIP  # already schedulable before this update
    return QueueingHint.QUEUE
