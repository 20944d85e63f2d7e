"""Node utilisation as the metrics plugins see it: one definition, three plugins.

NetworkTraffic and LoadThreshold read network load through `network_load`,
LoadAware and LoadThreshold read CPU/memory through `resource_usage`, so a
node rejected for "cpu utilisation above 65%" is the node LoadAware scores
low.  Each returns arrays over every snapshot row plus a `fresh` mask:

- measured (Prometheus answers): the polled value plus the estimator's load
  for pods reserved since the node's last sample; fresh = the node has a
  sample no older than maxSampleAgeSeconds;
- fallback (Prometheus does not answer): what the pods on the node request
  (bandwidth annotations; CPU/memory requests from the node table); fresh is
  all True and `measured` False, so a filter can tell it has no measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netsched.framework.cluster_events import (
    METRICS_POLLED,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from netsched.framework.extension_points import MAX_NODE_SCORE
from netsched.framework.seams import Handle
from netsched.framework.snapshot import BoolArray, FloatArray, IntArray, Snapshot
from netsched.metrics import queries as q
from netsched.metrics.args import PrometheusArgs
from netsched.metrics.source import MetricSource

NEUTRAL_SCORE = MAX_NODE_SCORE / 2

# What can change a metrics plugin's verdict on a pod: new samples (the shared poller) and new nodes.
METRICS_EVENTS = (
    ClusterEventWithHint(ClusterEvent(METRICS_POLLED, ActionType.ALL)),
    ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
)


@dataclass(frozen=True, slots=True)
class NetworkLoad:
    busy: FloatArray  # bytes/s of the busier direction (links are full duplex)
    speed: FloatArray  # link speed bytes/s, NaN when unknown
    fresh: BoolArray
    measured: bool

    def utilisation(self) -> FloatArray:
        """busy / link speed; NaN where the link speed is unknown."""
        known = np.isfinite(self.speed) & (self.speed > 0)
        out = np.full(len(self.busy), np.nan)
        np.divide(self.busy, self.speed, out=out, where=known)
        return out


@dataclass(frozen=True, slots=True)
class Usage:
    utilisation: FloatArray  # 0..1 (may exceed 1 with estimates)
    fresh: BoolArray
    measured: bool


def source_for(handle: Handle, args: PrometheusArgs, plugin: str) -> MetricSource:
    """The plugin's MetricSource from the process-wide hub (handle.metrics)."""
    hub = handle.metrics
    if hub is None:
        raise ValueError(f"plugin {plugin} needs the metrics hub, but handle.metrics is None")
    src = hub.source(args)
    if not isinstance(src, MetricSource):
        raise TypeError(f"plugin {plugin} needs a netsched.metrics hub, got {type(hub).__name__}")
    return src


def network_load(src: MetricSource, snapshot: Snapshot) -> NetworkLoad:
    speed, _ = src.values(q.LINK_SPEED, snapshot)  # a link speed does not go stale
    n = len(snapshot)
    if src.in_fallback:
        rx, tx = src.requested_bandwidth(snapshot)
        return NetworkLoad(np.fmax(rx, tx), speed, np.ones(n, dtype=bool), False)
    rx, rx_ok = src.fresh(q.NETWORK_RX, snapshot)
    tx, tx_ok = src.fresh(q.NETWORK_TX, snapshot)
    est = src.estimates(snapshot)
    return NetworkLoad(np.fmax(rx + est.rx, tx + est.tx), speed, rx_ok & tx_ok, True)


def cold_link_scores(src: MetricSource, snapshot: Snapshot, idx: IntArray) -> FloatArray:
    """Scores 0..100 of snapshot rows `idx`, inversely to link utilisation (NetworkTraffic's
    formula): busier direction / link speed, or relative to the busiest fresh row where a node
    has no link speed; rows without fresh samples filled by fill_stale."""
    net = network_load(src, snapshot)
    busy, speed, fresh = net.busy[idx], net.speed[idx], net.fresh[idx]
    has_speed = np.isfinite(speed) & (speed > 0)
    relative = fresh & ~has_speed
    ref = float(busy[relative].max()) if relative.any() else 0.0
    u = np.zeros(len(idx))
    np.divide(busy, speed, out=u, where=has_speed)
    if ref > 0:
        np.divide(busy, ref, out=u, where=~has_speed)
    cold = MAX_NODE_SCORE * (1.0 - np.clip(np.nan_to_num(u, nan=0.0), 0.0, 1.0))
    return fill_stale(cold, fresh, src.fail_closed)


def resource_usage(src: MetricSource, snapshot: Snapshot, resources: tuple[str, ...]) -> dict[str, Usage]:
    """CPU and/or memory utilisation per row (resources: netsched.metrics CPU / MEMORY)."""
    n = len(snapshot)
    out: dict[str, Usage] = {}
    est = None if src.in_fallback else src.estimates(snapshot)
    for res in resources:
        # The metric names "cpu" and "memory" are also the node table's resource columns.
        alloc = snapshot.allocatable[:, snapshot.col[res]].astype(np.float64)
        if est is None:
            requested = snapshot.nonzero_requested[:, 0 if res == q.CPU else 1].astype(np.float64)
            out[res] = Usage(ratio(requested, alloc), np.ones(n, dtype=bool), False)
            continue
        value, ok = src.fresh(res, snapshot)
        extra = est.cpu if res == q.CPU else est.memory
        out[res] = Usage(value + ratio(extra, alloc), ok, True)
    return out


def ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    """num / den, 0 where den is 0 (a node without allocatable is not ours to score)."""
    out = np.zeros(len(num))
    np.divide(num, den, out=out, where=den > 0)
    return out


def fill_stale(scores: FloatArray, fresh: BoolArray, fail_closed: bool) -> FloatArray:
    """Scores of rows without fresh metrics: the fresh rows' mean (failOpen) or 0 (failClosed).

    failOpen leaves such nodes neither favoured nor penalised; failClosed makes
    them the last choice (LoadThreshold filters them out).
    """
    stale = ~fresh
    if not stale.any():
        return scores
    out = scores.copy()
    if fail_closed:
        out[stale] = 0.0
    else:
        out[stale] = scores[fresh].mean() if fresh.any() else NEUTRAL_SCORE
    return out


def to_int_scores(scores: FloatArray) -> IntArray:
    return np.rint(np.clip(scores, 0, MAX_NODE_SCORE)).astype(np.int64)
