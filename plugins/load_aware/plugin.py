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
    fill_stale,
    pod_load,
    ratio,
    resource_usage,
    source_for,
    to_int_scores,
)
from netsched.plugins.load_aware.args import LoadAwareArgs


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

    def candidate_scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        return self.scores(pod, snapshot, idx)

    def scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        """Scores of snapshot rows `idx` for `pod` (see the module docstring)."""
        usage = resource_usage(self.source, snapshot, tuple(self.weights), idx)
        incoming = pod_load(pod, self.source.args.estimation)
        total = np.zeros(len(idx))
        for res, weight in self.weights.items():
            use = usage[res]
            col = snapshot.col[res]
            alloc = snapshot.allocatable[idx, col].astype(np.float64)
            if use.measured:
                pod_amount = float(incoming[CPU_COL] if res == CPU else incoming[MEMORY_COL])
            else:
                pod_amount = float(pod.nonzero_cpu if res == CPU else pod.nonzero_memory)
            u = use.utilisation + ratio(np.full(len(idx), pod_amount), alloc)
            u = np.fmax(u, 0.0)  # NaN: a stale row, replaced below; below 0 is idle for both curves
            total += weight * fill_stale(self._curve(u), use.fresh, self.source.fail_closed)
        return to_int_scores(total / sum(self.weights.values()))

    def _curve(self, u: FloatArray) -> FloatArray:
        tlp = self.args.target_load_packing
        if tlp.enabled:
            return target_load_packing(100.0 * u, tlp.target_utilization)
        return MAX_NODE_SCORE * (1.0 - np.clip(u, 0.0, 1.0))
