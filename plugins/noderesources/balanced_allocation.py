"""NodeResourcesBalancedAllocation: prefer nodes whose resources fill up evenly.

For each configured resource (default cpu, memory) it takes the fraction
requested/allocatable after placing the pod (capped at 1) and scores
(1 - std) * 100, std being the population standard deviation of those
fractions (|a - b| / 2 for two).  A node with 80% cpu and 20% memory used
scores 70; one at 50%/50% scores 100.

Like kube (since 1.25) it uses real requests, not the non-zero defaults the
other resource scores assume, and skips best-effort pods entirely (they would
otherwise all pile onto the same "balanced" node, kubernetes#129138).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from netsched.framework import (
    MAX_NODE_SCORE,
    CycleState,
    FloatArray,
    Handle,
    IntArray,
    NodeInfo,
    PodInfo,
    PreScorePlugin,
    ScorePlugin,
    Snapshot,
    Status,
    names,
)

from .args import NodeResourcesBalancedAllocationArgs
from .resources import node_pair, pod_score_request, table_pair

PRE_SCORE_KEY = "PreScore" + names.NODE_RESOURCES_BALANCED_ALLOCATION


@dataclass(frozen=True, slots=True)
class BalancedRequest:
    amounts: tuple[int, ...]


def balanced_score(allocs: Sequence[int], reqs: Sequence[int]) -> int:
    """kube's balancedResourceScorer for one node; resources with allocatable 0 are left out."""
    fractions = [min(float(r) / float(a), 1.0) for a, r in zip(allocs, reqs, strict=True) if a != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        total = 0.0
        for f in fractions:
            total += f
        mean = total / len(fractions)
        sq = 0.0
        for f in fractions:
            sq = sq + (f - mean) * (f - mean)
        std = math.sqrt(sq / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_scores(pairs: Sequence[tuple[IntArray, IntArray] | None], n: int) -> IntArray:
    """balanced_score over a batch, with the same float operations in the same order."""
    present = [p for p in pairs if p is not None]
    if len(present) == 2 and present[0][0].all() and present[1][0].all():
        # The usual case (cpu and memory, both on every node): std is half the difference.
        (a0, r0), (a1, r1) = present
        f0 = np.minimum(r0 / a0, 1.0)  # int64 / int64 converts both to float64 first, like Go
        f1 = np.minimum(r1 / a1, 1.0)
        fast: IntArray = np.trunc((1 - np.abs((f0 - f1) / 2)) * MAX_NODE_SCORE).astype(np.int64)
        return fast
    cols: list[tuple[npt.NDArray[np.bool_], FloatArray]] = []
    for pair in pairs:
        if pair is None:
            continue
        alloc, req = pair
        valid = alloc != 0
        frac = np.minimum(req.astype(np.float64) / np.where(valid, alloc, 1).astype(np.float64), 1.0)
        cols.append((valid, np.where(valid, frac, 0.0)))
    count = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    first = np.zeros(n, dtype=np.float64)
    second = np.zeros(n, dtype=np.float64)
    for valid, frac in cols:
        first = np.where(valid & (count == 0), frac, first)
        second = np.where(valid & (count == 1), frac, second)
        total += frac  # adding 0.0 for left-out resources is exact
        count += valid
    std = np.where(count == 2, np.abs((first - second) / 2), 0.0)
    many = count > 2
    if many.any():
        k = np.maximum(count, 1).astype(np.float64)
        mean = total / k
        sq = np.zeros(n, dtype=np.float64)
        for valid, frac in cols:
            sq = sq + np.where(valid, (frac - mean) * (frac - mean), 0.0)
        std = np.where(many, np.sqrt(sq / k), std)
    out: IntArray = np.trunc((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return out


class NodeResourcesBalancedAllocation(
    PreScorePlugin[NodeResourcesBalancedAllocationArgs], ScorePlugin[NodeResourcesBalancedAllocationArgs]
):
    name = names.NODE_RESOURCES_BALANCED_ALLOCATION

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.resources = tuple(r.name for r in self.args.resources)

    def _request(self, state: CycleState, pod: PodInfo) -> BalancedRequest:
        got = state.get(PRE_SCORE_KEY)
        if isinstance(got, BalancedRequest):
            return got
        return BalancedRequest(tuple(pod_score_request(pod, r, use_requested=True) for r in self.resources))

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        req = self._request(state, pod)
        if not any(req.amounts):
            return Status.skip()
        state.write(PRE_SCORE_KEY, req)
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        amounts = self._request(state, pod).amounts
        if not any(amounts):
            return 0
        pairs = [
            node_pair(node, r, a, use_requested=True) for r, a in zip(self.resources, amounts, strict=True)
        ]
        return balanced_score([p[0] for p in pairs], [p[1] for p in pairs])

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        amounts = self._request(state, pod).amounts
        if not any(amounts):
            return np.zeros(len(idx), dtype=np.int64)
        pairs = [
            table_pair(snapshot, idx, r, a, use_requested=True)
            for r, a in zip(self.resources, amounts, strict=True)
        ]
        return balanced_scores(pairs, len(idx))
