"""A pod's spread constraints as the plugin uses them, and which nodes count.

Own constraints: the pod's topologySpreadConstraints of one kind
(DoNotSchedule for Filter, ScheduleAnyway for Score), with matchLabelKeys
merged into the selector as `key In (pod's value)`.

Default constraints apply to a pod without its own.  kube derives their
selector from the Services, ReplicationControllers, ReplicaSets and
StatefulSets selecting the pod; netsched watches none of those, so a pod whose
controller is a ReplicaSet, StatefulSet or ReplicationController is spread by
its own labels, minus the labels that differ per pod or per revision
(statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index,
controller-revision-hash).  Pods of a bare Service or other controllers get no
default constraints.

Node inclusion policies decide which nodes' pods count towards the domains:
nodeAffinityPolicy Honor (default) counts only nodes matching the pod's
nodeSelector and required node affinity; nodeTaintsPolicy Honor counts only
nodes whose NoSchedule/NoExecute taints the pod tolerates (default Ignore).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from netsched.framework import (
    BoolArray,
    IntArray,
    LabelSelector,
    NodeInfo,
    PodIndex,
    PodInfo,
    Requirement,
    Snapshot,
    TopologySpreadConstraint,
)

DEFAULTED_OWNER_KINDS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})
PER_POD_LABELS = frozenset(
    {"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "controller-revision-hash"}
)
_SCHEDULING_TAINT_EFFECTS = ("NoSchedule", "NoExecute")
_MASKS_KEY = "pts:node-masks"
_MAX_MASKS = 1024


@dataclass(slots=True, frozen=True)
class Constraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector | None  # None selects no pod (a constraint without labelSelector)
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_taints: bool = False


def own_constraints(pod: PodInfo, action: str) -> tuple[Constraint, ...]:
    return tuple(_own(pod, c) for c in pod.topology_spread_constraints if c.when_unsatisfiable == action)


def _own(pod: PodInfo, c: TopologySpreadConstraint) -> Constraint:
    selector = c.label_selector
    extra = tuple(Requirement(k, "In", (pod.labels[k],)) for k in c.match_label_keys if k in pod.labels)
    if extra:
        selector = (
            LabelSelector(selector.match_labels, selector.match_expressions + extra)
            if selector is not None
            else LabelSelector((), extra)
        )
    return _compiled(c, selector)


def _compiled(c: TopologySpreadConstraint, selector: LabelSelector | None) -> Constraint:
    return Constraint(
        c.max_skew,
        c.topology_key,
        selector,
        c.min_domains or 1,
        c.node_affinity_policy == "Honor",
        c.node_taints_policy == "Honor",
    )


def default_selector(pod: PodInfo) -> LabelSelector | None:
    """The selector default constraints spread the pod by, or None when it gets none."""
    if pod.owner_kind not in DEFAULTED_OWNER_KINDS:
        return None
    labels = sorted((k, v) for k, v in pod.labels.items() if k not in PER_POD_LABELS)
    if not labels:
        return None
    return LabelSelector(tuple(labels))


def default_constraints(
    pod: PodInfo, action: str, defaults: tuple[TopologySpreadConstraint, ...]
) -> tuple[Constraint, ...]:
    chosen = [c for c in defaults if c.when_unsatisfiable == action]
    if not chosen:
        return ()
    selector = default_selector(pod)
    if selector is None:
        return ()
    return tuple(_compiled(c, selector) for c in chosen)


# ---------------------------------------------------------------- which nodes count


def node_matches_affinity(pod: PodInfo, node: NodeInfo) -> bool:
    """The pod's nodeSelector and required node affinity (kube's RequiredNodeAffinity.Match)."""
    labels = node.labels
    for k, v in pod.node_selector.items():
        if labels.get(k) != v:
            return False
    na = pod.required_node_affinity
    return na is None or na.matches(labels, node.name)


def node_taints_tolerated(pod: PodInfo, node: NodeInfo) -> bool:
    for taint in node.taints:
        if taint.effect in _SCHEDULING_TAINT_EFFECTS and not any(t.tolerates(taint) for t in pod.tolerations):
            return False
    return True


def affinity_mask(snapshot: Snapshot, pod: PodInfo) -> BoolArray | None:
    """Rows matching the pod's node affinity (None: every row), cached per label layout."""
    if not pod.node_selector and pod.required_node_affinity is None:
        return None
    masks = _masks(snapshot)
    key = ("affinity", tuple(sorted(pod.node_selector.items())), pod.required_node_affinity)
    got = masks.get(key)
    if got is None:
        got = masks[key] = np.fromiter(
            (node_matches_affinity(pod, n) for n in snapshot.nodes), dtype=bool, count=len(snapshot)
        )
    return got


def taints_mask(snapshot: Snapshot, pod: PodInfo) -> BoolArray | None:
    """Rows whose scheduling taints the pod tolerates (None: every row), cached per taint layout."""
    masks = _masks(snapshot)
    key = ("taints", pod.tolerations)
    got = masks.get(key)
    if got is None:
        got = masks[key] = np.fromiter(
            (node_taints_tolerated(pod, n) for n in snapshot.nodes), dtype=bool, count=len(snapshot)
        )
    return got


def _masks(snapshot: Snapshot) -> dict[tuple[Any, ...], BoolArray]:
    """Node masks by pod property, kept in the snapshot cache (cleared when labels or taints change)."""
    got = snapshot.cache.get(_MASKS_KEY)
    if not isinstance(got, dict) or len(got) > _MAX_MASKS:
        got = snapshot.cache[_MASKS_KEY] = {}
    return got


def inclusion_mask(
    c: Constraint, base: BoolArray, affinity: BoolArray | None, taints: BoolArray | None
) -> BoolArray:
    m = base.copy()
    if c.honor_node_affinity and affinity is not None:
        m &= affinity
    if c.honor_taints and taints is not None:
        m &= taints
    return m


def node_included(c: Constraint, pod: PodInfo, node: NodeInfo) -> bool:
    if c.honor_node_affinity and not node_matches_affinity(pod, node):
        return False
    return not (c.honor_taints and not node_taints_tolerated(pod, node))


# ---------------------------------------------------------------- counting


def matching_row_counts(index: PodIndex, namespace: str, selector: LabelSelector | None) -> IntArray:
    """Non-terminating pods in `namespace` matching selector, per snapshot row (kube's countPodsMatchSelector).

    Read-only: the index keeps the vector current between cycles."""
    if selector is None:
        return np.zeros(index.n_rows, dtype=np.int64)
    return index.select_counts(
        ("pts", selector), frozenset((namespace,)), lambda g: not g.deleting and selector.matches(g.labels)
    )


def count_on_node(node: NodeInfo, namespace: str, selector: LabelSelector | None) -> int:
    if selector is None:
        return 0
    return sum(
        1
        for p in node.pods.values()
        if not p.deleting and p.namespace == namespace and selector.matches(p.labels)
    )
