"""NodeResourcesFit's score strategies, each as a per-node and a batch function.

Every strategy scores each configured resource on 0..100 and averages the
scores weighted by the resource weights, using integer arithmetic exactly as
kube does (Go integer division truncates toward zero).  A resource whose
allocatable is 0 on a node (or that the pod does not request, for extended
resources) is left out of that node's average.

LeastAllocated:  (allocatable - requested) * 100 / allocatable   (0 if over-committed)
MostAllocated:   min(requested, allocatable) * 100 / allocatable
RequestedToCapacityRatio: a piecewise-linear shape over utilization
    requested * 100 / allocatable (100 if over-committed); shape scores 0..10 are
    scaled by 10; resources scoring 0 are left out; the average is rounded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from netsched.framework import MAX_NODE_SCORE, IntArray

from .args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    MOST_ALLOCATED,
    NodeResourcesFitArgs,
    UtilizationShapePoint,
)

Pair = tuple[IntArray, IntArray]  # (allocatable, requested) over a batch of rows


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, like Go's int64 '/'."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def broken_linear(shape: Sequence[tuple[int, int]], p: int) -> int:
    """kube's BuildBrokenLinearFunction: flat outside the points, linear (truncated) between."""
    for i, (u, s) in enumerate(shape):
        if p <= u:
            if i == 0:
                return s
            pu, ps = shape[i - 1]
            return ps + go_div((s - ps) * (p - pu), u - pu)
    return shape[-1][1]


class Strategy:
    """Weighted per-resource scores; subclasses define the per-resource formula."""

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = list(weights)

    # -- per node
    def resource_score(self, requested: int, capacity: int) -> int:
        raise NotImplementedError

    def node_score(self, allocs: Sequence[int], reqs: Sequence[int]) -> int:
        total = weight_sum = 0
        for alloc, req, w in zip(allocs, reqs, self.weights, strict=True):
            if alloc == 0:
                continue
            total += self.resource_score(req, alloc) * w
            weight_sum += w
        return total // weight_sum if weight_sum else 0

    # -- batch
    def resource_scores(self, requested: IntArray, capacity: IntArray) -> IntArray:
        """Per-row resource score; every capacity must be > 0 (callers mask the others)."""
        raise NotImplementedError

    def _weighted(
        self, pairs: Sequence[Pair | None]
    ) -> tuple[IntArray | None, int | IntArray, list[IntArray]]:
        """Sum of score x weight, the weight sum (an int when every row counts) and the raw scores."""
        total: IntArray | None = None
        weight_sum: int | IntArray = 0
        raw: list[IntArray] = []
        for pair, w in zip(pairs, self.weights, strict=True):
            if pair is None:
                continue
            alloc, req = pair
            if alloc.all():  # the usual case: every node has this resource
                s = self.resource_scores(req, alloc)
                weight_sum = weight_sum + w
            else:
                valid = alloc != 0
                s = np.where(valid, self.resource_scores(req, np.where(valid, alloc, 1)), 0)
                weight_sum = weight_sum + valid * w
            raw.append(s)
            total = s * w if total is None else total + s * w
        return total, weight_sum, raw

    def batch_scores(self, pairs: Sequence[Pair | None], n: int) -> IntArray:
        total, weight_sum, _ = self._weighted(pairs)
        if total is None:
            return np.zeros(n, dtype=np.int64)
        if isinstance(weight_sum, int):
            return total // weight_sum
        return np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)


class LeastAllocated(Strategy):
    def resource_score(self, requested: int, capacity: int) -> int:
        return least_requested_score(requested, capacity)

    def resource_scores(self, requested: IntArray, capacity: IntArray) -> IntArray:
        # Over-committed rows clamp to 0 free, i.e. score 0, as kube returns for requested > capacity.
        out: IntArray = np.maximum(capacity - requested, 0) * MAX_NODE_SCORE // capacity
        return out


class MostAllocated(Strategy):
    def resource_score(self, requested: int, capacity: int) -> int:
        return most_requested_score(requested, capacity)

    def resource_scores(self, requested: IntArray, capacity: IntArray) -> IntArray:
        out: IntArray = np.minimum(requested, capacity) * MAX_NODE_SCORE // capacity
        return out


class RequestedToCapacityRatio(Strategy):
    def __init__(self, weights: Sequence[int], shape: Sequence[UtilizationShapePoint]) -> None:
        super().__init__(weights)
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        points = [(p.utilization, p.score * scale) for p in shape]
        # Utilization is always an integer in 0..100, so the shape becomes a lookup table.
        self.table = np.array([broken_linear(points, u) for u in range(MAX_UTILIZATION + 1)], dtype=np.int64)

    @staticmethod
    def utilization(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return MAX_UTILIZATION
        return requested * MAX_UTILIZATION // capacity

    def resource_score(self, requested: int, capacity: int) -> int:
        return int(self.table[self.utilization(requested, capacity)])

    def node_score(self, allocs: Sequence[int], reqs: Sequence[int]) -> int:
        total = weight_sum = 0
        for alloc, req, w in zip(allocs, reqs, self.weights, strict=True):
            if alloc == 0:
                continue
            s = self.resource_score(req, alloc)
            if s > 0:  # kube leaves zero-scoring resources out of the average
                total += s * w
                weight_sum += w
        # math.Round of a positive ratio: half away from zero, done in integers.
        return (2 * total + weight_sum) // (2 * weight_sum) if weight_sum else 0

    def resource_scores(self, requested: IntArray, capacity: IntArray) -> IntArray:
        # requested > capacity gives a quotient above 100, so the clamp is the over-commit rule.
        util = np.minimum(requested * MAX_UTILIZATION // capacity, MAX_UTILIZATION)
        out: IntArray = self.table[util]
        return out

    def batch_scores(self, pairs: Sequence[Pair | None], n: int) -> IntArray:
        total, _, raw = self._weighted(pairs)
        if total is None:
            return np.zeros(n, dtype=np.int64)
        # Zero scores add nothing to the total but must not count in the weight sum either.
        present = [(p, w) for p, w in zip(pairs, self.weights, strict=True) if p is not None]
        weight_sum = np.zeros(n, dtype=np.int64)
        for s, (_, w) in zip(raw, present, strict=True):
            weight_sum += (s > 0) * w
        ws = np.maximum(weight_sum, 1)
        return np.where(weight_sum > 0, (2 * total + ws) // (2 * ws), 0)


def strategy_for(args: NodeResourcesFitArgs) -> Strategy:
    weights = [r.weight for r in args.resources]
    if args.scoring_type == LEAST_ALLOCATED:
        return LeastAllocated(weights)
    if args.scoring_type == MOST_ALLOCATED:
        return MostAllocated(weights)
    return RequestedToCapacityRatio(weights, args.shape)
