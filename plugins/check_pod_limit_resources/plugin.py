"""CheckPodLimitResources: keep the sum of limits on a node under a share of its allocatable.

The seed articles' second Filter plugin.  For each resource listed in
`limitRatio`, the limits of the pods already on the node plus the new pod's
must stay within ratio x allocatable; a pod without a limit for a resource
counts its request instead (its effective request, as the Fit filter uses).
Requests decide whether a pod fits (NodeResourcesFit); this plugin caps how
far limits may overcommit a node.

A node rejected only because of the pods on it is Unschedulable (preemption
can make room); one where the new pod alone is over the cap is
UnschedulableAndUnresolvable.  Limits are not in the node table, so the batch
form sums each candidate node's pods (one pass per node and cycle).
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

from .args import CheckPodLimitResourcesArgs


def limit_or_request(pod: PodInfo, resource: str) -> int:
    """The pod's limit for `resource`, or its request when it sets no limit."""
    limit = pod.limits.get(resource, 0)
    return limit if limit else pod.requests.get(resource, 0)


def reason(resource: str) -> str:
    return f"Insufficient {resource} limit headroom"


class CheckPodLimitResources(FilterPlugin[CheckPodLimitResourcesArgs]):
    name = names.CHECK_POD_LIMIT_RESOURCES

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        reasons: list[str] = []
        unresolvable = False
        for resource, ratio in self.args.limit_ratio:
            want = limit_or_request(pod, resource)
            cap = int(node.allocatable.get(resource, 0) * ratio)
            used = sum(limit_or_request(p, resource) for p in node.pods.values())
            if used + want > cap:
                reasons.append(reason(resource))
                unresolvable |= want > cap
        if not reasons:
            return Status.success()
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, reasons)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        groups: dict[tuple[Code, tuple[str, ...]], list[int]] = {}
        for j, row in enumerate(idx.tolist()):
            st = self.filter(state, pod, snapshot.nodes[row])
            if not st.ok:
                groups.setdefault((st.code, tuple(st.reasons)), []).append(j)
        out = []
        for (code, reasons), rows in groups.items():
            mask = np.zeros(len(idx), dtype=bool)
            mask[rows] = True
            out.append(Rejection(mask, reasons, code))
        return out
