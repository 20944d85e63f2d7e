"""NodeName: a pod that names its node (spec.nodeName) fits only that node.

netsched never queues such pods (the kubelet runs them directly), but the
plugin stays in the default set for parity with kube and for tools that run
the filters on already-placed pods (preemption simulations, what-if checks).
"""

from __future__ import annotations

import numpy as np

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
    names,
)

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin[None]):
    name = names.NODE_NAME

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if not pod.node_name or pod.node_name == node.name:
            return Status.success()
        return Status.unresolvable(ERR_REASON)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        if not pod.node_name:
            return []
        mask = np.ones(len(idx), dtype=bool)
        row = snapshot.index.get(pod.node_name)
        if row is not None:
            mask &= idx != row
        if not mask.any():
            return []
        return [Rejection(mask, (ERR_REASON,), Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]
