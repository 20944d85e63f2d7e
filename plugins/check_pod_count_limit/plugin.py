"""CheckPodCountLimit: a node already running `podCountLimit` pods takes no more.

The seed articles' first Filter plugin.  It counts the pods the scheduler
holds on the node (bound and assumed; terminated pods have left the cache),
which is the "pods" column of the node table, so the batch form is one
comparison.  A rejected node is Unschedulable, not Unresolvable: preempting a
pod there frees a slot.
"""

from __future__ import annotations

from netsched.framework import (
    PODS,
    CycleState,
    FilterPlugin,
    IntArray,
    NodeInfo,
    PodInfo,
    Rejection,
    Snapshot,
    Status,
    names,
)

from .args import CheckPodCountLimitArgs

ERR_REASON = "node(s) reached the pod count limit"
_TERMINAL = ("Succeeded", "Failed")


class CheckPodCountLimit(FilterPlugin[CheckPodCountLimitArgs]):
    name = names.CHECK_POD_COUNT_LIMIT

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        running = sum(1 for p in node.pods.values() if p.phase not in _TERMINAL)
        if running >= self.args.pod_count_limit:
            return Status.unschedulable(ERR_REASON)
        return Status.success()

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        mask = snapshot.requested[:, snapshot.col[PODS]][idx] >= self.args.pod_count_limit
        if not mask.any():
            return []
        # The cache drops terminated pods, but a hand-built snapshot may hold some: recount those rows.
        for j in mask.nonzero()[0].tolist():
            node = snapshot.nodes[int(idx[j])]
            if any(p.phase in _TERMINAL for p in node.pods.values()):
                mask[j] = not self.filter(state, pod, node).ok
        return [Rejection(mask, (ERR_REASON,))] if mask.any() else []
