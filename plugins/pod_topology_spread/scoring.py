"""PodTopologySpread PreScore/Score/NormalizeScore: soft (ScheduleAnyway) constraints.

kube's formula (pkg/scheduler/framework/plugins/podtopologyspread/scoring.go):

    raw(node)  = round( sum over constraints whose key the node has of
                        matching pods in the node's domain * log(domains + 2) + (maxSkew - 1) )
    score      = 100 * (max + min - raw) / max      (integer division; 100 for all when max == 0)

`domains` is the number of distinct values of the key among the filtered
nodes (for kubernetes.io/hostname: the number of filtered nodes), so counts
in a few big domains weigh less than counts over many small ones.  Pods are
counted over all nodes that pass the constraint's inclusion policies; for
the hostname key only the node's own pods count.

Unless the constraints are the system defaults, filtered nodes lacking a key
are ignored: they score 0.  Score marks them with the raw value -1 so
normalisation (which sees only the score array) can recognise them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from netsched.framework import (
    LABEL_HOSTNAME,
    MAX_NODE_SCORE,
    FloatArray,
    IntArray,
    LabelCodes,
    NodeInfo,
    PodIndex,
    PodInfo,
    Snapshot,
    label_codes,
)

from .constraints import (
    Constraint,
    affinity_mask,
    count_on_node,
    inclusion_mask,
    matching_row_counts,
    taints_mask,
)

PRE_SCORE_KEY = "PreScorePodTopologySpread"
IGNORED = -1


@dataclass(slots=True)
class Scored:
    constraint: Constraint
    codes: LabelCodes
    weight: float  # log(number of domains + 2)
    domain_counts: IntArray | None  # per code (non-hostname keys)
    row_counts: IntArray | None  # per row (hostname key: the node's own pods)


@dataclass(slots=True)
class ScoreState:
    items: list[Scored]
    require_all: bool
    namespace: str

    def clone(self) -> ScoreState:
        return self  # read-only after PreScore


def compute(
    pod: PodInfo,
    snapshot: Snapshot,
    index: PodIndex,
    constraints: tuple[Constraint, ...],
    filtered: IntArray,
    *,
    require_all: bool,
) -> ScoreState:
    n = len(snapshot)
    codes = [label_codes(snapshot, c.topology_key) for c in constraints]
    if require_all:
        base = np.logical_and.reduce([lc.codes >= 0 for lc in codes])
        scored_rows = filtered[base[filtered]]
    else:
        base = np.ones(n, dtype=bool)
        scored_rows = filtered
    affinity = affinity_mask(snapshot, pod) if any(c.honor_node_affinity for c in constraints) else None
    taints = taints_mask(snapshot, pod) if any(c.honor_taints for c in constraints) else None
    items = []
    for c, lc in zip(constraints, codes, strict=True):
        row_counts = matching_row_counts(index, pod.namespace, c.selector)
        if c.topology_key == LABEL_HOSTNAME:
            items.append(Scored(c, lc, _weight(len(scored_rows)), None, row_counts))
            continue
        domain_counts = lc.sum_rows(row_counts, inclusion_mask(c, base, affinity, taints))
        items.append(Scored(c, lc, _weight(_distinct(lc, scored_rows)), domain_counts, None))
    return ScoreState(items, require_all, pod.namespace)


def _weight(domains: int) -> float:
    return math.log(domains + 2)


def _distinct(lc: LabelCodes, rows: IntArray) -> int:
    """Distinct values among rows; a missing label counts as the value "" (kube reads labels[key])."""
    vals = lc.codes[rows]
    if len(vals) and (vals < 0).any():
        empty = lc.index.get("")
        if empty is not None:
            vals = np.where(vals < 0, empty, vals)
    return len(np.unique(vals))


def _round(x: FloatArray) -> IntArray:
    """Go's math.Round for non-negative values (half away from zero), exactly."""
    t = np.trunc(x)
    return (t + ((x - t) >= 0.5)).astype(np.int64)


def score_rows(s: ScoreState, idx: IntArray) -> IntArray:
    total = np.zeros(len(idx), dtype=np.float64)
    ignored = np.zeros(len(idx), dtype=bool)
    for it in s.items:
        codes = it.codes.codes[idx]
        has = codes >= 0
        if s.require_all:
            ignored |= ~has
        if it.row_counts is not None:
            cnt = it.row_counts[idx]
        else:
            assert it.domain_counts is not None
            cnt = it.domain_counts[codes]
        total += np.where(has, cnt * it.weight + float(it.constraint.max_skew - 1), 0.0)
    raw = _round(total)
    raw[ignored] = IGNORED
    return raw


def score_node(s: ScoreState, node: NodeInfo) -> int:
    total = 0.0
    for it in s.items:
        value = node.labels.get(it.constraint.topology_key)
        if value is None:
            if s.require_all:
                return IGNORED
            continue
        if it.row_counts is not None:
            cnt = count_on_node(node, s.namespace, it.constraint.selector)
        else:
            assert it.domain_counts is not None
            c = it.codes.index.get(value)
            cnt = int(it.domain_counts[c]) if c is not None else 0
        total += cnt * it.weight + float(it.constraint.max_skew - 1)
    return int(_round(np.array([total]))[0])


def normalize(scores: IntArray) -> None:
    valid = scores != IGNORED
    if not valid.any():
        scores[:] = 0
        return
    vals = scores[valid]
    lo, hi = int(vals.min()), max(int(vals.max()), 0)
    if hi == 0:
        scores[valid] = MAX_NODE_SCORE
    else:
        scores[valid] = MAX_NODE_SCORE * (hi + lo - vals) // hi
    scores[~valid] = 0
