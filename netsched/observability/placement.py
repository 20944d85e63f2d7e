"""What netsched's placements did to the nodes, for the dashboards and alerts.

Two halves:

- `PlacementEffects`, on the scheduling thread: when a pod's node is chosen it
  reads the chosen node's utilisation as last polled and the median of every
  node with a fresh sample, from the metric source the load plugins read
  (`MetricSource.fresh`, the same samples and staleness rule), computed once per
  poll and kept by the source's LoadView (`derived`), so a cycle pays a lookup.  Unlike LoadThreshold it leaves out the
  estimated load of pods bound since the poll: the figure describes the node
  as measured.  The figures ride in the cycle state and are counted when the
  binding succeeds.
- `PlacementCollector`, at scrape time: pods rejected per filter plugin (kube's
  scheduler_unschedulable_pods), the active score weights and load thresholds,
  and requested over allocatable per node.  Computed from the current queue,
  profiles and cache when Prometheus asks, so a config reload or a removed node
  shows at the next scrape and the scheduling loop does no metric work for them.

Plugins take part without importing this module: a plugin with a `load_reading()`
method (LoadThreshold, LoadAware) says which metric source it reads, which
resources, and its limits.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from netsched.framework.cycle_state import CycleState
from netsched.framework.runtime import Framework
from netsched.framework.snapshot import BoolArray, FloatArray, Snapshot
from netsched.framework.types import NodeInfo
from netsched.metrics.queries import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX
from netsched.metrics.source import MetricSource
from netsched.metrics.view import speed_known
from netsched.observability.metrics import SchedulerMetrics

_NETWORK = "network"
_STATE = "netsched.observability/placement-effect"


@runtime_checkable
class ReadsLoad(Protocol):
    """A plugin that reads measured load: its source, and per resource it reads
    ("network", "cpu", "memory") its limit as a fraction, or None without one."""

    def load_reading(self) -> tuple[MetricSource, Mapping[str, float | None]]: ...


@dataclass(frozen=True, slots=True)
class Effect:
    resource: str
    above_median: float  # chosen node's utilisation minus the cluster median
    over_threshold: bool


def load_readers(fwk: Framework) -> list[tuple[str, MetricSource, Mapping[str, float | None]]]:
    """(plugin, source, limits) of the profile's plugins that read measured load."""
    out = []
    for name, plugin in fwk.plugins.items():
        if isinstance(plugin, ReadsLoad):
            src, limits = plugin.load_reading()
            out.append((name, src, limits))
    return out


class PlacementEffects:
    """Chosen node against the cluster median, per resource, for profiles with load plugins."""

    def __init__(self, metrics: SchedulerMetrics) -> None:
        self._metrics = metrics
        # Per framework: each resource once, with its source and tightest limit.
        self._plans: weakref.WeakKeyDictionary[Framework, dict[str, tuple[MetricSource, float | None]]] = (
            weakref.WeakKeyDictionary()
        )

    def _plan(self, fwk: Framework) -> dict[str, tuple[MetricSource, float | None]]:
        plan = self._plans.get(fwk)
        if plan is None:
            plan = {}
            for _, src, limits in load_readers(fwk):
                for res, limit in limits.items():
                    if res not in plan:
                        plan[res] = (src, limit)
                    elif limit is not None:
                        first, known = plan[res]
                        plan[res] = (first, limit if known is None else min(known, limit))
            self._plans[fwk] = plan
            for res, (_, limit) in plan.items():
                if limit is not None:  # a zero series from the start, so rate() has a baseline
                    self._metrics.placements_over_threshold.labels(fwk.profile_name, res)
        return plan

    def decided(self, fwk: Framework, state: CycleState, snapshot: Snapshot, node: str) -> None:
        """The node is chosen: note its load against the median (counted by bound())."""
        plan = self._plan(fwk)
        row = snapshot.index.get(node)
        if not plan or row is None:
            return
        effects = []
        for res, (src, limit) in plan.items():
            polled = self._polled(src, snapshot, res)
            if polled is None or not polled.fresh[row]:
                continue  # no measurement of the chosen node: nothing to compare
            chosen = float(polled.utilisation[row])
            over = limit is not None and chosen > limit
            effects.append(Effect(res, chosen - polled.median, over))
        state.write(_STATE, tuple(effects))

    def _polled(self, src: MetricSource, snapshot: Snapshot, res: str) -> _Polled | None:
        """The resource's utilisation as last polled, computed once per poll and node layout (the
        source's LoadView keeps it: the cycle then costs a dict lookup); None while the source
        is in fallback (requests are not measurements) or before any node has a fresh sample."""
        if src.in_fallback:
            return None
        got = src.view(snapshot).derived(f"{_STATE}/{res}", lambda _: _measure(src, snapshot, res))
        return got if math.isfinite(got.median) else None

    def bound(self, fwk: Framework, state: CycleState) -> None:
        effects: tuple[Effect, ...] = state.get(_STATE) or ()
        for e in effects:
            self._metrics.placement_above_median.labels(fwk.profile_name, e.resource).observe(e.above_median)
            if e.over_threshold:
                self._metrics.placements_over_threshold.labels(fwk.profile_name, e.resource).inc()


@dataclass(frozen=True, slots=True)
class _Polled:
    utilisation: FloatArray
    fresh: BoolArray
    median: float


def _measure(src: MetricSource, snapshot: Snapshot, res: str) -> _Polled:
    u, fresh = _utilisation(src, snapshot, res)
    fresh = fresh & np.isfinite(u)
    return _Polled(u, fresh, float(np.median(u[fresh])) if fresh.any() else math.nan)


def _utilisation(src: MetricSource, snapshot: Snapshot, res: str) -> tuple[FloatArray, BoolArray]:
    """Utilisation per row as polled (without the estimator's load of pods bound since: the
    figure describes the node the scheduler saw), and whether each row's samples are fresh."""
    if res != _NETWORK:
        return src.fresh(res, snapshot)
    rx, rx_ok = src.fresh(NETWORK_RX, snapshot)
    tx, tx_ok = src.fresh(NETWORK_TX, snapshot)
    speed, _ = src.values(LINK_SPEED, snapshot)  # a link speed does not go stale
    u = np.full(len(rx), np.nan)
    np.divide(np.fmax(rx, tx), speed, out=u, where=speed_known(speed))
    return u, rx_ok & tx_ok


class PlacementCollector(Collector):
    """Gauges computed at scrape time from the live queue, profiles and cache."""

    def __init__(
        self,
        profiles: Callable[[], Mapping[str, Framework]],
        rejections: Callable[[], Mapping[tuple[str, str], int]],
        nodes: Callable[[], Iterable[NodeInfo]],
    ) -> None:
        self._profiles = profiles
        self._rejections = rejections
        self._nodes = nodes

    def describe(self) -> Iterable[Metric]:
        return list(self._families())

    def _families(self) -> tuple[GaugeMetricFamily, ...]:
        return (
            GaugeMetricFamily(
                "scheduler_unschedulable_pods",
                "The number of unschedulable pods broken down by plugin name. A pod will increment the "
                "gauge for all plugins that caused it to not schedule.",
                labels=["plugin", "profile"],
            ),
            GaugeMetricFamily(
                "netsched_plugin_weight",
                "Weight of each score plugin in each profile, as configured.",
                labels=["profile", "plugin"],
            ),
            GaugeMetricFamily(
                "netsched_load_threshold",
                "Utilisation (0-1) above which a load plugin rejects a node, per resource.",
                labels=["profile", "plugin", "resource"],
            ),
            GaugeMetricFamily(
                "netsched_node_requested_ratio",
                "Requested (pods' requests, as the scheduler counts them) over allocatable, per node.",
                labels=["node", "resource"],
            ),
        )

    def collect(self) -> Iterator[Metric]:
        unschedulable, weights, thresholds, requested = self._families()
        for (plugin, profile), n in sorted(self._rejections().items()):
            unschedulable.add_metric([plugin, profile], float(n))
        for profile, fwk in self._profiles().items():
            for plugin, weight in fwk.weights.items():
                weights.add_metric([profile, plugin], float(weight))
            for plugin, _, limits in load_readers(fwk):
                for res, limit in limits.items():
                    if limit is not None:
                        thresholds.add_metric([profile, plugin, res], limit)
        for node in self._nodes():
            for res in (CPU, MEMORY):
                alloc = node.allocatable.get(res, 0)
                if alloc > 0:
                    requested.add_metric([node.name, res], node.requested.get(res, 0) / alloc)
        yield from (unschedulable, weights, thresholds, requested)
