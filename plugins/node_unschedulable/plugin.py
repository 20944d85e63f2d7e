"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take no new pods.

`kubectl cordon` sets the flag; the node lifecycle controller mirrors it as
the taint node.kubernetes.io/unschedulable:NoSchedule, and a pod tolerating
that taint (DaemonSet pods do) may still land on the node, as in kube.
"""

from __future__ import annotations

from netsched.framework import (
    Code,
    CycleState,
    FilterPlugin,
    IntArray,
    NodeInfo,
    PodInfo,
    Rejection,
    Snapshot,
    Status,
    Taint,
)

ERR_REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def tolerates_unschedulable(pod: PodInfo) -> bool:
    return any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations)


class NodeUnschedulable(FilterPlugin):
    name = "NodeUnschedulable"

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
