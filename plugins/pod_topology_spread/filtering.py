"""PodTopologySpread PreFilter/Filter: hard (DoNotSchedule) constraints.

For each constraint, PreFilter counts the matching pods per domain (topology
value) over the nodes that count: nodes carrying every constraint's key and
passing the constraint's inclusion policies.  Filter then rejects a node when

    pods in its domain + (1 if the pod matches the selector) - global minimum > maxSkew

where the global minimum is the smallest domain count, or 0 while fewer than
minDomains domains exist.  A node without a constraint's key is
UnschedulableAndUnresolvable ("... (missing required label)").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from netsched.framework import (
    BoolArray,
    Code,
    IntArray,
    LabelCodes,
    NodeInfo,
    PodIndex,
    PodInfo,
    Rejection,
    Snapshot,
    Status,
    label_codes,
)

from .constraints import (
    Constraint,
    affinity_mask,
    inclusion_mask,
    matching_row_counts,
    node_included,
    taints_mask,
)

PRE_FILTER_KEY = "PreFilterPodTopologySpread"

# kube's wording (pkg/scheduler/framework/plugins/podtopologyspread/plugin.go).
REASON_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = REASON_CONSTRAINTS + " (missing required label)"


class Domains:
    """Matching pods per domain of one constraint (kube's TpValueToMatchNum)."""

    __slots__ = ("codes", "counts", "present", "extra", "_min")

    def __init__(self, codes: LabelCodes, counts: IntArray, present: BoolArray) -> None:
        self.codes = codes
        self.counts = counts  # per code, plus a trailing slot kept at 0
        self.present = present  # domains holding at least one counted node
        self.extra: dict[str, int] = {}  # domains the snapshot does not know (preemption what-ifs)
        self._min: float | None = None

    @classmethod
    def build(cls, codes: LabelCodes, row_counts: IntArray, rows: BoolArray) -> Domains:
        valid = rows & (codes.codes >= 0)
        present = np.bincount(codes.codes[valid], minlength=codes.size + 1) > 0
        return cls(codes, codes.sum_rows(row_counts, valid), present)

    def clone(self) -> Domains:
        out = Domains(self.codes, self.counts.copy(), self.present.copy())
        out.extra = dict(self.extra)
        out._min = self._min
        return out

    def get(self, value: str) -> int:
        c = self.codes.index.get(value)
        if c is None:
            return self.extra.get(value, 0)
        return int(self.counts[c])

    def at_rows(self, rows: IntArray) -> IntArray:
        return self.counts[self.codes.codes[rows]]

    def bump(self, value: str, delta: int) -> None:
        c = self.codes.index.get(value)
        if c is None:
            self.extra[value] = self.extra.get(value, 0) + delta
        else:
            self.counts[c] += delta
            self.present[c] = True
        self._min = None

    def n_domains(self) -> int:
        return int(self.present.sum()) + len(self.extra)

    def min_match(self, min_domains: int) -> float:
        """The global minimum for the skew; 0 while fewer than minDomains domains exist."""
        if self.n_domains() < min_domains:
            return 0
        if self._min is None:
            m = float(self.counts[self.present].min()) if self.present.any() else math.inf
            if self.extra:
                m = min(m, float(min(self.extra.values())))
            self._min = m
        return self._min


@dataclass(slots=True)
class FilterState:
    constraints: tuple[Constraint, ...]
    domains: list[Domains]
    self_match: tuple[bool, ...]

    def clone(self) -> FilterState:
        return FilterState(self.constraints, [d.clone() for d in self.domains], self.self_match)


def compute(
    pod: PodInfo, snapshot: Snapshot, index: PodIndex, constraints: tuple[Constraint, ...]
) -> FilterState:
    codes = [label_codes(snapshot, c.topology_key) for c in constraints]
    has_all = np.logical_and.reduce([lc.codes >= 0 for lc in codes])
    affinity = affinity_mask(snapshot, pod) if any(c.honor_node_affinity for c in constraints) else None
    taints = taints_mask(snapshot, pod) if any(c.honor_taints for c in constraints) else None
    domains = []
    for c, lc in zip(constraints, codes, strict=True):
        rows = inclusion_mask(c, has_all, affinity, taints)
        domains.append(Domains.build(lc, matching_row_counts(index, pod.namespace, c.selector), rows))
    self_match = tuple(c.selector is not None and c.selector.matches(pod.labels) for c in constraints)
    return FilterState(constraints, domains, self_match)


def update_with_pod(s: FilterState, pod: PodInfo, other: PodInfo, node: NodeInfo, delta: int) -> None:
    """kube's updateWithPod: `other` added to (+1) or removed from (-1) `node` in a what-if."""
    if other.namespace != pod.namespace:
        return
    labels = node.labels
    if any(c.topology_key not in labels for c in s.constraints):
        return
    for c, d in zip(s.constraints, s.domains, strict=True):
        if c.selector is None or not c.selector.matches(other.labels):
            continue
        if not node_included(c, pod, node):
            continue
        d.bump(labels[c.topology_key], delta)


def filter_node(s: FilterState, node: NodeInfo) -> Status:
    labels = node.labels
    for c, d, own in zip(s.constraints, s.domains, s.self_match, strict=True):
        value = labels.get(c.topology_key)
        if value is None:
            return Status.unresolvable(REASON_MISSING_LABEL)
        if d.get(value) + int(own) - d.min_match(c.min_domains) > c.max_skew:
            return Status.unschedulable(REASON_CONSTRAINTS)
    return Status.success()


def filter_rows(s: FilterState, idx: IntArray) -> list[Rejection]:
    n = len(idx)
    decided = np.zeros(n, dtype=bool)
    missing_label = np.zeros(n, dtype=bool)
    too_skewed = np.zeros(n, dtype=bool)
    # The first failing constraint decides a node's reason, as in the per-node loop.
    for c, d, own in zip(s.constraints, s.domains, s.self_match, strict=True):
        codes = d.codes.codes[idx]
        missing = (codes < 0) & ~decided
        missing_label |= missing
        decided |= missing
        skew = d.counts[codes] + int(own) - d.min_match(c.min_domains)
        bad = (skew > c.max_skew) & ~decided
        too_skewed |= bad
        decided |= bad
    out = []
    if missing_label.any():
        out.append(Rejection(missing_label, (REASON_MISSING_LABEL,), Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
    if too_skewed.any():
        out.append(Rejection(too_skewed, (REASON_CONSTRAINTS,), Code.UNSCHEDULABLE))
    return out
