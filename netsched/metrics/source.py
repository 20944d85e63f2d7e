"""What a plugin holds: a view of one poller under one `prometheus:` args block.

    self.source = handle.metrics.source(args.prometheus)
    self.source.require(NETWORK_RX, NETWORK_TX)           # built-in metrics
    self.source.require_query("gpu", "avg by ($by) (DCGM_FI_DEV_GPU_UTIL) / 100")
    values, age = self.source.values(NETWORK_RX, snapshot)  # arrays over snapshot rows

Reads never query Prometheus: they align the poller's current table with the
snapshot's rows (a dict lookup per series, once per poll and node layout,
cached in `snapshot.cache`) and then cost a few vector operations per cycle.
The view also owns the staleness rules (maxSampleAgeSeconds, stalePolicy)
and the estimator shared by every plugin using the same args.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import BoolArray, FloatArray, IntArray, Snapshot
from netsched.framework.types import PodInfo
from netsched.metrics.args import PrometheusArgs
from netsched.metrics.cache import MetricsTable, Series
from netsched.metrics.estimation import (
    BANDWIDTH_HINT,
    CPU_COL,
    MEMORY_COL,
    RX_COL,
    TX_COL,
    Estimates,
    Estimator,
    pod_bandwidth,
)
from netsched.metrics.mapping import NodeResolver, align
from netsched.metrics.poller import Poller
from netsched.metrics.queries import QueryKey, builtin_query, render
from netsched.metrics.selfcheck import SelfCheckReport
from netsched.metrics.view import LoadView

_RESOLVER = "netsched.metrics/resolver"


class MetricSource:
    def __init__(self, args: PrometheusArgs, poller: Poller, wall: Callable[[], float], view: int) -> None:
        self.args = args
        self.poller = poller
        self.wall = wall  # the clock (wall seconds)
        self._keys: dict[str, QueryKey] = {}
        self._lock = threading.Lock()
        self.estimator = Estimator(args.estimation, wall)
        self._aligned_key = f"netsched.metrics/aligned/{poller.name}"
        self._bandwidth_key = f"netsched.metrics/pod-bandwidth/{poller.name}/{view}"
        self._view_key = f"netsched.metrics/view/{poller.name}/{view}"

    @property
    def name(self) -> str:
        return self.poller.name

    # ------------------------------------------------------------ declaring queries

    def require(self, *metrics: str) -> None:
        """Poll these built-in metrics (netsched.metrics.NETWORK_RX, CPU...)."""
        for m in metrics:
            self._bind(m, builtin_query(m, self.args))

    def require_query(self, name: str, promql: str) -> None:
        """Poll a custom instant query returning one series per node ($by, $window are substituted)."""
        self._bind(name, render(promql, self.args))

    def require_keyed_query(self, name: str, promql: str, key_label: str) -> None:
        """Poll a query whose series are keyed by `key_label`, not by node (read with `series`)."""
        self._bind(name, render(promql, self.args), key_label)

    def _bind(self, name: str, promql: str, key_label: str = "") -> None:
        with self._lock:
            old = self._keys.get(name)
            if old is not None and (old.promql, old.key_label) != (promql, key_label):
                raise ValueError(f"metric {name!r} is already bound to another query: {old.promql}")
            key = QueryKey(name, promql, key_label)
            self._keys[name] = key
        self.poller.require(key)

    def query(self, metric: str) -> str:
        """The PromQL polled for `metric`."""
        return self._key(metric).promql

    def _key(self, metric: str) -> QueryKey:
        key = self._keys.get(metric)
        if key is None:
            raise KeyError(f"metric {metric!r} was not required from source {self.name}")
        return key

    # ------------------------------------------------------------ state

    @property
    def polled(self) -> bool:
        return self.poller.table.version > 0

    @property
    def in_fallback(self) -> bool:
        """Prometheus did not answer the last poll (or none has run): plugins score by requests."""
        return self.poller.fallback or self.poller.table.version == 0

    @property
    def fail_closed(self) -> bool:
        return self.args.fail_closed

    @property
    def max_age(self) -> float:
        return self.args.max_sample_age_seconds

    def self_check(self) -> SelfCheckReport:
        with self._lock:
            keys = list(self._keys.values())
        return self.poller.self_check(keys)

    # ------------------------------------------------------------ reading

    def values(self, metric: str, snapshot: Snapshot) -> tuple[FloatArray, FloatArray]:
        """(value, sample age in seconds) per snapshot row; NaN where the node has no sample.

        The value array is shared and read-only; the age array is new each call.
        """
        vals, ts = self._aligned(self._key(metric), snapshot)
        age = self.wall() - ts
        np.maximum(age, 0.0, out=age)  # a Prometheus clock slightly ahead is not "from the future"
        return vals, age

    def fresh(self, metric: str, snapshot: Snapshot) -> tuple[FloatArray, BoolArray]:
        """(value, usable) per row: usable = has a sample no older than maxSampleAgeSeconds."""
        vals, age = self.values(metric, snapshot)
        return vals, age <= self.max_age  # NaN age compares False

    def series(self, metric: str) -> Series | None:
        """The last answer to `metric`'s query as polled (None before its first answer)."""
        return self.keyed_series(metric, self.poller.table)

    def keyed_series(self, metric: str, table: MetricsTable) -> Series | None:
        """`metric`'s answer in `table` (a LoadView's), None before its first answer."""
        return table.series.get(self._key(metric))

    def requires(self, metric: str) -> bool:
        return metric in self._keys

    def view(self, snapshot: Snapshot) -> LoadView:
        """The shared LoadView of `snapshot` as of the current table (see view.py): built once
        per poll, fallback change and node layout, kept in the snapshot's cache."""
        poller = self.poller
        table = poller.table
        measured = not (poller.fallback or table.version == 0)  # not in_fallback
        v: LoadView | None = snapshot.cache.get(self._view_key)
        # Still the view of this source (a reloaded config may make another one under the same
        # key), table, fallback state and snapshot?
        if (
            v is None
            or v.table is not table
            or v.measured != measured
            or v.source is not self
            or v.snapshot is not snapshot
        ):
            v = snapshot.cache[self._view_key] = LoadView(self, snapshot, table, measured)
        return v

    def aligned(self, metric: str, snapshot: Snapshot, table: MetricsTable) -> tuple[FloatArray, FloatArray]:
        """(value, sample timestamp) of `metric` in `table` per snapshot row; read-only."""
        return self._aligned(self._key(metric), snapshot, table)

    def _aligned(
        self, key: QueryKey, snapshot: Snapshot, table: MetricsTable | None = None
    ) -> tuple[FloatArray, FloatArray]:
        table = self.poller.table if table is None else table
        entry: Any = snapshot.cache.get(self._aligned_key)
        if entry is None or entry[0] is not table:
            entry = (table, {})
            snapshot.cache[self._aligned_key] = entry
        got: tuple[FloatArray, FloatArray] | None = entry[1].get(key)
        if got is None:
            series = table.series.get(key)
            n = len(snapshot)
            if series is None:
                vals, ts = np.full(n, np.nan), np.full(n, np.nan)
            else:
                vals, ts = align(_resolver(snapshot).rows(series.keys), series.values, series.timestamps, n)
            vals.flags.writeable = False
            ts.flags.writeable = False
            got = entry[1][key] = (vals, ts)
        return got

    # ------------------------------------------------------------ estimation

    def reserve(self, pod: PodInfo, node_name: str, state: CycleState | None = None) -> None:
        """Count the pod's expected load on the node until metrics cover it (idempotent per uid);
        `state`: the pod's cycle, where a plugin may have left a BANDWIDTH_HINT."""
        hint = state.get(BANDWIDTH_HINT) if state is not None else None
        self.estimator.add(pod, node_name, self.wall(), hint)

    def pod_load(self, pod: PodInfo) -> FloatArray:
        """What `pod` is expected to add to a node ([cpu, memory, rx, tx]: CPU_COL...), as the
        estimator counts it; computed once per pod (shared array: do not modify)."""
        return self.estimator.load(pod)

    def unreserve(self, pod: PodInfo) -> None:
        self.estimator.remove(pod.uid)

    def estimates(self, snapshot: Snapshot) -> Estimates:
        """Load of pods reserved since their node's latest samples, per snapshot row (copies)."""
        rows = self.view(snapshot).estimates()
        return Estimates(*(rows[:, c].copy() for c in (CPU_COL, MEMORY_COL, RX_COL, TX_COL)))

    def requested_bandwidth(self, snapshot: Snapshot, idx: IntArray) -> tuple[FloatArray, FloatArray]:
        """(rx, tx) bytes/s of rows `idx` from the bandwidth annotations of the pods on each node.

        The fallback when Prometheus is down.  Only the rows asked for are looked at, and
        of those only nodes whose NodeInfo changed since the last call are summed again.
        """
        nodes = snapshot.nodes
        n = len(nodes)
        cached: Any = snapshot.cache.get(self._bandwidth_key)
        if cached is None or len(cached[0]) != n:
            cached = ([None] * n, [-1] * n, [-1] * n, np.zeros(n), np.zeros(n))
            snapshot.cache[self._bandwidth_key] = cached
        seen, gens, counts, rx, tx = cached
        default = self.args.estimation.default_bandwidth_bytes
        for i in idx.tolist():
            node = nodes[i]
            # The cache replaces a changed node's object; the other checks cover in-place edits.
            if seen[i] is node and gens[i] == node.generation and counts[i] == len(node.pods):
                continue
            r = t = 0.0
            for pod in node.pods.values():
                pr, pt = pod_bandwidth(pod, default)
                r += pr
                t += pt
            seen[i], gens[i], counts[i], rx[i], tx[i] = node, node.generation, len(node.pods), r, t
        return rx[idx], tx[idx]


def _resolver(snapshot: Snapshot) -> NodeResolver:
    r: NodeResolver | None = snapshot.cache.get(_RESOLVER)
    if r is None:
        r = snapshot.cache[_RESOLVER] = NodeResolver(snapshot.nodes)
    return r
