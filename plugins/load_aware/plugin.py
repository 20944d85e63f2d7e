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

    # ------------------------------------------------------------ scoring

    def load_reading(self) -> tuple[MetricSource, dict[str, float | None]]:
        """What the placement metrics compare (netsched.observability.placement): no limits here."""
        return self.source, dict.fromkeys(self.weights)

    def candidate_scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        return self.scores(pod, snapshot, idx)

    def scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        """Scores of snapshot rows `idx` for `pod` (see the module docstring).

        Resources are columns: what the node carries (measured + estimated, or requested) over
        allocatable, then the pod's own load over allocatable, in one pass for all of them."""
        k = len(self.weights)
        view = self.source.view(snapshot)
        if view.measured:
            incoming = self.source.pod_load(pod)
            amounts = [float(incoming[CPU_COL] if r == CPU else incoming[MEMORY_COL]) for r in self.weights]
            # What the node carries does not depend on the pod: kept by the view between pods.
            kept = view.per_row(self, lambda rows: self._carried(snapshot, rows), idx)
        else:
            amounts = [float(pod.nonzero_cpu if r == CPU else pod.nonzero_memory) for r in self.weights]
            kept = self._carried(snapshot, idx)
        carried, fresh, alloc = kept[:, :k], kept[:, k : 2 * k] > 0, kept[:, 2 * k :]
        own = np.zeros(alloc.shape)
        np.divide(np.array(amounts), alloc, out=own, where=alloc > 0)
        # NaN: a stale row, replaced below; below 0 is idle for both curves.
        curve = self._curve(np.fmax(carried + own, 0.0))
        all_fresh = bool(fresh.all())
        total = np.zeros(len(idx))
        for j, weight in enumerate(self.weights.values()):
            col = curve[:, j] if all_fresh else fill_stale(curve[:, j], fresh[:, j], self.source.fail_closed)
            total += weight * col
        return to_int_scores(total / sum(self.weights.values()))

    def _carried(self, snapshot: Snapshot, rows: IntArray) -> FloatArray:
        """Per row, by column: each resource's utilisation (measured + estimated, or requested,
        over allocatable), then 1.0 / 0.0 for fresh / stale, then allocatable."""
        usage = resource_usage(self.source, snapshot, tuple(self.weights), rows)
        alloc = [snapshot.allocatable[rows, snapshot.col[r]].astype(np.float64) for r in self.weights]
        fresh = [u.fresh.astype(np.float64) for u in usage.values()]
        return np.stack([u.utilisation for u in usage.values()] + fresh + alloc, axis=1)

    def _curve(self, u: FloatArray) -> FloatArray:
        tlp = self.args.target_load_packing
        if tlp.enabled:
            return target_load_packing(100.0 * u, tlp.target_utilization)
        return MAX_NODE_SCORE * (1.0 - np.minimum(u, 1.0))  # u >= 0 here
