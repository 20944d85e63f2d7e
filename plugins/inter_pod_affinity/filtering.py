"""InterPodAffinity PreFilter/Filter: required affinity, anti-affinity, and existing pods' anti-affinity.

PreFilter counts, per (topology key, value), the existing pods that
  - match all the incoming pod's required affinity terms   (affinity),
  - match one of its required anti-affinity terms          (anti-affinity),
  - carry a required anti-affinity term matching the pod   (existing anti-affinity),
once per pod, through the pod index (one selector check per workload group).
Filter is then a lookup of the node's label value per term; the batch form
reads a whole chunk of rows through the label codes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netsched.framework import (
    BoolArray,
    Code,
    IntArray,
    LookalikePods,
    NodeInfo,
    PodIndex,
    PodInfo,
    Rejection,
    Snapshot,
    Status,
    label_codes,
)

from .counts import TopoCounts
from .terms import (
    NamespaceLabels,
    PodTerms,
    Term,
    matches_all,
    pod_terms,
    term_matches,
)

PRE_FILTER_KEY = "PreFilterInterPodAffinity"

# kube's wording (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go).
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


@dataclass(slots=True)
class FilterState:
    terms: PodTerms
    existing_anti: TopoCounts  # existing pods whose required anti-affinity matches the pod
    affinity: TopoCounts  # existing pods matching all the pod's required affinity terms
    anti: TopoCounts  # existing pods matching the pod's required anti-affinity terms
    self_match: bool  # the pod matches all its own required affinity terms
    namespace: str
    labels: dict[str, str]
    nsl: NamespaceLabels

    def clone(self) -> FilterState:
        return FilterState(
            self.terms,
            self.existing_anti.clone(),
            self.affinity.clone(),
            self.anti.clone(),
            self.self_match,
            self.namespace,
            self.labels,
            self.nsl,
        )


def group_terms(g: LookalikePods) -> PodTerms:
    """The group's compiled terms, compiled once per group."""
    terms = g.memo
    if not isinstance(terms, PodTerms):
        terms = g.memo = pod_terms(g.rep)
    return terms


def selected_counts(index: PodIndex, terms: tuple[Term, ...], nsl: NamespaceLabels) -> IntArray:
    """Pods per row that every one of `terms` selects (read-only)."""
    return index.select_counts(
        ("ipa", terms) if all(t.cacheable for t in terms) else None,
        terms[0].fixed_namespaces,
        lambda g: all(term_matches(t, g.namespace, g.labels, nsl) for t in terms),
    )


def compute(
    pod: PodInfo, snapshot: Snapshot, index: PodIndex, nsl: NamespaceLabels, *, existing: bool
) -> FilterState:
    """Counts for the pod; `existing` scans existing pods' required anti-affinity (skip when none has any)."""
    own = pod_terms(pod)
    terms = PodTerms(own.required_affinity, own.required_anti_affinity, (), ())
    state = FilterState(
        terms,
        TopoCounts(),
        TopoCounts(),
        TopoCounts(),
        matches_all(terms.required_affinity, pod.namespace, pod.labels, nsl),
        pod.namespace,
        pod.labels,
        nsl,
    )
    if existing:
        for g in index.live_term_groups(index.anti_affinity_gids):
            for t in group_terms(g).required_anti_affinity:
                if term_matches(t, pod.namespace, pod.labels, nsl):
                    state.existing_anti.add_group(t.topology_key, label_codes(snapshot, t.topology_key), g, 1)
    if terms.required_affinity:
        matching = selected_counts(index, terms.required_affinity, nsl)
        for t in terms.required_affinity:
            state.affinity.add_rows(t.topology_key, label_codes(snapshot, t.topology_key), matching, 1)
    for t in terms.required_anti_affinity:
        codes = label_codes(snapshot, t.topology_key)
        state.anti.add_rows(t.topology_key, codes, selected_counts(index, (t,), nsl), 1)
    return state


def update_with_pod(s: FilterState, other: PodInfo, node: NodeInfo, delta: int) -> None:
    """kube's updateWithPod: `other` added to (+1) or removed from (-1) `node`."""
    labels = node.labels
    if other.required_anti_affinity:
        for t in pod_terms(other).required_anti_affinity:
            if term_matches(t, s.namespace, s.labels, s.nsl):
                s.existing_anti.update(labels, t.topology_key, delta)
    if matches_all(s.terms.required_affinity, other.namespace, other.labels, s.nsl):
        for t in s.terms.required_affinity:
            s.affinity.update(labels, t.topology_key, delta)
    for t in s.terms.required_anti_affinity:
        if term_matches(t, other.namespace, other.labels, s.nsl):
            s.anti.update(labels, t.topology_key, delta)


# ---------------------------------------------------------------- per node


def filter_node(s: FilterState, node: NodeInfo) -> Status:
    labels = node.labels
    if not _satisfies_affinity(s, labels):
        return Status.unresolvable(REASON_AFFINITY)
    for t in s.terms.required_anti_affinity:
        v = labels.get(t.topology_key)
        if v is not None and s.anti.get(t.topology_key, v) > 0:
            return Status.unschedulable(REASON_ANTI_AFFINITY)
    for key in s.existing_anti.topology_keys():
        v = labels.get(key)
        if v is not None and s.existing_anti.get(key, v) > 0:
            return Status.unschedulable(REASON_EXISTING_ANTI_AFFINITY)
    return Status.success()


def _satisfies_affinity(s: FilterState, labels: dict[str, str]) -> bool:
    pods_exist = True
    for t in s.terms.required_affinity:
        v = labels.get(t.topology_key)
        if v is None:
            return False  # every topology key must be on the node
        if s.affinity.get(t.topology_key, v) <= 0:
            pods_exist = False
    # The first pod of a group with affinity to itself: nothing matches anywhere
    # yet, the pod matches its own terms, and the node has every key.
    return pods_exist or (s.self_match and s.affinity.is_empty())


# ---------------------------------------------------------------- batch


def filter_rows(s: FilterState, snapshot: Snapshot, idx: IntArray) -> list[Rejection]:
    n = len(idx)
    decided = np.zeros(n, dtype=bool)
    out: list[Rejection] = []

    if s.terms.required_affinity:
        missing = np.zeros(n, dtype=bool)
        pods_exist = np.ones(n, dtype=bool)
        for t in s.terms.required_affinity:
            codes = label_codes(snapshot, t.topology_key)
            missing |= codes.codes[idx] < 0
            pods_exist &= s.affinity.at_rows(t.topology_key, codes, idx) > 0
        first_of_group = s.self_match and s.affinity.is_empty()
        failed = missing if first_of_group else missing | ~pods_exist
        _reject(out, decided, failed, REASON_AFFINITY, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    if s.terms.required_anti_affinity:
        failed = np.zeros(n, dtype=bool)
        for t in s.terms.required_anti_affinity:
            codes = label_codes(snapshot, t.topology_key)
            failed |= s.anti.at_rows(t.topology_key, codes, idx) > 0
        _reject(out, decided, failed, REASON_ANTI_AFFINITY, Code.UNSCHEDULABLE)

    keys = s.existing_anti.topology_keys()
    if keys:
        failed = np.zeros(n, dtype=bool)
        for key in keys:
            failed |= s.existing_anti.at_rows(key, label_codes(snapshot, key), idx) > 0
        _reject(out, decided, failed, REASON_EXISTING_ANTI_AFFINITY, Code.UNSCHEDULABLE)
    return out


def _reject(out: list[Rejection], decided: BoolArray, failed: BoolArray, reason: str, code: Code) -> None:
    mask = failed & ~decided
    if mask.any():
        out.append(Rejection(mask, (reason,), code))
        decided |= mask
