"""Node utilisation as the metrics plugins see it: one definition, three plugins.

NetworkTraffic and LoadThreshold read network load through `network_load`,
LoadAware and LoadThreshold read CPU/memory through `resource_usage`, so a
node rejected for "cpu utilisation above 65%" is the node LoadAware scores
low.  Both read the source's shared LoadView (view.py: derived once per
sample and node layout) and return arrays over the rows asked for (the
chunk a cycle filters, the nodes it scores; every row by default) plus a
`fresh` mask:

- measured (Prometheus answers): the polled value plus the estimator's load
  for pods reserved since the node's last sample; fresh = the node has a
  sample no older than maxSampleAgeSeconds;
- fallback (Prometheus does not answer): what the pods on the node request
  (bandwidth annotations; CPU/memory requests from the node table); fresh is
  all True and `measured` False, so a filter can tell it has no measurements.
"""

from __future__ import annotations

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
from netsched.metrics.args import PrometheusArgs
from netsched.metrics.cache import MetricsTable
from netsched.metrics.source import MetricSource
from netsched.metrics.traffic import TRAFFIC_PAIRS, TrafficGraph, build_graph
from netsched.metrics.view import LoadView, NetworkLoad, Usage

NEUTRAL_SCORE = MAX_NODE_SCORE / 2

# What can change a metrics plugin's verdict on a pod: new samples (the shared poller) and new nodes.
METRICS_EVENTS = (
    ClusterEventWithHint(ClusterEvent(METRICS_POLLED, ActionType.ALL)),
    ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
)


def source_for(handle: Handle, args: PrometheusArgs, plugin: str, *, filters: bool = False) -> MetricSource:
    """The plugin's MetricSource from the process-wide hub (handle.metrics); `filters` for a
    plugin that rejects nodes on its readings (what failClosed does in an outage depends on it)."""
    hub = handle.metrics
    if hub is None:
        raise ValueError(f"plugin {plugin} needs the metrics hub, but handle.metrics is None")
    src = hub.source(args, filters=filters)
    if not isinstance(src, MetricSource):
        raise TypeError(f"plugin {plugin} needs a netsched.metrics hub, got {type(hub).__name__}")
    return src


def traffic_graph(src: MetricSource, snapshot: Snapshot | None) -> TrafficGraph:
    """The source's pair graph (TRAFFIC_PAIRS), built once per LoadView (one per poll and
    layout) for every plugin that asks; empty while older than maxSampleAgeSeconds (under
    either stalePolicy: a stale edge says nothing about today's traffic) or never polled.

    `snapshot` None: from a thread other than the scheduling one (a periodic task), built
    from the source's last answer without a LoadView: views live in the cycle snapshot's
    cache, which only the scheduling thread may write (built mid-update, one would be
    misaligned with the rows the next cycle reads)."""
    if snapshot is None:
        got = src.per_table(TRAFFIC_PAIRS, lambda table: _table_graph(src, table))
    else:
        got = src.view(snapshot).derived(TRAFFIC_PAIRS, _pair_graph)
    if not got.pairs or src.wall() - got.sampled_at > src.max_age:
        return _NO_GRAPH
    return got


def _table_graph(src: MetricSource, table: MetricsTable) -> TrafficGraph:
    series = src.keyed_series(TRAFFIC_PAIRS, table)
    return build_graph(series) if series is not None else _NO_GRAPH


def _pair_graph(view: LoadView) -> TrafficGraph:
    series = view.series(TRAFFIC_PAIRS)
    return build_graph(series) if series is not None else _NO_GRAPH


_NO_GRAPH = TrafficGraph.empty()


def network_load(src: MetricSource, snapshot: Snapshot, idx: IntArray | None = None) -> NetworkLoad:
    """Network load of rows `idx` (default: every row), from the source's shared LoadView."""
    return src.view(snapshot).network(snapshot.all_rows if idx is None else idx)


def cold_link_scores(src: MetricSource, snapshot: Snapshot, idx: IntArray) -> FloatArray:
    """Scores 0..100 of snapshot rows `idx`, inversely to link utilisation (NetworkTraffic's
    formula): busier direction / link speed, or relative to the busiest fresh row where a node
    has no link speed; rows without fresh samples filled by fill_stale.

    A fresh row with a link speed scores on its own, whatever the other rows: those scores
    are kept by the view between pods (`_own_link_scores`); only when `idx` holds another
    kind of row is the whole formula run over `idx`."""
    view = src.view(snapshot)
    if view.measured:
        kept = view.per_row(_COLD_LINK, lambda rows: _own_link_scores(view.network(rows)), idx)
        own = np.ascontiguousarray(kept.T)  # columns: numpy is ~2x faster on contiguous ones
        if own[1].all():
            scores: FloatArray = own[0]
            return scores
    return _cold_link_scores(network_load(src, snapshot, idx), src.fail_closed)


_COLD_LINK = "netsched.metrics/cold-link"


def cold_link_int_scores(src: MetricSource, snapshot: Snapshot, idx: IntArray) -> IntArray:
    """to_int_scores(cold_link_scores(src, snapshot, idx)): NetworkTraffic's scores.  The view
    keeps the rounded score of every row that scores on its own (-1 for the others), so a pod
    whose rows all do costs a take and a comparison, not the rounding again."""
    view = src.view(snapshot)
    if view.measured:
        kept = view.per_row_complete(_COLD_LINK_INT, lambda rows: _own_link_ints(view.network(rows)), idx)
        if kept is not None:
            return kept
    return to_int_scores(_cold_link_scores(network_load(src, snapshot, idx), src.fail_closed))


_COLD_LINK_INT = "netsched.metrics/cold-link-int"


def _own_link_ints(net: NetworkLoad) -> IntArray:
    """_own_link_scores' score rounded as to_int_scores does, -1 where the row does not score
    on its own."""
    scores, own = _own_link(net)
    ints = to_int_scores(scores)
    ints[~own] = -1
    return ints


def _own_link_scores(net: NetworkLoad) -> FloatArray:
    """(score, 1.0 if the row scores on its own else 0.0) per row: the formula below for a
    fresh row with a link speed, which reads nothing of the other rows."""
    scores, own = _own_link(net)
    return np.stack([scores, own.astype(np.float64)], axis=1)


def _own_link(net: NetworkLoad) -> tuple[FloatArray, BoolArray]:
    """Each row's score on its own, and where that is its score (a fresh row with a link speed)."""
    return _link_scores(net.utilisation()), net.speed_known() & net.fresh


def _link_scores(u: FloatArray) -> FloatArray:
    """MAX_NODE_SCORE x (1 - u clipped to [0, 1]); NaN (no link speed, no sample) as u = 0."""
    cold = _unit_clip(u)
    np.subtract(1.0, cold, out=cold)
    return np.multiply(MAX_NODE_SCORE, cold, out=cold)


def _cold_link_scores(net: NetworkLoad, fail_closed: bool) -> FloatArray:
    busy, fresh, has_speed = net.busy, net.fresh, net.speed_known()
    relative = fresh & ~has_speed
    ref = float(busy[relative].max()) if relative.any() else 0.0
    u = net.utilisation()
    if ref > 0:
        u = u.copy()  # (shared with the load's other readers)
        np.divide(busy, ref, out=u, where=~has_speed)
    return fill_stale(_link_scores(u), fresh, fail_closed)


def resource_usage(
    src: MetricSource, snapshot: Snapshot, resources: tuple[str, ...], idx: IntArray | None = None
) -> dict[str, Usage]:
    """CPU and/or memory utilisation of rows `idx` (default: every row; resources:
    netsched.metrics CPU / MEMORY), from the source's shared LoadView."""
    view = src.view(snapshot)
    rows = snapshot.all_rows if idx is None else idx
    return {res: view.usage(res, rows) for res in resources}


def _unit_clip(u: FloatArray) -> FloatArray:
    """u clipped to [0, 1], NaN (no sample: such rows are replaced by fill_stale) as 0.
    (fmax drops NaN: one pass instead of nan_to_num's several.)"""
    return np.minimum(np.fmax(u, 0.0), 1.0)


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
    """Scores rounded half to even into [0, 100].  (maximum + minimum: np.clip's Python-level
    dispatch costs more than the two ufuncs on the few hundred rows a cycle scores.)"""
    out = np.maximum(scores, 0.0)
    np.minimum(out, MAX_NODE_SCORE, out=out)
    return np.rint(out, out=out).astype(np.int64)
