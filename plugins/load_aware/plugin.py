"""LoadAware: prefer nodes with low measured CPU and memory utilisation.

Per resource r (cpu, memory), as a fraction of the node's allocatable:

    u_r = measured_r + (estimated_r + incoming_r) / allocatable_r

measured_r is the polled utilisation, estimated_r the load of pods reserved
on the node since its last sample and incoming_r the pod being scheduled,
both max(request, limit) x factor (cpuFactor 0.85, memoryFactor 0.70), as
Koordinator's LoadAwareScheduling.  Per-resource score:

    least-loaded (default):   s_r = 100 x (1 - min(u_r, 1))
    targetLoadPacking (X %):  U = 100 u_r;  U <= X: (100 - X) U / X + X
                                            X < U <= 100: X (100 - U) / (100 - X)
                                            U > 100: 0          (Trimaran's curve)

score = round(sum_r weight_r x s_r / sum_r weight_r).  A resource without a
fresh sample on a node scores the mean of the fresh candidates (failOpen) or
0 (failClosed).  While Prometheus is down, u_r = (requested_r +
incoming request_r) / allocatable_r from the node table.
"""

from __future__ import annotations

import numpy as np

from netsched.framework import (
    MAX_NODE_SCORE,
    Handle,
    IntArray,
    PodInfo,
    Snapshot,
    names,
)
from netsched.metrics.plugin_api import (
    CPU,
    CPU_COL,
    MEMORY_COL,
    FloatArray,
    MetricScorePlugin,
    MetricSource,
    fill_stale,
    resource_usage,
    source_for,
    to_int_scores,
)

from .args import LoadAwareArgs


def target_load_packing(u_percent: FloatArray, target: float) -> FloatArray:
    """Trimaran's TargetLoadPacking score of utilisation U (percent) for target X (percent)."""
    x = target
    u = np.maximum(u_percent, 0.0)
    rising = (100.0 - x) * u / x + x
    falling = x * (100.0 - u) / (100.0 - x)
    return np.where(u <= x, rising, np.where(u <= 100.0, falling, 0.0))


class LoadAware(MetricScorePlugin[LoadAwareArgs]):
    name = names.LOAD_AWARE

    def __init__(self, args: LoadAwareArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.weights = {r.name: float(r.weight) for r in self.args.resources if r.weight > 0}
        self.source = source_for(handle, self.args.prometheus, self.name)
        self.source.require(*self.weights)
        self._load_cols = [CPU_COL if r == CPU else MEMORY_COL for r in self.weights]
        self._weight_sum = float(sum(self.weights.values()))

    # ------------------------------------------------------------ scoring

    def load_reading(self) -> tuple[MetricSource, dict[str, float | None]]:
        """What the placement metrics compare (netsched.observability.placement): no limits here."""
        return self.source, dict.fromkeys(self.weights)

    def candidate_scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        return self.scores(pod, snapshot, idx)

    def scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        """Scores of snapshot rows `idx` for `pod` (see the module docstring).

        Per resource: what the node carries (measured + estimated, or requested) over
        allocatable, plus the pod's own load over allocatable, then the curve.  Per pod the
        rows are a few hundred, so the count of numpy calls (~1 us each), not their size, is
        the cost: the work runs on one contiguous (resources, rows) block, in place."""
        k = len(self.weights)
        view = self.source.view(snapshot)
        if view.measured:
            load = self.source.pod_load(pod)
            amounts = [float(load[c]) for c in self._load_cols]
            # What the node carries does not depend on the pod: kept by the view between pods.
            kept = view.per_row(self, lambda rows: self._carried(snapshot, rows), idx)
        else:
            amounts = [float(pod.nonzero_cpu if r == CPU else pod.nonzero_memory) for r in self.weights]
            kept = self._carried(snapshot, idx)
        cols = np.ascontiguousarray(kept.T)  # carried, fresh (1.0 / 0.0), allocatable, by resource
        # The pod's share of each node (allocatable is +inf where a node has none: 0), plus
        # what the node carries.
        u = np.divide(np.array(amounts)[:, None], cols[2 * k :])
        u += cols[:k]
        # NaN: a stale row, replaced below; below 0 is idle for both curves.
        curve = self._curve(np.fmax(u, 0.0, out=u))
        if not cols[k : 2 * k].all():
            for j in range(k):
                curve[j] = fill_stale(curve[j], cols[k + j] > 0, self.source.fail_closed)
        weights = list(self.weights.values())  # args validation keeps at least one
        total = np.multiply(weights[0], curve[0], out=curve[0])
        for j in range(1, k):
            total += weights[j] * curve[j]
        total /= self._weight_sum
        return to_int_scores(total)

    def _carried(self, snapshot: Snapshot, rows: IntArray) -> FloatArray:
        """Per row, by column: each resource's utilisation (measured + estimated, or requested,
        over allocatable), then 1.0 / 0.0 for fresh / stale, then allocatable (+inf for none,
        so that a share of it is 0)."""
        usage = resource_usage(self.source, snapshot, tuple(self.weights), rows)
        alloc = [snapshot.allocatable[rows, snapshot.col[r]].astype(np.float64) for r in self.weights]
        fresh = [u.fresh.astype(np.float64) for u in usage.values()]
        kept = np.stack([u.utilisation for u in usage.values()] + fresh + alloc, axis=1)
        den = kept[:, 2 * len(self.weights) :]
        den[~(den > 0)] = np.inf
        return kept

    def _curve(self, u: FloatArray) -> FloatArray:
        tlp = self.args.target_load_packing
        if tlp.enabled:
            return target_load_packing(100.0 * u, tlp.target_utilization)
        # MAX_NODE_SCORE x (1 - min(u, 1)), in place (u >= 0 here, and a fresh array).
        np.minimum(u, 1.0, out=u)
        np.subtract(1.0, u, out=u)
        return np.multiply(MAX_NODE_SCORE, u, out=u)
