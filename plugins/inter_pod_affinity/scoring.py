"""InterPodAffinity PreScore/Score/NormalizeScore.

Every existing pod adds to a sum per (topology key, value) of its node:
  + weight   for each preferred affinity term of the incoming pod it matches,
  - weight   for each preferred anti-affinity term of the incoming pod it matches,
  + hardPodAffinityWeight for each of its required affinity terms the pod matches,
  + weight   for each of its preferred affinity terms the pod matches,
  - weight   for each of its preferred anti-affinity terms the pod matches.
A node scores the sum over topology keys of its value's total; scores are then
scaled to 0..100 by (s - min) * 100 / (max - min), as kube does.

Through the pod index every term is checked once per workload group, and the
group's per-row pod counts land in the domains with one bincount.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from netsched.framework import (
    MAX_NODE_SCORE,
    IntArray,
    LookalikePods,
    NodeInfo,
    PodIndex,
    PodInfo,
    Snapshot,
    label_codes,
)

from .counts import TopoCounts
from .filtering import group_terms, selected_counts
from .terms import NamespaceLabels, Term, compile_preferred, term_matches

PRE_SCORE_KEY = "PreScoreInterPodAffinity"


@dataclass(slots=True)
class ScoreState:
    sums: TopoCounts = field(default_factory=TopoCounts)
    touched: bool = False  # kube skips Score when no term contributed anywhere

    def clone(self) -> ScoreState:
        return self  # read-only after PreScore

    def add(self, snapshot: Snapshot, term: Term, row_counts: IntArray, weight: int) -> None:
        if self.sums.add_rows(
            term.topology_key, label_codes(snapshot, term.topology_key), row_counts, weight
        ):
            self.touched = True

    def add_group(self, snapshot: Snapshot, term: Term, group: LookalikePods, weight: int) -> None:
        if self.sums.add_group(term.topology_key, label_codes(snapshot, term.topology_key), group, weight):
            self.touched = True


def compute(
    pod: PodInfo,
    snapshot: Snapshot,
    index: PodIndex,
    nsl: NamespaceLabels,
    *,
    hard_weight: int,
    with_own_terms: bool,
) -> ScoreState:
    s = ScoreState()
    if with_own_terms:
        for t in compile_preferred(pod, pod.preferred_affinity):
            s.add(snapshot, t, selected_counts(index, (t,), nsl), t.weight)
        for t in compile_preferred(pod, pod.preferred_anti_affinity):
            s.add(snapshot, t, selected_counts(index, (t,), nsl), -t.weight)
    ns, labels = pod.namespace, pod.labels
    for g in index.live_term_groups(index.affinity_gids):
        terms = group_terms(g)
        if hard_weight > 0:
            for t in terms.required_affinity:
                if term_matches(t, ns, labels, nsl):
                    s.add_group(snapshot, t, g, hard_weight)
        for t in terms.preferred_affinity:
            if term_matches(t, ns, labels, nsl):
                s.add_group(snapshot, t, g, t.weight)
        for t in terms.preferred_anti_affinity:
            if term_matches(t, ns, labels, nsl):
                s.add_group(snapshot, t, g, -t.weight)
    return s


def score_node(s: ScoreState, node: NodeInfo) -> int:
    total = 0
    for key in s.sums.topology_keys():
        v = node.labels.get(key)
        if v is not None:
            total += s.sums.get(key, v)
    return total


def score_rows(s: ScoreState, snapshot: Snapshot, idx: IntArray) -> IntArray:
    total = np.zeros(len(idx), dtype=np.int64)
    for key in s.sums.topology_keys():
        total += s.sums.at_rows(key, label_codes(snapshot, key), idx)
    return total


def normalize(scores: IntArray) -> None:
    """kube: MaxNodeScore * (s - min) / (max - min) in float64, truncated; all 0 when max == min."""
    if len(scores) == 0:
        return
    lo, hi = int(scores.min()), int(scores.max())
    diff = hi - lo
    if diff <= 0:
        scores[:] = 0
        return
    scaled = float(MAX_NODE_SCORE) * ((scores - lo).astype(np.float64) / float(diff))
    scores[:] = scaled.astype(np.int64)
