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
    LoadView,
    MetricScorePlugin,
    MetricSource,
    RepeatedLoads,
    fill_stale,
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
        self._load_cols = np.array([CPU_COL if r == CPU else MEMORY_COL for r in self.weights])
        self._shapes = RepeatedLoads()
        self._last_amounts: tuple[FloatArray, FloatArray, tuple[float, ...]] | None = None
        self._weight_sum = float(sum(self.weights.values()))

    # ------------------------------------------------------------ scoring

    def load_reading(self) -> tuple[MetricSource, dict[str, float | None]]:
        """What the placement metrics compare (netsched.observability.placement): no limits here."""
        return self.source, dict.fromkeys(self.weights)

    def candidate_scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        """Scores of snapshot rows `idx` for `pod` (see the module docstring).

        Per resource: what the node carries (measured + estimated, or requested) over
        allocatable, plus the pod's own load over allocatable, then the curve.  What a node
        carries does not depend on the pod, so the view keeps it between pods; and pods of
        one workload come in bursts with the same load, so once a load repeats the view also
        keeps the scores it gives every row (`RepeatedLoads`): such a pod costs a take.  A row
        without fresh samples scores against the other candidates (fill_stale), so it is
        kept as -1 and a pod whose candidates include one takes the long road."""
        view = self.source.view(snapshot)
        if not view.measured:
            amounts = np.array(
                [float(pod.nonzero_cpu if r == CPU else pod.nonzero_memory) for r in self.weights]
            )
            return self._scores(amounts, self._carry(view, idx))
        amounts, shape = self._amounts(pod)
        if self._shapes.repeated(shape, view):
            kept = view.per_row_complete(
                (self, shape), lambda rows: self._own_scores(view, amounts, rows), idx
            )
            if kept is not None:
                return kept
        carried = view.per_row(self, lambda rows: self._carried(view, rows), idx)
        return self._scores(amounts, carried)

    def _amounts(self, pod: PodInfo) -> tuple[FloatArray, tuple[float, ...]]:
        """The pod's load of each weighted resource, and as a tuple (the RepeatedLoads key); derived
        once per load array (the estimator hands pods of one load the same one)."""
        load = self.source.pod_load(pod)
        last = self._last_amounts
        if last is None or last[0] is not load:
            amounts = load.take(self._load_cols)
            last = self._last_amounts = (load, amounts, tuple(amounts.tolist()))
        return last[1], last[2]

    def _own_scores(self, view: LoadView, amounts: FloatArray, rows: IntArray) -> IntArray:
        """Per row, the score of a pod of load `amounts`, -1 where a resource has no fresh sample."""
        carried = self._carried(view, rows)
        return self._scores(amounts, carried, mark_stale=True)

    def _scores(self, amounts: FloatArray, carried: FloatArray, mark_stale: bool = False) -> IntArray:
        """The scores of rows whose `_carried` columns are `carried` for a pod of load `amounts`
        (by resource).  The rows are a few hundred, so the count of numpy calls (~1 us each), not
        their size, is the cost: the work runs on one contiguous (resources, rows) block, in place."""
        k = len(self.weights)
        cols = np.ascontiguousarray(carried.T)  # carried, fresh (1.0 / 0.0), allocatable, by resource
        # The pod's share of each node (allocatable is +inf where a node has none: 0), plus
        # what the node carries.
        u = np.divide(amounts[:, None], cols[2 * k :])
        u += cols[:k]
        # NaN: a stale row, replaced below; below 0 is idle for both curves.
        curve = self._curve(np.fmax(u, 0.0, out=u))
        fresh = cols[k : 2 * k]
        all_fresh = bool(fresh.all())
        if not all_fresh and not mark_stale:
            for j in range(k):
                curve[j] = fill_stale(curve[j], fresh[j] > 0, self.source.fail_closed)
        weights = list(self.weights.values())  # args validation keeps at least one
        total = np.multiply(weights[0], curve[0], out=curve[0])
        for j in range(1, k):
            total += weights[j] * curve[j]
        total /= self._weight_sum
        out = to_int_scores(total)
        if not all_fresh and mark_stale:
            out[~fresh.all(axis=0)] = -1
        return out

    def _carried(self, view: LoadView, rows: IntArray) -> FloatArray:
        """_carry(rows), once per recomputation of the view's kept results for every key
        that reads it (the carried columns and each kept load's scores)."""
        return view.batched(self, rows, lambda r: self._carry(view, r))

    def _carry(self, view: LoadView, rows: IntArray) -> FloatArray:
        """Per row, by column: each resource's utilisation (measured + estimated, or requested,
        over allocatable), then 1.0 / 0.0 for fresh / stale, then allocatable (+inf for none,
        so that a share of it is 0)."""
        k = len(self.weights)
        kept = np.empty((len(rows), 3 * k))
        for j, res in enumerate(self.weights):
            use = view.usage(res, rows)
            kept[:, j] = use.utilisation
            kept[:, k + j] = use.fresh
            kept[:, 2 * k + j] = view.allocatable(res).take(rows)
        return kept

    def _curve(self, u: FloatArray) -> FloatArray:
        tlp = self.args.target_load_packing
        if tlp.enabled:
            return target_load_packing(100.0 * u, tlp.target_utilization)
        # MAX_NODE_SCORE x (1 - min(u, 1)), in place (u >= 0 here, and a fresh array).
        np.minimum(u, 1.0, out=u)
        np.subtract(1.0, u, out=u)
        return np.multiply(MAX_NODE_SCORE, u, out=u)
